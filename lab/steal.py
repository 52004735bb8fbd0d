"""steal - record when the hypervisor takes a vCPU away, so a stalled peer can be explained.

On this VM kind the host deschedules one vCPU for 80-100 ms every few seconds when both
vCPUs are busy (seen under L4 with no lab running). Nothing inside the guest can shield
against that, not even SCHED_DEADLINE. lab/validity.py turns these records into steal
windows and judges peer gaps and down events against them (docs/lab.md).

Run as `python3 lab/steal.py OUT SECONDS`: samples /proc/stat every 5 ms and appends one
JSON line per steal increment of at least MIN_MS on a CPU:
{"ts_ns": CLOCK_REALTIME ns when seen, "cpu": i, "steal_ms": x, "sampler_gap_ms": y,
 "from_ticks": a, "to_ticks": b, "sampler": k}.
The harness runs it under a small SCHED_DEADLINE reservation (0.5 ms every 5 ms).

One sampler per CPU (the process itself and nproc - 1 children, each under its own
reservation): a sampler on the stolen vCPU is frozen with it and logs the steal only on
waking, with a sampler gap as long as the steal, which rule (a) of docs/lab.md turns into a
window twice the steal's length; a sampler on another vCPU sees the same increment a few ms
after the stolen vCPU accounts it. load() keeps, for each increment (the CPU's tick range),
the earliest observation: the same rule then gets the tighter window.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PERIOD_S = 0.005
MIN_MS = 20.0
# -R (reset on fork): the harness may shield this process before it has started its
# children, and a deadline task may fork only with SCHED_RESET_ON_FORK.
RESERVATION = ["-R", "-d", "-T", "500000", "-D", "5000000", "-P", "5000000"]


def _per_cpu() -> list[int]:
    out = []
    with open("/proc/stat", encoding="ascii") as f:
        for line in f:
            if line.startswith("cpu") and line[3] != " ":
                out.append(int(line.split()[8]))
            elif not line.startswith("cpu"):
                break
    return out


def sample(out: Path, seconds: float, sampler: int = 0) -> None:
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + seconds
    prev, prev_t = _per_cpu(), time.monotonic()
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # one write per line
    try:
        while time.monotonic() < end:
            time.sleep(PERIOD_S)
            cur, now = _per_cpu(), time.monotonic()
            for cpu, (a, b) in enumerate(zip(prev, cur)):
                if (b - a) * tick_ms >= MIN_MS:
                    rec = {"ts_ns": time.clock_gettime_ns(time.CLOCK_REALTIME), "cpu": cpu,
                           "steal_ms": (b - a) * tick_ms,
                           "sampler_gap_ms": round((now - prev_t) * 1000, 1),
                           "from_ticks": a, "to_ticks": b, "sampler": sampler}
                    os.write(fd, (json.dumps(rec) + "\n").encode())
            prev, prev_t = cur, now
    finally:
        os.close(fd)


def merge(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per steal increment: of observations of the same CPU whose tick ranges
    overlap, the earliest (the sampler that was not frozen with the stolen vCPU)."""
    out: list[dict[str, Any]] = []
    for r in sorted(records, key=lambda r: r["ts_ns"]):
        if "from_ticks" in r and any(
                k.get("cpu") == r["cpu"] and "from_ticks" in k
                and k["from_ticks"] < r["to_ticks"] and r["from_ticks"] < k["to_ticks"]
                for k in out):
            continue
        out.append(r)
    return out


def load(path: Path) -> list[dict[str, Any]]:
    """The records of a run, merged (see merge())."""
    try:
        recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []
    return merge(recs)


def main(argv: list[str]) -> int:
    out, seconds = Path(argv[0]), float(argv[1])
    if "--child" in argv:
        k = int(argv[argv.index("--child") + 1])
        # shield itself before sampling (the parent only waits for its children)
        subprocess.run(["chrt", "-a", *RESERVATION, "-p", "0", str(os.getpid())],
                       capture_output=True, check=False, timeout=10)
        sample(out, seconds, k)
        return 0
    children = [subprocess.Popen([sys.executable, __file__, str(out), str(seconds),
                                  "--child", str(k)], stdin=subprocess.DEVNULL)
                for k in range(1, os.cpu_count() or 1)]

    def stop(_signum: int, _frame: Any) -> None:
        for c in children:
            if c.poll() is None:
                c.terminate()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        sample(out, seconds, 0)
    finally:
        for c in children:
            try:
                c.wait(timeout=2)
            except subprocess.TimeoutExpired:
                c.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
