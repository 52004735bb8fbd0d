"""lab.harness.handover.judge: the verdict of `python3 -m lab handover` from its stages (no lab)."""

from __future__ import annotations

from lab.harness.handover import judge


def _stage(ms: float, adopted: int, downs: int = 0, wire_downs: int = 0) -> dict:
    return {"kind": "handover", "ms": ms, "sessions_adopted": adopted, "sessions_up": adopted,
            "old_exit": 75, "down_events": downs, "wire": {"peer_down_events": wire_downs}}


def _result(stages: list[dict], restart: int, restart_wire: int = 0) -> dict:
    return {"engine": {"handovers": stages, "down_events": sum(s["down_events"] for s in stages),
                       "restart_down_events": restart,
                       "restart_wire": {"peer_down_events": restart_wire}}}


def test_pass_needs_zero_downs_full_adoption_and_a_visible_restart() -> None:
    s = judge(32, _result([_stage(1.5, 32), _stage(2.25, 32)], restart=32, restart_wire=30),
              {"run_id": "r"})
    assert (s["verdict"], s["down_events"], s["restart_down_events"]) == ("PASS", 0, 32)
    assert s["restart_wire_down_events"] == 30
    assert s["reasons"] == ["0 down events over 2 handovers, 32 on the plain restart (30 seen "
                            "on the wire)", "handover 1.500..2.250 ms"]


def test_a_restart_the_peer_did_not_see_makes_the_run_void() -> None:
    s = judge(32, _result([_stage(1.5, 32)], restart=0), {})
    assert s["verdict"] == "VOID"


def test_a_down_event_on_the_wire_alone_fails() -> None:
    s = judge(32, _result([_stage(1.5, 32, wire_downs=1)], restart=32), {})
    assert (s["verdict"], s["down_events"]) == ("FAIL", 1)


def test_fewer_sessions_adopted_fails() -> None:
    s = judge(32, _result([_stage(1.5, 31)], restart=32), {})
    assert s["verdict"] == "FAIL"
    assert "1 handovers adopted fewer than 32 sessions" in s["reasons"]


def test_bfdd_left_with_fewer_sessions_up_fails() -> None:
    # bfdd 8.4.4 offers one connection at most 58 sessions: the rest would stay held only until
    # --dp-hold ends, so a handover after which bfdd has fewer Up fails although the peer saw 0
    stage = {**_stage(1.5, 1024), "bfdd_up": 58}
    s = judge(1024, _result([stage, _stage(1.6, 1024)], restart=1024), {})
    assert s["verdict"] == "FAIL"
    assert any("bfdd shows fewer than 1024 Up after 1 handovers (min 58)" in r
               for r in s["reasons"])


def test_an_unfinished_run_is_void() -> None:
    assert judge(32, {}, {"error": "interrupted"})["verdict"] == "VOID"
