"""lab.judge.plot (python3 -m lab plot) draws PNGs from bfdcap's report: from a run folder, a
report with its capture, and a report alone (percentile fallback)."""

from __future__ import annotations

import json
import os
import subprocess

import pcapgen as g
from conftest import BFDCAP, ROOT
from test_synthetic import flap_events, session

from lab.judge import plot

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(path) -> bool:
    return path.stat().st_size > 5000 and path.read_bytes()[:8] == PNG


def test_plot_from_report_and_capture(tmp_path):
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    report = json.loads(subprocess.run([str(BFDCAP), "--json", "--tag", "a=192.0.2.1",
                                        str(tmp_path / "f.pcap")], capture_output=True,
                                       check=True).stdout)
    (tmp_path / "r.json").write_text(json.dumps(report))
    gaps = plot.gaps_by_class(report,
                              plot.capture_gaps(report, tmp_path / "f.pcap", str(BFDCAP)))
    assert sorted(gaps) == [("", "10ms x3"), ("a", "10ms x3")]
    assert sum(len(v) for v in gaps.values()) == 18
    out = plot.plot(tmp_path / "r.json", tmp_path / "png", bfdcap=str(BFDCAP))
    assert [p.name for p in out] == ["gap_survival.png", "down_events.png"]
    assert all(is_png(p) for p in out)


def test_plot_report_alone_and_run_folder(tmp_path):
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    report = json.loads(subprocess.run([str(BFDCAP), "--json", str(tmp_path / "f.pcap")],
                                       capture_output=True, check=True).stdout)
    report["file"] = str(tmp_path / "gone.pcap")  # capture no longer there: percentiles
    out = plot.plot(report, tmp_path / "a", bfdcap=str(BFDCAP))
    assert all(is_png(p) for p in out)
    run = tmp_path / "run"
    run.mkdir()
    (run / "wire.pcap").write_bytes((tmp_path / "f.pcap").read_bytes())
    (run / "summary.json").write_text(json.dumps({"void": False, "duts": {}}))
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run(["/usr/bin/python3", "-m", "lab", "plot", str(run / "summary.json"),
                        "--bfdcap", str(BFDCAP)], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=True)
    assert r.stdout.split() == [str(run / "gap_survival.png"), str(run / "down_events.png")]
    assert is_png(run / "gap_survival.png") and is_png(run / "down_events.png")
