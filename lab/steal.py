"""steal - record when the hypervisor takes a vCPU away, so a stalled peer can be explained.

On this VM kind the host deschedules one vCPU for 80-100 ms every few seconds when both
vCPUs are busy (seen under L4 with no lab running). Nothing inside the guest can shield
against that, not even SCHED_DEADLINE. lab/validity.py turns these records into steal
windows and judges peer gaps and down events against them (docs/lab.md).

Run as `python3 -m lab.steal OUT SECONDS`: samples /proc/stat every 5 ms and appends one
JSON line per steal increment of at least MIN_MS on a CPU:
{"ts_ns": CLOCK_REALTIME ns when seen, "cpu": i, "steal_ms": x, "sampler_gap_ms": y}.
The harness runs it under a small SCHED_DEADLINE reservation (0.5 ms every 5 ms).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

PERIOD_S = 0.005
MIN_MS = 20.0
RESERVATION = ["-d", "-T", "500000", "-D", "5000000", "-P", "5000000"]


def _per_cpu() -> list[int]:
    out = []
    with open("/proc/stat", encoding="ascii") as f:
        for line in f:
            if line.startswith("cpu") and line[3] != " ":
                out.append(int(line.split()[8]))
            elif not line.startswith("cpu"):
                break
    return out


def sample(out: Path, seconds: float) -> None:
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + seconds
    prev, prev_t = _per_cpu(), time.monotonic()
    with open(out, "a", encoding="ascii") as f:
        while time.monotonic() < end:
            time.sleep(PERIOD_S)
            cur, now = _per_cpu(), time.monotonic()
            for cpu, (a, b) in enumerate(zip(prev, cur)):
                if (b - a) * tick_ms >= MIN_MS:
                    f.write(json.dumps({"ts_ns": time.clock_gettime_ns(time.CLOCK_REALTIME),
                                        "cpu": cpu, "steal_ms": (b - a) * tick_ms,
                                        "sampler_gap_ms": round((now - prev_t) * 1000, 1)})
                            + "\n")
                    f.flush()
            prev, prev_t = cur, now


def load(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


if __name__ == "__main__":
    sample(Path(sys.argv[1]), float(sys.argv[2]))
