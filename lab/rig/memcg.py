"""memcg - a memory cgroup (cgroup v1, this kernel's mount) around the devices under test and
the memory levels' load, so memory pressure and the OOM killer stay inside the lab.

The ladder's memory levels ask stress-ng for a share of RAM ("--vm-bytes 95%"). stress-ng takes
such a share of the whole machine's memory, whatever cgroup it runs in, so the lab rewrites it
into bytes of the group's limit (scaled_stressors) and starts stress-ng inside the group
(wrap_argv): 110 % of the limit then OOM-kills inside the group, never elsewhere on the host.
The group's own counters (memory.failcnt, memory.max_usage_in_bytes, oom_kill in
memory.oom_control) are read per step.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..util import LabError

ROOT = Path("/sys/fs/cgroup/memory")
GIB = 1 << 30
DEFAULT_LIMIT_BYTES = 4 * GIB  # a sixth of this machine's 24 GiB; the load gets most of it


def default_limit_bytes(mem_total_bytes: int | None = None) -> int:
    """DEFAULT_LIMIT_BYTES, or a quarter of the machine's memory when that is smaller."""
    total = mem_total_bytes if mem_total_bytes is not None else _mem_total_bytes()
    return min(DEFAULT_LIMIT_BYTES, total // 4)


def _mem_total_bytes() -> int:
    m = re.search(r"^MemTotal:\s+(\d+) kB$", Path("/proc/meminfo").read_text(), re.M)
    if not m:
        raise LabError("/proc/meminfo has no MemTotal")
    return int(m.group(1)) * 1024


def scaled_stressors(stressors: tuple[str, ...], limit_bytes: int) -> tuple[str, ...]:
    """STRESSORS with every "--vm-bytes P%" turned into bytes of LIMIT_BYTES ("NNNb"); stress-ng
    divides --vm-bytes among its vm workers either way. Other arguments are unchanged."""
    out = list(stressors)
    for i, a in enumerate(out[:-1]):
        if a == "--vm-bytes" and out[i + 1].endswith("%"):
            try:
                pct = float(out[i + 1][:-1])
            except ValueError as e:
                raise LabError(f"--vm-bytes {out[i + 1]!r}: not a percentage") from e
            out[i + 1] = f"{int(limit_bytes * pct / 100)}b"
    return tuple(out)


@dataclass
class MemCgroup:
    """The group NAME under ROOT with memory.limit_in_bytes = LIMIT_BYTES."""

    name: str
    limit_bytes: int
    root: Path = ROOT

    @property
    def path(self) -> Path:
        return self.root / self.name

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def create(self) -> None:
        """Make the group and set its limit. LabError when the controller is not mounted as v1
        or the kernel refuses."""
        if not (self.root / "memory.limit_in_bytes").exists():
            raise LabError(f"{self.root}: no cgroup v1 memory controller here")
        try:
            self.path.mkdir()
            (self.path / "memory.limit_in_bytes").write_text(f"{self.limit_bytes}\n")
        except OSError as e:
            raise LabError(f"memory cgroup {self.path}: {e.strerror or e}") from e

    def add(self, pid: int) -> None:
        """Move PID (the whole process) into the group; its later children are born there."""
        try:
            self.procs.write_text(f"{pid}\n")
        except OSError as e:
            raise LabError(f"moving pid {pid} into {self.path}: {e.strerror or e}") from e

    def wrap_argv(self, argv: list[str]) -> list[str]:
        """ARGV started inside the group: the shell joins it, then execs ARGV (same PID), so no
        worker is ever forked outside it."""
        return ["sh", "-c", f'echo $$ > {self.procs} && exec "$@"', "sh", *argv]

    def reset_max_usage(self) -> None:
        """Start memory.max_usage_in_bytes again from the current usage (per step)."""
        (self.path / "memory.max_usage_in_bytes").write_text("0\n")

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in self.procs.read_text().split()]
        except OSError:
            return []

    def counters(self) -> dict[str, int]:
        """{"failcnt", "max_usage_bytes", "usage_bytes", "oom_kill"} from the group's files."""
        def num(f: str) -> int:
            return int((self.path / f).read_text().strip())
        oom = re.search(r"^oom_kill (\d+)$", (self.path / "memory.oom_control").read_text(), re.M)
        return {"failcnt": num("memory.failcnt"),
                "max_usage_bytes": num("memory.max_usage_in_bytes"),
                "usage_bytes": num("memory.usage_in_bytes"),
                "oom_kill": int(oom.group(1)) if oom else 0}

    def remove(self, timeout_s: float = 10.0) -> None:
        """Remove the group once its processes are gone (the caller stopped them): its charged
        page cache is emptied first. LabError naming what is left when it cannot."""
        if not self.path.exists():
            return
        deadline = time.monotonic() + timeout_s
        while True:
            left = self.pids()
            if not left:
                try:
                    (self.path / "memory.force_empty").write_text("0\n")
                except OSError:
                    pass  # still charged: rmdir says so below
                try:
                    self.path.rmdir()
                    return
                except OSError as e:
                    err = e.strerror or str(e)
            else:
                err = f"processes still inside: {left}"
            if time.monotonic() > deadline:
                raise LabError(f"memory cgroup {self.path} not removed: {err}")
            time.sleep(0.1)
