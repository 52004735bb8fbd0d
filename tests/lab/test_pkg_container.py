"""The Debian package in a Debian 12 system container (systemd as PID 1), for real.

`make deb` builds version V and `make deb DEB_VERSION=V+1` a newer build of the same tree. A
container booted by systemd-nspawn from a cached debootstrap root (lab.rig.container) sits in
the engine device's lab namespace; FRR's bfdd runs inside it under frr.service with the
package's data-plane options (examples/frr-daemons.snippet), the peer is the lab's stock FRR
bfdd in its own namespace outside, and the wire between them is captured. In order, on one
container:

1. dpkg -i V, engine.conf given --kernel-tx dut0 --pin /run/xdp-bfd-pin, `systemctl enable
   --now xdp-bfd`, FRR started: every session Up at both ends, XDP on dut0.
2. `systemctl reload xdp-bfd`: a new main PID, the handover line in `journalctl -u xdp-bfd`
   with every session adopted, 0 down events at the peer (its counters, and the capture).
3. dpkg -i V+1 over the running engine (the postinst reloads): 0 down events, `xdp-bfd
   --version` and the running binary are V+1, another handover line.
4. The capture over 2 and 3: no down event of either end (bfdcap); the port reservation applied
   in the container (no engine warned about it).
5. `systemctl restart xdp-bfd`: AdminDown (state 0, diagnostic 7) from every session on the
   wire, one session-down per session at the peer, then all Up again, and no SIGKILL in the
   journal.

SESSIONS at INTERVAL_MS x 3 (50 ms: a 150 ms Detection Time, so any interruption shows as a
Down). XDP_BFD_CT_SESSIONS=1024 XDP_BFD_CT_PEER=bfdpeer XDP_BFD_CT_INTERVAL_MS=300 runs it at
1,024 (opt-in, for make test's 30 min budget; the peer outside is then build/bfdpeer, as stock
FRR bfdd cannot keep 1,024 sessions in time: issue 10; at 50 ms both ends of 1,024 sessions
flapped on this 2-CPU VM while other work ran, bfdpeer up to 65 ms late, a VOID rig). bfdd
gets its peers through vtysh after the engine connects either way, in batches of
frr.ADD_BATCH, as FRR 8.4.4 offers a new data-plane connection at most 58 sessions and slows
per peer the more it holds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab import util
from lab.harness import bringup
from lab.harness.handover import HANDOVER, wire
from lab.harness.lab import Lab, RunConfig
from lab.judge import bfdcap
from lab.rig import capture, container, frr, neigh
from lab.rig.netns import DUT_IF, Netns
from lab.rig.registry import Registry
from lab.topo import Device, Meta, Peer, SessionClass, Topology

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: debootstrap, systemd-nspawn, XDP, FRR")

SESSIONS = int(os.environ.get("XDP_BFD_CT_SESSIONS", "32"))
PEER_KIND = os.environ.get("XDP_BFD_CT_PEER", "frr")  # "frr" | "bfdpeer": the peer outside
INTERVAL_MS = int(os.environ.get("XDP_BFD_CT_INTERVAL_MS", "50"))
DEVICE = "engine"
TOPO = Topology(meta=Meta("pkg-container", 16), peer=Peer("10.83.128.1", PEER_KIND),
                devices=(Device("engine", "engine", "10.83.0.1"),),
                classes=(SessionClass(f"{INTERVAL_MS}ms", INTERVAL_MS, 3, SESSIONS),),
                source="test")
PIN = "/run/xdp-bfd-pin"
ARGS = (f"--dplane-connect ipv4:127.0.0.1:50700 --kernel-tx {DUT_IF} --pin {PIN} "
        f"--dp-hold 30")
SETTLE_S = max(1.0, 4 * 3 * INTERVAL_MS / 1000)  # after each stage: past a Detection Time
BASE = subprocess.run(["dpkg-parsechangelog", "-l", str(REPO / "debian/changelog"), "-S",
                       "Version"], capture_output=True, text=True).stdout.strip()
NEWER = BASE + "+1"
WINDOWS: dict[str, list[int]] = {}  # stage -> [from_ns, to_ns] on the wire, judged at the end


def _deb(out: Path, version: str) -> Path:
    """`make deb` (DEB_VERSION=VERSION when it is not the changelog's) into OUT/deb.
    DEB_BUILD_OPTIONS=nocheck: make test runs the unit tests the package build would."""
    argv = ["make", "--no-print-directory", "-C", str(REPO), f"O={out}", "deb"]
    if version != BASE:
        argv.append(f"DEB_VERSION={version}")
    util.run(argv, timeout=900)
    return next((out / "deb").glob(f"xdp-bfd_{version}_*.deb"))


@pytest.fixture(scope="module")
def debs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("deb")
    env_before = os.environ.get("DEB_BUILD_OPTIONS")
    os.environ["DEB_BUILD_OPTIONS"] = "nocheck"
    try:
        return {v: _deb(out, v) for v in (BASE, NEWER)}
    finally:
        if env_before is None:
            del os.environ["DEB_BUILD_OPTIONS"]
        else:
            os.environ["DEB_BUILD_OPTIONS"] = env_before


@pytest.fixture(scope="module")
def rig(debs):
    for tool in ("systemd-nspawn", "debootstrap"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} missing (make deps)")
    if not (BUILD / "xdp_pass.bpf.o").exists():
        pytest.skip("build/xdp_pass.bpf.o missing (make)")
    root = container.cached_root()  # minutes the first time on a machine (docs/engine.md)
    tag = "xb" + util.run_id_hex()
    rd = util.RunDir.create("pkg-container", root=REPO / "results" / "runs" / "tests")
    util.set_command_log(rd.logs / "commands.log")
    lab = Lab(TOPO, rd, tag, Netns.for_topology(tag, TOPO, BUILD / "xdp_pass.bpf.o"),
              Registry.create(tag))
    ct = container.Container(root, "", Path(tempfile.mkdtemp(prefix="xdp-bfd-ct-",
                                                             dir="/var/tmp")))
    lab.extra.append(("container", ct.stop))
    try:
        # one neighbour entry per session at each end, counted over every namespace: 2,048 at
        # 1,024 sessions overflow the default gc_thresh3 (1,024: "No buffer space available")
        lab.neigh_limits = neigh.raise_for(2 * SESSIONS + 64)
        lab.netns.build()
        lab.registry.add_namespaces(list(lab.netns.created))
        lab.cap = capture.Capture(lab.netns.wire, rd.path / "capture.pcap",
                                  rd.logs / "tcpdump.log",
                                  buffer_kib=capture.RUN_BUFFER_KIB)  # before any session
        lab.registry.add_pid(lab.cap.start(), "tcpdump")
        bringup.start_peers(lab)
        ct.ns = lab.netns.device_ns(DEVICE)
        ct.start()
        assert ct.proc is not None
        lab.registry.add_pid(ct.proc.pid, "systemd-nspawn")
        for v, deb in debs.items():
            ct.copy_in(deb, f"/root/{deb.name}")
        yield Rig(lab, ct)
    finally:
        problems = lab.teardown()
        (rd.logs / "container-journal.log").write_text("\n".join(ct.journal) + "\n")
        assert not problems, problems


@dataclass
class Rig:
    lab: Lab
    ct: container.Container


def _peer_downs(lab: Lab) -> int:
    assert lab.peer is not None
    return sum(r["session-down"] for r in lab.peer.counters())


def _ct_up(ct: container.Container) -> int:
    out = ct.run(["vtysh", "-c", "show bfd peers json"], check=False).stdout
    try:
        return frr.up_count(json.loads(out))
    except ValueError:
        return -1


def _wait_up(rig: Rig, timeout_s: float = 60.0) -> None:
    lab, ct = rig.lab, rig.ct
    timeout_s = max(timeout_s, SESSIONS / 10)  # FRR's bring-up of 1,024: tens of seconds
    util.wait_until(lambda: bringup.peers_up(lab) == SESSIONS and _ct_up(ct) == SESSIONS
                    or None, timeout_s, f"all {SESSIONS} sessions Up at both ends", poll_s=0.5)


def _main_pid(ct: container.Container) -> int:
    return int(ct.run(["systemctl", "show", "-P", "MainPID", "xdp-bfd"]).stdout)


def _handovers(ct: container.Container) -> list[re.Match]:
    text = ct.run(["journalctl", "-u", "xdp-bfd", "--no-pager", "-o", "cat"]).stdout
    return list(HANDOVER.finditer(text))


def _frr_daemons(ct: container.Container) -> None:
    """/etc/frr/daemons with bfdd on and the package snippet's bfdd_options."""
    snippet = (ct.merged / "usr/share/doc/xdp-bfd/examples/frr-daemons.snippet").read_text()
    options = re.search(r"^bfdd_options=.*$", snippet, re.M)
    assert options, "no bfdd_options line in the package's snippet"
    daemons = ct.merged / "etc/frr/daemons"
    text = re.sub(r"^bfdd=no$", "bfdd=yes", daemons.read_text(), flags=re.M)
    text = re.sub(r"^bfdd_options=.*$", options.group(0), text, flags=re.M)
    daemons.write_text(text)


def test_install_enable_and_up(rig: Rig, debs: dict[str, Path]) -> None:
    lab, ct = rig.lab, rig.ct
    # Debian's way of keeping an install from starting services (invoke-rc.d, policy-rc.d):
    # the engine is configured before its first start.
    policy = ct.merged / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    out = ct.run(["dpkg", "-i", f"/root/{debs[BASE].name}"], timeout=120)
    (lab.rd.logs / "install.log").write_text(out.stdout + out.stderr)
    policy.unlink()
    conf = ct.merged / "etc/xdp-bfd/engine.conf"
    conf.write_text(re.sub(r'^XDP_BFD_ARGS=.*$', f'XDP_BFD_ARGS="{ARGS}"', conf.read_text(),
                           flags=re.M))
    _frr_daemons(ct)
    # bfdd first, with its peers, then the engine, which offers them all when it connects
    # (../shared/docs/bfddp.md, "DP connects"). Peers configured while or after the engine
    # connected (bfdd the data-plane server here) reached it short: 20 and 21 ADDs of 32 in
    # two runs of commit f5553cd (vtysh 30 ms before and 58 ms after its "bfdd connected"),
    # the rest never offered again; open (issue 10's note), not this test's subject.
    ct.run(["systemctl", "enable", "--now", "frr"], timeout=60)
    cfgs = bringup.peer_cfgs(lab.topo, DEVICE, "device")
    for i in range(0, len(cfgs), frr.ADD_BATCH):
        (ct.merged / "root/peers.conf").write_text(frr.config_text(cfgs[i:i + frr.ADD_BATCH]))
        ct.run(["vtysh", "-f", "/root/peers.conf"], timeout=120)
    ct.run(["systemctl", "enable", "--now", "xdp-bfd"], timeout=60)
    _wait_up(rig)
    assert ct.run(["systemctl", "is-enabled", "xdp-bfd"]).stdout.strip() == "enabled"
    assert ct.run(["systemctl", "is-active", "xdp-bfd"]).stdout.strip() == "active"
    assert ct.run(["xdp-bfd", "--version"]).stdout.split()[-1] == BASE
    assert "xdp" in ct.run(["ip", "link", "show", DUT_IF]).stdout
    assert _peer_downs(lab) == 0


def _hand_over(rig: Rig, stage: str, argv: list[str]) -> re.Match:
    """Run ARGV inside (a reload, an upgrade) and check the engine was handed over: a new
    main PID, one more handover line adopting every session, 0 down events at the peer."""
    lab, ct = rig.lab, rig.ct
    old, before, lines = _main_pid(ct), _peer_downs(lab), len(_handovers(ct))
    t0 = util.realtime_ns()
    out = ct.run(argv, timeout=120)
    (lab.rd.logs / f"{stage}.log").write_text(out.stdout + out.stderr)
    time.sleep(SETTLE_S)
    WINDOWS[stage] = [t0, util.realtime_ns()]
    new = _main_pid(ct)
    assert new not in (0, old)
    found = _handovers(ct)
    assert len(found) == lines + 1, [m.group(0) for m in found]
    m = found[-1]
    assert (int(m.group(3)), int(m.group(4))) == (SESSIONS, SESSIONS)
    print(f"{stage}: handover {m.group(1)} ms (switch: {m.group(5)}, {m.group(6)} ms), "
          f"{m.group(3)} sessions adopted")
    assert m.group(5) == "prog array slot 0"  # both versions link through the pinned array
    assert _peer_downs(lab) - before == 0, "the peer saw a session go down"
    assert bringup.peers_up(lab) == SESSIONS and _ct_up(ct) == SESSIONS
    return m


def test_reload_hands_over(rig: Rig) -> None:
    _hand_over(rig, "reload", ["systemctl", "reload", "xdp-bfd"])
    assert rig.ct.run(["systemctl", "is-active", "xdp-bfd"]).stdout.strip() == "active"


def test_upgrade_hands_over(rig: Rig, debs: dict[str, Path]) -> None:
    ct = rig.ct
    _hand_over(rig, "upgrade", ["dpkg", "-i", f"/root/{debs[NEWER].name}"])
    assert ct.run(["dpkg-query", "-W", "-f", "${Version}", "xdp-bfd"]).stdout == NEWER
    assert ct.run(["xdp-bfd", "--version"]).stdout.split()[-1] == NEWER
    # the file the running engine was started from (not the one dpkg unpacked over)
    exe = f"/proc/{_main_pid(ct)}/exe"  # the container's PID
    assert ct.run(["readlink", exe]).stdout == "/usr/sbin/xdp-bfd\n"
    assert ct.run([exe, "--version"]).stdout.split()[-1] == NEWER


def test_the_wire_during_handovers(rig: Rig) -> None:
    """The capture over the reload and the upgrade: no down event of either end (bfdcap)."""
    lab = rig.lab
    assert set(WINDOWS) == {"reload", "upgrade"}
    assert lab.cap is not None
    stats = lab.cap.stop()
    assert stats.get("dropped") == 0, stats
    pcap = lab.rd.path / "capture.pcap"
    for stage in ("reload", "upgrade"):
        w = wire(pcap, TOPO, DEVICE, WINDOWS[stage], RunConfig(build=BUILD))
        assert (w["peer_down_events"], w["device_down_events"]) == (0, 0), (stage, w)


def test_the_port_is_reserved(rig: Rig) -> None:
    """The postinst applied /etc/sysctl.d/50-xdp-bfd.conf in the container's namespace, so no
    engine warned that bfdd's port was unreserved."""
    ct = rig.ct
    got = ct.run(["sysctl", "-n", "net.ipv4.ip_local_reserved_ports"]).stdout.strip()
    assert got == "50700"
    text = ct.run(["journalctl", "-u", "xdp-bfd", "--no-pager", "-o", "cat"]).stdout
    assert "not in net.ipv4.ip_local_reserved_ports" not in text


# Before commit "takeover: fork twice", measured: the engine `xdp-bfd --takeover` forked named
# itself main process (MAINPID=) while still the command's child; systemd marked it "not our
# child" and on stop went straight from SIGTERM to SIGKILL, killing the engine during its
# AdminDowns (once after 15 of 32, its pins left for the next engine). The engine is now PID 1's
# child before it sends MAINPID= (engine/main.c takeover()); this test holds it to that.
def test_restart_sends_admin_down(rig: Rig) -> None:
    """`systemctl restart`: AdminDown (state 0, diagnostic 7) on the wire from every session,
    one session-down per session at the peer, then all Up again."""
    lab, rd = rig.lab, rig.lab.rd
    cap = capture.Capture(lab.netns.wire, rd.path / "restart.pcap", rd.logs / "tcpdump-restart.log")
    lab.registry.add_pid(cap.start(), "tcpdump")
    lab.extra.append(("tcpdump (restart)", cap.stop))
    before = _peer_downs(lab)
    t0 = util.realtime_ns()
    rig.ct.run(["systemctl", "restart", "xdp-bfd"], timeout=60)
    time.sleep(SETTLE_S)
    t1 = util.realtime_ns()
    cap.stop()
    mine = set(TOPO.session_addresses(DEVICE))
    packets = bfdcap.packets(rd.path / "restart.pcap", t0, t1, bfdcap=BUILD / "bfdcap")
    admin_down = {p["src"] for p in packets
                  if p["src"] in mine and p.get("state") == 0 and p.get("diag") == 7}
    assert admin_down == mine
    _wait_up(rig)
    assert _peer_downs(lab) - before == SESSIONS
    # systemd sends SIGKILL only to a main process that did not stop within its timeout or that
    # it does not supervise as its child: either loses AdminDowns.
    text = rig.ct.run(["journalctl", "-u", "xdp-bfd", "--no-pager", "-o", "cat"]).stdout
    assert not re.search(r"Killing process \d+ \(xdp-bfd\) with signal SIGKILL", text)
