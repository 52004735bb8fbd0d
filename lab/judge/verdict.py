"""verdict - PASS, FAIL, VOID or INFO for each step and for the run (docs/lab.md section 2,
rule (d)), from a summary's figures and VOID reasons. Pure functions over dicts.
"""

from __future__ import annotations

from typing import Any, Iterable


def counted(d: dict[str, Any]) -> int:
    v = d.get("down_events_counted")
    return int(v if v is not None else d.get("down_events") or 0)


def kinds(summary: dict[str, Any]) -> dict[str, str]:
    """Device name -> kind ("engine" | "bfdd") from the summary's whole-run device blocks."""
    return {n: d.get("kind", "") for n, d in summary["duts"].items()}


def step_result(duts: dict[str, Any], kinds_: dict[str, str], void_reasons: list[str],
                gated: bool = True) -> dict[str, Any]:
    """One step's verdict (docs/lab.md section 2, rule (d)).

    VOID when the step has VOID reasons (they win); else, for a gated step, FAIL when an
    engine has counted down events in it, PASS otherwise; an ungated step (floods A, F, G:
    reported, not judged) is INFO. Returns {"verdict", "void_reasons", "failures"}."""
    fails = [f"{n}: {counted(d)} counted down events" for n, d in duts.items()
             if kinds_.get(n) == "engine" and counted(d)]
    if void_reasons:
        return {"verdict": "VOID", "void_reasons": list(void_reasons), "failures": fails}
    if not gated:
        return {"verdict": "INFO", "void_reasons": [], "failures": [],
                "note": "reported, not judged" + (f" ({'; '.join(fails)})" if fails else "")}
    return {"verdict": "FAIL" if fails else "PASS", "void_reasons": [], "failures": fails}


def run_result(steps: dict[str, dict[str, Any]], required: Iterable[str],
               run_void: list[str], run_failures: list[str],
               void_fraction_max: float = 0.5) -> tuple[str, list[str], list[str]]:
    """The run's verdict from its steps' (docs/lab.md section 2, rule (d)): VOID when a
    required step is VOID (or missing), when more than VOID_FRACTION_MAX of the steps are
    VOID, or for a run-level reason (RUN_VOID); FAIL when a judged step fails or for a
    run-level failure (RUN_FAILURES: sessions not Up at the end); PASS otherwise.
    Returns (verdict, void reasons, failures); failures are listed even when VOID."""
    void = list(run_void)
    for r in required:
        st = steps.get(r)
        if st is None:
            void.append(f"required step {r} is not in the run")
        elif st["verdict"] == "VOID":
            void.append(f"required step {r} is VOID ({'; '.join(st['void_reasons'])})")
    nv = sum(1 for st in steps.values() if st["verdict"] == "VOID")
    if steps and nv > void_fraction_max * len(steps):
        void.append(f"{nv} of {len(steps)} steps are VOID (more than "
                    f"{100 * void_fraction_max:.0f} %)")
    failures = list(run_failures) + [f"{name}: {f}" for name, st in steps.items()
                                     if st["verdict"] == "FAIL" for f in st["failures"]]
    if void:
        return "VOID", void, failures
    return ("FAIL" if failures else "PASS"), [], failures


def void_first(steps: dict[str, dict[str, Any]]) -> list[str]:
    """Step names, VOID ones first (each group in run order)."""
    return ([n for n, st in steps.items() if st.get("verdict") == "VOID"]
            + [n for n, st in steps.items() if st.get("verdict") != "VOID"])


def conclude(summary: dict[str, Any], steps: dict[str, dict[str, Any]], phases: list[dict],
             required: Iterable[str], run_void: list[str],
             void_fraction_max: float) -> dict[str, dict[str, Any]]:
    """Write the run's verdict into SUMMARY (verdict, void, void_reasons, failures,
    steps_void) from its STEPS' results (name -> step_result()), as run_result() decides it.
    No step analysed (no capture figures): every planned phase in PHASES is VOID. A run
    without an engine is INFO rather than PASS or FAIL: there is nothing to judge.
    Returns the steps judged (STEPS, or the VOID stand-ins)."""
    if not steps:
        steps = {p["name"]: {"verdict": "VOID", "void_reasons": ["not analysed"],
                             "failures": []} for p in phases}
    verdict, why, failures = run_result(steps, required, run_void, end_failures(summary),
                                        void_fraction_max)
    if verdict != "VOID" and "engine" not in kinds(summary).values():
        verdict = "INFO"
    summary.update(verdict=verdict, void=verdict == "VOID", void_reasons=why,
                   failures=failures,
                   steps_void=[n for n, st in steps.items() if st["verdict"] == "VOID"])
    return steps


def end_failures(summary: dict[str, Any]) -> list[str]:
    """Run-level failures: an engine without every session Up at the end (those of a class
    shut at either end excepted: they never come Up)."""
    return [f"{n}: {d['sessions_up_end']}/{to_be_up(d)} sessions Up at the end"
            for n, d in summary["duts"].items()
            if d.get("kind") == "engine" and d["sessions_up_end"] != to_be_up(d)]


def to_be_up(d: dict[str, Any]) -> int:
    """Sessions of device block D that should be Up (a summary without the field: all)."""
    return d.get("sessions_to_be_up", d["sessions"])


def witness(summary: dict[str, Any], load_phases: list[str],
            external: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    """The contrast witness, per step of LOAD_PHASES: VOID reasons for the step when no stock
    bfdd had counted down events in it (the load did not bite there), or when no stock bfdd
    ran at all. A run without a stock bfdd may name a witness run instead: EXTERNAL is what
    lab.judge.witness.from_run() found in it, per step, and stands for the missing stock
    bfdd. Returns {step: [reason]} (empty lists when the witness holds)."""
    stock = [n for n, d in summary["duts"].items() if d["kind"] == "bfdd"]
    out: dict[str, list[str]] = {name: [] for name in load_phases}
    for p in summary.get("phases") or []:
        if p["name"] not in out:
            continue
        if not stock and external is not None:
            out[p["name"]] += external.get(p["name"], [])
        elif not stock:
            out[p["name"]].append("no stock bfdd in the run (and no witness run named): "
                                  "nothing witnesses that the load bit")
        for n in stock:
            if n in p["duts"] and not counted(p["duts"][n]):
                out[p["name"]].append(f"the load did not bite: stock {n} had 0 counted down "
                                      f"events under {p['name']}")
    return out
