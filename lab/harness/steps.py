"""steps - the one step loop every kind of run goes through.

For each step of a plan: start its load (stress-ng, proven to have run by its CPU time), its
flood arms (a rotation when several), wait out its time with a live progress line fed by the
Monitor, stop the load, record the step (times, the load's result, host steal, OOM kills,
floods) and rewrite phases.json. The steal sampler (lab/rig/steal.py) runs, shielded, across
all steps.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from .. import runfiles, util
from ..judge import loop_late
from ..rig import stress
from ..rig import steal as steal_sampler
from ..util import LabError, realtime_ns
from .lab import Lab, RunConfig

SAMPLER_OVERRUN = 2.0  # the sampler's bound: this many times the planned steps, plus a margin


@dataclass(frozen=True)
class Step:
    """One window of a run. LOAD runs for the whole step (stress-ng, its log STRESS_LOG);
    ARMS rotate, ARM_S each (a single arm lasts the step); PHASE_LOAD is phases.json's
    "load"; KIND, OF and LEVEL are recorded for the judge (ladder steps)."""

    name: str
    seconds: float
    kind: str = "idle"  # "idle" | "level" | "flood" | "recovery" | "soak"
    load: stress.Load | None = None
    min_cpu_share: float = 0.5
    stress_log: str = "stress-ng.log"
    arms: tuple[str, ...] = ()
    arm_s: float = 0.0
    of: str = ""
    level: str | None = None
    phase_load: str = ""
    memory: bool = False  # a memory level: its load runs inside lab.memcg


class Floods(Protocol):
    """What the loop needs of a flood rotation (lab.harness.floods.Rotation)."""

    def begin(self, step: Step, t0: float) -> None: ...

    def tick(self, step: Step, now: float, elapsed: float) -> None: ...

    def end(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Plan:
    """The steps, and how the loop shows and samples them."""

    steps: list[Step]
    numbered: bool = False  # "i/n" before each line and the run's time left (the ladder)
    sampler_margin_s: float = 30.0  # the steal sampler outlives the steps by this much
    sampler_wait_s: float = 0.0  # how long the sampler may wait for deadline bandwidth
    note: Callable[[dict[str, Any], list[dict[str, Any]]], str] = lambda res, arms: ""
    # The monitor asks each engine for its stats dump (SIGUSR1) every poll; off where the
    # engine's own CPU over the steps is the figure (lab scale: a dump of 65,536 sessions is
    # about 43 MB of JSON, written by the engine inside the window it is measured over).
    engine_stats: bool = True


class Monitor(threading.Thread):
    """Polls the peer (shielded, so it answers under load) and the engines every PERIOD_S.

    Sessions Up and down events per device come from the peer's view: an unshielded device
    under L4 may not answer vtysh for seconds. The engine's own count comes from its stats.
    """

    def __init__(self, lab: Lab, period_s: float = 2.0, engine_stats: bool = True) -> None:
        super().__init__(name="monitor", daemon=True)
        self.lab, self.period_s, self.engine_stats = lab, period_s, engine_stats
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.up: dict[str, int | None] = {d.name: None for d in lab.topo.devices}
        self.down: dict[str, int | None] = dict(self.up)
        self.engine_up: dict[str, int | None] = {n: None for n in lab.engines
                                                 if engine_stats}
        self.base_down: dict[str, int] = {}
        self.addr_dev = {a: d.name for d in lab.topo.devices
                         for a in lab.topo.session_addresses(d.name)}

    def _per_device(self, rows: list[dict], key: Callable[[dict], int]) -> dict[str, int]:
        out = {d.name: 0 for d in self.lab.topo.devices}
        for r in rows:
            dev = self.addr_dev.get(r.get("peer", ""))
            if dev is not None:
                out[dev] += key(r)
        return out

    def poll(self) -> None:
        assert self.lab.peer is not None
        # the FRR peer's view, and the engine peer's bfdd's (classes whose peer is "engine")
        views = [b for b in (self.lab.peer, self.lab.epeer_bfdd) if b is not None]
        try:
            up = self._per_device([r for b in views for r in b.peers(timeout=5)],
                                  lambda r: r.get("status") == "up")
        except LabError:
            up = {}
        try:
            down = self._per_device([r for b in views for r in b.counters(timeout=5)],
                                    lambda r: r.get("session-down", 0))
        except LabError:
            down = {}
        eng = {}
        for n, e in self.lab.engines.items() if self.engine_stats else ():
            st = e.stats(timeout_s=2)
            eng[n] = st.get("sessions_up") if st else None
        with self.lock:
            for d in self.up:
                self.up[d] = up.get(d)
                if d in down:
                    self.base_down.setdefault(d, down[d])
                    self.down[d] = down[d] - self.base_down[d]
            self.engine_up.update(eng)

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.poll()
            self.stop_event.wait(self.period_s)

    def line(self, phase: str, left_s: float) -> str:
        n = self.lab.topo.sessions_per_device
        parts = []
        with self.lock:
            for d in self.up:
                up = "?" if self.up[d] is None else self.up[d]
                down = "?" if self.down[d] is None else self.down[d]
                extra = ""
                if d in self.engine_up:
                    eu = self.engine_up[d]
                    extra = f" (engine says {'?' if eu is None else eu})"
                parts.append(f"{d} {up}/{n} Up{extra}, {down} down")
        return f"[{phase:<6} {left_s:5.1f} s left] " + " | ".join(parts)


def _engine_loops(lab: Lab) -> dict[str, dict[str, Any] | None]:
    """Each engine's loop-lateness counters now (its stats JSON `loop`, with the dump's
    `uptime_s`; None if it did not answer): the bounds of a step for lab.judge.loop_late."""
    out = {}
    for n, e in lab.engines.items():
        st = e.stats(timeout_s=5)
        out[n] = dict(st["loop"], uptime_s=st["uptime_s"]) if st and "loop" in st else None
    return out


def _vmstat_oom() -> int:
    for line in util.lines_of(Path("/proc/vmstat")):
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return 0


def run_steps(lab: Lab, cfg: RunConfig, meta: dict[str, Any], plan: Plan,
              floods: Floods | None = None) -> list[dict[str, Any]]:
    """Run PLAN's steps in order; returns one record per step: {name, kind, of, start_ns,
    end_ns, level, load (stress-ng's result or None), steal_ms (host steal over all CPUs),
    oom_kill, floods (arm names), arms (each arm's figures), phase (its phases.json entry)}.
    phases.json is rewritten after
    every step; meta gets the sampler's shield and whether it outlived the steps."""
    steps = plan.steps
    total = sum(s.seconds for s in steps)
    # The run's teardown stops the sampler; its own lifetime is only a bound for a run that
    # dies without a teardown. Steps overrun their plan (stress-ng under memory pressure takes
    # up to 30 s to start and stop: a 420 s hostile run took 532 s), so the bound is generous.
    lab.steal_proc = util.spawn([util.PYTHON, str(Path(steal_sampler.__file__)),
                                 str(lab.rd.path / "steal.jsonl"),
                                 f"{SAMPLER_OVERRUN * total + plan.sampler_margin_s:.0f}"])
    lab.registry.add_pid(lab.steal_proc.pid, "steal.py")
    meta["shield"]["steal-sampler"] = stress.shield(lab.steal_proc.pid, "steal sampler",
                                                    steal_sampler.RESERVATION,
                                                    wait_s=plan.sampler_wait_s)
    mon = Monitor(lab, engine_stats=plan.engine_stats)
    mon.poll()  # baseline for the down counters, before anything is stressed
    mon.start()
    tty = sys.stdout.isatty() and cfg.progress
    phases: list[runfiles.Phase] = []
    records: list[dict[str, Any]] = []
    t_run = time.monotonic()
    last_print = 0.0
    try:
        for i, st in enumerate(steps):
            loop0 = _engine_loops(lab)
            start_ns, t0 = realtime_ns(), time.monotonic()
            steal0, oom0 = util.cpu_steal_ms(), _vmstat_oom()
            cg0 = None
            if lab.memcg is not None:
                lab.memcg.reset_max_usage()
                cg0 = lab.memcg.counters()
            load_run = None
            if st.load is not None:
                load_run = stress.LoadRun(st.load, st.seconds, lab.rd.logs / st.stress_log,
                                          None, st.min_cpu_share,
                                          lab.memcg if st.memory else None)
                lab.load_run = load_run
                lab.registry.add_pid(load_run.proc.pid, "stress-ng")
            if floods is not None:
                floods.begin(st, t0)
            prefix = f"{i + 1}/{len(steps)} " if plan.numbered else ""
            while True:
                now = time.monotonic()
                elapsed = now - t0
                if load_run is not None:
                    if load_run.done():
                        break
                elif elapsed >= st.seconds:
                    break
                if floods is not None:
                    floods.tick(st, now, elapsed)
                left = max(0.0, st.seconds - elapsed)
                line = prefix + mon.line(st.name, left)
                if plan.numbered:
                    line += f" | run {max(0.0, total - (now - t_run)):.0f} s left"
                if tty and now - last_print >= 0.5:
                    sys.stdout.write("\r\x1b[K" + line)
                    sys.stdout.flush()
                    last_print = now
                elif not tty and cfg.progress and now - last_print >= 5.0:
                    cfg.out(line)
                    last_print = now
                time.sleep(0.05 if load_run is not None or plan.numbered
                           else min(0.1, max(0.0, st.seconds - elapsed)))
            arms = floods.end() if floods is not None else []
            res = None
            if load_run is not None:
                res = load_run.finish().as_dict()
                lab.load_run = None
            end_ns = realtime_ns()
            loop1 = _engine_loops(lab)
            meta.setdefault("engine_loop", {})[st.name] = {
                n: loop_late.step_figures(loop0.get(n), loop1.get(n)) for n in lab.engines}
            records.append({
                "name": st.name, "kind": st.kind, "of": st.of, "start_ns": start_ns,
                "end_ns": end_ns, "level": st.level, "load": res,
                "steal_ms": round(util.cpu_steal_ms() - steal0, 1),
                "oom_kill": _vmstat_oom() - oom0, "floods": [a["arm"] for a in arms],
                "arms": arms})
            if lab.memcg is not None and cg0 is not None:
                cg1 = lab.memcg.counters()
                records[-1]["memcg"] = {
                    "limit_bytes": lab.memcg.limit_bytes,
                    "max_usage_bytes": cg1["max_usage_bytes"],
                    "failcnt": cg1["failcnt"] - cg0["failcnt"],
                    "oom_kill": cg1["oom_kill"] - cg0["oom_kill"]}
            phases.append(runfiles.Phase(st.name, start_ns, end_ns, st.phase_load))
            records[-1]["phase"] = phases[-1].as_dict()
            runfiles.write_phases(lab.rd.path / "phases.json", phases)
            if tty:
                sys.stdout.write("\r\x1b[K")
            cfg.out(prefix + mon.line(st.name, 0.0).replace("  0.0 s left", " done")
                    + plan.note(res, arms))
    finally:
        mon.stop_event.set()
        mon.join(timeout=10)
        meta["steal_sampler_alive"] = lab.steal_proc.poll() is None
    return records
