"""Fast tests of the ladder's data, the flood frames and the gate (no root, no lab run)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from lab.harness import ladder_file as ladder
from lab.judge import baseline, gate
from lab.rig import flood
from lab.topo import TopologyError

REPO = Path(__file__).resolve().parents[2]


def test_levels_scaled_to_two_cpus_as_ladder_md() -> None:
    lad = ladder.load_ladder()
    args = {n: lv.load(2).argv(10, 2)[1:-3] for n, lv in lad.levels.items()}
    assert args["L1"] == ["--cpu", "2"]
    assert args["L2"] == ["--cpu", "4", "--switch", "2", "--yield", "2"]
    assert args["L3"] == ["--cpu", "2", "--timer", "4", "--timerfd", "2", "--hrtimers", "1"]
    assert args["L4"] == ["--cpu", "2", "--sched", "fifo", "--sched-prio", "50"]
    assert args["L4-99"] == ["--cpu", "2", "--sched", "fifo", "--sched-prio", "99"]
    assert args["M95"] == ["--vm", "2", "--vm-bytes", "95%", "--vm-keep"]
    assert args["F50+M90"][:4] == ["--cpu", "2", "--vm", "1"]
    assert args["T+M85"][:6] == ["--cpu", "2", "--timer", "4", "--vm", "1"]
    # every stress-ng run is bounded
    assert lad.levels["L4"].load(2).argv(20, 2)[-3:] == ["--timeout", "20s", "--metrics-brief"]
    # 12 threads scale back to the reference
    assert lad.levels["L3"].load(4).argv(1, 4)[1:-3] == [
        "--cpu", "4", "--timer", "8", "--timerfd", "4", "--hrtimers", "2"]


def test_profiles() -> None:
    lad = ladder.load_ladder()
    ci = ladder.plan(lad, "ci")
    names = [s.name for s in ci]
    assert names[:3] == ["idle", "L1", "L1-rec"]
    assert [s.name for s in ci if s.kind == "level"] == ["L1", "L2", "L3", "L4", "L4-99"]
    assert [s.arm for s in ci if s.kind == "flood"] == list("ABCDEFG")
    assert not any(s.level and s.level.memory for s in ci)
    with pytest.raises(Exception, match="never run in the ci profile"):
        ladder.plan(lad, "ci", with_memory=True)
    full = ladder.plan(lad, "full")
    assert [(s.name, s.seconds) for s in full if s.kind == "level"] == [
        ("L1", 90), ("L2", 90), ("L3", 90), ("L4", 90), ("L4-99", 60)]
    assert full[-1].name == "soak" and full[-1].seconds == 300
    mem = [s.name for s in ladder.plan(lad, "full", with_memory=True) if s.kind == "level"]
    assert mem == ["L1", "L2", "L3", "L4", "L4-99"]  # full lists no memory level
    hostile = ladder.plan(lad, "hostile", with_memory=True)
    assert [s.level.name for s in hostile if s.level][:6] == [
        "L4-99", "L3", "M95", "F50+M90", "M110", "T+M85"]
    assert hostile[1].alongside == tuple("ABCDE")
    assert not [s for s in hostile if s.kind == "flood"]


def test_bad_ladder_fails_at_load(tmp_path: Path) -> None:
    text = ladder.LADDER.read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("reference_threads = 4", "reference_thread = 4", 1))
    with pytest.raises(TopologyError, match="unknown key"):
        ladder.load_ladder(bad)
    bad.write_text(text.replace('levels = ["L1", "L2"', 'levels = ["L9", "L2"', 1))
    with pytest.raises(TopologyError, match="unknown level"):
        ladder.load_ladder(bad)


T = flood.Target("engine", "02:00:00:00:00:02", "10.77.0.1", "10.77.1.1", "02:00:00:00:00:01",
                 "10.77.255.254", "10.77.255.253")


@pytest.mark.parametrize("arm", list(flood.ARMS))
def test_flood_frames(arm: str) -> None:
    from scapy.layers.inet import IP, UDP  # python3-scapy (packaging/deps.txt)
    from scapy.layers.l2 import Ether

    raw = flood.frame(arm, T)
    assert len(raw) == flood.FRAME_LEN  # equal sizes: per-frame costs compare across arms
    pkt = Ether(raw)
    ip, udp = pkt[IP], pkt[UDP]
    hdr = IP(bytes(ip)[:20])
    del hdr.chksum  # scapy recomputes a deleted checksum
    assert IP(bytes(hdr)).chksum == ip.chksum
    payload = bytes(udp.payload)[:udp.len - 8]
    if arm == "A":
        assert udp.dport == 12345 and udp.chksum == 0 and ip.ttl == 64
        return
    # a valid UDP checksum: scapy recomputes it when the field is deleted
    re = IP(src=ip.src, dst=ip.dst) / UDP(sport=udp.sport, dport=udp.dport) / payload
    assert IP(bytes(re))[UDP].chksum == udp.chksum
    if arm == "G":
        assert udp.dport == 3785 and ip.src == ip.dst == "10.77.0.1"
        return
    assert udp.dport == 3784
    if arm == "C":
        assert len(payload) == 16 and payload[0] >> 5 == 0
        return
    assert payload[0] >> 5 == 1
    state, your = payload[1] >> 6, int.from_bytes(payload[8:12], "big")
    expect = {"B": (64, 3, 0x01020304, "10.77.1.1"), "D": (255, 1, 0, "10.77.255.253"),
              "E": (255, 3, 0xDEADBEEF, "10.77.1.1"), "F": (255, 1, 0, "10.77.1.1")}[arm]
    assert (ip.ttl, state, your, ip.src) == expect
    if arm == "F":
        assert payload[1] & 0x04 and payload[3] == 52 and payload[24] == 4  # A, len, SHA1
    assert flood.trafgen_cfg(raw, arm == "A").count(",") == flood.FRAME_LEN - 1


def test_livegen_program_encoding() -> None:
    from lab.rig import livegen
    assert livegen.program(False) == bytes.fromhex("b700000003000000" "9500000000000000")
    assert len(livegen.program(True)) == 12 * 8


def _summary() -> dict:
    cls = {"family": "ipv4", "multihop": False, "echo": False, "demand": False,
           "asymmetric": False, "peer": "frr",
           "gap_ms": {"p99": 10.04, "max": 12.0}, "interval_ms": 10.0, "budget_ms": 30.0,
           "max_over_budget": 0.4, "gaps_over_budget": 0, "gaps_over_budget_excused": 0,
           "gaps_over_budget_counted": 0}
    peer = {"towards": {"engine": {"classes": {"10ms": dict(cls, gap_ms={"p99": 10.03})}}}}

    def step(counted: int = 0) -> dict:
        return {"duts": {"engine": {"down_events": counted, "down_events_excused": 0,
                                    "down_events_counted": counted,
                                    "classes": {"10ms": copy.deepcopy(cls)}},
                         "bfdd": {"down_events": 300, "down_events_counted": 300,
                                  "classes": {}}},
                "peer": peer}
    return {"run_id": "synthetic", "profile": "ci", "void": False, "void_reasons": [],
            "duts": {"engine": {"kind": "engine", "sessions": 32, "sessions_up_end": 32},
                     "bfdd": {"kind": "bfdd", "sessions": 32, "sessions_up_end": 32,
                              "down_events": 300, "down_events_counted": 300}},
            "levels": {"L3": step(), "L4": step(), "flood-F": step(5)}}


def _judge(tmp_path: Path, s: dict, baseline: dict | None = None) -> tuple[int, str]:
    (tmp_path / "summary.json").write_text(json.dumps(s))
    b = None
    if baseline is not None:
        b = tmp_path / "base.json"
        b.write_text(json.dumps(baseline))
    lines: list[str] = []
    rc = gate.judge(tmp_path, gate.GATES, b, out=lines.append)
    return rc, "\n".join(lines)


def test_gate_pass_fail_void(tmp_path: Path) -> None:
    s = _summary()
    rc, text = _judge(tmp_path, s)
    assert rc == 0, text  # flood-F's 5 down events are ungated (ladder.md 7.5)
    bad = copy.deepcopy(s)
    bad["levels"]["L4"]["duts"]["engine"]["down_events_counted"] = 2
    bad["levels"]["L4"]["duts"]["engine"]["classes"]["10ms"]["gap_ms"]["p99"] = 12.5
    rc, text = _judge(tmp_path, bad)
    assert rc == 1
    assert "FAIL L4 engine" in text and "down events counted" in text
    assert "REGRESSED: 2 of" in text and "gap p99 ms 12.500 > 11.033 (gate)" in text
    # max/budget over 1 passes only when every gap over budget is excused
    ex = copy.deepcopy(s)
    c = ex["levels"]["L3"]["duts"]["engine"]["classes"]["10ms"]
    c.update(max_over_budget=3.6, gaps_over_budget=8, gaps_over_budget_excused=8)
    assert _judge(tmp_path, ex)[0] == 0
    c.update(gaps_over_budget_counted=1)
    assert _judge(tmp_path, ex)[0] == 1
    v = dict(s, void=True, void_reasons=["steal"])
    rc, text = _judge(tmp_path, v)
    assert rc == 2 and "cannot pass" in text


def test_gate_against_baseline(tmp_path: Path) -> None:
    base = {"schema": gate.BASELINE_SCHEMA, "name": "b", "devices": {"engine": {"steps": {
        "*": {"down_events_counted": 0, "classes": {"*": {"p99_ms": 10.05,
                                                          "max_over_budget": 0.45}}}}}}}
    s = _summary()
    assert _judge(tmp_path, s, base)[0] == 0
    s["levels"]["L3"]["duts"]["engine"]["classes"]["10ms"]["max_over_budget"] = 0.9
    rc, text = _judge(tmp_path, s, base)
    assert rc == 1 and "max gap / budget" in text and "(b)" in text
    for name in ("netns-2cpu", "i210-published"):
        b = json.loads((REPO / "results" / "baselines" / f"{name}.json").read_text())
        assert b["schema"] == gate.BASELINE_SCHEMA and b["devices"]["engine"]["steps"]


def test_gate_step_by_step(tmp_path: Path) -> None:
    """Verdicts level by level: a VOID step is not judged (its counted events and figures do
    not fail the run) and is printed first with its reasons; a VOID required step (L4, the
    contrast witness) or more than half of the steps VOID make the run VOID (exit 2); a
    run-level reason does too."""
    g = gate.load_gates()
    assert g.ladder_required == ("L4",) and g.demo_required == ("L4",)
    assert g.void_fraction_max == 0.5
    s = _summary()
    s["run_void_reasons"] = []
    s["levels"]["L3"]["duts"]["engine"]["down_events_counted"] = 3
    s["levels"]["L3"]["void_reasons"] = ["1 peer gap(s) over budget not explained by host steal"]
    rc, text = _judge(tmp_path, s)
    assert rc == 0, text
    lines = text.splitlines()
    assert lines[1].startswith("VOID steps (1 of 3")
    assert lines[2] == "  VOID L3: 1 peer gap(s) over budget not explained by host steal"
    assert "steps: L3 VOID, L4 PASS, flood-F INFO" in text
    assert "1 VOID step(s) not judged: L3" in text
    req = copy.deepcopy(s)
    req["levels"]["L4"]["void_reasons"] = ["host steal 2500 ms on cpu1, 12.5 % of the step"]
    rc, text = _judge(tmp_path, req)
    assert rc == 2 and "required step L4 is VOID (host steal 2500 ms" in text
    most = copy.deepcopy(s)
    most["levels"]["flood-F"]["void_reasons"] = ["flood F towards engine reached 10 pps"]
    rc, text = _judge(tmp_path, most)
    assert rc == 2 and "2 of 3 steps are VOID (more than 50 %)" in text
    run = dict(s, run_void_reasons=["tcpdump dropped 4 packets"])
    rc, text = _judge(tmp_path, run)
    assert rc == 2 and "VOID: tcpdump dropped 4 packets" in text
    # a regression in a judged step still fails beside a VOID one
    bad = copy.deepcopy(s)
    bad["levels"]["L4"]["duts"]["engine"]["down_events_counted"] = 1
    rc, text = _judge(tmp_path, bad)
    assert rc == 1 and "steps: L3 VOID, L4 FAIL, flood-F INFO" in text


def test_baseline_leaves_void_steps_out(tmp_path: Path) -> None:
    s = _summary()
    s["run_void_reasons"] = []
    s["levels"]["L3"]["void_reasons"] = ["host steal 2100 ms on cpu0, 10.5 % of the step"]
    (tmp_path / "summary.json").write_text(json.dumps(s))
    b = baseline.make_baseline([tmp_path], "t", "")
    assert set(b["devices"]["engine"]["steps"]) == {"L4"}  # flood-F is ungated
    assert b["source"][0]["steps_left_out"] == {"L3": s["levels"]["L3"]["void_reasons"]}
    s["run_void_reasons"] = ["tcpdump dropped 1 packets"]
    (tmp_path / "summary.json").write_text(json.dumps(s))
    with pytest.raises(ValueError, match="VOID for the whole run"):
        baseline.make_baseline([tmp_path], "t", "")


def test_inet_checksum_matches_rfc1071() -> None:
    from lab.wire.frames import inet_checksum
    # RFC 1071 section 3's example: the words 0001 f203 f4f5 f6f7 sum to ddf2
    assert inet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    # an odd length is padded with a zero byte
    assert inet_checksum(b"\x01") == inet_checksum(b"\x01\x00") == 0xFEFF


def test_baseline_extend_keeps_the_worst_of_both(tmp_path: Path) -> None:
    s = _summary()
    s["run_void_reasons"] = []
    (tmp_path / "summary.json").write_text(json.dumps(s))
    first = baseline.make_baseline([tmp_path], "t", "")
    c = first["devices"]["engine"]["steps"]["L4"]["classes"]
    name = next(iter(c))
    was = c[name]["max_over_budget"]
    # a second run, better in max/budget, worse in p99: each figure keeps its worst
    s2 = copy.deepcopy(s)
    c2 = s2["levels"]["L4"]["duts"]["engine"]["classes"][name]
    c2["max_over_budget"] = was / 2
    c2["gap_ms"]["p99"] = c[name]["p99_ms"] + 1.5
    d2 = tmp_path / "two"
    d2.mkdir()
    (d2 / "summary.json").write_text(json.dumps(s2))
    both = baseline.make_baseline([d2], "t", "", extend=first)
    got = both["devices"]["engine"]["steps"]["L4"]["classes"][name]
    assert got["max_over_budget"] == was
    assert got["p99_ms"] == c[name]["p99_ms"] + 1.5
    assert len(both["source"]) == 2
    # the baseline extended from is not changed
    assert first["devices"]["engine"]["steps"]["L4"]["classes"][name]["p99_ms"] == c[name]["p99_ms"]
