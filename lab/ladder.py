"""ladder - `python3 -m lab ladder`: every level of ladder/ladder.toml back to back, both
devices at once, measured from the wire, judged per level.

Plan: the demo's harness (namespaces, shielded peer, capture, devices, sessions Up), plus a
load namespace on the bridge for the floods; then the profile's steps (idle, levels with
their recovery windows, the flood rotation, soak) with a live progress line; stress-ng
proves each level ran (bogo ops, CPU time), each flood arm records the rate the device's link
was actually offered and the engine's counters before and after. After teardown bfdcap cuts
the capture per step (--phases), lab.validity applies the steal rule of docs/lab.md to every
step, and summary.json, report.md and the plots are written. `python3 -m lab gate RUN_DIR`
then judges the run against results/gates.toml and a baseline.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import signal
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from . import capture, demo, flood, steal, stress, util
from . import registry as _registry
from .netns import Netns
from .registry import Registry
from .topo import TopologyError, load as load_topology
from .util import LabError, RunDir, realtime_ns

LADDER = util.REPO / "ladder" / "ladder.toml"
SCHEMA = "xdp-bfd-lab-ladder/2"  # 2: per-step verdicts, steal per step and CPU
CONTRAST_LEVELS = ("L4",)  # stock bfdd must show counted down events here (the witness)


# --- the ladder as data ------------------------------------------------------------------------

@dataclass(frozen=True)
class Level:
    name: str
    description: str
    reference_threads: int  # counts are given at this many threads and scaled to ours
    counts: Mapping[str, int]  # stressor -> count at reference_threads
    options: tuple[str, ...] = ()  # passed as they are (scheduling, sizes)
    memory: bool = False  # memory pressure: off unless asked, never in CI
    min_cpu_share: float = 0.5  # the load ran if stress-ng got this share of all CPUs' time

    def scaled(self, ncpu: int) -> dict[str, int]:
        """ceil(count x ncpu / reference_threads), minimum 1 (ladder.md section 1)."""
        return {k: max(1, math.ceil(v * ncpu / self.reference_threads))
                for k, v in self.counts.items()}

    def load(self, ncpu: int) -> stress.Load:
        args: list[str] = []
        for k, v in self.scaled(ncpu).items():
            args += [f"--{k}", str(v)]
        return stress.Load(self.name, tuple(args) + tuple(self.options), self.description)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    idle_s: float
    levels: tuple[str, ...]
    level_s: float
    after_each_s: float
    after_levels_s: float
    flood_arm_s: float
    flood_pps: float
    flood_recovery_s: float
    soak_s: float
    level_s_override: Mapping[str, float] = field(default_factory=dict)
    flood_rotation: bool = True
    flood_alongside: tuple[str, ...] = ()


@dataclass(frozen=True)
class FloodCfg:
    generator: str
    arms: tuple[str, ...]


@dataclass(frozen=True)
class Ladder:
    levels: Mapping[str, Level]
    profiles: Mapping[str, Profile]
    flood: FloodCfg
    source: str = ""


def _build(cls: type, table: Any, where: str, **extra: Any) -> Any:
    if not isinstance(table, Mapping):
        raise TopologyError(f"{where}: expected a table")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - names)
    if unknown:
        raise TopologyError(f"{where}: unknown key(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(names - set(extra)))})")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}
    try:
        return cls(**kw, **extra)
    except TypeError as e:
        raise TopologyError(f"{where}: {e}") from e


def load_ladder(path: Path = LADDER) -> Ladder:
    """Load and check ladder/ladder.toml (a misspelt key or unknown level fails here)."""
    src = str(path)
    try:
        doc = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{src}: {e}") from e
    unknown = sorted(set(doc) - {"level", "profile", "flood"})
    if unknown:
        raise TopologyError(f"{src}: unknown table(s) {', '.join(unknown)}")
    levels = {}
    for i, t in enumerate(doc.get("level", [])):
        lv = _build(Level, t, f"{src} [[level]] #{i + 1}")
        if lv.name in levels:
            raise TopologyError(f"{src}: duplicate level {lv.name}")
        if not lv.counts or any(not isinstance(v, int) or v < 1 for v in lv.counts.values()):
            raise TopologyError(f"{src}: level {lv.name}: counts must be positive integers")
        levels[lv.name] = lv
    fl = _build(FloodCfg, doc.get("flood", {}), f"{src} [flood]")
    if fl.generator not in ("live", "trafgen"):
        raise TopologyError(f"{src} [flood]: generator must be live or trafgen")
    bad = [a for a in fl.arms if a not in flood.ARMS]
    if bad:
        raise TopologyError(f"{src} [flood]: unknown arm(s) {bad} (known: {list(flood.ARMS)})")
    profiles = {}
    for name, t in (doc.get("profile") or {}).items():
        p = _build(Profile, t, f"{src} [profile.{name}]", name=name)
        missing = [lv for lv in p.levels if lv not in levels]
        missing += [lv for lv in p.level_s_override if lv not in levels]
        if missing:
            raise TopologyError(f"{src} [profile.{name}]: unknown level(s) {missing}")
        bad = [a for a in p.flood_alongside if a not in flood.ARMS]
        if bad:
            raise TopologyError(f"{src} [profile.{name}]: unknown arm(s) {bad}")
        profiles[name] = p
    return Ladder(levels, profiles, fl, src)


@dataclass(frozen=True)
class Step:
    """One window of the run: idle, a level, a flood arm, or a recovery/soak window."""

    name: str
    seconds: float
    kind: str  # "idle" | "level" | "flood" | "recovery" | "soak"
    level: Level | None = None
    arm: str | None = None  # flood arm of a "flood" step
    alongside: tuple[str, ...] = ()  # arms rotating during a level (hostile)
    of: str = ""  # the level or flood a recovery window belongs to


def plan(ladder: Ladder, profile: str, with_memory: bool = False,
         floods: bool = True) -> list[Step]:
    """The profile's steps in order. Memory levels only with WITH_MEMORY, never for ci."""
    if profile not in ladder.profiles:
        raise LabError(f"no profile {profile!r} in {ladder.source} "
                       f"(have: {', '.join(ladder.profiles)})")
    p = ladder.profiles[profile]
    if with_memory and profile == "ci":
        raise LabError("memory levels never run in the ci profile")
    steps = [Step("idle", p.idle_s, "idle")] if p.idle_s else []
    seen: dict[str, int] = {}
    for name in p.levels:
        lv = ladder.levels[name]
        if lv.memory and not with_memory:
            continue
        seen[name] = seen.get(name, 0) + 1
        sname = name if seen[name] == 1 else f"{name}#{seen[name]}"
        steps.append(Step(sname, p.level_s_override.get(name, p.level_s), "level", lv,
                          alongside=p.flood_alongside if floods else ()))
        if p.after_each_s:
            steps.append(Step(f"{sname}-rec", p.after_each_s, "recovery", of=sname))
    if p.after_levels_s:
        steps.append(Step("levels-rec", p.after_levels_s, "recovery", of="levels"))
    if floods and p.flood_rotation and ladder.flood.arms:
        for a in ladder.flood.arms:
            steps.append(Step(f"flood-{a}", p.flood_arm_s, "flood", arm=a))
        if p.flood_recovery_s:
            steps.append(Step("flood-rec", p.flood_recovery_s, "recovery", of="flood"))
    if p.soak_s:
        steps.append(Step("soak", p.soak_s, "soak"))
    return steps


# --- running -----------------------------------------------------------------------------------

@dataclass
class LadderConfig(demo.DemoConfig):
    profile: str = "ci"
    ladder: Path = LADDER
    with_memory: bool = False
    floods: bool = True
    bench_generators: bool = False  # measure trafgen and live frames, then stop
    generator: str | None = None  # override [flood] generator of ladder.toml


class FloodRun:
    """One arm against every device at once: a generator per device, counters around it."""

    def __init__(self, lab: demo.Lab, targets: dict[str, flood.Target], arm: str,
                 seconds: float, pps: float, generator: str, idx: int) -> None:
        self.lab, self.arm, self.seconds, self.pps = lab, arm, seconds, pps
        self.before: dict[str, Any] = {}
        self.gens: dict[str, flood.Gen] = {}
        ns = flood.load_ns(lab.netns)
        for dev, t in targets.items():
            self.before[dev] = _counters(lab, dev)
            self.gens[dev] = flood.make_gen(generator, ns, flood.ARMS[arm],
                                            flood.frame(arm, t), seconds, pps, lab.rd.logs,
                                            f"{idx:02d}-{arm}-{dev}")
        self.t0 = time.monotonic()
        for dev, g in self.gens.items():
            lab.registry.add_pid(g.start(), "timeout")
        lab.extra.append((f"flood {arm}", self.stop))

    def stop(self) -> None:
        for g in self.gens.values():
            g.stop()

    def finish(self) -> dict[str, Any]:
        out: dict[str, Any] = {"arm": self.arm, "description": flood.ARMS[self.arm].description,
                               "expect": flood.ARMS[self.arm].expect,
                               "target_pps": self.pps, "devices": {}}
        for dev, g in self.gens.items():
            res = g.wait(self.seconds + 15)
            dt = max(1e-3, time.monotonic() - self.t0)
            after = _counters(self.lab, dev)
            out["devices"][dev] = _arm_deltas(self.before[dev], after, dt, res, self.seconds)
        self.lab.extra = [x for x in self.lab.extra if x[1] != self.stop]
        return out


def _counters(lab: demo.Lab, dev: str) -> dict[str, Any]:
    """What an arm's effect is measured with: the bridge port towards the device, the
    device's link, its namespace's UdpRcvbufErrors, and the engine's counters (SIGUSR1)."""
    ns = lab.netns.device_ns(dev)
    c: dict[str, Any] = {"t": time.monotonic(),
                         "port": flood.link_stats(lab.netns.wire, lab.netns.wire_port(dev)),
                         "link": flood.link_stats(ns, "dut0"),
                         "udp_rcvbuf_errors": flood.udp_rcvbuf_errors(ns)}
    eng = lab.engines.get(dev)
    if eng is not None:
        st = eng.stats(timeout_s=3)
        c["engine"] = None if st is None else {"counters": st.get("counters") or {},
                                               "drops": st.get("drops") or {},
                                               "sessions_up": st.get("sessions_up")}
    return c


def _arm_deltas(b: dict[str, Any], a: dict[str, Any], dt: float,
                gen: dict[str, Any], gen_s: float = 0.0) -> dict[str, Any]:
    span = max(1e-3, a["t"] - b["t"])
    offered = a["port"]["tx_packets"] - b["port"]["tx_packets"]
    # The rate over the generator's own sending time (live frames reports it; trafgen runs
    # for its timeout): the counters' span also holds process start-up and the stats dumps.
    busy = min(span, float(gen.get("seconds") or gen_s or span))
    d: dict[str, Any] = {
        "seconds": round(busy, 3),
        "counter_span_s": round(span, 3),
        "offered_frames": offered,  # frames the bridge sent into the device's link
        "offered_pps": round(offered / max(1e-3, busy)),
        "port_tx_dropped": a["port"]["tx_dropped"] - b["port"]["tx_dropped"],
        "link_rx_packets": a["link"]["rx_packets"] - b["link"]["rx_packets"],
        "link_rx_dropped": a["link"]["rx_dropped"] - b["link"]["rx_dropped"],
        "udp_rcvbuf_errors": a["udp_rcvbuf_errors"] - b["udp_rcvbuf_errors"],
        "generator": gen,
    }
    eb, ea = b.get("engine"), a.get("engine")
    if eb and ea:
        d["engine_counters"] = {k: ea["counters"].get(k, 0) - eb["counters"].get(k, 0)
                                for k in ea["counters"]
                                if ea["counters"].get(k, 0) != eb["counters"].get(k, 0)}
        d["engine_drops"] = {k: ea["drops"].get(k, 0) - eb["drops"].get(k, 0)
                             for k in ea["drops"] if ea["drops"].get(k, 0) != eb["drops"].get(k, 0)}
        d["engine_sessions_up_after"] = ea.get("sessions_up")
    elif "engine" in a or "engine" in b:
        d["engine_counters"] = None  # the engine did not answer SIGUSR1 in time
    return d


def _vmstat_oom() -> int:
    for line in util.lines_of(Path("/proc/vmstat")):
        if line.startswith("oom_kill "):
            return int(line.split()[1])
    return 0


def _run_steps(lab: demo.Lab, cfg: LadderConfig, meta: dict[str, Any], steps: list[Step],
               ladder: Ladder) -> list[capture.Phase]:
    ncpu = os.cpu_count() or 1
    p = ladder.profiles[cfg.profile]
    total = sum(s.seconds for s in steps)
    lab.steal_proc = util.spawn([util.PYTHON, str(Path(steal.__file__)),
                                 str(lab.rd.path / "steal.jsonl"), f"{total + 60:.0f}"])
    lab.registry.add_pid(lab.steal_proc.pid, "steal.py")
    meta["shield"]["steal-sampler"] = stress.shield(lab.steal_proc.pid, "steal sampler",
                                                    steal.RESERVATION, wait_s=30)
    targets = flood.targets(lab.netns, lab.topo, [d.name for d in lab.topo.devices]) \
        if cfg.floods else {}
    mon = demo.Monitor(lab)
    mon.poll()
    mon.start()
    tty = sys.stdout.isatty() and cfg.progress
    phases: list[capture.Phase] = []
    t_run = time.monotonic()
    last_print = 0.0
    try:
        for i, st in enumerate(steps):
            start_ns, t0 = realtime_ns(), time.monotonic()
            steal0, oom0 = util.cpu_steal_ms(), _vmstat_oom()
            load_run = None
            if st.level is not None:
                load_run = stress.LoadRun(st.level.load(ncpu), st.seconds,
                                          lab.rd.logs / f"stress-{st.name}.log", ncpu,
                                          st.level.min_cpu_share)
                lab.load_run = load_run
                lab.registry.add_pid(load_run.proc.pid, "stress-ng")
            arms: list[dict[str, Any]] = []
            fr = None
            arm_seq = list(st.alongside) if st.alongside else ([st.arm] if st.arm else [])
            arm_len = p.flood_arm_s if st.alongside else st.seconds
            arm_i, arm_t0 = 0, t0
            if arm_seq:
                fr = FloodRun(lab, targets, arm_seq[0], min(arm_len, st.seconds), p.flood_pps,
                              meta["generator"], len(meta["floods"]))
            while True:
                now = time.monotonic()
                elapsed = now - t0
                if load_run is not None:
                    if load_run.done():
                        break
                elif elapsed >= st.seconds:
                    break
                if fr is not None and now - arm_t0 >= arm_len and elapsed < st.seconds - 1:
                    arms.append(fr.finish())
                    arm_i += 1
                    arm_t0 = time.monotonic()
                    fr = FloodRun(lab, targets, arm_seq[arm_i % len(arm_seq)],
                                  min(arm_len, st.seconds - elapsed), p.flood_pps,
                                  meta["generator"], len(meta["floods"]) + len(arms))
                left = max(0.0, st.seconds - elapsed)
                line = (f"{i + 1}/{len(steps)} " + mon.line(st.name, left)
                        + f" | run {max(0.0, total - (now - t_run)):.0f} s left")
                if tty and now - last_print >= 0.5:
                    sys.stdout.write("\r\x1b[K" + line)
                    sys.stdout.flush()
                    last_print = now
                elif not tty and cfg.progress and now - last_print >= 5.0:
                    cfg.out(line)
                    last_print = now
                time.sleep(0.05)
            if fr is not None:
                arms.append(fr.finish())
            res = None
            if load_run is not None:
                res = load_run.finish().as_dict()
                lab.load_run = None
            end_ns = realtime_ns()
            meta["steps"].append({
                "name": st.name, "kind": st.kind, "of": st.of, "start_ns": start_ns,
                "end_ns": end_ns, "level": st.level.name if st.level else None,
                "load": res, "steal_ms": round(util.cpu_steal_ms() - steal0, 1),
                "oom_kill": _vmstat_oom() - oom0, "floods": [a["arm"] for a in arms]})
            for a in arms:
                a["step"] = st.name
            meta["floods"] += arms
            phases.append(capture.Phase(st.name, start_ns, end_ns,
                                        st.level.name if st.level else (st.arm or "")))
            capture.write_phases(lab.rd.path / "phases.json", phases)
            if tty:
                sys.stdout.write("\r\x1b[K")
            cfg.out(f"{i + 1}/{len(steps)} " + mon.line(st.name, 0.0).replace(
                "  0.0 s left", " done") + _step_note(res, arms))
    finally:
        mon.stop_event.set()
        mon.join(timeout=10)
        meta["steal_sampler_alive"] = lab.steal_proc.poll() is None
    return phases


def _step_note(res: dict[str, Any] | None, arms: list[dict[str, Any]]) -> str:
    out = ""
    if res is not None:
        out += f" | stress-ng CPU {res['cpu_s']:.1f} s" + ("" if res["ran"] else " NOT PROVEN")
    for a in arms:
        out += f" | flood {a['arm']}: " + ", ".join(
            f"{d} {v['offered_pps']} pps" for d, v in a["devices"].items())
    return out


def run(cfg: LadderConfig) -> dict[str, Any]:
    """Run the ladder end to end and return its summary (also written to the run folder)."""
    ladder = load_ladder(cfg.ladder)
    topo = load_topology(cfg.topology)
    if cfg.duts:
        topo = topo.select(cfg.duts)
    steps = plan(ladder, cfg.profile, cfg.with_memory, cfg.floods)
    demo._check_prereqs(cfg, topo)  # noqa: SLF001 - the same prerequisites
    for old in _registry.stale():
        for line in _registry.cleanup(old):
            cfg.out(f"cleanup of dead run {old.tag}: {line}")
    rd = RunDir.create(f"ladder-{cfg.profile}-{topo.meta.name}", cfg.runs_root)
    util.set_command_log(rd.logs / "commands.log")
    util.OOM_REFUSED.clear()
    util.set_oom_score_adj(os.getpid())
    util.become_subreaper()
    tag = "xb" + util.run_id_hex()
    if cfg.floods:
        cfg = dataclasses.replace(cfg, capture_exclude_mac=flood.load_mac(tag))
    (rd.path / "topology.toml").write_text(Path(cfg.topology).read_text())
    (rd.path / "ladder.toml").write_text(Path(cfg.ladder).read_text())
    meta: dict[str, Any] = {
        "run_id": rd.path.name, "tag": tag, "topology": str(cfg.topology),
        "profile": cfg.profile, "duts": [d.name for d in topo.devices], "commit": rd.commit,
        "dirty": rd.dirty, "kernel": platform.release(), "nproc": os.cpu_count(),
        "generator": cfg.generator or ladder.flood.generator, "flood_pps": ladder.profiles[cfg.profile].flood_pps,
        "shield": {}, "engine_attach": {}, "engine_stats": {}, "warnings": [], "steps": [],
        "floods": [], "capture": {},
        "plan": [{"name": s.name, "seconds": s.seconds, "kind": s.kind} for s in steps],
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    total = sum(s.seconds for s in steps)
    cfg.out(f"run folder {rd.path}")
    cfg.out(f"ladder {cfg.profile}: {len(steps)} steps, {total:.0f} s: "
            + " ".join(f"{s.name}({s.seconds:g})" for s in steps))
    netns = Netns(tag, topo, cfg.build / "xdp_pass.bpf.o")
    lab = demo.Lab(topo, rd, tag, netns, Registry.create(tag))
    roles = ["wire", "peer"] + [d.name for d in topo.devices] + (["load"] if cfg.floods else [])
    lab.registry.add_namespaces([netns.ns(r) for r in roles])

    def on_signal(signum: int, _frame: Any) -> None:
        raise demo.Interrupted(signal.Signals(signum).name)

    def on_int(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    old[signal.SIGINT] = signal.signal(signal.SIGINT, on_int)
    error: str | None = None
    try:
        demo._start(lab, cfg, meta)  # noqa: SLF001
        if cfg.floods:
            flood.build_load_ns(netns, topo)
        demo._wait_sessions(lab, cfg, meta)  # noqa: SLF001
        if cfg.bench_generators:
            meta["bench"] = _bench(lab, cfg)
        else:
            phases = _run_steps(lab, cfg, meta, steps, ladder)
            meta["phases"] = [p.as_dict() for p in phases]
        demo._snapshot(lab, meta)  # noqa: SLF001
        meta["capture"] = lab.cap.stop() if lab.cap else {}
        if lab.peer_cap is not None:
            meta["peer_capture"] = lab.peer_cap.stop()
    except (KeyboardInterrupt, demo.Interrupted) as e:
        error = f"interrupted ({type(e).__name__} {e})"
        raise
    except LabError as e:
        error = str(e)
        raise
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        problems = lab.teardown()
        for s, h in old.items():
            signal.signal(s, h)
        if problems:
            meta["warnings"] += [f"teardown: {p}" for p in problems]
        meta["error"] = error
        if util.OOM_REFUSED:
            meta["warnings"].append(
                f"oom_score_adj -1000 refused for {len(util.OOM_REFUSED)} processes "
                f"({util.OOM_REFUSED[0]}; this container lacks CAP_SYS_RESOURCE: the lab's "
                f"daemons are not shielded from the OOM killer, which matters only under the "
                f"memory levels)")
        (rd.path / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
        if error:
            cfg.out(f"run aborted: {error}; everything torn down; logs in {rd.logs}")
    cfg.out("lab torn down")
    if cfg.bench_generators:
        cfg.out(json.dumps(meta["bench"], indent=1))
        return {"verdict": "INFO", "bench": meta["bench"], "run_dir": str(rd.path)}
    cfg.out("analysing the capture with bfdcap")
    from . import ladder_report
    summary = ladder_report.summarise(rd.path, cfg.build / "bfdcap")
    cfg.out("")
    cfg.out(ladder_report.tables(summary))
    return summary


def _bench(lab: demo.Lab, cfg: LadderConfig) -> dict[str, Any]:
    """Unpaced rate of each generator and arm into the first device's link, sessions Up."""
    dev = lab.topo.devices[0].name
    out = {}
    t = flood.targets(lab.netns, lab.topo, [dev])
    for kind in ("trafgen", "live"):
        for a in ("A", "B", "D", "F"):
            fr = FloodRun(lab, t, a, 4.0, 0, kind, len(out))
            time.sleep(4.5)
            res = fr.finish()["devices"][dev]
            out[f"{kind}/{a}"] = {"offered_pps": res["offered_pps"],
                                  "generator": res["generator"],
                                  "engine_drops": res.get("engine_drops")}
            cfg.out(f"bench {kind} arm {a}: {res['offered_pps']} pps offered to {dev}")
    return out
