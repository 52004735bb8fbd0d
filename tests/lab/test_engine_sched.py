"""The engine's scheduling: a SCHED_DEADLINE reservation, the SCHED_FIFO fallback when the kernel
refuses it (and why it refused), and CAP_SYS_NICE dropped once the policy is settled.

Each case starts the real engine (no bfdd: it only retries a Unix socket that is not there) in a
situation where the kernel itself grants or refuses, and reads the outcome from the kernel's
view of the process (/proc/PID/sched, `chrt -p`, /proc/PID/status), not from the engine's word:
- affinity narrowed to one CPU (`taskset -c 0`): sched_setattr fails with EPERM, the root
  domain spans both CPUs; the engine says so and runs SCHED_FIFO 60;
- the root domain's deadline bandwidth taken by two sleeping reservations: EBUSY (admission
  control); SCHED_FIFO 60;
- also in a cpu cgroup with cpu.rt_runtime_us 0: the fallback is refused too, and said why;
- `--sched-fallback-fifo 0`: the class is left as it was;
- granted: SCHED_DEADLINE 1000/10000 us;
- no reservation asked for, started at SCHED_FIFO 30 (as systemd's unit would): left at it.
In every case CapEff and CapPrm lack CAP_SYS_NICE afterwards.

Deadline bandwidth is shared by the whole machine (the lab's shields use it): run under the lab
lock (flock /tmp/xdp-bfd-lab.lock).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from lab import util

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: real-time policies, capabilities")

ENGINE = REPO / "build" / "xdp-bfd"
CAP_SYS_NICE = 23  # linux/capability.h
SETTLED = "sched: CAP_SYS_NICE dropped"


def ncpus_online() -> int:
    return len(os.sched_getaffinity(1))


@pytest.fixture(autouse=True)
def built() -> None:
    if not ENGINE.exists():
        pytest.skip("build/xdp-bfd missing (make)")


class Bare:
    """The engine with no bfdd and no XDP: only its process set-up runs."""

    def __init__(self, tmp: Path, prefix: list[str], args: list[str]):
        self.log = tmp / "engine.log"
        self.proc = util.spawn(prefix + [str(ENGINE), "--dplane-connect",
                                         f"unix:{tmp}/no-bfdd.sock", "--log-file",
                                         str(self.log)] + args)
        util.wait_until(lambda: self.proc.poll() is not None or SETTLED in self.text() or None,
                        5.0, "the engine settles its scheduling")
        assert self.proc.poll() is None, self.text()

    def text(self) -> str:
        try:
            return self.log.read_text()
        except OSError:
            return ""

    def policy(self) -> tuple[int, int]:
        """(policy, prio) as the scheduler reports them (/proc/PID/sched)."""
        f = dict(re.findall(r"^(policy|prio)\s+:\s+(-?\d+)$",
                            Path(f"/proc/{self.proc.pid}/sched").read_text(), re.M))
        return int(f["policy"]), int(f["prio"])

    def chrt(self) -> str:
        return util.run(["chrt", "-p", str(self.proc.pid)]).stdout

    def caps(self) -> dict[str, int]:
        st = Path(f"/proc/{self.proc.pid}/status").read_text()
        return {k: int(v, 16) for k, v in re.findall(r"^(Cap\w+):\s+([0-9a-f]+)$", st, re.M)}

    def stop(self) -> None:
        util.stop_pid(self.proc.pid, "xdp-bfd")
        self.proc.wait(timeout=5)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator:
    started: list[Bare] = []

    def start(prefix: list[str], args: list[str]) -> Bare:
        started.append(Bare(tmp_path, prefix, args))
        return started[-1]

    yield start
    for b in started:
        b.stop()


def assert_nice_dropped(b: Bare) -> None:
    caps = b.caps()
    assert not caps["CapEff"] & (1 << CAP_SYS_NICE), hex(caps["CapEff"])
    assert not caps["CapPrm"] & (1 << CAP_SYS_NICE), hex(caps["CapPrm"])
    assert caps["CapEff"] & (1 << 21), "CAP_SYS_ADMIN kept: only CAP_SYS_NICE goes"


def assert_fifo_60(b: Bare) -> None:
    assert b.policy() == (1, 99 - 60)  # SCHED_FIFO; the kernel's prio is 99 - rt_priority
    assert "SCHED_FIFO" in b.chrt() and "priority: 60" in b.chrt()


@pytest.mark.skipif(ncpus_online() < 2, reason="one CPU: no narrower affinity to refuse")
def test_refused_by_affinity_falls_back_to_fifo_60(engine) -> None:
    b = engine(["taskset", "-c", "0"], ["--sched-deadline", "1000/10000"])
    assert_fifo_60(b)
    assert_nice_dropped(b)
    t = b.text()
    assert ("sched: SCHED_DEADLINE 1000/10000 us refused: Operation not permitted (the CPU "
            f"affinity (0) does not cover the root domain (0-{ncpus_online() - 1})") in t, t
    assert "sched: fell back to SCHED_FIFO 60" in t
    assert "sched: CAP_SYS_NICE dropped (policy SCHED_FIFO 60)" in t


def test_refused_by_admission_control(engine) -> None:
    # The root domain admits a share of each CPU to deadline tasks (sched_rt_runtime_us per
    # sched_rt_period_us), less what the kernel reserves for itself (6.12+: a fair server per
    # CPU). Sleeping reservations of 0.09 CPU each fill it until the kernel refuses one: then
    # less than 0.09 is left and 1 ms in 10 ms (0.1) cannot fit. Asleep, they use no CPU.
    rt = int(Path("/proc/sys/kernel/sched_rt_runtime_us").read_text())
    per = int(Path("/proc/sys/kernel/sched_rt_period_us").read_text())
    hogs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(12 * ncpus_online()):
            h = util.spawn(["chrt", "-d", "-T", "90000000", "-P", "1000000000", "-D",
                            "1000000000", "0", "sleep", "30"])
            time.sleep(0.05)
            if h.poll() is not None:
                break  # refused: the domain is full
            hogs.append(h)
        else:
            pytest.fail("the kernel admitted every filler: no admission control here?")
        assert hogs, "no filler admitted: other deadline tasks hold the bandwidth"
        b = engine([], ["--sched-deadline", "1000/10000", "--sched-fallback-fifo", "61"])
        t = b.text()
        assert "sched: SCHED_DEADLINE 1000/10000 us refused: Device or resource busy " \
               f"(admission control: the deadline bandwidth of the root domain " \
               f"(kernel.sched_rt_runtime_us {rt} of every {per} us, on each CPU) is taken" in t, t
        assert "sched: fell back to SCHED_FIFO 61" in t
        assert b.policy() == (1, 99 - 61)
        assert_nice_dropped(b)
    finally:
        for h in hogs:
            util.stop_pid(h.pid, "sleep")
            h.wait(timeout=5)


CPU_CGROUP = Path("/sys/fs/cgroup/cpu")


@pytest.mark.skipif(not (CPU_CGROUP / "cpu.rt_runtime_us").exists(),
                    reason="no cgroup v1 cpu controller with RT group scheduling")
@pytest.mark.skipif(ncpus_online() < 2, reason="one CPU: no narrower affinity to refuse")
def test_fallback_refused_too_in_a_cgroup_without_rt_runtime(engine) -> None:
    grp = CPU_CGROUP / f"xdp-bfd-test-{os.getpid()}"
    grp.mkdir()
    try:
        assert (grp / "cpu.rt_runtime_us").read_text().strip() == "0"  # a new group's default
        b = engine(["sh", "-c", f'echo $$ > {grp}/tasks && exec "$@"', "sh", "taskset", "-c",
                    "0"], ["--sched-deadline", "1000/10000"])
        t = b.text()
        assert "sched: SCHED_FIFO 60 refused too: Operation not permitted (the process's cpu " \
               "cgroup has cpu.rt_runtime_us 0" in t, t
        assert "staying at SCHED_OTHER" in t
        assert b.policy() == (0, 120)
        assert_nice_dropped(b)
        b.stop()
    finally:
        # The group empties when the engine exits; then it can go.
        util.wait_until(lambda: not (grp / "tasks").read_text().strip() or None, 5.0,
                        "the test cgroup empties")
        grp.rmdir()


@pytest.mark.skipif(ncpus_online() < 2, reason="one CPU: no narrower affinity to refuse")
def test_no_fallback_keeps_the_class(engine) -> None:
    b = engine(["taskset", "-c", "0"], ["--sched-deadline", "1000/10000",
                                        "--sched-fallback-fifo", "0"])
    assert b.policy() == (0, 120)
    assert "sched: staying at SCHED_OTHER (--sched-fallback-fifo 0)" in b.text()
    assert_nice_dropped(b)


def test_reservation_granted(engine) -> None:
    b = engine([], ["--sched-deadline", "1000/10000"])
    assert b.policy()[0] == 6  # SCHED_DEADLINE
    out = b.chrt()
    assert "SCHED_DEADLINE" in out and "1000000/10000000/10000000" in out, out
    assert "sched: SCHED_DEADLINE 1000 us every 10000 us" in b.text()
    assert "sched: CAP_SYS_NICE dropped (policy SCHED_DEADLINE 1000/10000 us)" in b.text()
    assert_nice_dropped(b)


def test_without_a_reservation_the_class_is_left_as_set(engine) -> None:
    # As under the unit's CPUSchedulingPolicy=fifo with the reservation removed from its args.
    b = engine(["chrt", "-f", "30"], [])
    assert b.policy() == (1, 99 - 30)
    assert "SCHED_DEADLINE" not in b.text()
    assert "sched: CAP_SYS_NICE dropped (policy SCHED_FIFO 30)" in b.text()
    assert_nice_dropped(b)


def test_option_is_checked() -> None:
    r = subprocess.run([str(ENGINE), "--dplane", "50700", "--sched-fallback-fifo", "100"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "--sched-fallback-fifo wants a whole number from 0 to 99, not '100'" in r.stderr
