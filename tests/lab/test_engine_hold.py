"""--dp-hold against real FRR 8.4.4: bfdd restarts and the peer never notices.

16 sessions at 50 ms x3 (a 150 ms Detection Time, so any interruption shows as a Down at the
peer). bfdd stops: the engine keeps answering on the wire; a new bfdd (new random lids) adds the
same peers and the engine adopts its sessions by address, keeping their discriminators, and
reports them Up to the new bfdd. The peer's session-down counters stay 0 throughout. Then bfdd
stops for longer than the hold: the engine sends AdminDown and drops the sessions.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from lab import frr, stress, util  # noqa: E402
from lab.demo import Lab  # noqa: E402
from lab.engine import Engine  # noqa: E402
from lab.netns import DUT_IF, Netns  # noqa: E402
from lab.registry import Registry  # noqa: E402
from lab.topo import Device, Meta, Peer, SessionClass, Topology  # noqa: E402

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


def _cfgs(side: str) -> list[frr.PeerCfg]:
    out = []
    for s in TOPO.sessions("engine"):
        a, b = (s.device_address, s.peer_address) if side == "peer" else \
            (s.peer_address, s.device_address)
        out.append(frr.PeerCfg(a, b, s.cls.interval_ms, s.cls.detect_mult))
    return out


def _up(b: frr.Bfdd) -> int:
    try:
        return frr.up_count(b.peers())
    except util.LabError:
        return -1


def _peer_downs(peer: frr.Bfdd) -> int:
    return sum(r["session-down"] for r in peer.counters())


@pytest.fixture(scope="module")
def lab():
    build = REPO / "build"
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (build / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    tag = "xb" + util.run_id_hex()
    rd = util.RunDir.create("engine-hold", root=REPO / "results" / "runs" / "tests")
    util.set_command_log(rd.logs / "commands.log")
    lab = Lab(TOPO, rd, tag, Netns(tag, TOPO, build / "xdp_pass.bpf.o"), Registry.create(tag))
    try:
        lab.netns.build()
        lab.registry.add_namespaces(list(lab.netns.created))
        lab.peer = frr.Bfdd(f"{tag}-peer", lab.netns.peer, rd.logs / "frr-peer")
        lab.peer.write_config(_cfgs("peer"))
        lab.registry.add_frr(lab.peer.inst)
        pid = lab.peer.start()
        lab.registry.add_pid(pid, f"-N {lab.peer.inst}")
        stress.shield(pid, "peer bfdd")
        ns = lab.netns.device_ns("engine")
        dut = frr.Bfdd(f"{tag}-engine", ns, rd.logs / "frr-engine", dplane="ipv4:127.0.0.1:50700")
        dut.write_config([])
        lab.duts["engine"] = dut
        lab.registry.add_frr(dut.inst)
        lab.registry.add_pid(dut.start(), f"-N {dut.inst}")
        eng = HoldEngine(build / "xdp-bfd", ns, DUT_IF, "ipv4:127.0.0.1:50700",
                         rd.path / "stats.json", rd.logs / "engine.log", rd.logs / "engine.stderr")
        lab.engines["engine"] = eng
        lab.registry.add_pid(eng.start(), "xdp-bfd")
        dut.add_peers(_cfgs("device"))
        util.wait_until(lambda: _up(lab.peer) == SESSIONS and _up(dut) == SESSIONS or None,
                        30, "all Up")
        yield lab
    finally:
        problems = lab.teardown()
        assert not problems, problems


def _restart_bfdd(lab: Lab) -> frr.Bfdd:
    dut = lab.duts["engine"]
    dut.rundir.mkdir(parents=True, exist_ok=True)
    dut.write_config([])
    lab.registry.add_pid(dut.start(), f"-N {dut.inst}")
    return dut


def test_bfdd_restart_is_invisible_to_the_peer(lab: Lab) -> None:
    peer, dut, eng = lab.peer, lab.duts["engine"], lab.engines["engine"]
    assert peer is not None
    before = {s["peer"]: s["local_disc"] for s in eng.stats()["sessions"]}
    assert _peer_downs(peer) == 0
    dut.stop()
    util.wait_until(lambda: f"keeping sessions on the wire for {HOLD_S} s" in eng.log_text(),
                    5, "the engine holds the sessions")
    time.sleep(1.0)  # well past the 150 ms Detection Time
    assert _up(peer) == SESSIONS
    dut = _restart_bfdd(lab)
    util.wait_until(lambda: eng.log_text().count("dplane: bfdd connected") >= 2, 5,
                    "the engine finds the new bfdd")
    dut.add_peers(_cfgs("device"))
    util.wait_until(lambda: _up(dut) == SESSIONS or None, 10, "the new bfdd shows all Up")
    assert eng.log_text().count("adopted again by bfdd") == SESSIONS
    after = {s["peer"]: s for s in eng.stats()["sessions"]}
    # the wire keeps the old discriminators; bfdd's new lids are only the keys
    assert {p: s["local_disc"] for p, s in after.items()} == before
    assert all(s["lid"] != s["local_disc"] for s in after.values())
    assert _up(peer) == SESSIONS
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
