"""The L4 contrast witness of a single-device bare-metal run (lab.judge.witness): the dut
runs the engine alone, so the stock bfdd that shows the load bit comes from a witness run
of the same machine under the same ladder (`topo render --stock`, "Stock bfdd first"),
named in run.json; every way that run can fail to witness is named, and `lab report`
judges a run folder with it."""

from __future__ import annotations

import json
from pathlib import Path

from lab.judge import verdict, witness

L4_ARGV = ["stress-ng", "--cpu", "12", "--sched", "fifo", "--sched-prio", "50"]


def run_meta(ssh: str = "dut.lab.example", argv: list[str] = L4_ARGV) -> dict:
    return {"hosts": {"dut1": {"role": "dut", "ssh": ssh}, "peer1": {"role": "peer",
                                                                     "ssh": "peer"}},
            "steps": [{"name": "L4", "load": {"argv": argv}}]}


def witness_run(root: Path, counted: int = 912, verdict_: str = "INFO", ssh: str =
                "dut.lab.example", argv: list[str] = L4_ARGV, kind: str = "bfdd") -> Path:
    w = root / "stock-1"
    w.mkdir(parents=True, exist_ok=True)
    (w / "run.json").write_text(json.dumps(run_meta(ssh, argv)))
    (w / "summary.json").write_text(json.dumps({
        "duts": {"engine": {"kind": kind}},
        "levels": {"L4": {"verdict": verdict_, "void_reasons": ["peer stalled"]
                          if verdict_ == "VOID" else [],
                          "duts": {"engine": {"down_events": counted,
                                              "down_events_counted": counted}}}}}))
    return w


def engine_alone(counted: int = 0) -> dict:
    return {"duts": {"engine": {"kind": "engine"}},
            "phases": [{"name": "L4", "duts": {"engine": {"down_events_counted": counted}}}]}


def test_witness_run_holds(tmp_path: Path) -> None:
    witness_run(tmp_path)
    meta = dict(run_meta(), witness_run="stock-1")
    ext = witness.from_run(tmp_path / "run-2", meta, ["L4"])
    assert ext == {"L4": []}
    assert verdict.witness(engine_alone(), ["L4"], ext) == {"L4": []}
    assert witness.note(tmp_path / "run-2", meta, ["L4"]) == (
        "contrast witness from run stock-1: stock engine 912 counted down events under L4")


def test_without_a_witness_run_l4_is_void() -> None:
    assert verdict.witness(engine_alone(), ["L4"]) == {"L4": [
        "no stock bfdd in the run (and no witness run named): nothing witnesses that the "
        "load bit"]}


def test_every_way_a_witness_run_fails(tmp_path: Path) -> None:
    meta = dict(run_meta(), witness_run=str(tmp_path / "stock-1"))
    r = tmp_path / "run-2"
    assert witness.from_run(r, meta, ["L4"])["L4"][0].startswith(
        "witness run stock-1: no report to read (FileNotFoundError): run python3 -m lab "
        "report ")
    witness_run(tmp_path, counted=0)
    assert witness.from_run(r, meta, ["L4"]) == {"L4": [
        "the load did not bite: stock bfdd had 0 counted down events under L4 in witness "
        "run stock-1"]}
    witness_run(tmp_path, ssh="other.lab.example")
    assert witness.from_run(r, meta, ["L4"]) == {"L4": [
        "witness run stock-1 ran on other.lab.example, not on this run's dut.lab.example"]}
    witness_run(tmp_path, argv=L4_ARGV[:3] + ["2"])
    assert "ran another load at L4" in witness.from_run(r, meta, ["L4"])["L4"][0]
    witness_run(tmp_path, verdict_="VOID")
    assert witness.from_run(r, meta, ["L4"]) == {"L4": [
        "witness run stock-1: its L4 is VOID (peer stalled)"]}
    witness_run(tmp_path, kind="engine")
    assert witness.from_run(r, meta, ["L4"])["L4"] == ["witness run stock-1 has no stock bfdd"]
    assert witness.from_run(r, meta, ["L3"]) == {"L3": [
        "witness run stock-1 has no stock bfdd", "witness run stock-1 has no step L3"]}
    # a run that carries its own stock bfdd judges by it, whatever run it names
    s = engine_alone()
    s["duts"]["bfdd"] = {"kind": "bfdd"}
    s["phases"][0]["duts"]["bfdd"] = {"down_events_counted": 4}
    assert verdict.witness(s, ["L4"], {"L4": ["ignored"]}) == {"L4": []}


def test_report_says_what_the_witness_run_showed() -> None:
    from lab.judge import render_ladder
    ok = {"witness_run": {"run": "stock-1", "reasons": {"L4": []},
                          "note": "contrast witness from run stock-1: stock bfdd 74 counted "
                                  "down events under L4"}}
    assert render_ladder.witness_lines(ok) == [ok["witness_run"]["note"]]
    bad = {"witness_run": {"run": "stock-1", "note": "", "reasons": {
        "L4": ["witness run stock-1 has no stock bfdd"]}}}
    assert render_ladder.witness_lines(bad) == [
        "witness run stock-1 does not witness: L4: witness run stock-1 has no stock bfdd"]
    assert render_ladder.witness_lines({}) == []
