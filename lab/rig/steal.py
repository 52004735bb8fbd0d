"""steal - record when the hypervisor takes a vCPU away, so a stalled peer can be explained.

On this VM kind the host deschedules a vCPU when both vCPUs are busy: under L4 in chunks of
about 100 ms every few seconds, under L3 (timer stressors) spread in smaller pieces. Nothing
inside the guest can shield against that, not even SCHED_DEADLINE. lab/validity.py sums
these records around each peer gap over budget and per step (docs/lab.md section 2).

Run as `python3 lab/rig/steal.py OUT SECONDS`: samples /proc/stat every 5 ms and appends one
JSON line per nonzero steal increment of a CPU (any size):
{"ts_ns": CLOCK_REALTIME ns when seen, "cpu": i, "steal_ms": x, "sampler_gap_ms": y (the
 sample interval: time since this sampler's previous read), "from_ticks": a, "to_ticks": b,
 "sampler": k, "on_cpu": the CPU the sampler ran on}.
/proc/stat counts in USER_HZ units (CLK_TCK 100 here: 10 ms); the kernel adds steal to it in
ns at the stolen CPU's own tick (CONFIG_HZ 250: every 4 ms while busy) or on idle exit.
A sample whose interval exceeds LATE_MS is also logged as {"late": true, ...} with every
CPU's deltas of all /proc/stat columns over the interval: the sampler, itself under
SCHED_DEADLINE like the peer, was held off, by the hypervisor (steal) or by something else
(diagnosis only; lab/validity.py never counts these records as steal).
The harness runs it under a small SCHED_DEADLINE reservation (0.5 ms every 5 ms).

One sampler per CPU (the process itself and nproc - 1 children, each under its own
reservation): a sampler on the stolen vCPU is frozen with it and logs the steal only on
waking; a sampler on another vCPU sees the same increment a few ms after the stolen vCPU
accounts it. lab.judge.steal_log.load() keeps each tick of each CPU once, at its earliest
observation (merge()).
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
LATE_MS = 20.0  # a sample interval over this with no steal is logged as "late" (diagnosis)
COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# -R (reset on fork): the harness may shield this process before it has started its
# children, and a deadline task may fork only with SCHED_RESET_ON_FORK.
RESERVATION = ["-R", "-d", "-T", "500000", "-D", "5000000", "-P", "5000000"]


def _per_cpu_all() -> list[list[int]]:
    """Every CPU's /proc/stat columns (COLUMNS order), in USER_HZ ticks."""
    out = []
    with open("/proc/stat", encoding="ascii") as f:
        for line in f:
            if line.startswith("cpu") and line[3] != " ":
                out.append([int(x) for x in line.split()[1:1 + len(COLUMNS)]])
            elif not line.startswith("cpu"):
                break
    return out


def _on_cpu() -> int:
    """The CPU this thread last ran on (/proc/thread-self/stat field 39)."""
    try:
        with open("/proc/thread-self/stat", encoding="ascii") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def sample(out: Path, seconds: float, sampler: int = 0) -> None:
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    st = COLUMNS.index("steal")
    end = time.monotonic() + seconds
    prev, prev_t = _per_cpu_all(), time.monotonic()
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # one write per line
    try:
        while time.monotonic() < end:
            time.sleep(PERIOD_S)
            cur, now = _per_cpu_all(), time.monotonic()
            ts = time.clock_gettime_ns(time.CLOCK_REALTIME)
            gap_ms = round((now - prev_t) * 1000, 1)
            recs = []
            for cpu, (a, b) in enumerate(zip(prev, cur)):
                if b[st] > a[st]:
                    recs.append({"ts_ns": ts, "cpu": cpu, "steal_ms": (b[st] - a[st]) * tick_ms,
                                 "sampler_gap_ms": gap_ms, "from_ticks": a[st],
                                 "to_ticks": b[st], "sampler": sampler})
            if recs or gap_ms > LATE_MS:
                here = _on_cpu()
                for r in recs:
                    r["on_cpu"] = here
                if gap_ms > LATE_MS:
                    recs.append({"ts_ns": ts, "late": True, "sampler_gap_ms": gap_ms,
                                 "sampler": sampler, "on_cpu": here,
                                 "cpu_ms": {str(cpu): {c: (y - x) * tick_ms
                                                       for c, x, y in zip(COLUMNS, a, b)}
                                            for cpu, (a, b) in enumerate(zip(prev, cur))}})
                os.write(fd, "".join(json.dumps(r) + "\n" for r in recs).encode())
            prev, prev_t = cur, now
    finally:
        os.close(fd)


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
