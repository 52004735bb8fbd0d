"""The steal / peer-silence / excused-down-event rule of docs/lab.md on synthetic inputs.

No root, no capture: steal records, bfdcap --csv-gaps text and a bfdcap report are written
by hand, so every expected figure below can be checked with a pencil.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from lab import report, topo, validity  # noqa: E402

MS = 1_000_000
T0 = 1_800_000_000_000_000_000  # an epoch ns origin
TOPO = topo.load(REPO / "topologies" / "demo.toml")
ENG1 = "10.77.0.1-10.77.1.1:3784"  # engine session 1 (10 ms x3): peer 10.77.1.1
ENG2 = "10.77.0.2-10.77.1.2:3784"
BFD1 = "10.77.1.1-10.77.2.1:3784"  # stock bfdd session 1: addr_a is the lower address
HEADER = "ts_ns,session,src,dst,tag,gap_ns,budget_ns\n"
PHASES = [{"name": "idle", "start_ns": T0, "end_ns": T0 + 10_000 * MS, "load": ""},
          {"name": "L4", "start_ns": T0 + 10_000 * MS, "end_ns": T0 + 30_000 * MS, "load": "L4"},
          {"name": "idle2", "start_ns": T0 + 30_000 * MS, "end_ns": T0 + 40_000 * MS,
           "load": ""}]


def at(ms: float) -> int:
    return T0 + round(ms * MS)


def row(end_ms: float, session: str, src: str, dst: str, tag: str, gap_ms: float,
        budget_ms: float = 30.0) -> str:
    return f"{at(end_ms)},{session},{src},{dst},{tag},{round(gap_ms * MS)},{round(budget_ms * MS)}\n"


def session(key: str, a: str, b: str, episodes: list[dict], detections: list[dict] = ()) -> dict:
    dev, peer = (a, b) if not a.startswith("10.77.1.") else (b, a)
    return {"key": key, "addr_a": a, "addr_b": b, "episodes": episodes,
            "ends": [{"src": peer, "dst": dev, "tag": "peer-x", "budget_ms": 30.0,
                      "detections": []},
                     {"src": dev, "dst": peer, "tag": "dev", "budget_ms": 30.0,
                      "detections": list(detections)}]}


def episode(start_ms: float, src: str, last_gap_ms: float | None = 0.2, diag: int = 1) -> dict:
    return {"start_ns": at(start_ms), "end_ns": at(start_ms + 1000), "src": src, "diag": diag,
            "last_gap_ms": last_gap_ms}


def analysis(sessions: list[dict]) -> dict:
    return {"window": {"start_ns": PHASES[0]["start_ns"], "end_ns": PHASES[-1]["end_ns"]},
            "sessions": sessions}


# A 100 ms steal on cpu 1 seen at 15 000 ms by a sampler that ran 5.1 ms late:
# window [15 000 - 110.1, 15 000 + 5] ms.
STEAL = [{"ts_ns": at(15_000), "cpu": 1, "steal_ms": 100.0, "sampler_gap_ms": 5.1},
         {"ts_ns": at(16_000), "cpu": 0, "steal_ms": 10.0, "sampler_gap_ms": 5.0}]


def test_steal_windows_rule_a() -> None:
    w = validity.steal_windows(STEAL)
    assert len(w) == 1  # the 10 ms record is below 20 ms
    assert (w[0].start_ns, w[0].end_ns, w[0].cpu) == (at(15_000 - 110.1), at(15_005), 1)
    # exactly 20 ms counts
    assert len(validity.steal_windows([{"ts_ns": at(1), "cpu": 0, "steal_ms": 20.0}])) == 1


def test_excused_episode_peer_silent_during_steal() -> None:
    """The peer stalled 103 ms inside the steal; the engine's session went Down when the
    peer woke up: excused. The totals stay visible."""
    csv_text = HEADER + row(14_996, ENG1, "10.77.1.1", "10.77.0.1", "peer-engine", 103.0)
    an = analysis([session(ENG1, "10.77.0.1", "10.77.1.1", [episode(14_996.2, "10.77.1.1")])])
    a = validity.assess(TOPO, an, csv_text, STEAL, PHASES)
    assert a["void_reasons"] == []
    assert len(a["peer_gaps_explained"]) == 1 and a["peer_gaps_unexplained"] == []
    eng = a["devices"]["engine"]
    assert eng["all"] == {"down_events": 1, "down_events_excused": 1, "down_events_counted": 0}
    assert eng["phases"]["L4"] == eng["all"]
    assert eng["phases"]["idle"]["down_events"] == 0
    ep = eng["episodes"][0]
    assert ep["excused"] and ep["reason"] == validity.EXCUSE_REASON
    assert ep["peer_gap"]["gap_ms"] == 103.0


def test_engine_detects_open_peer_gap_is_excused() -> None:
    """The engine declared Down 31 ms into the peer's silence (gap still open; the peer's
    next packet is later): the CSV row closes after the episode start. Excused."""
    csv_text = HEADER + row(15_000, ENG1, "10.77.1.1", "10.77.0.1", "peer-engine", 100.0)
    an = analysis([session(ENG1, "10.77.0.1", "10.77.1.1", [episode(14_931, "10.77.0.1")])])
    a = validity.assess(TOPO, an, csv_text, STEAL, PHASES)
    assert a["devices"]["engine"]["all"]["down_events_excused"] == 1


def test_counted_episode() -> None:
    """Down events with no peer silence on their session count, whatever else happened:
    the other session's explained gap excuses nothing here, nor does a peer gap that ended
    more than a budget before the episode."""
    csv_text = (HEADER + row(14_996, ENG1, "10.77.1.1", "10.77.0.1", "peer-engine", 103.0))
    an = analysis([
        session(ENG1, "10.77.0.1", "10.77.1.1", [episode(14_996.2 + 31, "10.77.0.1")]),
        session(ENG2, "10.77.0.2", "10.77.1.2", [episode(14_990, "10.77.0.2")]),
        session(BFD1, "10.77.1.1", "10.77.2.1", [episode(20_000, "10.77.2.1", diag=1)])])
    a = validity.assess(TOPO, an, csv_text, STEAL, PHASES)
    assert a["void_reasons"] == []
    assert a["devices"]["engine"]["all"] == {"down_events": 2, "down_events_excused": 0,
                                             "down_events_counted": 2}
    assert a["devices"]["bfdd"]["phases"]["L4"]["down_events_counted"] == 1


def test_unexplained_peer_gap_makes_void() -> None:
    """A peer gap over budget far from any steal window: the peer stalled by itself."""
    csv_text = HEADER + row(5_000, ENG1, "10.77.1.1", "10.77.0.1", "peer-engine", 45.0)
    an = analysis([session(ENG1, "10.77.0.1", "10.77.1.1", [episode(5_000.3, "10.77.1.1")])])
    a = validity.assess(TOPO, an, csv_text, STEAL, PHASES)
    assert len(a["peer_gaps_unexplained"]) == 1
    assert any("outside any hypervisor steal" in r and "phase idle" in r
               for r in a["void_reasons"])
    # gaps within budget and device gaps never count as peer gaps
    ok = (HEADER + row(5_000, ENG1, "10.77.1.1", "10.77.0.1", "peer-engine", 30.0)
          + row(5_000, ENG1, "10.77.0.1", "10.77.1.1", "engine", 45.0))
    assert validity.assess(TOPO, an, ok, STEAL, PHASES)["void_reasons"] == []


def test_peer_silence_seen_only_as_episode_or_detection() -> None:
    """A peer that wakes up and sends Down leaves no CSV row: its last_gap before the
    episode, or the device's detection of its silence, still counts as a peer gap."""
    an = analysis([
        session(ENG1, "10.77.0.1", "10.77.1.1", [episode(8_000, "10.77.1.1", last_gap_ms=90)]),
        session(ENG2, "10.77.0.2", "10.77.1.2", [episode(14_960, "10.77.0.2")],
                detections=[{"ts_ns": at(14_960), "detect_ms": 31.0, "budget_ms": 30.0}])])
    a = validity.assess(TOPO, an, HEADER, STEAL, PHASES)
    srcs = {(g["session"], g["source"]) for g in a["peer_gaps_unexplained"]}
    assert srcs == {(ENG1, "episode")}
    assert [(g["session"], g["source"]) for g in a["peer_gaps_explained"]] == [(ENG2, "detection")]
    assert a["devices"]["engine"]["all"]["down_events_excused"] == 2  # both silences excuse
    assert a["void_reasons"]  # but the unexplained one voids the run


def test_steal_coverage_over_5_percent_makes_void() -> None:
    """Five 100 ms steals in the 10 s idle phase, each window 100 + 0.1 + 5 + 5 ms long:
    5 x 110.1 ms = 5.5 % of 10 s > 5 %; four are 4.4 %."""
    recs = [{"ts_ns": at(1_000 + 1_000 * i), "cpu": i % 2, "steal_ms": 100.0,
             "sampler_gap_ms": 0.1} for i in range(5)]
    w = validity.steal_windows(recs)
    assert validity.coverage(w, PHASES[0]["start_ns"], PHASES[0]["end_ns"]) == pytest.approx(
        5 * 110.1 / 10_000)
    a = validity.assess(TOPO, analysis([]), HEADER, recs, PHASES)
    assert any("cover 5.5 % of phase idle" in r for r in a["void_reasons"])
    # overlapping windows are counted once; four steals stay under the limit
    assert validity.coverage(w + w, PHASES[0]["start_ns"], PHASES[0]["end_ns"]) == \
        pytest.approx(5 * 110.1 / 10_000)
    assert validity.assess(TOPO, analysis([]), HEADER, recs[:4], PHASES)["void_reasons"] == []


def _summary(eng_counted: int, bfdd_counted_l4: int, up: int = 32) -> dict:
    def dev(kind: str, tot: int, exc: int) -> dict:
        return {"kind": kind, "sessions": 32, "sessions_up_end": up if kind == "engine" else 32,
                "down_events": tot, "down_events_excused": exc,
                "down_events_counted": tot - exc}
    phases = [{"name": "idle", "duts": {"engine": dev("engine", 0, 0), "bfdd": dev("bfdd", 0, 0)}},
              {"name": "L4", "duts": {"engine": dev("engine", 8 + eng_counted, 8),
                                      "bfdd": dev("bfdd", bfdd_counted_l4, 0)}}]
    return {"void": False, "void_reasons": [], "phases": phases,
            "duts": {"engine": dev("engine", 8 + eng_counted, 8),
                     "bfdd": dev("bfdd", bfdd_counted_l4, 0)}}


def test_verdict_rule_d() -> None:
    s = _summary(0, 300)
    assert report.witness(s, ["L4"]) == []
    assert report.verdict(s) == ("PASS", [])  # 8 excused engine down events do not fail
    v, why = report.verdict(_summary(1, 300))
    assert v == "FAIL" and why == ["engine: 1 counted down events (L4 1)"]
    assert report.verdict(_summary(0, 300, up=31))[0] == "FAIL"
    assert report.witness(_summary(0, 0), ["L4"]) == [
        "the load did not bite: stock bfdd had 0 counted down events under L4"]
    s = _summary(0, 300)
    del s["duts"]["bfdd"]
    assert "no stock bfdd" in report.witness(s, ["L4"])[0]
    assert "8 down events (8 excused: peer silent beyond budget during hypervisor steal; "\
        "0 counted)" == report.down_line(_summary(0, 0)["duts"]["engine"])


def test_peer_early_down() -> None:
    """The peer, frozen by a steal, wakes up to its detection timer before reading the
    device's packet waiting for it: Down diag 1 only 7.6 ms after the device's last packet
    (budget 150), whose own gap was 147.8 ms. In a steal window: excused (reason: early
    Down). Outside one, the same race counts against the device; a peer that fires before
    even the device's previous packet could expire (its gap 10 ms) voids the run."""
    def an(ts_ms: float) -> dict:
        s = session(ENG1, "10.77.0.1", "10.77.1.1", [episode(ts_ms, "10.77.1.1")])
        s["ends"][0]["detections"] = [{"ts_ns": at(ts_ms), "detect_ms": 7.6,
                                       "budget_ms": 150.0}]
        return analysis([s])

    def gap(ts_ms: float, g: float) -> str:
        return HEADER + row(ts_ms - 7.6, ENG1, "10.77.0.1", "10.77.1.1", "engine", g, 150)

    a = validity.assess(TOPO, an(15_002), gap(15_002, 147.8), STEAL, PHASES)
    assert a["void_reasons"] == []
    assert a["devices"]["engine"]["all"]["down_events_excused"] == 1
    assert a["devices"]["engine"]["episodes"][0]["reason"] == validity.EARLY_REASON
    assert len(a["peer_early_downs_explained"]) == 1
    b = validity.assess(TOPO, an(12_000), gap(12_000, 147.8), STEAL, PHASES)
    assert b["void_reasons"] == [] and len(b["peer_early_downs_races"]) == 1
    assert b["devices"]["engine"]["all"]["down_events_counted"] == 1
    c = validity.assess(TOPO, an(12_000), gap(12_000, 10.0), STEAL, PHASES)
    assert any("early Down(s) by the peer outside any hypervisor steal" in r
               for r in c["void_reasons"])


def test_steal_observations_merged() -> None:
    """One sampler per CPU: the same increment (cpu 1, ticks 5-15) seen at once by the
    sampler on the other vCPU and 95 ms later by the one frozen with it: keep the first."""
    from lab import steal
    recs = [{"ts_ns": at(15_000), "cpu": 1, "steal_ms": 100.0, "sampler_gap_ms": 5.0,
             "from_ticks": 5, "to_ticks": 15, "sampler": 0},
            {"ts_ns": at(15_095), "cpu": 1, "steal_ms": 100.0, "sampler_gap_ms": 100.0,
             "from_ticks": 5, "to_ticks": 15, "sampler": 1},
            {"ts_ns": at(15_100), "cpu": 0, "steal_ms": 30.0, "sampler_gap_ms": 5.0,
             "from_ticks": 5, "to_ticks": 8, "sampler": 0}]
    got = steal.merge(recs)
    assert [(r["cpu"], r["sampler"]) for r in got] == [(1, 0), (0, 0)]
    w = validity.steal_windows(got)
    assert w[0].end_ns - w[0].start_ns == round((100 + 5 + 5 + 5) * MS)
