"""demo - `python3 -m lab demo`: both devices side by side under one load, measured from the wire.

A three-step plan (idle, L4, idle) given to the harness: the run frame (lab.harness.frame)
brings the lab up (lab.harness.bringup), the step loop (lab.harness.steps) runs the steps with
a progress line, every daemon's view is kept, the capture stopped, everything torn down; then
lab.judge.summarise analyses the capture with bfdcap and writes summary.json and report.md.

The run folder holds what each stage reads and writes (run.json, phases.json, capture.pcap),
so `python3 -m lab report RUN_DIR` re-analyses a saved run without the lab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..judge.summarise import summarise, tables
from ..rig import stress
from ..topo import load as load_topology
from . import bringup, frame
from .lab import Lab, RunConfig
from .steps import Plan, Step, run_steps


@dataclass
class DemoConfig(RunConfig):
    idle_s: float = 15.0
    load_s: float = 30.0
    idle2_s: float = 15.0
    load: stress.Load = stress.L4


def plan(cfg: DemoConfig) -> Plan:
    """Idle, the load, idle (a step of 0 s is left out)."""
    steps = [Step("idle", cfg.idle_s),
             Step(cfg.load.name, cfg.load_s, "level", cfg.load, phase_load=cfg.load.name),
             Step("idle2", cfg.idle2_s)]
    return Plan([s for s in steps if s.seconds > 0])


def run(cfg: DemoConfig) -> dict[str, Any]:
    """Run the demo end to end and return its summary (also written to the run folder)."""
    topo = load_topology(cfg.topology)
    if cfg.duts:
        topo = topo.select(cfg.duts)
    if cfg.peer:
        topo = topo.with_peer_kind(cfg.peer)

    def body(lab: Lab, meta: dict[str, Any], rcfg: RunConfig) -> None:
        bringup.start(lab, rcfg, meta)
        bringup.wait_sessions(lab, rcfg, meta)
        records = run_steps(lab, rcfg, meta, plan(cfg))
        for rec in records:
            meta["steal_ms"][rec["name"]] = rec["steal_ms"]
            if rec["load"] is not None:
                meta["load"] = rec["load"]
        bringup.snapshot(lab, meta)
        meta["capture"] = lab.cap.stop() if lab.cap else {}
        meta["phases"] = [rec["phase"] for rec in records]

    rd, _meta = frame.run(cfg, topo, "demo", {"steal_ms": {}, "load": None}, body)
    cfg.out("lab torn down; analysing the capture with bfdcap")
    summary = summarise(rd.path, cfg.build / "bfdcap")
    cfg.out("")
    cfg.out(tables(summary))
    return summary
