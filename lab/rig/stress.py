"""stress - load (stress-ng) and the shield that keeps the peer and the capture out of it.

A Load is stress-ng arguments with {N} standing for nproc (ladder.md section 1), so the
ladder can declare its rungs as data and reuse start()/finish(). finish() proves the load ran:
stress-ng's own bogo-ops (--metrics-brief) and the CPU time the kernel charged to it and its
workers (wait4 rusage), so a run whose load did not bite can be called VOID.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import util
from . import memcg
from ..util import LabError, run, spawn

# SCHED_DEADLINE 8 ms in every 10 ms on every thread: measured to hold a stock bfdd peer and
# tcpdump within budget through L4@99 (platform.md section 12); 2 ms is too little.
DEADLINE_ARGS = ["-d", "-T", "8000000", "-D", "10000000", "-P", "10000000"]
# tcpdump only drains a 32 MiB kernel buffer (timestamps are taken in the kernel): 2 ms in
# every 10 ms is ample and leaves deadline bandwidth for a second lab run on the machine
# (admission control caps the sum at 95 % per CPU: 1.9 here).
CAPTURE_DEADLINE_ARGS = ["-d", "-T", "2000000", "-D", "10000000", "-P", "10000000"]
# The engine peer (two engines facing each other): its bfdd only relays bfddp and its engine's
# loop wakes per session event, so 1 ms in every 10 ms each, on every thread, which leaves the
# machine's deadline bandwidth for the stock peer, tcpdump and the steal samplers.
EPEER_DEADLINE_ARGS = ["-d", "-T", "1000000", "-D", "10000000", "-P", "10000000"]
# BIRD 2 as a peer: two threads (its main loop and its BFD I/O thread), each given the
# reservation by `chrt -a`; 8 ms every 10 ms on both (1.6 CPUs) never fits beside the FRR peer,
# tcpdump and the steal samplers in the 1.9 CPUs admission control allows, so BIRD fell back to
# FIFO 99 and went silent under L4-99. Its BFD work is a packet each way per session interval:
# 2 ms every 10 ms per thread.
BIRD_DEADLINE_ARGS = ["-d", "-T", "2000000", "-D", "10000000", "-P", "10000000"]
FIFO_FALLBACK_PRIO = 99


@dataclass(frozen=True)
class Load:
    """A stress-ng load. stressors holds arguments such as ("--cpu", "{N}"); {N} = nproc."""

    name: str
    stressors: tuple[str, ...]
    description: str = ""

    def argv(self, duration_s: float, ncpu: int | None = None,
             mem_limit_bytes: int | None = None) -> list[str]:
        """stress-ng's command line; with MEM_LIMIT_BYTES (a memory cgroup's limit), shares of
        RAM ("--vm-bytes 95%") become bytes of that limit (lab.rig.memcg)."""
        n = ncpu or os.cpu_count() or 1
        stressors = self.stressors if mem_limit_bytes is None else \
            memcg.scaled_stressors(self.stressors, mem_limit_bytes)
        args = [a.replace("{N}", str(n)) for a in stressors]
        return ["stress-ng", *args, "--timeout", f"{int(round(duration_s))}s", "--metrics-brief"]

    @property
    def cpu_workers_expr(self) -> str:
        return " ".join(self.stressors)


L4 = Load("L4", ("--cpu", "{N}", "--sched", "fifo", "--sched-prio", "50"),
          "SCHED_FIFO priority 50 CPU hogs on every CPU")


@dataclass
class LoadResult:
    name: str
    argv: list[str]
    duration_s: float  # asked for
    wall_s: float = 0.0  # start to reaped
    rc: int | None = None
    cpu_s: float = 0.0  # utime + stime of stress-ng and its reaped workers (wait4)
    bogo_ops: dict[str, int] = field(default_factory=dict)  # per stressor, from --metrics-brief
    problems: list[str] = field(default_factory=list)  # why the load is not proven to have run

    @property
    def ran(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        return {"name": self.name, "argv": self.argv, "duration_s": self.duration_s,
                "wall_s": round(self.wall_s, 3), "rc": self.rc, "cpu_s": round(self.cpu_s, 3),
                "bogo_ops": self.bogo_ops, "ran": self.ran, "problems": self.problems}


class LoadRun:
    """A running stress-ng (own process group, killed by its PID group on abort)."""

    def __init__(self, load: Load, duration_s: float, log_path: Path,
                 ncpu: int | None = None, min_cpu_share: float = 0.5,
                 group: memcg.MemCgroup | None = None) -> None:
        """GROUP: start stress-ng inside this memory cgroup, its RAM shares scaled to it."""
        self.load = load
        self.min_cpu_share = min_cpu_share
        self.duration_s = duration_s
        self.ncpu = ncpu or os.cpu_count() or 1
        self.argv = load.argv(duration_s, self.ncpu, group.limit_bytes if group else None)
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.t0 = time.monotonic()
        self.proc = spawn(group.wrap_argv(self.argv) if group else self.argv,
                          stdout=self._log, stderr=subprocess.STDOUT)

    def done(self) -> bool:
        """Has stress-ng exited? Leaves it unreaped, so finish() still gets its rusage."""
        if self.proc.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def finish(self, grace_s: float = 15.0) -> LoadResult:
        """Wait for stress-ng to end (its --timeout plus GRACE_S), then judge whether it ran."""
        res = LoadResult(self.load.name, self.argv, self.duration_s)
        pid = self.proc.pid
        deadline = self.t0 + self.duration_s + grace_s
        status, rusage = None, None
        while status is None:
            try:
                wpid, st, ru = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                break
            if wpid == pid:
                status, rusage = st, ru
                break
            if time.monotonic() > deadline:
                res.problems.append(f"stress-ng still running {grace_s} s after its timeout")
                self.kill()
                try:
                    _, st, ru = os.wait4(pid, 0)
                    status, rusage = st, ru
                except ChildProcessError:
                    pass
                break
            time.sleep(0.05)
        res.wall_s = time.monotonic() - self.t0
        self._log.close()
        if status is not None:
            res.rc = os.waitstatus_to_exitcode(status)
            self.proc.returncode = res.rc
        if rusage is not None:
            res.cpu_s = rusage.ru_utime + rusage.ru_stime
        res.bogo_ops = parse_metrics(self.log_path.read_text(errors="replace"))
        judge_load(res, self.ncpu, self.min_cpu_share)
        util.log_note(f"load {res.name}: rc {res.rc}, cpu {res.cpu_s:.2f} s, "
                      f"bogo ops {res.bogo_ops}, problems {res.problems}")
        return res

    def kill(self) -> None:
        if self.proc.returncode is None:
            util.stop_pid(self.proc.pid, "stress-ng", sig=signal.SIGTERM, timeout_s=3.0,
                          group=True)


def parse_metrics(text: str) -> dict[str, int]:
    """Bogo ops per stressor from stress-ng --metrics-brief output (lines tagged 'metrc:')."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.search(r"(?:metrc|info):\s+\[\d+\]\s+([a-z][\w-]*)\s+(\d+)\s+[\d.]+\s+[\d.]+", line)
        if m and m.group(1) != "stressor":
            out[m.group(1)] = int(m.group(2))
    return out


def judge_load(res: LoadResult, ncpu: int, min_share: float = 0.5) -> None:
    """Append to RES.problems why stress-ng's run does not prove its load (exit status, no bogo
    ops, less than MIN_SHARE of NCPU CPUs used); used for local and bare-metal runs alike."""
    if res.rc not in (0,):
        res.problems.append(f"stress-ng exit status {res.rc}")
    if not res.bogo_ops or not any(res.bogo_ops.values()):
        res.problems.append("stress-ng reported no bogo ops (--metrics-brief)")
    # A FIFO hog on every CPU gets up to 95 % of each (RT throttling); shielded peers and the
    # capture take some back. Half of the CPUs' time is a clear "it ran" without being fragile.
    # Fair (CFS) loads share the CPUs with three busy-polling bfdd daemons (about half a CPU
    # each, platform.md 12) and whatever else runs: the ladder asks less of them.
    want = min_share * ncpu * res.duration_s
    if res.cpu_s < want:
        res.problems.append(f"stress-ng got {res.cpu_s:.1f} s of CPU, expected >= {want:.1f} s "
                            f"({ncpu} CPUs x {res.duration_s:.0f} s x {min_share:g})")
    if res.wall_s < 0.9 * res.duration_s:
        res.problems.append(f"stress-ng ended after {res.wall_s:.1f} s of {res.duration_s:.0f} s")


def shield(pid: int, what: str, reservation: list[str] | None = None,
           wait_s: float = 0.0) -> str:
    """Put every thread of PID under SCHED_DEADLINE (8 ms every 10 ms unless RESERVATION
    gives other chrt arguments); fall back to SCHED_FIFO 99 if the kernel refuses.

    When admission control refuses (EBUSY: other processes hold the machine's deadline
    bandwidth, typically another lab run), retry for up to WAIT_S seconds first, logging who
    holds it. Returns the policy applied: "deadline", "fifo99" or "none" (reason logged).
    """
    argv = ["chrt", "-a", *(reservation or DEADLINE_ARGS), "-p", "0", str(pid)]
    deadline = time.monotonic() + wait_s
    waited = False
    while True:
        dl = run(argv, check=False)
        if dl.returncode == 0:
            return "deadline"
        if "busy" not in dl.stderr.lower() or time.monotonic() >= deadline:
            break
        if not waited:
            util.log_note(f"shield {what} ({pid}): deadline bandwidth taken by "
                          f"{deadline_holders()}; waiting up to {wait_s:.0f} s")
            waited = True
        time.sleep(0.5)  # poll for other runs to release their reservations
    util.log_note(f"shield {what} ({pid}): SCHED_DEADLINE refused ({dl.stderr.strip()}; "
                  f"holders: {deadline_holders()}); falling back to SCHED_FIFO "
                  f"{FIFO_FALLBACK_PRIO}")
    ff = run(["chrt", "-a", "-f", "-p", str(FIFO_FALLBACK_PRIO), str(pid)], check=False)
    if ff.returncode == 0:
        return f"fifo{FIFO_FALLBACK_PRIO}"
    util.log_note(f"shield {what} ({pid}): SCHED_FIFO refused too ({ff.stderr.strip()})")
    return "none"


def deadline_holders() -> str:
    """Threads under SCHED_DEADLINE (policy 6 in /proc/PID/task/TID/stat), as 'pid comm'."""
    out = []
    for task in Path("/proc").glob("[0-9]*/task/[0-9]*/stat"):
        try:
            st = task.read_text()
        except OSError:
            continue
        fields = st[st.rindex(")") + 2:].split()
        if len(fields) > 38 and fields[38] == "6":  # field 41 of proc(5): policy
            out.append(f"{task.parent.name} {st[st.index('(') + 1:st.rindex(')')]}")
    return ", ".join(out) or "nobody visible"


def policy_of(pid: int) -> str:
    """`chrt -p` of PID as one line, for the record."""
    try:
        return " / ".join(run(["chrt", "-p", str(pid)], check=False).stdout.split("\n")[:2])
    except LabError:
        return "?"
