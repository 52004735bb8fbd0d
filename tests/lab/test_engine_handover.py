"""--pin live handover against real FRR 8.4.4 (bfdd on the device and as the peer).

32 sessions at 50 ms x3 (a 150 ms Detection Time: any interruption shows as a Down at the
peer). A second engine started with the same options adopts the pinned sessions and switches
the XDP program: the link keeps running xdp_bfd_entry, and slot 0 of the pinned prog array
(PIN/progs) gets the new xdp_bfd; the first exits 75 without AdminDown; the peer's session-down
counters stay 0.
SIGUSR2 alone makes an engine leave the same way (pins kept), and the next one adopts them.
--takeover (systemd's ExecReload=) does the same handover synchronously: it returns 0 once the
new engine it forked serves, which told a real sd_notify socket MAINPID= before the old engine
left, then READY=1; with nothing to take over it fails with the reason.
An engine whose maps have another layout (here: another --max-sessions) discards the pins and
starts fresh, which the peer sees (still switched through the prog array). SIGTERM sends
AdminDown to every peer and removes the pins; no program or map any engine held is left.
The tests run in this order on one lab.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from lab import util
from lab.rig import frr
from lab.harness.lab import Lab
from lab.rig.engine import Engine
from lab.topo import Device, Meta, Peer, SessionClass, Topology
from enginelab import DEVICE, engine_lab, stop_with_admin_down, up

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, bpffs, FRR daemons")

SESSIONS = 32
HOLD_S = 10
TOPO = Topology(meta=Meta("handover", 16), peer=Peer("10.82.1.1"),
                devices=(Device("engine", "engine", "10.82.0.1"),),
                classes=(SessionClass("50ms", 50, 3, SESSIONS),), source="test")
PIN = Path("/nonexistent")  # the fixture's private bpffs (made there, not at collection)
HANDOVER = re.compile(r"handover: ([0-9.]+) ms \(XDP program switched, engine PID (\d+) asked "
                      r"to leave\); (\d+) sessions adopted, (\d+) Up; switch: ([^;]+), "
                      r"([0-9.]+) ms;")


# The SIGUSR2 test leaves no engine running while the next one loads and verifies its object
# (2-5 s on this 2-core VM with other work): the default 3 s dead-man gate could stop the
# replies in between, which is what it is for, but not what that test is about.
DEADMAN_US = 10_000_000


class PinEngine(Engine):
    def argv(self) -> list[str]:
        return super().argv() + ["--pin", str(PIN), "--dp-hold", str(HOLD_S),
                                 "--deadman-us", str(DEADMAN_US)]


# Every BPF program and map id an engine of this module held (its fds), for the leak check.
HELD: dict[str, set[int]] = {"prog": set(), "map": set()}


def _hold(pid: int) -> None:
    """Note what engine PID holds: each BPF fd's fdinfo names its prog_id or map_id."""
    for f in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            text = f.read_text()
        except OSError:
            continue
        for kind in HELD:
            if m := re.search(rf"^{kind}_id:\s+(\d+)$", text, re.M):
                HELD[kind].add(int(m.group(1)))


def _bpftool(*args: str) -> Any:
    return json.loads(subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True,
                                     check=True).stdout)


def _attached(eng: Engine) -> dict:
    """The program XDP runs on the engine's interface (bpftool in its namespace)."""
    net = json.loads(subprocess.run(["ip", "netns", "exec", eng.ns, "bpftool", "-j", "net",
                                     "show", "dev", eng.iface], capture_output=True, text=True,
                                    check=True).stdout)
    (pid,) = [x["id"] for e in net for x in e.get("xdp", [])]
    return _bpftool("prog", "show", "id", str(pid))


def _slot0() -> dict:
    """The program in slot 0 of PIN/progs."""
    v = _bpftool("map", "lookup", "pinned", str(PIN / "progs"), "key", "0", "0", "0", "0")
    pid = int.from_bytes(bytes(int(b, 16) for b in v["value"]), "little")
    return _bpftool("prog", "show", "id", str(pid))


def _peer_downs(peer: frr.Bfdd) -> int:
    return sum(r["session-down"] for r in peer.counters())


def _next_engine(lab: Lab, name: str, extra: tuple[str, ...] = ()) -> PinEngine:
    """A new engine with the same options as the running one (its own log), started."""
    old = lab.engines[DEVICE]
    logs = lab.rd.logs
    eng = PinEngine(old.binary, old.ns, old.iface, old.dplane, old.stats_path,
                    logs / f"engine-{name}.log", logs / f"engine-{name}.stderr",
                    old.extra_args + extra)
    lab.registry.add_pid(eng.start(), "xdp-bfd")
    assert eng.pid is not None
    _hold(eng.pid)
    lab.engines[f"{DEVICE}-before-{name}"] = old
    lab.engines[DEVICE] = eng
    return eng


class _Orphan:
    """The Popen part an Engine uses, for the engine --takeover forks: its parent exits, so it
    re-parents to this process (a subreaper, as systemd is), which waits for it."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by util.stop_pid: its status is gone
                return None
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = time.monotonic() + (timeout or 5.0)
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"engine PID {self.pid}", timeout or 5.0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode


class _NotifySocket:
    """A unix datagram socket standing in for systemd's NOTIFY_SOCKET: each message with the
    sender's PID, from SCM_CREDENTIALS, as systemd reads them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(str(path))

    def messages(self) -> list[tuple[int, str]]:
        out = []
        self.sock.setblocking(False)
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except BlockingIOError:
                return out
            pid = next(int.from_bytes(d[:4], "little") for lvl, typ, d in anc
                       if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS)
            out.append((pid, data.decode()))

    def close(self) -> None:
        self.sock.close()
        self.path.unlink()


def _exit_code(eng: Engine, timeout_s: float = 5.0) -> int:
    assert eng.proc is not None
    return eng.proc.wait(timeout=timeout_s)


def _owner() -> int:
    """The PID in PIN/owner (a one-entry array map: bpffs holds no regular files)."""
    out = subprocess.run(["bpftool", "-j", "map", "lookup", "pinned", str(PIN / "owner"),
                          "key", "0", "0", "0", "0"], capture_output=True, text=True, check=True)
    return int.from_bytes(bytes(int(b, 16) for b in json.loads(out.stdout)["value"]), "little")


def _pins() -> list[str]:
    """What the engine pinned in PIN: iproute2 uses any bpffs mounted (its ip/, tc/, xdp/
    directories appear here when the lab attaches xdp_pass), and a bpffs shows its own
    maps.debug and progs.debug."""
    return sorted(p.name for p in PIN.iterdir()
                  if re.match(r"(link-|maps-|owner$|progs$|entry$)", p.name))


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    global PIN
    PIN = Path(tempfile.mkdtemp(prefix="xdp-bfd-pin-"))
    util.run(["mount", "-t", "bpf", "bpf", str(PIN)])
    try:
        with engine_lab(TOPO, "engine-handover", engine_cls=PinEngine) as lab:
            yield lab
    finally:
        util.run(["umount", str(PIN)], check=False)
        PIN.rmdir()


def test_first_engine_pins_its_state(lab: Lab) -> None:
    eng = lab.engines[DEVICE]
    assert "pin: no previous engine in" in eng.log_text()
    pins = _pins()
    ifindex = int(subprocess.run(["ip", "-n", eng.ns, "-o", "link", "show", eng.iface],
                                 capture_output=True, text=True, check=True).stdout.split(":")[0])
    assert len(pins) == 5 and pins[:2] == ["entry", f"link-{ifindex}"], pins
    assert pins[3:] == ["owner", "progs"], pins
    assert re.fullmatch(r"maps-[0-9a-f]{16}", pins[2]), pins
    # the link runs the entry program; the fast path is in the pinned prog array's slot 0
    assert _attached(eng)["name"] == "xdp_bfd_entry" and _slot0()["name"] == "xdp_bfd"
    assert eng.pid is not None
    _hold(eng.pid)
    assert sorted(p.name for p in (PIN / pins[2]).iterdir()) == [
        "addr_index", "counters", "disc_index", "heartbeat", "sessions_cfg", "sessions_expiry",
        "sessions_rx", "sessions_tx"]
    assert _owner() == eng.pid


def test_handover_is_invisible_to_the_peer(lab: Lab) -> None:
    peer, old = lab.peer, lab.engines[DEVICE]
    assert peer is not None and _peer_downs(peer) == 0
    before = {s["peer"]: s["local_disc"] for s in old.stats()["sessions"]}
    entry, fast = _attached(old)["id"], _slot0()["id"]
    new = _next_engine(lab, "handover")
    assert _exit_code(old) == 75
    m = util.wait_until(lambda: HANDOVER.search(new.log_text()), 5, "the handover line")
    assert int(m.group(2)) == old.pid
    # one map update, no bpf_link_update(): the link still runs the first entry program
    assert m.group(5) == "prog array slot 0", m.group(0)
    assert "pinned link through the pinned prog array" in new.log_text()
    assert _attached(new)["id"] == entry and _slot0()["id"] not in (fast, entry)
    assert (int(m.group(3)), int(m.group(4))) == (SESSIONS, SESSIONS)
    assert "leaving for the next engine" in old.log_text()
    time.sleep(1.0)  # well past the 150 ms Detection Time
    assert up(peer) == SESSIONS and up(lab.duts[DEVICE]) == SESSIONS
    assert _peer_downs(peer) == 0, "the peer saw a session go down"
    after = new.stats()["sessions"]
    assert {s["peer"]: s["local_disc"] for s in after} == before
    assert _owner() == new.pid


def test_sigusr2_leaves_and_the_next_adopts(lab: Lab) -> None:
    peer, old = lab.peer, lab.engines[DEVICE]
    assert peer is not None
    pins = _pins()
    os.kill(old.pid, signal.SIGUSR2)
    assert _exit_code(old) == 75
    assert _pins() == pins, "leaving must keep the pins"
    # Nobody runs the loop now: the program answers until --deadman-us (DEADMAN_US here).
    new = _next_engine(lab, "usr2")
    m = util.wait_until(lambda: HANDOVER.search(new.log_text()), 5, "the handover line")
    assert int(m.group(2)) == 0  # nobody left to ask
    assert m.group(5) == "prog array slot 0", m.group(0)
    assert (int(m.group(3)), int(m.group(4))) == (SESSIONS, SESSIONS)
    time.sleep(1.0)
    assert up(peer) == SESSIONS and _peer_downs(peer) == 0


def test_takeover_is_a_synchronous_reload(lab: Lab, tmp_path: Path) -> None:
    peer = lab.peer
    assert peer is not None
    notify = _NotifySocket(tmp_path / "notify")
    env_before = os.environ.get("NOTIFY_SOCKET")
    os.environ["NOTIFY_SOCKET"] = str(notify.path)
    try:
        # The engine systemd would have started: the socket reaches it (READY=1 after its own
        # handover from the running one, which it names main process first).
        old = _next_engine(lab, "notify")
        util.wait_until(lambda: old.alive() and (old.pid, "READY=1") in notify.messages()
                        or None, 5, "READY=1 from the engine")
        new = PinEngine(old.binary, old.ns, old.iface, old.dplane, old.stats_path,
                        lab.rd.logs / "engine-reload.log", lab.rd.logs / "engine-reload.stderr",
                        old.extra_args)
        util.become_subreaper()  # as systemd: the forked engine re-parents to this process
        cmd = subprocess.run(new.argv() + ["--takeover"], capture_output=True, text=True,
                             timeout=90)
    finally:
        if env_before is None:
            del os.environ["NOTIFY_SOCKET"]
        else:
            os.environ["NOTIFY_SOCKET"] = env_before
    m = re.fullmatch(r"xdp-bfd: engine PID (\d+) took over from engine PID (\d+) and serves\n",
                     cmd.stdout)
    assert cmd.returncode == 0 and m, (cmd.returncode, cmd.stdout, cmd.stderr)
    child = int(m.group(1))
    _hold(child)
    new.follow(_Orphan(child))
    lab.registry.add_pid(child, "xdp-bfd")
    lab.engines[f"{DEVICE}-before-reload"] = old
    lab.engines[DEVICE] = new
    assert int(m.group(2)) == old.pid and child != old.pid
    # Returned once the handover was done: the old engine has left, the new one is serving.
    assert _exit_code(old, 1.0) == 75
    assert new.alive() and _owner() == child
    assert notify.messages() == [(child, f"MAINPID={child}"), (old.pid, "STOPPING=1"),
                                 (child, "READY=1")]
    notify.close()
    h = HANDOVER.search(new.log_text())
    assert h and int(h.group(2)) == old.pid
    assert (int(h.group(3)), int(h.group(4))) == (SESSIONS, SESSIONS)
    time.sleep(1.0)  # well past the 150 ms Detection Time
    assert up(peer) == SESSIONS and up(lab.duts[DEVICE]) == SESSIONS
    assert _peer_downs(peer) == 0, "the peer saw a session go down"


def test_takeover_without_an_engine_fails(lab: Lab, tmp_path: Path) -> None:
    eng = lab.engines[DEVICE]
    argv = eng.argv()
    argv[argv.index("--pin") + 1] = str(tmp_path)  # no engine's pins there
    cmd = subprocess.run(argv + ["--takeover"], capture_output=True, text=True, timeout=30)
    assert (cmd.returncode, cmd.stdout) == (1, "")
    assert cmd.stderr == (f"xdp-bfd: --takeover: no running engine owns the pins in "
                          f"{tmp_path}: nothing to take over (start the engine instead)\n")
    assert eng.alive() and _owner() == eng.pid


def test_layout_mismatch_starts_fresh(lab: Lab) -> None:
    peer, old = lab.peer, lab.engines[DEVICE]
    assert peer is not None
    old_maps = [p for p in _pins() if p.startswith("maps-")]
    new = _next_engine(lab, "mismatch", ("--max-sessions", "2048"))
    assert _exit_code(old) == 75
    text = new.log_text()
    assert f"pin: {PIN}/{old_maps[0]} has another map layout" in text
    m = util.wait_until(lambda: HANDOVER.search(new.log_text()), 5, "the handover line")
    assert (int(m.group(3)), int(m.group(4))) == (0, 0)
    # the array is outside the maps directory: another layout still switches through it
    assert m.group(5) == "prog array slot 0", m.group(0)
    maps = [p for p in _pins() if p.startswith("maps-")]
    assert len(maps) == 1 and maps != old_maps
    # Fresh sessions: the peer sees them go down, then bfdd's ADDs bring them Up again.
    util.wait_until(lambda: _peer_downs(peer) >= SESSIONS or None, 10, "downs at the peer")
    util.wait_until(lambda: up(peer) == SESSIONS or None, 20, "all Up again")


def test_sigterm_sends_admin_down_and_removes_the_pins(lab: Lab) -> None:
    eng = stop_with_admin_down(lab, DEVICE, timeout_s=3.0)
    assert _pins() == []

    def clean() -> bool | None:
        left = (HELD["prog"] & {p["id"] for p in _bpftool("prog", "show")}) | (
            HELD["map"] & {m["id"] for m in _bpftool("map", "show")})
        return None if left else True

    # freed after an RCU grace period: not at once
    util.wait_until(clean, 5, f"none left of the {len(HELD['prog'])} programs and "
                    f"{len(HELD['map'])} maps the engines held")
    out = subprocess.run(["ip", "-n", eng.ns, "link", "show", eng.iface],
                         capture_output=True, text=True, check=True).stdout
    assert "xdp" not in out
