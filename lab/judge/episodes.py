"""episodes - rules (c), (c') and (e) of docs/lab.md section 2: which down episodes and which
gaps over budget of a device are excused, and why.

Pure functions over bfdcap's report, its counted gaps (lab.judge.gaps.GapTable) and the peer
gaps lab.judge.validity found. Each excusal names the cause that applies: the peer was silent
beyond budget during a hypervisor steal that explains the silence (STEAL_REASON), the peer was
silent beyond budget with no steal to explain it (SILENT_REASON: its step is VOID by rule (b),
the excuse stands), or the peer declared Down early on waking from a steal (EARLY_REASON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Collection

from ..topo import Topology
from .figures import Tags
from .validity import EarlyDown, PeerGap, over_budget_rows, window_of

if TYPE_CHECKING:  # numpy: imported by whoever builds the table
    from .gaps import GapTable

STEAL_REASON = "peer silent beyond budget during hypervisor steal"
SILENT_REASON = "peer silent beyond budget, no hypervisor steal explaining it"
EARLY_REASON = "peer declared Down early on waking from a hypervisor steal"
EXCUSE_REASON = STEAL_REASON  # the usual one; a summary without a breakdown means this


# --- (c) excused down episodes -------------------------------------------------------------

def excuse(start_ns: int, session: str, gaps: list[PeerGap]) -> PeerGap | None:
    """Rule (c): the peer gap over budget on SESSION that excuses an episode starting at
    START_NS: one that began before it and ended no earlier than the session's detection
    budget before it (or was still open at it). None: the episode counts."""
    for g in gaps:
        if g.session == session and g.start_ns < start_ns and g.end_ns >= start_ns - g.budget_ns:
            return g
    return None


def device_episodes(topo: Topology, analysis: dict[str, Any], gaps: list[PeerGap],
                    phases: list[dict[str, Any]], early: Collection[EarlyDown] = (),
                    steal_gaps: Collection[PeerGap] = ()) -> dict[str, Any]:
    """Per device: its episodes (bfdcap's sessions) in the main window and in each phase,
    each with excused or not and why (STEAL_REASON when the excusing peer gap is one of
    STEAL_GAPS, the gaps host steal explains; SILENT_REASON otherwise; EARLY_REASON for an
    early Down of EARLY). Returns {device: {"all": {...}, "phases": {name: {...}}}}
    where each {...} holds down_events, down_events_excused, down_events_counted."""
    lo, hi = window_of(analysis)
    dev_of: dict[str, str] = {}
    for d in topo.devices:
        for a in topo.session_addresses(d.name):
            dev_of[a] = d.name
    per: dict[str, list[dict[str, Any]]] = {d.name: [] for d in topo.devices}
    for s in analysis.get("sessions") or []:
        dev = dev_of.get(s.get("addr_a", "")) or dev_of.get(s.get("addr_b", ""))
        if dev is None:
            continue
        for ep in s.get("episodes") or []:
            st = ep["start_ns"]
            if not lo <= st < hi:
                continue
            g = excuse(st, s["key"], gaps)
            ed = None if g is not None else next(
                (x for x in early if x.session == s["key"] and x.ts_ns == st
                 and x.src == ep.get("src")), None)
            phase = next((p["name"] for p in phases if p["start_ns"] <= st < p["end_ns"]), None)
            per[dev].append({"session": s["key"], "start_ns": st, "end_ns": ep.get("end_ns"),
                             "src": ep.get("src"), "diag": ep.get("diag"),
                             "last_gap_ms": ep.get("last_gap_ms"), "phase": phase,
                             "excused": g is not None or ed is not None,
                             "reason": _reason(g, ed, steal_gaps),
                             "peer_gap": g.as_dict() if g is not None else None,
                             "peer_early_down": ed.as_dict() if ed is not None else None})
    out: dict[str, Any] = {}
    for dev, eps in per.items():
        out[dev] = {"all": counts(eps),
                    "phases": {p["name"]: counts([e for e in eps if e["phase"] == p["name"]])
                               for p in phases},
                    "episodes": eps}
    return out


def _reason(g: PeerGap | None, ed: EarlyDown | None,
            steal_gaps: Collection[PeerGap]) -> str | None:
    if g is not None:
        return STEAL_REASON if g in steal_gaps else SILENT_REASON
    return EARLY_REASON if ed is not None else None


def counts(eps: list[dict[str, Any]]) -> dict[str, Any]:
    """down_events, down_events_excused, down_events_counted of EPS; and, when any excusal
    has another cause than STEAL_REASON, down_events_excused_by_reason {reason: count}."""
    exc = sum(1 for e in eps if e["excused"])
    out: dict[str, Any] = {"down_events": len(eps), "down_events_excused": exc,
                           "down_events_counted": len(eps) - exc}
    by = {r: sum(1 for e in eps if e["excused"] and e.get("reason") == r)
          for r in (STEAL_REASON, SILENT_REASON, EARLY_REASON)}
    if by[SILENT_REASON] or by[EARLY_REASON]:
        out["down_events_excused_by_reason"] = {r: n for r, n in by.items()
                                                if n or r != SILENT_REASON}
    return out


def class_of_ends(topo: Topology, analysis: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(session key, sender) -> the key of that end's class in the figures
    (lab.judge.figures.tag_figures): its topology class, from its tag (lab.judge.figures.Tags),
    or "CLASS/bfdcap class" for an end off its tag's first bfdcap class (an end last Up at
    1 s); bfdcap's own class ("50ms x3") for an end of no class."""
    first: dict[str, str] = {}
    for c in analysis.get("classes") or []:
        first.setdefault(str(c.get("tag")), str(c.get("class")))
    out = {}
    for s in analysis.get("sessions") or []:
        for e in s.get("ends") or []:
            tag, cls = str(e.get("tag") or ""), str(e.get("class"))
            got = Tags.split(tag)
            name = cls if got is None else got[1] if first.get(tag, cls) == cls \
                else f"{got[1]}/{cls}"
            out[(s["key"], e.get("src"))] = name
    return out


def device_gaps(topo: Topology, analysis: dict[str, Any], table: GapTable, gaps: list[PeerGap],
                phases: list[dict[str, Any]]) -> dict[str, Any]:
    """(e) The devices' own gaps over budget (TABLE's rows of device tags), each excused when it
    overlaps a peer gap over budget on the same session: an RX-clocked engine cannot send
    while its peer is silent. Counts per device and class, over the run and per phase:
    {device: {"all": {class: {...}}, "phases": {phase: {class: {...}}}}} with
    gaps_over_budget, gaps_over_budget_excused, gaps_over_budget_counted."""
    devs = {d.name for d in topo.devices}
    cls = class_of_ends(topo, analysis)
    out: dict[str, Any] = {d: {"all": {}, "phases": {p["name"]: {} for p in phases}}
                           for d in devs}

    def bump(table: dict[str, Any], c: str, excused: bool) -> None:
        t = table.setdefault(c, {"gaps_over_budget": 0, "gaps_over_budget_excused": 0,
                                 "gaps_over_budget_counted": 0})
        t["gaps_over_budget"] += 1
        t["gaps_over_budget_excused" if excused else "gaps_over_budget_counted"] += 1

    for r in over_budget_rows(table):
        got = Tags.split(r["tag"])
        if got is None or got[2] or got[0] not in devs:
            continue
        dev = got[0]
        start = r["ts_ns"] - r["gap_ns"]
        exc = any(g.session == r["session"] and g.start_ns <= r["ts_ns"] and g.end_ns >= start
                  for g in gaps)
        c = cls.get((r["session"], r["src"]), "?")
        bump(out[dev]["all"], c, exc)
        for p in phases:
            if p["start_ns"] <= r["ts_ns"] < p["end_ns"]:
                bump(out[dev]["phases"][p["name"]], c, exc)
    return out
