"""loop_late - the engine's loop lateness over one step (issue 9 item 5), from two of its stats
dumps: how long after a timer was due (the transmit timer, which paces every packet userspace
sends, and the 100 ms tick) the engine's loop ran it. The engine counts every wake-up into
buckets with 1-2-5 bounds (stats JSON `loop`, docs/engine.md); a step's figures are the
difference of the counts at its start and end.

- `max_ms`: the step's latest wake-up. Exact when the engine's running maximum rose during the
  step (the new maximum is the step's), or from the engine's log of wake-ups later than 1 ms
  (the latest 64, each with its uptime) when it holds every one of the step's; otherwise the
  upper bound of the highest bucket the step added to (`max_exact` false).
- `p99_le_ms`: the upper bound of the bucket holding the 99th percentile wake-up (ranked, not
  interpolated); None above the last bound (1 s).
"""

from __future__ import annotations

from typing import Any


def step_figures(before: dict[str, Any] | None, after: dict[str, Any] | None
                 ) -> dict[str, Any] | None:
    """Figures of the wake-ups between two `loop` objects of the engine's stats JSON (each with
    its dump's `uptime_s`): wakeups, max_ms, max_exact, p99_le_ms, over_1ms, over_10ms
    (wake-ups later than that). None when either is missing (an engine that did not answer,
    or one without the counters)."""
    if not before or not after:
        return None
    bounds_us = list(after["late_le_us"])
    counts = [a - b for a, b in zip(after["late_counts"], before["late_counts"])]
    n = sum(counts)
    out: dict[str, Any] = {"wakeups": n, "max_ms": None, "max_exact": False, "p99_le_ms": None,
                           "over_1ms": _over(counts, bounds_us, 1000),
                           "over_10ms": _over(counts, bounds_us, 10000)}
    if n <= 0:
        return out
    # the logged wake-ups over 1 ms of the step: uptime (us) after the first dump's
    t0_us, t1_us = before["uptime_s"] * 1e6, after["uptime_s"] * 1e6
    logged = [late for at, late in after.get("late_over_1ms") or [] if t0_us < at <= t1_us]
    if after["late_max_ns"] > before["late_max_ns"]:
        out.update(max_ms=round(after["late_max_ns"] / 1e6, 3), max_exact=True)
    elif out["over_1ms"] and len(logged) == out["over_1ms"]:
        out.update(max_ms=round(max(logged) / 1e6, 3), max_exact=True)
    else:
        top = max(i for i, c in enumerate(counts) if c > 0)
        out["max_ms"] = bounds_us[top] / 1000 if top < len(bounds_us) else None
    rank = -(-99 * n // 100)  # the ceil(0.99 n)-th wake-up in order of lateness
    seen = 0
    for i, c in enumerate(counts):
        seen += c
        if seen >= rank:
            out["p99_le_ms"] = bounds_us[i] / 1000 if i < len(bounds_us) else None
            break
    return out


def _over(counts: list[int], bounds_us: list[int], limit_us: int) -> int:
    """Wake-ups in buckets wholly above LIMIT_US (LIMIT_US must be one of the bounds)."""
    i = bounds_us.index(limit_us)
    return sum(counts[i + 1:])


def cell(f: dict[str, Any] | None) -> str:
    """One report cell: "p99 <= X / max Y ms (n wake-ups, k > 10 ms)"; "-" without figures."""
    if not f or not f.get("wakeups"):
        return "-"
    mx = "?" if f["max_ms"] is None else f"{'' if f['max_exact'] else '<= '}{f['max_ms']:g}"
    p99 = "> 1000" if f["p99_le_ms"] is None else f"<= {f['p99_le_ms']:g}"
    return f"p99 {p99} / max {mx} ms ({f['wakeups']} wake-ups, {f['over_10ms']} > 10 ms)"
