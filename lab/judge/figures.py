"""figures - bfdcap's figures picked per device, class and step, and the validity counts put in.

Nothing here computes a percentile: gap figures are copied from bfdcap's JSON (schema
bfdcap/1), keyed by the topology's class names.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ..topo import Session, Topology

GAP_KEYS = ("n", "p50", "p90", "p99", "p99_9", "max")


def _blocks(addrs: list[str]) -> list[str]:
    """The fewest prefixes holding exactly ADDRS (any family), e.g. ['10.77.0.1/32',
    '10.77.0.2/31'] for .1-.3."""
    nets = [ipaddress.ip_network(a) for a in addrs]
    out = []
    for v in (4, 6):
        out += [str(n) for n in ipaddress.collapse_addresses(x for x in nets if x.version == v)]
    return out


def _cover(addrs: list[str]) -> str:
    """The smallest prefix holding every address of ADDRS (one family)."""
    ips = sorted(ipaddress.ip_address(a) for a in addrs)
    net = ipaddress.ip_network(ips[0])
    while ips[-1] not in net:
        net = net.supernet()
    return str(net)


@dataclass(frozen=True)
class Tags:
    """bfdcap tags of one run, one per device and session class: "DEVICE/CLASS" for the
    device's own ends, "peer-DEVICE/CLASS" for the peer's ends facing it. Each tag is the
    class's exact addresses in its family (several rules of one name, docs/bfdcap.md), so an
    IPv6, link-local or multihop session is judged under its own class, whatever its timers."""

    topo: Topology

    @staticmethod
    def dut_name(device: str, cls: str) -> str:
        return f"{device}/{cls}"

    @staticmethod
    def peer_name(device: str, cls: str) -> str:
        return f"peer-{device}/{cls}"

    @staticmethod
    def split(tag: str) -> tuple[str, str, bool] | None:
        """(device, class, is the peer's end) of a tag of this lab; None for any other."""
        dev, sep, cls = tag.partition("/")
        if not sep or not dev or not cls:
            return None
        peer = dev.startswith("peer-")
        return (dev[len("peer-"):] if peer else dev), cls, peer

    def _by_class(self, device: str) -> dict[str, list[Session]]:
        out: dict[str, list[Session]] = {}
        for s in self.topo.sessions(device):
            out.setdefault(s.cls.name, []).append(s)
        return out

    def dut(self, device: str) -> list[tuple[str, str]]:
        """(name, prefix) rules: each class's addresses on DEVICE."""
        return [(self.dut_name(device, c), b) for c, ss in self._by_class(device).items()
                for b in _blocks([s.device_address for s in ss])]

    def peer(self, device: str) -> list[tuple[str, str]]:
        """(name, "SRC>DST") rules: each class's peer addresses sending to DEVICE (the peer
        holds one address per slot for every device: the receiver tells them apart)."""
        return [(self.peer_name(device, c), f"{b}>{_cover([s.device_address for s in ss])}")
                for c, ss in self._by_class(device).items()
                for b in _blocks([s.peer_address for s in ss])]

    def all(self) -> list[tuple[str, str]]:
        out = [r for d in self.topo.devices for r in self.dut(d.name)]
        return out + [r for d in self.topo.devices for r in self.peer(d.name)]


def num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def tag_figures(topo: Topology, classes: list[dict[str, Any]], device: str,
                peer: bool = False) -> dict[str, Any]:
    """Per-class figures of DEVICE's ends (or the peer's ends facing it) from a bfdcap
    "classes" list, keyed by topology class, each with the class's report attributes
    (SessionClass.report_on). A second bfdcap entry of one class (an end never Up, or on
    other timers) is kept as "CLASS/bfdcap class"."""
    out: dict[str, Any] = {}
    for c in topo.classes:
        tag = Tags.peer_name(device, c.name) if peer else Tags.dut_name(device, c.name)
        for e in classes:
            if e.get("tag") != tag:
                continue
            gap = e.get("gap_ms") or {}
            reply = e.get("reply_us") or {}
            fig = c.report_on(topo.device(device).kind)
            fig.update({
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
                # from the wire: this end's first packet within 2 ms after the other end's
                "reply_us": {k: reply.get(k) for k in ("n", "p50", "p99")},
            })
            key = c.name if c.name not in out else f"{c.name}/{e.get('class')}"
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
        # what should be Up: not the sessions of a class shut at either end (6.8.16)
        "sessions_to_be_up": topo.up_per_device,
        "sessions_up_end": _sum(figs, "ends_up_at_end"),
        "down_events": _sum(figs, "session_down_events"),
        "own_down_events": _sum(figs, "down_events"),
        "packets": _sum(figs, "packets"),
        "max_over_budget": _max(figs, "max_over_budget"),
        "classes": figs,
    }


def peer_block(topo: Topology, classes: list[dict[str, Any]], device: str) -> dict[str, Any]:
    figs = tag_figures(topo, classes, device, peer=True)
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
