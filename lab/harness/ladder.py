"""ladder - `python3 -m lab ladder`: every level of ladder/ladder.toml back to back, both
devices at once, measured from the wire, judged per level.

A profile's plan (lab.harness.ladder_file) plus its floods, given to the harness: the run frame
brings the lab up with a load namespace on the bridge for the floods, the step loop runs the
steps (idle, levels with their recovery windows, the flood rotation, soak) with a progress
line; stress-ng proves each level ran (bogo ops, CPU time), each flood arm records the rate
the device's link was actually offered and the engine's counters before and after
(lab.harness.floods). After teardown lab.judge.summarise cuts the capture per step and judges
every step; `python3 -m lab gate RUN_DIR` then judges the run against results/gates.toml and a
baseline.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..judge.summarise import summarise, tables
from ..rig import flood, memcg
from ..topo import load as load_topology
from . import bringup, frame
from .floods import Rotation, bench
from .ladder_file import LADDER, Ladder, load_ladder, plan
from .lab import Lab, RunConfig
from .steps import Plan, Step, run_steps


@dataclass
class LadderConfig(RunConfig):
    profile: str = "ci"
    ladder: Path = LADDER
    with_memory: bool = False
    floods: bool = True
    bench_generators: bool = False  # measure trafgen and live frames, then stop
    generator: str | None = None  # override [flood] generator of ladder.toml
    mem_limit_bytes: int | None = None  # the memory cgroup's limit (None: memcg's default)


def loop_plan(ladder: Ladder, cfg: LadderConfig) -> Plan:
    """The profile's steps as the step loop runs them: each level's load scaled to this
    machine's CPUs, its stress-ng log, its flood arms."""
    ncpu = os.cpu_count() or 1
    p = ladder.profiles[cfg.profile]
    steps = []
    for st in plan(ladder, cfg.profile, cfg.with_memory, cfg.floods):
        lv = st.level
        arms = st.alongside or ((st.arm,) if st.arm else ())
        steps.append(Step(st.name, st.seconds, st.kind,
                          lv.load(ncpu) if lv else None,
                          lv.min_cpu_share if lv else 0.5, f"stress-{st.name}.log", arms,
                          p.flood_arm_s if st.alongside else 0.0, st.of,
                          lv.name if lv else None, lv.name if lv else (st.arm or ""),
                          bool(lv and lv.memory)))
    return Plan(steps, numbered=True, sampler_margin_s=60.0, sampler_wait_s=30.0,
                note=_step_note)


def confine_devices(lab: Lab, limit_bytes: int | None) -> dict[str, Any]:
    """A memory cgroup around every device's daemons (bfdd, the engine); the memory levels'
    stress-ng is started inside it (lab.harness.steps). Returns what summary.json records."""
    cg = memcg.MemCgroup(f"xdp-bfd-{lab.tag}", limit_bytes or memcg.default_limit_bytes())
    cg.create()
    lab.memcg = cg
    lab.registry.add_cgroup(cg.path)
    members = []
    for name, b in lab.duts.items():
        if b.pid:
            cg.add(b.pid)
            members.append(f"bfdd {name} ({b.pid})")
    for name, e in lab.engines.items():
        if e.pid:
            cg.add(e.pid)
            members.append(f"xdp-bfd {name} ({e.pid})")
    return {"path": str(cg.path), "limit_bytes": cg.limit_bytes, "members": members}


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
    if cfg.peer:
        topo = topo.with_peer_kind(cfg.peer)
    lplan = loop_plan(ladder, cfg)
    steps = lplan.steps
    prof = ladder.profiles[cfg.profile]
    total = sum(s.seconds for s in steps)
    extra = {"profile": cfg.profile, "generator": cfg.generator or ladder.flood.generator,
             "flood_pps": prof.flood_pps, "steps": [], "floods": [],
             "plan": [{"name": s.name, "seconds": s.seconds, "kind": s.kind} for s in steps]}

    def on_tag(tag: str) -> RunConfig:
        # the generator forges the peer's addresses: keep its frames out of the capture
        return dataclasses.replace(cfg, capture_exclude_mac=flood.load_mac(tag)) \
            if cfg.floods else cfg

    def body(lab: Lab, meta: dict[str, Any], rcfg: RunConfig) -> None:
        bringup.start(lab, rcfg, meta)
        if cfg.floods:
            flood.build_load_ns(lab.netns, topo)
        bringup.wait_sessions(lab, rcfg, meta)
        if cfg.with_memory:
            meta["memcg"] = confine_devices(lab, cfg.mem_limit_bytes)
        if cfg.bench_generators:
            meta["bench"] = bench(lab, rcfg)
        else:
            targets = flood.targets(lab.netns, topo, [d.name for d in topo.devices]) \
                if cfg.floods else {}
            rot = Rotation(lab, targets, prof.flood_pps, meta["generator"], meta["floods"])
            phases = []
            for rec in run_steps(lab, rcfg, meta, lplan, rot):
                arms = rec.pop("arms")
                phases.append(rec.pop("phase"))
                for a in arms:
                    a["step"] = rec["name"]
                meta["steps"].append(rec)
                meta["floods"] += arms
            meta["phases"] = phases
        bringup.snapshot(lab, meta)
        meta["capture"] = lab.cap.stop() if lab.cap else {}
        if lab.peer_cap is not None:
            meta["peer_capture"] = lab.peer_cap.stop()

    rd, meta = frame.run(
        cfg, topo, f"ladder-{cfg.profile}-{topo.meta.name}", extra, body,
        files={"ladder.toml": cfg.ladder}, extra_roles=("load",) if cfg.floods else (),
        intro=(f"ladder {cfg.profile}: {len(steps)} steps, {total:.0f} s: "
               + " ".join(f"{s.name}({s.seconds:g})" for s in steps),), on_tag=on_tag)
    cfg.out("lab torn down")
    if cfg.bench_generators:
        cfg.out(json.dumps(meta["bench"], indent=1))
        return {"verdict": "INFO", "bench": meta["bench"], "run_dir": str(rd.path)}
    cfg.out("analysing the capture with bfdcap")
    summary = summarise(rd.path, cfg.build / "bfdcap")
    cfg.out("")
    cfg.out(tables(summary))
    return summary
