"""flood - the flood rotation: frames from a load namespace on the bridge into a device's link.

    load ns  load0 ─veth─ to-load ┐ (xdp_pass: a veth delivers XDP_TX frames only to a
                                  ├─ br0    peer running native XDP)
    device ns dut0 ─veth─ to-DEV  ┘

Arms (ladder.md section 4; every frame FRAME_LEN bytes, padded after the IP datagram, so
the per-frame cost compares across arms; one fixed 5-tuple per arm except A):

    A  non-BFD UDP to port 12345, random source port per frame   -> passed to the stack
    B  valid 24-byte Up Control packet (mult 3, 50 ms), TTL 64    -> dropped: ttl (GTSM)
    C  malformed: 16-byte payload, version 0, to 3784             -> dropped: bad_length
    D  valid Down, Your Discriminator 0, unconfigured address pair -> dropped: no_session
    E  a real session's pair, Your Discriminator 0xDEADBEEF       -> dropped: unknown_your_disc
    F  A bit, Down, Your Discriminator 0, keyed SHA1, garbage digest -> dropped: auth_mismatch
    G  self-addressed echo (UDP 3785, source = destination = the device's address)
       -> echo of no session (the device holds none with itself): to the stack (echo_unowned
          and pass_non_bfd), which drops a martian

Generators: `trafgen` (netsniff-ng) or BPF live frames (lab/livegen.py); `bench()` measures
both on the lab's own path and the ladder uses the faster (see docs/lab.md).
"""

from __future__ import annotations

import ipaddress
import json
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import util
from .netns import DUT_IF, End, Netns, nsenter
from ..topo import Topology
from ..util import run, spawn
from ..wire import bfd, frames

LOAD_IF = "load0"
FRAME_LEN = 94  # the longest arm (F: 24 + 28 bytes of keyed SHA1) in Ethernet
BFD_PORT, ECHO_PORT = 3784, 3785


@dataclass(frozen=True)
class Arm:
    name: str
    description: str
    expect: str  # the engine counter (drops.* or counters.*) the arm should move
    random_sport: bool = False


ARMS: dict[str, Arm] = {a.name: a for a in [
    Arm("A", "non-BFD UDP, dport 12345, random source port per frame", "pass_non_bfd", True),
    Arm("B", "valid Up Control packet (mult 3, 50 ms) at TTL 64", "ttl"),
    # version 0 in a 16-byte payload: the engine checks the payload length first
    Arm("C", "malformed: 16-byte payload, version 0", "bad_length"),
    Arm("D", "valid Down, your_disc 0, address pair with no session", "no_session"),
    Arm("E", "real session's pair, wrong your_disc 0xDEADBEEF", "unknown_your_disc"),
    Arm("F", "A bit, Down, your_disc 0, keyed SHA1 with a garbage digest", "auth_mismatch"),
    Arm("G", "self-addressed echo (UDP 3785, src = dst = the device)", "pass_non_bfd"),
]}


# --- frames (built by lab.wire) ------------------------------------------------------------------

def udp_frame(src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int,
              payload: bytes, ttl: int = 255, udp_csum: bool = True) -> bytes:
    """Ethernet/IPv4/UDP frame (DF, CS6) padded with zeros to FRAME_LEN."""
    f = frames.udp_frame(src_mac, dst_mac, src, dst, sport, dport, payload, ttl=ttl,
                         frag=frames.DF, udp_checksum=udp_csum)
    if len(f) > FRAME_LEN:
        raise ValueError(f"frame of {len(f)} bytes exceeds FRAME_LEN {FRAME_LEN}")
    return f + b"\0" * (FRAME_LEN - len(f))


def bfd_ctrl(state: int, my_disc: int, your_disc: int, **kw: Any) -> bytes:
    """RFC 5880 4.1 Control packet at the floods' 50 ms (lab.wire.bfd.control)."""
    kw.setdefault("tx_us", 50000)
    kw.setdefault("rx_us", 50000)
    return bfd.control(state, my_disc, your_disc, **kw)


@dataclass(frozen=True)
class Target:
    """Where one device's flood goes: its link's MAC and its and its peer's addresses."""

    device: str
    dut_mac: str
    dut_addr: str  # the device address of its first session
    peer_addr: str  # the peer address of that session
    load_mac: str
    load_addr: str
    stranger_addr: str  # an address of the subnet in no session (arm D)


def frame(arm: str, t: Target) -> bytes:
    """The frame of ARM towards target T."""
    sport = 49152
    if arm == "A":
        return udp_frame(t.load_mac, t.dut_mac, t.load_addr, t.dut_addr, sport, 12345,
                         b"\0" * 24, ttl=64, udp_csum=False)
    if arm == "B":
        return udp_frame(t.load_mac, t.dut_mac, t.peer_addr, t.dut_addr, sport, BFD_PORT,
                         bfd_ctrl(3, 0x0A0B0C0D, 0x01020304), ttl=64)
    if arm == "C":
        return udp_frame(t.load_mac, t.dut_mac, t.load_addr, t.dut_addr, sport, BFD_PORT,
                         bfd_ctrl(3, 0x0A0B0C0D, 0x01020304, version=0)[:16])
    if arm == "D":
        return udp_frame(t.load_mac, t.dut_mac, t.stranger_addr, t.dut_addr, sport, BFD_PORT,
                         bfd_ctrl(1, 0x0A0B0C0D, 0))
    if arm == "E":
        return udp_frame(t.load_mac, t.dut_mac, t.peer_addr, t.dut_addr, sport, BFD_PORT,
                         bfd_ctrl(3, 0x0A0B0C0D, 0xDEADBEEF))
    if arm == "F":
        # RFC 5880 4.4: type 4 (keyed SHA1), len 28, key id 1, reserved, seq, 20-byte digest
        auth = bfd.auth_digest(bfd.AUTH_KEYED_SHA1, 1, 1, bytes(range(20)))
        return udp_frame(t.load_mac, t.dut_mac, t.peer_addr, t.dut_addr, sport, BFD_PORT,
                         bfd_ctrl(1, 0x0A0B0C0D, 0, auth=auth))
    if arm == "G":
        return udp_frame(t.load_mac, t.dut_mac, t.dut_addr, t.dut_addr, sport, ECHO_PORT,
                         b"\0" * 24)
    raise KeyError(arm)


# --- the load namespace ------------------------------------------------------------------------

def load_ns(netns: Netns) -> str:
    return netns.ns("load")


def load_address(topo: Topology) -> tuple[str, str]:
    """(load namespace address, an unused "stranger" address): the subnet's last hosts."""
    first = ipaddress.IPv4Address(topo.peer.first_address)
    net = ipaddress.IPv4Network(f"{first}/{topo.meta.prefix_len}", strict=False)
    return str(net.broadcast_address - 1), str(net.broadcast_address - 2)


def load_mac(tag: str) -> str:
    """The generator's MAC, fixed per run (locally administered) so the capture, started
    before the load namespace exists, can leave its frames out."""
    h = tag[-6:]
    return f"02:00:{h[0:2]}:{h[2:4]}:{h[4:6]}:01"


def build_load_ns(netns: Netns, topo: Topology) -> None:
    """Add the load namespace to a built lab: load0 on the bridge, xdp_pass on its port."""
    addr, _ = load_address(topo)
    netns.add(End("load", LOAD_IF, (f"{addr}/{topo.meta.prefix_len}",), mac=load_mac(netns.tag),
                  xdp_pass=True))


def link_mac(ns: str, ifname: str) -> str:
    out = run(["ip", "-n", ns, "-j", "link", "show", ifname]).stdout
    return json.loads(out)[0]["address"]


def link_stats(ns: str, ifname: str) -> dict[str, int]:
    """rx/tx packets and drops of IFNAME in NS (ip -s -j link)."""
    out = run(["ip", "-n", ns, "-s", "-j", "link", "show", ifname]).stdout
    st = json.loads(out)[0]["stats64"]
    return {"rx_packets": st["rx"]["packets"], "rx_dropped": st["rx"]["dropped"],
            "tx_packets": st["tx"]["packets"], "tx_dropped": st["tx"]["dropped"]}


def udp_rcvbuf_errors(ns: str) -> int:
    """UdpRcvbufErrors of namespace NS (/proc/net/snmp is per network namespace)."""
    text = run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"]).stdout
    rows = [line.split() for line in text.splitlines() if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


def targets(netns: Netns, topo: Topology, devices: list[str]) -> dict[str, Target]:
    ns = load_ns(netns)
    load_mac = link_mac(ns, LOAD_IF)
    addr, stranger = load_address(topo)
    out = {}
    for d in devices:
        s = topo.sessions(d)[0]
        out[d] = Target(d, link_mac(netns.device_ns(d), DUT_IF), s.device_address,
                        s.peer_address, load_mac, addr, stranger)
    return out


# --- generators --------------------------------------------------------------------------------

@dataclass
class Gen:
    """One running generator process (by PID, own process group)."""

    kind: str  # "trafgen" | "live"
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    t0: float = 0.0
    result: dict[str, Any] = field(default_factory=dict)

    def start(self) -> int:
        self._f = open(self.log, "ab")
        self.t0 = time.monotonic()
        self.proc = spawn(self.argv, stdout=self._f, stderr=subprocess.STDOUT)
        return self.proc.pid

    def wait(self, timeout_s: float) -> dict[str, Any]:
        assert self.proc is not None
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
        self._f.close()
        text = self.log.read_text(errors="replace")
        self.result = {"rc": self.proc.returncode, "wall_s": round(time.monotonic() - self.t0, 3)}
        if self.kind == "live":
            for line in reversed(text.splitlines()):
                if line.startswith("{"):
                    try:
                        self.result.update(json.loads(line))
                    except ValueError:
                        pass
                    break
        return self.result

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            util.stop_pid(self.proc.pid, self.argv[0] if self.argv[0] != "timeout"
                          else "timeout", sig=signal.SIGINT, timeout_s=3.0, group=True)


def trafgen_argv(ns: str, cfg: Path, seconds: float, pps: float) -> list[str]:
    """trafgen bounded by timeout(1); -A/-Q: never touch global socket memory or IRQ
    affinity (other people share the machine; the short forms -A/-Q are refused by 0.6.8);
    -P 1: one sender process."""
    argv = ["timeout", "-s", "INT", f"{seconds:.1f}", *nsenter(ns, [
        "trafgen", "-o", LOAD_IF, "-i", str(cfg), "-P", "1", "--no-sock-mem", "--notouch-irq",
        "-C"])]
    if pps:
        argv += ["-b", f"{int(pps)}pps"]
    return argv


def trafgen_cfg(frame_bytes: bytes, random_sport: bool) -> str:
    """A trafgen packet config: the frame's bytes, the UDP source port drnd() for arm A."""
    b = [f"0x{x:02x}" for x in frame_bytes]
    if random_sport:
        b[34:36] = ["drnd(2)"]
    return "{ " + ", ".join(b) + " }\n"


def live_argv(ns: str, frame_bytes: bytes, seconds: float, pps: float,
              random_sport: bool) -> list[str]:
    argv = ["timeout", "-s", "INT", f"{seconds + 10:.1f}", *nsenter(ns, [
        util.PYTHON, str(Path(__file__).with_name("livegen.py")), LOAD_IF, frame_bytes.hex(),
        f"{seconds:.3f}"])]
    if pps:
        argv += ["--pps", str(int(pps))]
    if random_sport:
        argv.append("--random-sport")
    return argv


def make_gen(kind: str, ns: str, arm: Arm, frame_bytes: bytes, seconds: float, pps: float,
             workdir: Path, tag: str) -> Gen:
    log = workdir / f"gen-{tag}.log"
    if kind == "trafgen":
        cfg = workdir / f"gen-{tag}.cfg"
        cfg.write_text(trafgen_cfg(frame_bytes, arm.random_sport))
        return Gen(kind, trafgen_argv(ns, cfg, seconds, pps), log)
    return Gen(kind, live_argv(ns, frame_bytes, seconds, pps, arm.random_sport), log)


def delivered(before: dict[str, int], after: dict[str, int]) -> int:
    return after["tx_packets"] - before["tx_packets"]


def bench(netns: Netns, topo: Topology, device: str, workdir: Path, seconds: float = 3.0,
          kinds: tuple[str, ...] = ("trafgen", "live"), arms: str = "AD") -> dict[str, Any]:
    """Unpaced rate of each generator, per arm, into DEVICE's link: frames the bridge
    port towards the device transmitted per second (what the device was offered)."""
    t = targets(netns, topo, [device])[device]
    port = netns.wire_port(device)
    out: dict[str, Any] = {}
    for kind in kinds:
        for a in arms:
            arm = ARMS[a]
            g = make_gen(kind, load_ns(netns), arm, frame(a, t), seconds, 0, workdir,
                         f"bench-{kind}-{a}")
            b = link_stats(netns.wire, port)
            t0 = time.monotonic()
            g.start()
            res = g.wait(seconds + 15)
            dt = time.monotonic() - t0
            after = link_stats(netns.wire, port)
            out[f"{kind}/{a}"] = {"delivered_pps": round(delivered(b, after) / dt),
                                  "generator": res}
    return out
