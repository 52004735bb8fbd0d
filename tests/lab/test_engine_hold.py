"""--dp-hold against real FRR 8.4.4: bfdd restarts and the peer never notices.

16 sessions at 50 ms x3 (a 150 ms Detection Time, so any interruption shows as a Down at the
peer). bfdd stops: the engine keeps answering on the wire; a new bfdd (new random lids) adds the
same peers and the engine adopts its sessions by address, keeping their discriminators, and
reports them Up to the new bfdd. The peer's session-down counters stay 0 throughout. Then bfdd
stops for longer than the hold: the engine sends AdminDown and drops the sessions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lab import util
from lab.rig import frr
from lab.harness.lab import Lab
from lab.rig.engine import Engine
from lab.topo import Device, Meta, Peer, SessionClass, Topology
from enginelab import cfgs, engine_lab, restart_bfdd, up

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

SESSIONS = 16
HOLD_S = 6
TOPO = Topology(meta=Meta("hold", 16), peer=Peer("10.81.1.1"),
                devices=(Device("engine", "engine", "10.81.0.1"),),
                classes=(SessionClass("50ms", 50, 3, SESSIONS),), source="test")


class HoldEngine(Engine):
    def argv(self) -> list[str]:
        return super().argv() + ["--dp-hold", str(HOLD_S)]


def _peer_downs(peer: frr.Bfdd) -> int:
    return sum(r["session-down"] for r in peer.counters())


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-hold", engine_cls=HoldEngine) as lab:
        yield lab


def test_bfdd_restart_is_invisible_to_the_peer(lab: Lab) -> None:
    peer, dut, eng = lab.peer, lab.duts["engine"], lab.engines["engine"]
    assert peer is not None
    before = {s["peer"]: s["local_disc"] for s in eng.stats()["sessions"]}
    assert _peer_downs(peer) == 0
    dut.stop()
    util.wait_until(lambda: f"keeping sessions on the wire for {HOLD_S} s" in eng.log_text(),
                    5, "the engine holds the sessions")
    time.sleep(1.0)  # well past the 150 ms Detection Time
    assert up(peer) == SESSIONS
    dut = restart_bfdd(lab)
    util.wait_until(lambda: eng.log_text().count("dplane: bfdd connected") >= 2, 5,
                    "the engine finds the new bfdd")
    dut.add_peers(cfgs(TOPO, "device"))
    util.wait_until(lambda: up(dut) == SESSIONS or None, 10, "the new bfdd shows all Up")
    assert eng.log_text().count("adopted again by bfdd") == SESSIONS
    after = {s["peer"]: s for s in eng.stats()["sessions"]}
    # the wire keeps the old discriminators; bfdd's new lids are only the keys
    assert {p: s["local_disc"] for p, s in after.items()} == before
    assert all(s["lid"] != s["local_disc"] for s in after.values())
    assert up(peer) == SESSIONS
    assert _peer_downs(peer) == 0, "the peer saw a session go down"


def test_hold_expires(lab: Lab) -> None:
    peer, dut, eng = lab.peer, lab.duts["engine"], lab.engines["engine"]
    assert peer is not None
    t0 = time.monotonic()
    dut.stop()

    def all_admin_down() -> bool | None:
        rows = peer.peers()
        return all(r["status"] == "down" and r["remote-diagnostic"] == "administratively down"
                   for r in rows) or None

    util.wait_until(all_admin_down, HOLD_S + 3, "AdminDown at the peer after the hold")
    assert time.monotonic() - t0 >= HOLD_S - 0.2
    assert eng.stats()["sessions_configured"] == 0
