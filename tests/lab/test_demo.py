"""End to end: a short demo (idle 10 s, L4 20 s, idle 10 s) with both devices, as root.

Asserts what the issue's "done when" asks of the engine: every session Up at the end and 0
down events under L4, in a run that is not VOID. Stock bfdd's figures are printed beside it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from lab import demo, netns, registry, report  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="the lab needs root (namespaces, XDP, SCHED_DEADLINE)")


def _missing(*names: str) -> list[str]:
    return [n for n in names if not (REPO / "build" / n).exists()]


def _void_by_host_steal(s: dict) -> bool:
    """VOID only because the peer stalled while the hypervisor held a vCPU (lab/steal.py)."""
    return (s["void"] and bool(s.get("steal_events"))
            and all("peer's own transmit gap" in r for r in s["void_reasons"]))


def _outside(s: dict) -> int:
    e = s["duts"]["engine"]
    return e.get("down_episodes", 0) - e.get("down_events_near_steal", 0)


def _run_once() -> dict:
    before = set(netns.list_lab_namespaces())
    cfg = demo.DemoConfig(idle_s=10, load_s=20, idle2_s=10,
                          runs_root=REPO / "results" / "runs" / "tests")
    summary = demo.run(cfg)
    print(report.tables(summary))
    # nothing of this run is left behind
    assert set(netns.list_lab_namespaces()) - before == set()
    assert not (registry.ROOT / f"{summary['tag']}.json").exists()
    assert not Path(f"/var/run/frr/{summary['tag']}-peer").exists()
    return summary


@pytest.fixture(scope="module")
def short_demo() -> dict:
    missing = _missing("xdp-bfd", "bfdcap", "xdp_pass.bpf.o")
    if missing:
        pytest.skip(f"not built: {', '.join(missing)} (make)")
    summary = _run_once()
    if _void_by_host_steal(summary):
        # The host deschedules a vCPU for ~100 ms now and then under L4: nothing in the guest
        # shields the peer from that. One more try; then say so rather than pass or fail.
        first = summary["void_reasons"]
        summary = _run_once()
        if _void_by_host_steal(summary):
            ev = summary["steal_events"]
            pytest.skip("VOID twice, the hypervisor stole the peer's vCPU: "
                        f"{first[0]}; then {summary['void_reasons'][0]}, with {len(ev)} steals "
                        f"of >= 50 ms on the vCPUs (engine down events outside them: "
                        f"{_outside(summary)})")
    return summary


def test_run_is_valid(short_demo: dict) -> None:
    s = short_demo
    assert not s["void"], f"VOID: {s['void_reasons']}"
    assert s["capture"]["dropped"] == 0
    assert s["load"]["ran"], s["load"]["problems"]
    assert s["peer"]["max_over_budget"] < 1.0


def test_engine_sessions_up_and_no_down_events(short_demo: dict) -> None:
    eng = short_demo["duts"]["engine"]
    assert eng["sessions"] == 32
    assert eng["sessions_up_end"] == 32, report.tables(short_demo)
    assert eng["down_events"] == 0, report.tables(short_demo)
    l4 = [p for p in short_demo["phases"] if p["name"] == "L4"]
    assert l4 and l4[0]["duts"]["engine"]["down_events"] == 0
    for cname, c in eng["classes"].items():
        assert c["max_over_budget"] is not None and c["max_over_budget"] < 1.0, cname


def test_engine_carried_the_sessions(short_demo: dict) -> None:
    st = short_demo["engine_stats"].get("engine")
    assert st is not None, "the engine wrote no stats on SIGUSR1"
    assert st.get("kernel_tx") is True
    assert st.get("sessions_configured") == 32
    assert st.get("sessions_up") == 32


def test_summary_files(short_demo: dict) -> None:
    run_dir = Path(short_demo["run_dir"])
    for f in ("summary.json", "report.md", "capture.pcap", "phases.json", "logs/commands.log",
              "logs/engine.log", "logs/tcpdump.log", "logs/frr-peer/bfdd.log"):
        assert (run_dir / f).exists(), f
    for cname in ("10ms", "50ms", "300ms"):
        c = short_demo["duts"]["engine"]["classes"][cname]
        assert set(c["gap_ms"]) >= {"p50", "p99", "max"} and c["budget_ms"]


def test_cli_report_reanalyses_saved_run(short_demo: dict) -> None:
    cp = subprocess.run(["/usr/bin/python3", "-m", "lab", "report", short_demo["run_dir"]],
                        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert "engine (bfdd + xdp-bfd): 32/32 sessions Up" in cp.stdout, cp.stdout + cp.stderr
