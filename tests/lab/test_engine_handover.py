"""--pin live handover against real FRR 8.4.4 (bfdd on the device and as the peer).

32 sessions at 50 ms x3 (a 150 ms Detection Time: any interruption shows as a Down at the
peer). A second engine started with the same options adopts the pinned sessions and switches
the XDP link; the first exits 75 without AdminDown; the peer's session-down counters stay 0.
SIGUSR2 alone makes an engine leave the same way (pins kept), and the next one adopts them.
An engine whose maps have another layout (here: another --max-sessions) discards the pins and
starts fresh, which the peer sees. SIGTERM sends AdminDown to every peer and removes the pins.
The tests run in this order on one lab.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

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
HANDOVER = re.compile(r"handover: ([0-9.]+) ms \(XDP links switched, engine PID (\d+) asked to "
                      r"leave\); (\d+) sessions adopted, (\d+) Up")


# The SIGUSR2 test leaves no engine running while the next one loads and verifies its object
# (2-5 s on this 2-core VM with other work): the default 3 s dead-man gate could stop the
# replies in between, which is what it is for, but not what that test is about.
DEADMAN_US = 10_000_000


class PinEngine(Engine):
    def argv(self) -> list[str]:
        return super().argv() + ["--pin", str(PIN), "--dp-hold", str(HOLD_S),
                                 "--deadman-us", str(DEADMAN_US)]


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
    lab.engines[f"{DEVICE}-before-{name}"] = old
    lab.engines[DEVICE] = eng
    return eng


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
    return sorted(p.name for p in PIN.iterdir() if re.match(r"(link-|maps-|owner$)", p.name))


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
    assert len(pins) == 3 and pins[0] == f"link-{ifindex}" and pins[2] == "owner", pins
    assert re.fullmatch(r"maps-[0-9a-f]{16}", pins[1]), pins
    assert sorted(p.name for p in (PIN / pins[1]).iterdir()) == [
        "addr_index", "counters", "disc_index", "heartbeat", "sessions_cfg", "sessions_expiry",
        "sessions_rx", "sessions_tx"]
    assert _owner() == eng.pid


def test_handover_is_invisible_to_the_peer(lab: Lab) -> None:
    peer, old = lab.peer, lab.engines[DEVICE]
    assert peer is not None and _peer_downs(peer) == 0
    before = {s["peer"]: s["local_disc"] for s in old.stats()["sessions"]}
    new = _next_engine(lab, "handover")
    assert _exit_code(old) == 75
    m = util.wait_until(lambda: HANDOVER.search(new.log_text()), 5, "the handover line")
    assert int(m.group(2)) == old.pid
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
    assert (int(m.group(3)), int(m.group(4))) == (SESSIONS, SESSIONS)
    time.sleep(1.0)
    assert up(peer) == SESSIONS and _peer_downs(peer) == 0


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
    maps = [p for p in _pins() if p.startswith("maps-")]
    assert len(maps) == 1 and maps != old_maps
    # Fresh sessions: the peer sees them go down, then bfdd's ADDs bring them Up again.
    util.wait_until(lambda: _peer_downs(peer) >= SESSIONS or None, 10, "downs at the peer")
    util.wait_until(lambda: up(peer) == SESSIONS or None, 20, "all Up again")


def test_sigterm_sends_admin_down_and_removes_the_pins(lab: Lab) -> None:
    eng = stop_with_admin_down(lab, DEVICE, timeout_s=3.0)
    assert _pins() == []
    out = subprocess.run(["ip", "-n", eng.ns, "link", "show", eng.iface],
                         capture_output=True, text=True, check=True).stdout
    assert "xdp" not in out
