"""registry - what a run has started, on disk, so a run killed with SIGKILL can be cleaned up.

Each run writes /run/xdp-bfd-lab/<tag>.json: the harness PID, its namespaces, FRR
pathspaces and the PIDs it started (each with a string its command line must contain).
`python3 -m lab cleanup` removes the leftovers of runs whose harness is gone, and only those:
other people's runs on the same machine are left alone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import util
from . import bfdpeer, memcg
from .frr import FRR_RUN
from ..util import LabError, run

ROOT = Path("/run/xdp-bfd-lab")


@dataclass
class Registry:
    tag: str
    harness_pid: int
    namespaces: list[str] = field(default_factory=list)
    frr: list[str] = field(default_factory=list)
    pids: list[tuple[int, str]] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)  # memory cgroup directories (lab.rig.memcg)

    @property
    def path(self) -> Path:
        return ROOT / f"{self.tag}.json"

    @classmethod
    def create(cls, tag: str) -> "Registry":
        r = cls(tag, os.getpid())
        r.save()
        return r

    def save(self) -> None:
        ROOT.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        os.replace(tmp, self.path)

    def add_namespaces(self, names: list[str]) -> None:
        self.namespaces += names
        self.save()

    def add_frr(self, inst: str) -> None:
        self.frr.append(inst)
        self.save()

    def add_cgroup(self, path: Path) -> None:
        self.cgroups.append(str(path))
        self.save()

    def add_pid(self, pid: int, expect: str) -> None:
        self.pids.append((pid, expect))
        self.save()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> "Registry":
        d = json.loads(path.read_text())
        d["pids"] = [tuple(p) for p in d.get("pids", [])]
        return cls(**d)


def stale() -> list[Registry]:
    """Registries of runs whose harness process no longer exists."""
    out = []
    for p in sorted(ROOT.glob("xb*.json")) if ROOT.exists() else []:
        try:
            r = Registry.load(p)
        except (OSError, ValueError, TypeError):
            continue
        if not util.pid_alive(r.harness_pid) or "lab" not in util.pid_cmdline(r.harness_pid):
            out.append(r)
    return out


def cleanup(r: Registry) -> list[str]:
    """Stop what a dead run left behind: its PIDs, namespaces and FRR run dirs."""
    done = []
    for pid, expect in reversed(r.pids):
        if util.pid_cmdline(pid) and expect in util.pid_cmdline(pid):
            util.stop_pid(pid, expect, sig=signal.SIGTERM, timeout_s=3.0)
            done.append(f"stopped pid {pid} ({expect})")
    for ns in reversed(r.namespaces):
        if Path(f"/run/netns/{ns}").exists():
            try:
                run(["ip", "netns", "del", ns])
                done.append(f"deleted namespace {ns}")
            except LabError as e:
                done.append(f"could not delete {ns}: {e}")
    for cg in r.cgroups:
        p = Path(cg)
        if p.parent == memcg.ROOT and p.exists():
            try:
                memcg.MemCgroup(p.name, 0).remove()
                done.append(f"removed memory cgroup {p}")
            except LabError as e:
                done.append(str(e))
    for ns in r.namespaces:  # bfdpeer's log and stats on tmpfs (lab.rig.bfdpeer)
        d = bfdpeer.SHM_ROOT / ns
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            done.append(f"removed {d}")
    for inst in r.frr:
        d = FRR_RUN / inst
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            done.append(f"removed {d}")
    r.remove()
    return done
