"""lab - everything one run started (namespaces, capture, daemons, engines, load, sampler,
floods), so teardown() stops it by PID and name, whatever happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import util
from ..rig import capture, frr, neigh, stress
from ..rig.bfdpeer import BfdPeer
from ..rig.bird import Bird
from ..rig.memcg import MemCgroup
from ..rig.engine import Engine
from ..rig.netns import Netns
from ..rig.registry import Registry
from ..topo import Topology
from ..util import RunDir


BUILD = util.REPO / "build"


@dataclass
class RunConfig:
    """What every kind of run is given (the demo and the ladder add their own fields)."""

    topology: Path = util.REPO / "topologies" / "demo.toml"
    duts: list[str] | None = None  # None: every device of the topology
    peer: str = ""  # "frr" | "bfdpeer": overrides the topology's [peer] kind; "": keep it
    settle_s: float = 30.0  # how long sessions may take to come Up before the steps
    runs_root: Path | None = None
    build: Path = BUILD
    out: Callable[[str], None] = print
    progress: bool = True
    capture_exclude_mac: str = ""  # a sender left out of the capture (the ladder's floods)
    peer_capture: bool = False  # also capture the peer's sends on peer0 itself (diagnosis)
    # lab.rig.standin --window: sessions added and not yet Up at a time (0: no limit)
    standin_window: int = 0


class Interrupted(Exception):
    """SIGTERM/SIGHUP arrived: unwind through the finally blocks and tear down."""


@dataclass
class Lab:
    """Everything one run started, so teardown() can stop it by PID and name."""

    topo: Topology
    rd: RunDir
    tag: str
    netns: Netns
    registry: Registry
    cap: capture.Capture | None = None
    peer_cap: capture.Capture | None = None
    peer: frr.Bfdd | BfdPeer | None = None  # FRR or bfdpeer, as [peer] kind says
    bird: Bird | None = None  # BIRD as the peer of the classes that name it
    epeer_bfdd: frr.Bfdd | None = None  # the engine peer's bfdd (classes with peer "engine")
    epeer: Engine | None = None  # the engine peer's xdp-bfd, connected to epeer_bfdd
    duts: dict[str, frr.Bfdd] = field(default_factory=dict)
    engines: dict[str, Engine] = field(default_factory=dict)
    load_run: stress.LoadRun | None = None
    steal_proc: Any = None  # the steal sampler (subprocess.Popen)
    extra: list[tuple[str, Callable[[], Any]]] = field(default_factory=list)  # e.g. floods
    memcg: MemCgroup | None = None  # around the devices and the memory levels' load
    neigh_limits: neigh.Raised | None = None  # neighbour-table limits raised for this run

    def teardown(self) -> list[str]:
        problems: list[str] = []
        steps: list[tuple[str, Callable[[], Any]]] = list(self.extra)
        if self.load_run is not None:
            steps.append(("stress-ng", self.load_run.kill))
        if self.steal_proc is not None:
            pid = self.steal_proc.pid
            steps.append(("steal sampler", lambda: util.stop_pid(pid, "steal.py")))
        if self.cap is not None:
            steps.append(("tcpdump", self.cap.stop))
        if self.peer_cap is not None:
            steps.append(("tcpdump (peer)", self.peer_cap.stop))
        steps += [(f"engine {n}", e.stop) for n, e in self.engines.items()]
        steps += [(f"bfdd {b.inst}", b.stop) for b in self.duts.values()]
        if self.peer is not None:
            steps.append((f"bfdd {self.peer.inst}", self.peer.stop))
        if self.bird is not None:
            steps.append(("bird", self.bird.stop))
        if self.epeer is not None:
            steps.append(("engine peer", self.epeer.stop))
        if self.epeer_bfdd is not None:
            steps.append((f"bfdd {self.epeer_bfdd.inst}", self.epeer_bfdd.stop))
        for what, fn in steps:
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - keep tearing down whatever happens
                problems.append(f"stopping {what}: {e}")
        if self.memcg is not None:  # empty once the daemons and the load are stopped
            try:
                self.memcg.remove()
            except Exception as e:  # noqa: BLE001 - keep tearing down whatever happens
                problems.append(str(e))
        problems += self.netns.teardown()
        if self.neigh_limits is not None:
            problems += self.neigh_limits.restore()
        self.registry.remove()
        return problems
