"""Runs the lab could not judge: retried, then skipped with the lab's own reasons.

A run is VOID when the lab cannot tell the devices' behaviour from the machine's (docs/lab.md
section 2): steps drowned in host steal, peer gaps nothing on the host explains. On a shared VM
that is the weather, not a defect, so such a run is tried again, up to a few times. A run VOID
for the lab's own faults (the load did not run, the capture dropped packets: its
run_void_reasons) is never retried and fails. A FAIL is never retried.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest


def run_until_judged(run: Callable[[], dict[str, Any]], attempts: int) -> dict[str, Any]:
    """Call @run (returns a summary.json dict) until its run is not VOID, at most @attempts
    times. Returns the last summary, with "attempts" (the VOID reasons of every try) added."""
    tried: list[list[str]] = []
    while True:
        s = run()
        tried.append(list(s["void_reasons"]))
        if not s["void"] or s["run_void_reasons"] or len(tried) >= attempts:
            s["attempts"] = tried
            return s


def require_judged(s: dict[str, Any]) -> None:
    """Fail on a run VOID by the lab's own fault; skip, naming the reasons of every attempt,
    when every attempt was VOID by the machine; return when the run was judged."""
    assert s["run_void_reasons"] == [], f"the lab failed: {s['run_void_reasons']}"
    if s["void"]:
        # Skip in CI: every attempt's steps were VOID by measured host steal or peer stalls,
        # so this machine cannot tell a device's fault from its own (docs/lab.md section 2).
        why = " | ".join(f"run {i + 1}: " + "; ".join(r) for i, r in enumerate(s["attempts"]))
        pytest.skip(f"VOID in all {len(s['attempts'])} runs, the machine too noisy to judge: "
                    f"{why}")
