"""witness - the contrast witness of a run whose devices are all engines: a stock-bfdd run of
the same machine under the same load, named in run.json as "witness_run".

The ladder's L4 must show that the load bit: a stock bfdd under it has counted down events
(../shared/docs/ladder.md section 7.4; lab.judge.verdict.witness). A namespace run and a
bare-metal testbed with a second dut host carry the stock bfdd in the run itself. A single
device under test cannot run both at once on its one NIC, so its witness is the run that
came first on the reference testbed ("Stock bfdd first", ../shared/seeds/001): the same
description rendered with `--stock`, the same ladder, on the same machine, reported before
(`python3 -m lab report WITNESS`). from_run() checks that run and gives, per contrast step,
the VOID reasons it leaves (none when it witnesses).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .verdict import counted


def _load_argv(meta: dict[str, Any], step: str) -> list[Any] | None:
    for st in meta.get("steps") or []:
        if st.get("name") == step and st.get("load"):
            return st["load"].get("argv")
    return None


def _dut_machines(meta: dict[str, Any]) -> set[str]:
    return {h.get("ssh", "") for h in (meta.get("hosts") or {}).values()
            if h.get("role") == "dut"}


def resolve(run_dir: Path, name: str) -> Path:
    """The witness run folder NAME (absolute, or relative to RUN_DIR's parent)."""
    p = Path(name)
    return p if p.is_absolute() else run_dir.parent / p


def from_run(run_dir: Path, meta: dict[str, Any], steps: list[str]) -> dict[str, list[str]]:
    """Per step of STEPS, the VOID reasons the witness run named in META leaves: none when
    its stock bfdd had counted down events there, on the same dut machine(s), under the same
    stress-ng command line, with the step not VOID for a reason of its own."""
    wdir = resolve(run_dir, meta["witness_run"])
    name = wdir.name
    try:
        ws = json.loads((wdir / "summary.json").read_text())
        wmeta = json.loads((wdir / "run.json").read_text())
    except (OSError, ValueError) as e:
        why = (f"witness run {name}: no report to read ({e.__class__.__name__}): run "
               f"python3 -m lab report {wdir} first")
        return {s: [why] for s in steps}
    stock = [n for n, d in (ws.get("duts") or {}).items() if d.get("kind") == "bfdd"]
    mine, theirs = _dut_machines(meta), _dut_machines(wmeta)
    out: dict[str, list[str]] = {}
    for s in steps:
        why = out.setdefault(s, [])
        if not stock:
            why.append(f"witness run {name} has no stock bfdd")
        if mine and not mine <= theirs:
            why.append(f"witness run {name} ran on {', '.join(sorted(theirs)) or '?'}, not on "
                       f"this run's {', '.join(sorted(mine))}")
        lv = (ws.get("levels") or {}).get(s)
        if lv is None:
            why.append(f"witness run {name} has no step {s}")
            continue
        if _load_argv(meta, s) != _load_argv(wmeta, s):
            why.append(f"witness run {name} ran another load at {s}: "
                       f"{_load_argv(wmeta, s)} against {_load_argv(meta, s)}")
        if lv.get("verdict") == "VOID":
            why.append(f"witness run {name}: its {s} is VOID ("
                       + "; ".join(lv.get("void_reasons") or []) + ")")
        bit = [n for n in stock if n in lv.get("duts", {}) and counted(lv["duts"][n])]
        if stock and not bit:
            why.append(f"the load did not bite: stock bfdd had 0 counted down events under {s} "
                       f"in witness run {name}")
    return out


def note(run_dir: Path, meta: dict[str, Any], steps: list[str]) -> str:
    """What the report says of a witness run that holds: the stock counts it saw."""
    wdir = resolve(run_dir, meta["witness_run"])
    try:
        ws = json.loads((wdir / "summary.json").read_text())
    except (OSError, ValueError):
        return ""
    parts = []
    for s in steps:
        lv = (ws.get("levels") or {}).get(s) or {}
        for n, d in (lv.get("duts") or {}).items():
            if (ws.get("duts") or {}).get(n, {}).get("kind") == "bfdd":
                parts.append(f"stock {n} {counted(d)} counted down events under {s}")
    return f"contrast witness from run {wdir.name}: " + ", ".join(parts)
