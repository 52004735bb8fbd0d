"""handover - `python3 -m lab handover`: the engine replaced under running sessions, judged at
the peer.

The run frame (lab.harness.frame) brings up the topology's engine devices only (stock bfdd
devices are left out: nothing to hand over), each engine with `--pin` (a private bpffs mounted
in the run folder) and `--dp-hold`, the wire captured. Then, per engine device: COUNT
handovers (a new engine with the same options, which adopts the pinned sessions and makes the
old one exit 75), one SIGUSR2 followed by a new engine, and one plain restart (SIGTERM, then a
new engine that finds no pins). Down events are the peer's own session-down counters (FRR
`show bfd peers counters`) for the device's sessions, read before and after each stage.

Verdict: VOID when the plain restart showed no down events (the peer's counters would then
not prove anything), FAIL when any handover showed one or adopted fewer sessions than run,
else PASS. summary.json: sessions, handovers [{kind, ms, sessions_adopted, sessions_up,
old_exit}], down_events (over the handovers), restart_down_events, verdict, reasons.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import util
from ..rig.engine import Engine
from ..topo import load as load_topology
from ..util import LabError
from . import bringup, frame
from .lab import Lab, RunConfig

HANDOVER = re.compile(r"handover: ([0-9.]+) ms \(XDP links switched, engine PID (\d+) asked to "
                      r"leave\); (\d+) sessions adopted, (\d+) Up")
HOLD_S = 30
SETTLE_S = 2.0  # after each stage: well past every class's Detection Time


@dataclass
class HandoverConfig(RunConfig):
    count: int = 3


def _peer_downs(lab: Lab, device: str) -> int:
    assert lab.peer is not None
    addrs = set(lab.topo.device_addresses(device))
    return sum(r.get("session-down", 0) for r in lab.peer.counters(timeout=15)
               if r.get("peer") in addrs)


def _successor(lab: Lab, device: str, n: int) -> Engine:
    """A new engine with the running one's options and its own log, started and registered."""
    old = lab.engines[device]
    logs = lab.rd.logs
    eng = Engine(old.binary, old.ns, old.iface, old.dplane, old.stats_path,
                 logs / f"{device}-{n}.log", logs / f"{device}-{n}.stderr", old.extra_args)
    lab.registry.add_pid(eng.start(timeout_s=60), "xdp-bfd")
    lab.engines[f"{device}-gone-{n}"] = old
    lab.engines[device] = eng
    return eng


def _handover_line(eng: Engine) -> dict[str, Any]:
    m = util.wait_until(lambda: HANDOVER.search(eng.log_text()), 30,
                        f"the handover line in {eng.log_path.name}")
    return {"ms": float(m.group(1)), "old_pid": int(m.group(2)),
            "sessions_adopted": int(m.group(3)), "sessions_up": int(m.group(4))}


def _exit(eng: Engine, timeout_s: float = 10.0) -> int | None:
    assert eng.proc is not None
    try:
        return eng.proc.wait(timeout=timeout_s)
    except Exception:  # noqa: BLE001 - still running: reported as None
        return None


def _device_run(lab: Lab, cfg: HandoverConfig, device: str) -> dict[str, Any]:
    out: dict[str, Any] = {"handovers": [], "down_events": 0}
    n = 0
    for i in range(cfg.count + 1):
        kind = "handover" if i < cfg.count else "sigusr2-restart"
        before = _peer_downs(lab, device)
        old, rc = lab.engines[device], None
        if kind == "sigusr2-restart":
            assert old.pid is not None
            os.kill(old.pid, signal.SIGUSR2)
            rc = _exit(old)
        n += 1
        new = _successor(lab, device, n)
        rec = {"kind": kind, **_handover_line(new)}
        rec["old_exit"] = rc if kind == "sigusr2-restart" else _exit(old)
        time.sleep(SETTLE_S)
        rec["down_events"] = _peer_downs(lab, device) - before
        out["down_events"] += rec["down_events"]
        out["handovers"].append(rec)
        cfg.out(f"{device}: {kind} {i + 1}: {rec['ms']:.3f} ms, {rec['sessions_adopted']} "
                f"adopted ({rec['sessions_up']} Up), old engine exit {rec['old_exit']}, "
                f"{rec['down_events']} down events at the peer")
    # The plain restart: SIGTERM sends AdminDown and removes the pins, so the peer must see it.
    before = _peer_downs(lab, device)
    old = lab.engines[device]
    old.stop()
    n += 1
    _successor(lab, device, n)
    time.sleep(SETTLE_S)
    out["restart_down_events"] = _peer_downs(lab, device) - before
    cfg.out(f"{device}: plain restart: {out['restart_down_events']} down events at the peer")
    return out


def run(cfg: HandoverConfig) -> dict[str, Any]:
    """Run it end to end; summary.json in the run folder, also returned."""
    topo = load_topology(cfg.topology)
    engines = [d.name for d in topo.devices if d.kind == "engine"]
    if not engines:
        raise LabError(f"{cfg.topology} has no engine device: nothing to hand over")
    topo = topo.select(engines)
    pins: list[Path] = []
    result: dict[str, Any] = {}

    def body(lab: Lab, meta: dict[str, Any], rcfg: RunConfig) -> None:
        for d in lab.topo.devices:
            pin = lab.rd.path / f"pin-{d.name}"
            pin.mkdir()
            util.run(["mount", "-t", "bpf", "bpf", str(pin)])
            pins.append(pin)
        extra = {d.name: ("--pin", str(lab.rd.path / f"pin-{d.name}"), "--dp-hold",
                          str(HOLD_S)) for d in lab.topo.devices}
        bringup.start(lab, rcfg, meta, engine_extra=extra)
        bringup.wait_sessions(lab, rcfg, meta)
        for d in lab.topo.devices:
            result[d.name] = _device_run(lab, cfg, d.name)
        bringup.snapshot(lab, meta)
        meta["capture"] = lab.cap.stop() if lab.cap else {}

    try:
        rd, meta = frame.run(cfg, topo, "handover", {"count": cfg.count}, body)
    finally:
        for pin in pins:
            util.run(["umount", str(pin)], check=False)
    summary = judge(topo.sessions_per_device, result, meta)
    (rd.path / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    cfg.out(f"verdict {summary['verdict']}: " + "; ".join(summary["reasons"]))
    return summary


def judge(sessions: int, result: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """summary.json's contents from each device's stages."""
    handovers = [h for r in result.values() for h in r["handovers"]]
    downs = sum(r["down_events"] for r in result.values())
    restart = sum(r.get("restart_down_events", 0) for r in result.values())
    reasons = []
    if meta.get("error") or not result:
        verdict = "VOID"
        reasons.append(f"the run did not finish: {meta.get('error')}")
    elif restart == 0:
        verdict = "VOID"
        reasons.append("the plain restart showed no down events at the peer: the counters "
                       "prove nothing")
    else:
        short = [h for h in handovers if h["sessions_adopted"] != sessions]
        verdict = "FAIL" if downs or short else "PASS"
        reasons.append(f"{downs} down events over {len(handovers)} handovers, "
                       f"{restart} on the plain restart")
        if short:
            reasons.append(f"{len(short)} handovers adopted fewer than {sessions} sessions")
        ms = [h["ms"] for h in handovers]
        reasons.append(f"handover {min(ms):.3f}..{max(ms):.3f} ms")
    return {"sessions": sessions, "handovers": handovers, "down_events": downs,
            "restart_down_events": restart, "verdict": verdict, "reasons": reasons,
            "run_id": meta.get("run_id")}
