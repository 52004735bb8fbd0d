"""breaklab - the harness of the test_engine_break*.py files (no tests in here).

A small lab of its own, as root, from the lab's namespace builder (lab.rig.netns): three
namespaces joined by a bridge (wire), the engine's device
(dut0, XDP attached, listening for a scripted bfdd with --dplane), a tester (tst0) that sends
hand-built frames from an AF_PACKET socket and records the engine's.
The scripted bfdd (Dp) speaks bfddp version 1 by explicit offsets; the tester (Tester) runs a
minimal RFC 5880 6.8.6 state machine so a session can be brought Up, kept Up or left to expire.

Everything started here is stopped by PID, every namespace deleted by name, in teardown().

The test_break_*.py files (by subject: bfddp input, which path serves a session, sending, the
process) hold two kinds of tests:

- guards: behaviour that held when these tests were written and must keep holding;
- fixed findings: each reproduces a defect found while trying to break the engine (the comment
  above it says what it was); it failed until the fix and guards against its return. A new
  finding goes in as `@pytest.mark.xfail(strict=True, raises=AssertionError, reason=...)`.
"""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lab import util
from lab.rig.netns import End, Netns
from lab.wire import bfd as wbfd
from lab.wire import bfddp, frames

REPO = Path(__file__).resolve().parents[2]

BUILD = REPO / "build"
XDP_PASS = BUILD / "xdp_pass.bpf.o"
_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_CLONE_NEWNET = 0x40000000


def sh(*argv: object, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    if check and cp.returncode:
        raise RuntimeError(f"{argv}: rc {cp.returncode}: {cp.stderr}")
    return cp


class InNs:
    """`with InNs(name):` sockets created inside belong to namespace NAME (this thread only)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.me = os.open("/proc/self/ns/net", os.O_RDONLY)
        fd = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            if _libc.setns(fd, _CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns")
        finally:
            os.close(fd)

    def __exit__(self, *a: object) -> None:
        _libc.setns(self.me, _CLONE_NEWNET)
        os.close(self.me)


# --- bfddp (docs: ../shared/docs/bfddp.md), built by lab.wire.bfddp ---

HDR = bfddp.HDR
ECHO_REQ, ECHO_REPLY, ADD, DELETE = (bfddp.ECHO_REQUEST, bfddp.ECHO_REPLY, bfddp.ADD_SESSION,
                                     bfddp.DELETE_SESSION)
STATE_CHANGE, REQ_COUNTERS, COUNTERS = (bfddp.STATE_CHANGE, bfddp.REQUEST_COUNTERS,
                                        bfddp.SESSION_COUNTERS)
SF_MULTIHOP, SF_SHUTDOWN, SF_IPV6 = bfddp.SF_MULTIHOP, bfddp.SF_SHUTDOWN, bfddp.SF_IPV6


def session_msg(mtype: int = ADD, src: str = "0.0.0.0", dst: str = "0.0.0.0", lid: int = 1,
                tx: int = 300000, rx: int = 300000, mult: int = 3, flags: int = 0,
                ttl: int = 255, ifindex: int = 0, ifname: bytes = b"") -> bytes:
    return bfddp.session(mtype, ipaddress.ip_address(src).packed,
                         ipaddress.ip_address(dst).packed, lid, tx, rx, flags=flags, ttl=ttl,
                         detect_mult=mult, ifindex=ifindex, ifname=ifname)


def counters_req(lid: int, mid: int) -> bytes:
    return bfddp.request_counters(lid, mid)


class Dp:
    """A scripted bfdd connected to the engine's --dplane port; a thread records what comes back
    and answers ECHO_REQUESTs like bfdd (id 0). Writes are whole messages under one lock."""

    def __init__(self, ns: str, port: int = 50700) -> None:
        with InNs(ns):
            self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.s.settimeout(None)
        self.buf = b""
        self.msgs: list[dict] = []
        self.eof = False
        self.lock = threading.Lock()
        self.wlock = threading.RLock()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while True:
            try:
                data = self.s.recv(65536)
            except OSError:
                data = b""
            if not data:
                self.eof = True
                return
            self.buf += data
            while len(self.buf) >= 8:
                _, _, mtype, mid, length = HDR.unpack_from(self.buf)
                if length < 8 or len(self.buf) < length:
                    break
                m, self.buf = self.buf[:length], self.buf[length:]
                rec: dict = {"type": mtype, "id": mid, "len": length}
                if mtype == STATE_CHANGE and length == 36:
                    (rec["lid"], rec["rid"], _, _, _, _, rec["state"], rec["diag"], _, _) = \
                        struct.unpack_from("!IIIIIIBBBB", m, 8)
                elif mtype == COUNTERS and length == 80:
                    rec["lid"] = struct.unpack_from("!I", m, 8)[0]
                with self.lock:
                    self.msgs.append(rec)
                if mtype == ECHO_REQ:
                    try:
                        self.send(bfddp.echo(ECHO_REPLY, struct.unpack_from("!Q", m, 8)[0],
                                             int(time.time() * 1e6)))
                    except OSError:
                        pass

    def send(self, b: bytes) -> None:
        with self.wlock:
            self.s.sendall(b)

    def send_split(self, b: bytes, gap_s: float = 0.001) -> None:
        with self.wlock:
            for i in range(len(b)):
                self.s.sendall(b[i:i + 1])
                time.sleep(gap_s)  # one byte per TCP segment (TCP_NODELAY)

    def add(self, **kw: object) -> None:
        self.send(session_msg(ADD, **kw))  # type: ignore[arg-type]

    def delete(self, **kw: object) -> None:
        self.send(session_msg(DELETE, **kw))  # type: ignore[arg-type]

    def of(self, mtype: int, lid: int | None = None) -> list[dict]:
        with self.lock:
            return [m for m in self.msgs if m["type"] == mtype and
                    (lid is None or m.get("lid") == lid)]

    def sync(self, mid: int = 65535, timeout_s: float = 5.0) -> None:
        """Everything sent before has been handled: a counters request answered. The reply must
        be a new one: a second sync with the same id would otherwise return on the first's."""
        def replies() -> int:
            return sum(m["id"] == mid for m in self.of(COUNTERS))

        before = replies()
        self.send(counters_req(1, mid))
        util.wait_until(lambda: replies() > before or None, timeout_s, "counters reply (sync)")

    def close(self) -> None:
        try:
            self.s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.t.join(2)
        self.s.close()


# --- BFD frames ---

def bfd_bytes(state: int = 3, diag: int = 0, flags: int = 0, mult: int = 3, length: int = 24,
              my: int = 1, your: int = 0, tx: int = 300000, rx: int = 300000, erx: int = 0,
              version: int = 1, extra: bytes = b"") -> bytes:
    return wbfd.control(state, my, your, diag=diag, flags=flags, mult=mult, length=length,
                        tx_us=tx, rx_us=rx, echo_rx_us=erx, version=version) + extra


def frame4(smac: str, dmac: str, src: str, dst: str, payload: bytes, sport: int = 50000,
           dport: int = 3784, ttl: int = 255, vlans: tuple = (), ip_opts: bytes = b"") -> bytes:
    return frames.udp_frame(smac, dmac, src, dst, sport, dport, payload, ttl=ttl, ident=0x1234,
                            ip_options=ip_opts, vlans=vlans)


def parse_bfd_frame(f: bytes) -> dict | None:
    """The BFD fields of an IPv4 or IPv6 UDP 3784/4784 frame (tags skipped), or None."""
    et, off = struct.unpack_from("!H", f, 12)[0], 14
    while et in (0x8100, 0x88a8):
        et, off = struct.unpack_from("!H", f, off + 2)[0], off + 4
    if et == 0x0800 and f[off + 9] == 17:
        src = str(ipaddress.IPv4Address(f[off + 12:off + 16]))
        dst = str(ipaddress.IPv4Address(f[off + 16:off + 20]))
        off += (f[off] & 0xf) * 4
    elif et == 0x86DD and f[off + 6] == 17:  # UDP right after the fixed header: what BFD sends
        src = str(ipaddress.IPv6Address(f[off + 8:off + 24]))
        dst = str(ipaddress.IPv6Address(f[off + 24:off + 40]))
        off += 40
    else:
        return None
    sport, dport = struct.unpack_from("!HH", f, off)
    b = f[off + 8:off + 32]
    if dport not in (3784, 4784) or len(b) < 24:
        return None
    vd, sf, mult, _, my, your, tx, rx, _ = struct.unpack("!BBBBIIIII", b)
    return dict(src=src, dst=dst, sport=sport, dport=dport, state=sf >> 6, diag=vd & 0x1f,
                P=bool(sf & 0x20), F=bool(sf & 0x10), mult=mult, my=my, your=your, tx=tx, rx=rx)


# The tester's receive thread stamps each frame with time.monotonic() when Python reads it, late
# by its wake-up: Finals the XDP program sends within microseconds of a Poll were read 0.22-0.69
# ms after it (test_engine_jitter.py, two runs). Gaps and delays read from those stamps are
# allowed a few ms of that noise, no more (the shared document allows 2 ms on a capture's).
TS_TOL_S = 0.003


def periodic_gaps(pkts: list[tuple[float, dict]]) -> list[tuple[float, dict, dict]]:
    """(gap s, previous, packet) between consecutive packets without F: RFC 5880 6.8.7's
    periodic packets (a Final is sent at once, off the schedule)."""
    nf = [(t, p) for t, p in pkts if not p["F"]]
    return [(b - a, pa, pb) for (a, pa), (b, pb) in zip(nf, nf[1:])]


class Raw:
    """AF_PACKET socket on IFACE in NS: send frames; a thread records the BFD frames received."""

    def __init__(self, ns: str, iface: str) -> None:
        with InNs(ns):
            self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
            self.s.bind((iface, 0))
        self.seen: list[tuple[float, dict]] = []
        self.lock = threading.Lock()
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        self.s.settimeout(0.2)
        while not self.stop:
            try:
                f, addr = self.s.recvfrom(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            try:
                p = parse_bfd_frame(f)
            except (IndexError, struct.error, ValueError):
                p = None  # not a frame we can read (short, other protocol): ignore it
            if p:
                with self.lock:
                    self.seen.append((time.monotonic(), p))

    def send(self, f: bytes) -> None:
        self.s.send(f)

    def from_(self, src: str, since: float = 0.0) -> list[tuple[float, dict]]:
        with self.lock:
            return [(t, p) for t, p in self.seen if p["src"] == src and t >= since]

    def close(self) -> None:
        self.stop = True
        self.t.join(1)
        self.s.close()


class Tester:
    """A scripted BFD peer at SADDR for the engine's session at DADDR, with a minimal RFC 5880
    6.8.6 state machine; `frame_kw` shapes every frame (VLAN tags, IP options, ports, TTL)."""

    __test__ = False  # a helper, not a test class (pytest collects Test*)

    def __init__(self, raw: Raw, smac: str, dmac: str, saddr: str, daddr: str, my: int,
                 tx: int = 300000, rx: int = 300000, mult: int = 3, **frame_kw: object) -> None:
        self.raw, self.smac, self.dmac, self.saddr, self.daddr = raw, smac, dmac, saddr, daddr
        self.my, self.tx, self.rx, self.mult, self.frame_kw = my, tx, rx, mult, frame_kw
        self.your, self.state = 0, 1
        self.running = False
        self.t: threading.Thread | None = None

    def frame(self, payload: bytes, **kw: object) -> bytes:
        return frame4(self.smac, self.dmac, self.saddr, self.daddr, payload,
                      **{**self.frame_kw, **kw})  # type: ignore[arg-type]

    def send(self, **kw: object) -> None:
        d = dict(state=self.state, my=self.my, your=self.your, tx=self.tx, rx=self.rx,
                 mult=self.mult)
        d.update(kw)
        self.raw.send(self.frame(bfd_bytes(**d)))  # type: ignore[arg-type]

    def from_engine(self, since: float = 0.0) -> list[tuple[float, dict]]:
        """The engine's packets to this peer: its addresses, and its port (3784 single hop, 4784
        multihop), so two sessions between the same addresses are told apart (C07a)."""
        dport = self.frame_kw.get("dport", 3784)
        return [(t, p) for t, p in self.raw.from_(self.daddr, since)
                if p["dst"] == self.saddr and p["dport"] == dport]

    def handshake(self, timeout_s: float = 8.0) -> int:
        """Down, the engine's Init, then Up. Returns the engine's discriminator."""
        t0 = time.monotonic()
        self.state, self.your = 1, 0
        while time.monotonic() < t0 + timeout_s:
            self.send()
            time.sleep(0.1)  # the engine answers a Down within milliseconds
            got = self.from_engine(t0)
            if got and got[-1][1]["state"] in (2, 3) and got[-1][1]["your"] == self.my:
                self.your, self.state = got[-1][1]["my"], 3
                self.send()
                return self.your
        raise TimeoutError("handshake with the engine")

    def start(self) -> None:
        self.running = True
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self) -> None:
        seen_to = nxt = time.monotonic()
        while self.running:
            now = time.monotonic()
            for _, p in self.from_engine(seen_to):
                es = p["state"]
                if es == 0 and self.state != 1:
                    self.state, self.your = 1, 0
                elif self.state == 1 and es in (1, 2):
                    self.your, self.state = p["my"], 2 if es == 1 else 3
                elif self.state == 2 and es in (2, 3):
                    self.state = 3
                elif self.state == 3 and es == 1:
                    self.state = 1
                if p["P"]:
                    self.send(flags=0x10)
            seen_to = now
            if now >= nxt:
                self.send()
                nxt = now + self.tx / 1e6  # read each time: a test may slow the peer (C03c)
            time.sleep(0.005)  # the tester's own tick

    def stop(self) -> None:
        self.running = False
        if self.t:
            self.t.join(1)


class Engine:
    def __init__(self, proc: subprocess.Popen, log: Path, stats: Path, stderr: Path) -> None:
        self.proc, self.logp, self.statsp, self.stderrp = proc, log, stats, stderr

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        out = ""
        for p in (self.logp, self.stderrp):
            try:
                out += p.read_text(errors="replace")
            except OSError:
                pass
        return out

    def stats(self, timeout_s: float = 3.0) -> dict | None:
        if not self.alive():
            return None
        try:
            before = self.statsp.stat().st_mtime_ns
        except OSError:
            before = 0
        os.kill(self.pid, signal.SIGUSR1)

        def fresh() -> dict | None:
            try:
                if self.statsp.stat().st_mtime_ns != before:
                    return json.loads(self.statsp.read_text())
            except (OSError, ValueError):
                pass
            return None

        try:
            return util.wait_until(fresh, timeout_s, "engine stats", poll_s=0.02)
        except util.LabError:
            return None

    @staticmethod
    def sess(st: dict, lid: int) -> dict | None:
        return next((s for s in st["sessions"] if s["lid"] == lid), None)


class BreakLab:
    """wire (bridge br0), dev (dut0, the engine), tst (tst0, the tester), all IPv4 /16.
    The tester namespace holds UDP sockets on 3784/4784, so the engine's packets to it draw no
    ICMP port unreachable unless `sink=False`."""

    def __init__(self, dev_addrs: tuple = ("10.90.0.1",),
                 tst_addrs: tuple = ("10.90.2.1",), sink: bool = True) -> None:
        self.tag = "xk" + secrets.token_hex(3)
        self.dev, self.tst, self.wire = (f"{self.tag}-{r}" for r in ("dev", "tst", "wire"))
        self.dev_addrs, self.tst_addrs, self.want_sink = dev_addrs, tst_addrs, sink
        # the lab's one namespace builder: wire (br0), dev (dut0, xdp_pass on its port), tst
        self.net = Netns(self.tag, [End("dev", "dut0", tuple(f"{a}/16" for a in dev_addrs),
                                        xdp_pass=True),
                                    End("tst", "tst0", tuple(f"{a}/16" for a in tst_addrs))],
                         XDP_PASS)
        self.dir = REPO / "results" / "runs" / "tests" / f"break-{self.tag}"
        self.made: list[str] = []
        self.engines: list[Engine] = []
        self.closers: list = []
        self.sink: list[socket.socket] = []

    def __enter__(self) -> "BreakLab":
        try:
            self.build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *a: object) -> None:
        self.teardown()

    def build(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.net.build()
        self.made = list(self.net.created)
        self.dev_mac = self.mac(self.dev, "dut0")
        self.tst_mac = self.mac(self.tst, "tst0")
        if self.want_sink:
            with InNs(self.tst):
                for port in (3784, 4784):
                    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    s.bind(("0.0.0.0", port))
                    self.sink.append(s)
                    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    s.bind(("::", port))
                    self.sink.append(s)

    @staticmethod
    def mac(ns: str, ifn: str) -> str:
        return json.loads(sh("ip", "-n", ns, "-j", "link", "show", ifn).stdout)[0]["address"]

    @staticmethod
    def ifindex(ns: str, ifn: str) -> int:
        return json.loads(sh("ip", "-n", ns, "-j", "link", "show", ifn).stdout)[0]["ifindex"]

    def link(self, dev_if: str, tst_if: str, dev_addr: str, tst_addr: str,
             xdp_pass: bool = False) -> None:
        """A second, direct veth dev:DEV_IF <-> tst:TST_IF (no bridge, no XDP). With XDP_PASS,
        xdp_pass on TST_IF: a veth delivers the engine's XDP_TX frames from DEV_IF only to a
        peer with a native XDP program (../shared/docs/platform.md section 5)."""
        self.net.link("dev", dev_if, dev_addr, "tst", tst_if, tst_addr)
        if xdp_pass:
            sh("ip", "-n", self.tst, "link", "set", "dev", tst_if, "xdpdrv", "obj", XDP_PASS,
               "sec", "xdp")

    def engine(self, *extra: str, port: int = 50700, kernel_tx: tuple = ("dut0",),
               name: str = "engine") -> Engine:
        log, stats, err = (self.dir / f"{name}.{x}" for x in ("log", "json", "stderr"))
        argv = ["nsenter", f"--net=/run/netns/{self.dev}", str(BUILD / "xdp-bfd"), "--dplane",
                str(port), "--stats-dump", str(stats), "--log-file", str(log)]
        for k in kernel_tx:
            argv += ["--kernel-tx", k]
        argv += list(extra)
        with open(err, "ab") as ef:
            proc = subprocess.Popen(argv, stdout=ef, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        eng = Engine(proc, log, stats, err)
        self.engines.append(eng)
        util.wait_until(lambda: "dplane: listening on" in eng.log() or not eng.alive() or None,
                        10, "engine listening")
        return eng

    def dp(self, port: int = 50700) -> Dp:
        d = Dp(self.dev, port)
        self.closers.append(d.close)
        return d

    def raw(self, ns: str | None = None, iface: str = "tst0") -> Raw:
        r = Raw(ns or self.tst, iface)
        self.closers.append(r.close)
        return r

    def tester(self, raw: Raw, saddr: str, daddr: str, my: int, smac: str | None = None,
               dmac: str | None = None, **kw: object) -> Tester:
        t = Tester(raw, smac or self.tst_mac, dmac or self.dev_mac, saddr, daddr, my, **kw)
        self.closers.insert(0, t.stop)
        return t

    def teardown(self) -> None:
        for fn in self.closers:
            try:
                fn()
            except Exception:  # noqa: BLE001 - keep tearing down
                pass
        for eng in self.engines:
            if eng.alive():
                util.stop_pid(eng.pid, "xdp-bfd", timeout_s=5)
            try:
                eng.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        for s in self.sink:
            s.close()
        self.net.teardown()
        self.made = []


def lines(eng: Engine, since: int = 0) -> list[str]:
    """The engine's log lines after byte offset SINCE, without timestamp and pid."""
    return [ln.split(" ", 2)[2] for ln in eng.log()[since:].splitlines() if ln.count(" ") >= 2]


# --- shared by the test_break_*.py files ---

PYTESTMARK = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces, XDP"),
    pytest.mark.skipif(not (BUILD / "xdp-bfd").exists() or not (BUILD / "xdp_pass.bpf.o").exists(),
                       reason="build/ missing (make)"),
]

DEV, TST = "10.90.0.1", "10.90.2.1"
LID, PEER_DISC = 0x0A, 0x0B
# 1 s x 3 on both sides: a Detection Time of 3 s, so a tester thread stalled for a second by
# someone else's real-time load on this shared machine does not bring a session down.
IV = 1000000
DETECT_S = 3.0


class Precondition(Exception):
    """The lab could not set the scene: a real failure, never an expected one (xfail raises=)."""


def need(cond: object, what: object) -> None:
    if not cond:
        raise Precondition(what)


def up_session(lab: BreakLab, eng, iv: int = IV, **add_kw):
    """A scripted bfdd with one session DEV -> TST (lid 0x0A, IV x 3 both ways), brought Up."""
    d = lab.dp()
    raw = lab.raw()
    t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=iv, rx=iv)
    d.add(**{"src": DEV, "dst": TST, "lid": LID, "tx": iv, "rx": iv, **add_kw})
    t.handshake()
    t.start()
    time.sleep(1.5)  # past the Poll Sequence that leaves slow start
    s = eng.sess(eng.stats(), LID)
    need(s and s["state"] == "Up" and s["fast_path"], s)
    return d, raw, t


def sw_up(lab: BreakLab, eng, d, lid: int = LID, **add_kw):
    """A session DEV -> TST brought Up on the software path (engine without --kernel-tx)."""
    raw = lab.raw()
    t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV)
    d.add(**{"src": DEV, "dst": TST, "lid": lid, "tx": IV, "rx": IV, **add_kw})
    t.handshake()
    t.start()
    time.sleep(1.5)
    s = eng.sess(eng.stats(), lid)
    need(s and s["state"] == "Up" and not s["fast_path"], s)
    return raw, t
