"""steal_log - the steal sampler's records (lab/rig/steal.py writes steal.jsonl), read back.

Reading only: the judge never needs root. Record fields: ts_ns, cpu, steal_ms, from_ticks,
to_ticks (the CPU's steal counter in ticks before and after), late (a sampling interval over
lab.rig.steal.LATE_MS with no steal: diagnosis only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def merge(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each steal tick of each CPU once, at its earliest observation.

    Every sampler reads every CPU's counter, so one increment is seen by each of them, cut
    into different tick ranges at different times (a sampler on the stolen vCPU sees it only
    on waking). Records are taken by time; of each record only the ticks no earlier record
    of the same CPU holds are kept (split when they are not contiguous), so summed steal is
    exact and each tick sits at the first time anybody saw it. Records without tick ranges
    (hand-written, old logs) are kept as they are. "late" records are left out."""
    out: list[dict[str, Any]] = []
    seen: dict[int, set[int]] = {}
    for r in sorted(records, key=lambda r: r["ts_ns"]):
        if r.get("late"):
            continue
        if "from_ticks" not in r:
            out.append(r)
            continue
        have = seen.setdefault(int(r["cpu"]), set())
        new = [t for t in range(int(r["from_ticks"]) + 1, int(r["to_ticks"]) + 1)
               if t not in have]
        if not new:
            continue
        have.update(new)
        tick_ms = float(r["steal_ms"]) / (r["to_ticks"] - r["from_ticks"])
        run_start = new[0]
        for i, t in enumerate(new):
            if i + 1 == len(new) or new[i + 1] != t + 1:
                out.append(dict(r, from_ticks=run_start - 1, to_ticks=t,
                                steal_ms=(t - run_start + 1) * tick_ms))
                if i + 1 < len(new):
                    run_start = new[i + 1]
    return out


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


def load(path: Path) -> list[dict[str, Any]]:
    """The steal records of a run, merged (see merge())."""
    return merge(_read(path))


def load_late(path: Path) -> list[dict[str, Any]]:
    """The "late" samples of a run (a long sampling interval): diagnosis only."""
    return sorted((r for r in _read(path) if r.get("late")), key=lambda r: r["ts_ns"])
