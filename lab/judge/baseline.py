"""baseline - `python3 -m lab baseline --name NAME RUN_DIR...`: a baseline from ladder runs.

The worst figure of the runs per gated device, step and class, in the shape `python3 -m lab
gate --baseline FILE` checks a run against (results/schema/baseline.schema.json).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .. import runfiles
from .gate import (BASELINE_SCHEMA, GATES, gated_devices, gated_steps, ladder_summary_problem,
                   load_gates, run_void_reasons, step_void_reasons)


def make_baseline(run_dirs: list[Path], name: str, description: str,
                  gates: Path = GATES, extend: dict[str, Any] | None = None) -> dict[str, Any]:
    """A baseline from ladder runs: per gated device, step and class, the worst value of
    the runs (counted down events; p99 and max/budget where no gap over budget was excused,
    since a stalled peer only adds noise). VOID steps (too much steal, an unexplained peer
    gap, load or flood not proven, no contrast: lab.judge.summarise) are left out and listed;
    a run with a run-level VOID reason (incomplete, capture, sampler) is refused.
    EXTEND (a baseline already checked against its schema) starts the worst-of from its figures
    and keeps its sources, so a baseline grows with each known-good run of an unchanged engine
    whose run folders are gone."""
    g = load_gates(gates)
    devices: dict[str, Any] = copy.deepcopy(extend["devices"]) if extend else {}
    sources = list(extend["source"]) if extend else []
    for rd in run_dirs:
        s = runfiles.read("summary", Path(rd) / "summary.json")
        why = ladder_summary_problem(s)
        if why:
            raise ValueError(f"{rd}: {why}")
        bad_steps = {n: r for n, r in step_void_reasons(s).items() if r}
        run_level = run_void_reasons(s)
        if run_level:
            raise ValueError(f"{rd}: VOID for the whole run ({'; '.join(run_level)})")
        sources.append({"run_id": s.get("run_id"), "commit": s.get("commit"),
                        "profile": s.get("profile"), "kernel": s.get("kernel"),
                        "nproc": s.get("nproc"), "verdict": s.get("verdict"),
                        "void_reasons": s.get("void_reasons"),
                        "steps_left_out": {n: r for n, r in bad_steps.items()}})
        for dev in gated_devices(s, g):
            steps = devices.setdefault(dev, {"steps": {}})["steps"]
            for step, lv in gated_steps(s, g):
                sd = lv["duts"].get(dev)
                if sd is None or step in bad_steps:
                    continue
                b = steps.setdefault(step, {"down_events_counted": 0, "classes": {}})
                b["down_events_counted"] = max(b["down_events_counted"],
                                               sd.get("down_events_counted", 0))
                for cname, c in sd["classes"].items():
                    if c.get("gaps_over_budget_excused"):
                        continue
                    bc = b["classes"].setdefault(cname, {})
                    p99 = (c.get("gap_ms") or {}).get("p99")
                    for k, v in (("p99_ms", p99), ("max_over_budget", c.get("max_over_budget"))):
                        if v is not None:
                            bc[k] = max(bc.get(k, v), v)
    return runfiles.check("baseline", {"schema": BASELINE_SCHEMA, "name": name,
                                       "description": description, "source": sources,
                                       "devices": devices}, f"baseline {name}")
