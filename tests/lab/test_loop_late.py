"""lab.judge.loop_late: a step's loop-lateness figures from two of the engine's stats dumps,
against hand-computed counts (issue 9 item 5)."""

from __future__ import annotations

from lab.judge import loop_late

LE_US = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000,
         500000, 1000000]


def dump(counts: dict[int, int], max_ns: int, uptime_s: float = 0.0,
         log: list[list[int]] | None = None) -> dict:
    """A stats JSON `loop` object with COUNTS by bucket index, as the lab keeps it (with the
    dump's uptime_s); LOG: its [uptime_us, late_ns] wake-ups over 1 ms."""
    c = [counts.get(i, 0) for i in range(17)]
    return {"wakeups": sum(c), "late_sum_ns": 0, "late_max_ns": max_ns, "late_le_us": LE_US,
            "late_counts": c, "late_over_1ms_logged": len(log or []),
            "late_over_1ms": log or [], "uptime_s": uptime_s}


def test_max_exact_when_the_running_maximum_rose() -> None:
    # before: 50 wake-ups <= 10 us, max 8 us; the step adds 980 <= 10 us, 15 in (1, 2] ms,
    # 5 in (10, 20] ms, max 17.5 ms: p99 is the 1,010th of 1,000 -> rank ceil(990) = 990th
    a = dump({0: 50}, 8_000)
    b = dump({0: 1030, 7: 15, 10: 5}, 17_500_000)
    f = loop_late.step_figures(a, b)
    assert f == {"wakeups": 1000, "max_ms": 17.5, "max_exact": True, "p99_le_ms": 2.0,
                 "over_1ms": 20, "over_10ms": 5}
    assert loop_late.cell(f) == "p99 <= 2 / max 17.5 ms (1000 wake-ups, 5 > 10 ms)"


def test_max_a_bound_when_an_earlier_step_holds_the_maximum() -> None:
    a = dump({0: 10, 13: 1}, 150_000_000)  # a 150 ms wake-up before the step
    b = dump({0: 110, 13: 1, 4: 2}, 150_000_000)  # the step: 100 <= 10 us, 2 in (100, 200] us
    f = loop_late.step_figures(a, b)
    assert f is not None
    assert (f["wakeups"], f["max_ms"], f["max_exact"], f["p99_le_ms"]) == (102, 0.2, False, 0.2)
    assert loop_late.cell(f).startswith("p99 <= 0.2 / max <= 0.2 ms")


def test_max_exact_from_the_log_of_late_wake_ups() -> None:
    # a 150 ms wake-up at uptime 5 s, before the step (10-40 s); in it 3.5 ms at 12 s and
    # 61.25 ms at 30 s: every one of the step's two over 1 ms is in the log
    log = [[5_000_000, 150_000_000], [12_000_000, 3_500_000], [30_000_000, 61_250_000]]
    a = dump({0: 10, 13: 1}, 150_000_000, 10.0, log[:1])
    b = dump({0: 210, 13: 1, 8: 1, 12: 1}, 150_000_000, 40.0, log)
    f = loop_late.step_figures(a, b)
    assert f is not None
    assert (f["max_ms"], f["max_exact"], f["over_1ms"], f["over_10ms"]) == (61.25, True, 2, 1)
    # the log lost one of them (the ring overran): the bucket's bound, not exact
    f = loop_late.step_figures(a, dict(b, late_over_1ms=log[2:]))
    assert f is not None and (f["max_ms"], f["max_exact"]) == (100.0, False)


def test_beyond_the_last_bound_and_missing_dumps() -> None:
    f = loop_late.step_figures(dump({}, 0), dump({16: 1}, 0))
    assert f is not None and (f["max_ms"], f["p99_le_ms"]) == (None, None)
    assert loop_late.step_figures(None, dump({}, 0)) is None
    assert loop_late.cell(None) == "-"
    assert loop_late.step_figures(dump({}, 0), dump({}, 0))["wakeups"] == 0  # type: ignore
