"""figures - bfdcap's figures picked per device, class and step, and the validity counts put in.

Nothing here computes a percentile: gap figures are copied from bfdcap's JSON (schema
bfdcap/1), keyed by the topology's class names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..topo import Topology

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


def num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def tag_figures(topo: Topology, classes: list[dict[str, Any]], tag: str) -> dict[str, Any]:
    """Per-class figures of one tag from a bfdcap "classes" list, keyed by topology class."""
    out: dict[str, Any] = {}
    for e in classes:
        if e.get("tag") != tag:
            continue
        key = _class_key(topo, e)
        gap = e.get("gap_ms") or {}
        reply = e.get("reply_us") or {}
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
            # from the wire: this end's first packet within 2 ms after the other end's (bfdcap)
            "reply_us": {k: reply.get(k) for k in ("n", "p50", "p99")},
        }
        if key in out:  # two bfdcap classes on one topology class: keep both, distinctly
            key = f"{key}/{e.get('class')}"
        out[key] = fig
    return out


def _sum(figs: dict[str, Any], key: str) -> int:
    return int(sum(num(f.get(key)) or 0 for f in figs.values()))


def _max(figs: dict[str, Any], key: str) -> float | None:
    vals = [v for f in figs.values() if (v := num(f.get(key))) is not None]
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


def apply_validity(figs: dict[str, Any], assessment: dict[str, Any]) -> None:
    """Put rule (c)'s counts (lab.validity) into FIGS, in place: per device over the whole
    window and per phase, down_events (total), down_events_excused, down_events_counted.

    bfdcap's own per-class count (session_down_events) stays as down_events_bfdcap: the two
    come from the same episodes and must agree (the summary warns when they do not).
    """
    devs = assessment.get("devices") or {}
    for name, d in figs["duts"].items():
        got = devs.get(name) or {}
        d["down_events_bfdcap"] = d.get("down_events")
        d.update(got.get("all") or {"down_events": d.get("down_events") or 0,
                                    "down_events_excused": 0,
                                    "down_events_counted": d.get("down_events") or 0})
    for ph in figs.get("phases") or []:
        for name, d in ph["duts"].items():
            got = ((devs.get(name) or {}).get("phases") or {}).get(ph["name"])
            d["down_events_bfdcap"] = d.get("down_events")
            if got is not None:
                d.update(got)
    # rule (e): per class, the device's gaps over budget split into excused and counted
    gaps = assessment.get("device_gaps") or {}

    def put(classes: dict[str, Any], counts: dict[str, Any]) -> None:
        for cname, c in classes.items():
            got = counts.get(cname) or {}
            c["gaps_over_budget_excused"] = got.get("gaps_over_budget_excused", 0)
            c["gaps_over_budget_counted"] = got.get("gaps_over_budget_counted", 0)

    for name, d in figs["duts"].items():
        put(d["classes"], (gaps.get(name) or {}).get("all") or {})
    for ph in figs.get("phases") or []:
        for name, d in ph["duts"].items():
            put(d["classes"], ((gaps.get(name) or {}).get("phases") or {}).get(ph["name"]) or {})
