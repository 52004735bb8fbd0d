"""handover - `python3 -m lab handover`: the engine replaced under running sessions, judged at
the peer.

The run frame (lab.harness.frame) brings up the topology's engine devices only (stock bfdd
devices are left out: nothing to hand over), each engine with `--pin` (a private bpffs mounted
in the run folder) and `--dp-hold`, the wire captured. Then, per engine device: COUNT
handovers (a new engine with the same options, which adopts the pinned sessions and makes the
old one exit 75), one SIGUSR2 followed by a new engine, and one plain restart (SIGTERM, then a
new engine that finds no pins). Down events are the peer's own session-down counters (FRR
`show bfd peers counters`) for the device's sessions, read before and after each stage, plus
the peer's ends going down in the capture over the same window (bfdcap), where the device's
longest gap between two packets of a session is read too.

Verdict: VOID when the plain restart showed no down events (the peer's counters would then
not prove anything), FAIL when any handover showed one, adopted fewer sessions than run, or
left bfdd with fewer sessions Up than run (a session bfdd did not add again stays held on the
wire only until --dp-hold ends), else PASS. summary.json: sessions, handovers [{kind, ms,
sessions_adopted, sessions_up, old_exit, down_events, bfdd_up, wire}], down_events (over the
handovers), restart_down_events, restart_wire_down_events, verdict, reasons.
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
from ..judge import bfdcap
from ..judge.figures import Tags, num, tag_figures
from ..rig import frr
from ..rig.engine import Engine
from ..topo import Topology, load as load_topology
from ..util import LabError
from . import bringup, frame
from .lab import Lab, RunConfig

HANDOVER = re.compile(r"handover: ([0-9.]+) ms \(XDP program switched, engine PID (\d+) asked "
                      r"to leave\); (\d+) sessions adopted, (\d+) Up; switch: ([^;]+), "
                      r"([0-9.]+) ms;")
HOLD_S = 30
SETTLE_S = 2.0  # after each stage: well past every class's Detection Time


@dataclass
class HandoverConfig(RunConfig):
    count: int = 3


def _peer_downs(lab: Lab, device: str) -> int:
    assert lab.peer is not None
    addrs = set(lab.topo.session_addresses(device))
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
            "sessions_adopted": int(m.group(3)), "sessions_up": int(m.group(4)),
            "switch": m.group(5), "switch_ms": float(m.group(6))}


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
        t0 = util.realtime_ns()
        new = _successor(lab, device, n)
        rec = {"kind": kind, **_handover_line(new)}
        rec["old_exit"] = rc if kind == "sigusr2-restart" else _exit(old)
        time.sleep(SETTLE_S)
        rec["window_ns"] = [t0, util.realtime_ns()]  # for the wire's figures, after the run
        rec["down_events"] = _peer_downs(lab, device) - before
        # bfdd's own view: 8.4.4 offers a connection at most 58 sessions; the engine connects
        # again until it has them all (docs/engine.md, "Live handover")
        rec["bfdd_up"] = frr.up_count(lab.duts[device].peers(timeout=15))
        out["down_events"] += rec["down_events"]
        out["handovers"].append(rec)
        cfg.out(f"{device}: {kind} {i + 1}: {rec['ms']:.3f} ms (switch: {rec['switch']}, "
                f"{rec['switch_ms']:.3f} ms), {rec['sessions_adopted']} "
                f"adopted ({rec['sessions_up']} Up), old engine exit {rec['old_exit']}, "
                f"{rec['down_events']} down events at the peer, {rec['bfdd_up']} Up in bfdd")
    # The plain restart: SIGTERM sends AdminDown and removes the pins, so the peer must see it.
    before = _peer_downs(lab, device)
    old = lab.engines[device]
    t0 = util.realtime_ns()
    old.stop()
    n += 1
    _successor(lab, device, n)
    time.sleep(SETTLE_S)
    out["restart_window_ns"] = [t0, util.realtime_ns()]
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
    for device, r in result.items():
        for h in r["handovers"]:
            h["wire"] = wire(rd.path / "capture.pcap", topo, device, h["window_ns"], cfg)
        if "restart_window_ns" in r:
            r["restart_wire"] = wire(rd.path / "capture.pcap", topo, device,
                                     r["restart_window_ns"], cfg)
    summary = judge(topo.sessions_per_device, result, meta)
    (rd.path / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    cfg.out(f"verdict {summary['verdict']}: " + "; ".join(summary["reasons"]))
    return summary


def wire(pcap: Path, topo: Topology, device: str, window: list[int],
         cfg: RunConfig) -> dict[str, Any]:
    """From the capture, over WINDOW (ns, CLOCK_REALTIME): the device's longest gap between
    two packets of a session against its class's budget, and down events of either end."""
    if not pcap.exists():
        return {"error": f"no {pcap.name}"}
    rep = bfdcap.analyse(pcap, tags=Tags(topo).all(), window=(window[0], window[1]),
                         bfdcap=cfg.build / "bfdcap")
    dev = tag_figures(topo, rep.get("classes") or [], device)
    peer = tag_figures(topo, rep.get("classes") or [], device, peer=True)
    gaps = [v for f in dev.values() if (v := num(f["gap_ms"].get("max"))) is not None]
    over = [v for f in dev.values() if (v := num(f.get("max_over_budget"))) is not None]
    return {"device_max_gap_ms": max(gaps) if gaps else None,
            "device_max_gap_over_budget": max(over) if over else None,
            "device_down_events": sum(int(num(f.get("session_down_events")) or 0)
                                      for f in dev.values()),
            "peer_down_events": sum(int(num(f.get("session_down_events")) or 0)
                                    for f in peer.values())}


def judge(sessions: int, result: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """summary.json's contents from each device's stages."""
    handovers = [h for r in result.values() for h in r["handovers"]]
    # the peer's counters, and what the capture shows of either end in the same windows
    downs = sum(r["down_events"] for r in result.values()) + sum(
        (h.get("wire") or {}).get("peer_down_events", 0) for h in handovers)
    restart = sum(r.get("restart_down_events", 0) for r in result.values())
    restart_wire = sum((r.get("restart_wire") or {}).get("peer_down_events", 0)
                       for r in result.values())
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
        behind = [h for h in handovers if h.get("bfdd_up", sessions) != sessions]
        verdict = "FAIL" if downs or short or behind else "PASS"
        reasons.append(f"{downs} down events over {len(handovers)} handovers, "
                       f"{restart} on the plain restart ({restart_wire} seen on the wire)")
        if short:
            reasons.append(f"{len(short)} handovers adopted fewer than {sessions} sessions")
        if behind:
            reasons.append(f"bfdd shows fewer than {sessions} Up after {len(behind)} handovers "
                           f"(min {min(h['bfdd_up'] for h in behind)}): sessions it did not "
                           f"offer the new engine stay held on the wire (--dp-hold)")
        ms = [h["ms"] for h in handovers]
        sw = [h["switch_ms"] for h in handovers if "switch_ms" in h]
        how = ", ".join(sorted({h["switch"] for h in handovers if "switch" in h}))
        reasons.append(f"handover {min(ms):.3f}..{max(ms):.3f} ms" + (
            f" (switch by {how}: {min(sw):.3f}..{max(sw):.3f} ms)" if sw else ""))
    return {"sessions": sessions, "handovers": handovers, "down_events": downs,
            "restart_down_events": restart, "restart_wire_down_events": restart_wire,
            "verdict": verdict, "reasons": reasons,
            "run_id": meta.get("run_id")}
