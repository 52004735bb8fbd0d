"""report - summary.json, report.md and the terminal tables, from bfdcap's figures.

Nothing here computes a percentile: gap figures are copied from bfdcap's JSON (schema
bfdcap/1). This module picks them per device and class, decides VOID / PASS / FAIL and
renders them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .topo import Topology

SCHEMA = "xdp-bfd-lab-demo/1"
GAP_KEYS = ("n", "p50", "p90", "p99", "p99_9", "max")


@dataclass(frozen=True)
class Tags:
    """bfdcap tags of one run: each device's own ends, and the peer's ends facing it."""

    topo: Topology

    def dut(self, device: str) -> tuple[str, str]:
        return device, self.topo.device_prefix(device)

    @staticmethod
    def peer_name(device: str) -> str:
        return f"peer-{device}"

    def peer(self, device: str) -> tuple[str, str]:
        spec = f"{self.topo.peer_prefix()}>{self.topo.device_prefix(device)}"
        return self.peer_name(device), spec

    def all(self) -> list[tuple[str, str]]:
        out = [self.dut(d.name) for d in self.topo.devices]
        return out + [self.peer(d.name) for d in self.topo.devices]


def _class_key(topo: Topology, entry: dict[str, Any]) -> str:
    for c in topo.classes:
        if entry.get("interval_ms") == c.interval_ms and entry.get("detect_mult") == c.detect_mult:
            return c.name
    return str(entry.get("class") or f"{entry.get('interval_ms')}ms")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def tag_figures(topo: Topology, classes: list[dict[str, Any]], tag: str) -> dict[str, Any]:
    """Per-class figures of one tag from a bfdcap "classes" list, keyed by topology class."""
    out: dict[str, Any] = {}
    for e in classes:
        if e.get("tag") != tag:
            continue
        key = _class_key(topo, e)
        gap = e.get("gap_ms") or {}
        fig = {
            "interval_ms": e.get("interval_ms"),
            "detect_mult": e.get("detect_mult"),
            "sessions": e.get("sessions"),
            "ends": e.get("ends"),
            "packets": e.get("packets"),
            "gap_ms": {k: gap.get(k) for k in GAP_KEYS},
            "budget_ms": e.get("budget_ms"),
            "max_over_budget": e.get("max_over_budget"),
            "gaps_over_budget": e.get("gaps_over_budget"),
            "down_events": e.get("down_events"),
            "session_down_events": e.get("session_down_events"),
            "ends_up_at_end": e.get("ends_up_at_end"),
        }
        if key in out:  # two bfdcap classes on one topology class: keep both, distinctly
            key = f"{key}/{e.get('class')}"
        out[key] = fig
    return out


def _sum(figs: dict[str, Any], key: str) -> int:
    return int(sum(_num(f.get(key)) or 0 for f in figs.values()))


def _max(figs: dict[str, Any], key: str) -> float | None:
    vals = [v for f in figs.values() if (v := _num(f.get(key))) is not None]
    return max(vals) if vals else None


def dut_block(topo: Topology, classes: list[dict[str, Any]], device: str) -> dict[str, Any]:
    figs = tag_figures(topo, classes, device)
    return {
        "kind": topo.device(device).kind,
        "sessions": topo.sessions_per_device,
        "sessions_up_end": _sum(figs, "ends_up_at_end"),
        "down_events": _sum(figs, "session_down_events"),
        "own_down_events": _sum(figs, "down_events"),
        "packets": _sum(figs, "packets"),
        "max_over_budget": _max(figs, "max_over_budget"),
        "classes": figs,
    }


def peer_block(topo: Topology, classes: list[dict[str, Any]], device: str) -> dict[str, Any]:
    figs = tag_figures(topo, classes, Tags.peer_name(device))
    return {"max_over_budget": _max(figs, "max_over_budget"),
            "packets": _sum(figs, "packets"), "classes": figs}


def figures(topo: Topology, analysis: dict[str, Any]) -> dict[str, Any]:
    """{"duts": {...}, "peer": {...}} for the whole window and for each phase."""
    def one(classes: list[dict[str, Any]]) -> dict[str, Any]:
        duts = {d.name: dut_block(topo, classes, d.name) for d in topo.devices}
        peer = {d.name: peer_block(topo, classes, d.name) for d in topo.devices}
        mobs = [p["max_over_budget"] for p in peer.values() if p["max_over_budget"] is not None]
        return {"duts": duts, "peer": {"max_over_budget": max(mobs) if mobs else None,
                                       "towards": peer}}

    whole = one(analysis.get("classes") or [])
    phases = []
    for ph in analysis.get("phases") or []:
        entry = {k: ph.get(k) for k in ("name", "start_ns", "end_ns")}
        entry.update(one(ph.get("classes") or []))
        phases.append(entry)
    whole["phases"] = phases
    return whole


def verdict(summary: dict[str, Any]) -> tuple[str, list[str]]:
    """PASS / FAIL for the engine (INFO when no engine ran); VOID wins over both."""
    if summary["void"]:
        return "VOID", []
    failures = []
    for name, d in summary["duts"].items():
        if d["kind"] != "engine":
            continue
        if d["sessions_up_end"] != d["sessions"]:
            failures.append(f"{name}: {d['sessions_up_end']}/{d['sessions']} sessions Up "
                            "at the end")
        if d["down_events"]:
            failures.append(f"{name}: {d['down_events']} down events")
        mob = d.get("max_over_budget")
        if mob is not None and mob >= 1.0:
            failures.append(f"{name}: max gap / budget {mob:.3f} >= 1")
    if not any(d["kind"] == "engine" for d in summary["duts"].values()):
        return "INFO", failures
    return ("FAIL" if failures else "PASS"), failures


def _f(v: Any, nd: int = 2) -> str:
    x = _num(v)
    return "-" if x is None else f"{x:.{nd}f}"


def _i(v: Any) -> str:
    x = _num(v)
    return "-" if x is None else str(int(x))


def dut_title(name: str, kind: str) -> str:
    return f"{name} ({'bfdd + xdp-bfd' if kind == 'engine' else 'stock bfdd in software'})"


def tables(summary: dict[str, Any]) -> str:
    """The terminal tables: one per device, then the peer, the checks and the verdict."""
    lines: list[str] = []
    head = (f"  {'class':<7} {'sessions':>8} {'packets':>9} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'max ms':>8} {'budget ms':>9} {'max/budget':>10}")
    for name, d in summary["duts"].items():
        near = d.get("down_events_near_steal")
        why = (f" ({near} during a hypervisor steal)" if near else "")
        lines.append(f"{dut_title(name, d['kind'])}: {d['sessions_up_end']}/{d['sessions']} "
                     f"sessions Up at the end, {d['down_events']} down events{why}")
        lines.append(head)
        for cname, c in d["classes"].items():
            g = c["gap_ms"]
            lines.append(f"  {cname:<7} {_i(c['sessions']):>8} {_i(c['packets']):>9} "
                         f"{_f(g.get('p50')):>8} {_f(g.get('p99')):>8} {_f(g.get('max')):>8} "
                         f"{_f(c['budget_ms'], 1):>9} {_f(c['max_over_budget'], 3):>10}")
        if summary.get("phases"):
            per = ", ".join(f"{p['name']} {p['duts'][name]['down_events']}"
                            for p in summary["phases"] if name in p["duts"])
            lines.append(f"  down events by phase: {per}")
        lines.append("")
    peer = summary["peer"]
    sides = ", ".join(f"towards {n} {_f(p['max_over_budget'], 3)}"
                      for n, p in peer["towards"].items())
    lines.append(f"peer (stock bfdd, shielded: {summary['shield'].get('peer', '?')}): "
                 f"own max gap / budget {sides}")
    if summary.get("phases"):
        lines.append("  peer max gap / budget by phase: " + ", ".join(
            f"{p['name']} {_f(p['peer']['max_over_budget'], 3)}" for p in summary["phases"]))
    ev = summary.get("steal_events") or []
    if ev:
        lines.append(f"hypervisor steal >= 50 ms: {len(ev)} events ("
                     + ", ".join(f"cpu{e['cpu']} {e['steal_ms']:.0f} ms" for e in ev[:6])
                     + (", ..." if len(ev) > 6 else "") + ")")
    load = summary.get("load") or {}
    if load:
        lines.append(f"load {load.get('name')}: {' '.join(load.get('argv', []))}; "
                     f"CPU {load.get('cpu_s')} s, bogo ops {load.get('bogo_ops')}")
    cap = summary.get("capture") or {}
    lines.append(f"capture: {cap.get('captured', '?')} packets, "
                 f"{cap.get('dropped', '?')} dropped by kernel "
                 f"(tcpdump shielded: {summary['shield'].get('tcpdump', '?')})")
    for w in summary.get("warnings", []):
        lines.append(f"warning: {w}")
    v = summary["verdict"]
    if v == "VOID":
        lines.append("verdict: VOID - " + "; ".join(summary["void_reasons"]))
        for name, d in summary["duts"].items():
            if d.get("down_events_near_steal"):
                rest = d.get("down_episodes", 0) - d["down_events_near_steal"]
                lines.append(f"  {name}: {rest} down events outside the hypervisor's steals "
                             f"({d['down_events_near_steal']} during them)")
    elif v == "FAIL":
        lines.append("verdict: FAIL - " + "; ".join(summary["failures"]))
    elif v == "PASS":
        lines.append("verdict: PASS - every engine session Up at the end, 0 engine down events")
    else:
        lines.append("verdict: INFO - no engine in this run")
    lines.append(f"run folder: {summary.get('run_dir', '?')}")
    return "\n".join(lines)


def markdown(summary: dict[str, Any]) -> str:
    """report.md: the same figures as the terminal, plus the per-phase tables."""
    out = [f"# Demo run {summary.get('run_id', '')}", "",
           f"- verdict: **{summary['verdict']}**"]
    if summary["void_reasons"]:
        out.append("- VOID because: " + "; ".join(summary["void_reasons"]))
    if summary["failures"]:
        out.append("- failures: " + "; ".join(summary["failures"]))
    for w in summary.get("warnings", []):
        out.append(f"- warning: {w}")
    out += [f"- commit {summary.get('commit')}{' (dirty tree)' if summary.get('dirty') else ''},"
            f" kernel {summary.get('kernel')}, {summary.get('nproc')} CPUs",
            f"- topology `{summary.get('topology')}`, devices: {', '.join(summary['duts'])}",
            f"- shield: peer {summary['shield'].get('peer')}, tcpdump "
            f"{summary['shield'].get('tcpdump')}; devices under test unshielded", ""]
    out += ["## Phases", "", "| phase | load | seconds |", "|---|---|---|"]
    for p in summary.get("phase_plan", []):
        out.append(f"| {p['name']} | {p.get('load') or 'idle'} | "
                   f"{(p['end_ns'] - p['start_ns']) / 1e9:.1f} |")
    out.append("")
    for name, d in summary["duts"].items():
        near = d.get("down_events_near_steal")
        stolen = f", {near} of them while the hypervisor stole a vCPU" if near else ""
        out += [f"## {dut_title(name, d['kind'])}", "",
                f"{d['sessions_up_end']}/{d['sessions']} sessions Up at the end, "
                f"{d['down_events']} down events over the whole run"
                f"{stolen}.",
                "",
                "| class | sessions | packets | p50 ms | p99 ms | p99.9 ms | max ms | budget ms "
                "| max/budget | gaps over budget | down events |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for cname, c in d["classes"].items():
            g = c["gap_ms"]
            out.append(f"| {cname} | {_i(c['sessions'])} | {_i(c['packets'])} | {_f(g.get('p50'))}"
                       f" | {_f(g.get('p99'))} | {_f(g.get('p99_9'))} | {_f(g.get('max'))} | "
                       f"{_f(c['budget_ms'], 1)} | {_f(c['max_over_budget'], 3)} | "
                       f"{_i(c['gaps_over_budget'])} | {_i(c['session_down_events'])} |")
        out.append("")
        if summary.get("phases"):
            out += ["| phase | down events | " + " | ".join(
                f"{c} p99 / max / max/budget" for c in d["classes"]) + " |",
                "|---|---|" + "---|" * len(d["classes"])]
            for p in summary["phases"]:
                pd = p["duts"].get(name)
                if not pd:
                    continue
                cells = []
                for c in d["classes"]:
                    pc = pd["classes"].get(c)
                    cells.append("-" if not pc else f"{_f(pc['gap_ms'].get('p99'))} / "
                                 f"{_f(pc['gap_ms'].get('max'))} / "
                                 f"{_f(pc['max_over_budget'], 3)}")
                out.append(f"| {p['name']} | {pd['down_events']} | " + " | ".join(cells) + " |")
            out.append("")
    out += ["## Peer (validity)", "",
            "The peer's own transmit gaps must stay within its detection budget, or the run is "
            "VOID.", "", "| towards | class | p99 ms | max ms | budget ms | max/budget |",
            "|---|---|---|---|---|---|"]
    for n, p in summary["peer"]["towards"].items():
        for cname, c in p["classes"].items():
            out.append(f"| {n} | {cname} | {_f(c['gap_ms'].get('p99'))} | "
                       f"{_f(c['gap_ms'].get('max'))} | {_f(c['budget_ms'], 1)} | "
                       f"{_f(c['max_over_budget'], 3)} |")
    load = summary.get("load") or {}
    cap = summary.get("capture") or {}
    out += ["", "## Load and capture", "",
            f"- load: `{' '.join(load.get('argv', []))}`: rc {load.get('rc')}, "
            f"{load.get('cpu_s')} s CPU, bogo ops {load.get('bogo_ops')}, "
            f"problems {load.get('problems') or 'none'}",
            f"- capture: {cap.get('captured')} packets captured, {cap.get('dropped')} dropped "
            "by kernel", "",
            "Files: `capture.pcap`, `phases.json`, `summary.json`, `bfdcap.json`, `logs/` "
            "(commands.log, every daemon's log). Re-analyse with "
            "`/usr/bin/python3 -m lab report RUN_DIR`.", ""]
    for png in summary.get("plots") or []:
        out.append(f"![{png}]({png})")
    return "\n".join(out)


def write(run_dir: Path, summary: dict[str, Any]) -> None:
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n")
    (run_dir / "report.md").write_text(markdown(summary))
