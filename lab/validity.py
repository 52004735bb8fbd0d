"""validity - the lab's rule for hypervisor steal, peer silence and excused down events.

One rule, used identically by the demo and the ladder, written in docs/lab.md (section
"Steal, peer silence and excused down events"). Everything here is filtering and interval
overlap on figures bfdcap computed: no gap, percentile or episode is recomputed in Python.

(a) Steal windows: each lab/steal.py record of at least STEAL_MIN_MS on any CPU gives the
    window [ts - (steal_ms + sampler_gap_ms + SLACK_MS), ts + SLACK_MS].
(b) Peer gaps over budget: the peer's gaps with gap > budget (bfdcap --csv-gaps rows of ends
    tagged peer-*), plus the peer silences bfdcap shows only through an episode or a
    detection (a silence that ended in a non-Up packet, so no counted gap). A peer gap that
    overlaps a steal window is explained; one that does not is unexplained and makes the run
    VOID; so does a phase whose steal windows cover more than MAX_STEAL_COVERAGE of it.
(c) A down episode of a device is excused only when the peer's packets on that same session
    had a gap over budget that ended within the session's detection budget before the
    episode's start, or was still open at it. Every other episode counts.
(c') A down episode that starts with the peer declaring Down early (diag 1 while the
    device's last packet is younger than the budget: bfdcap's detections of the peer's end)
    is excused when it falls in a steal window (the peer, frozen, woke to its detection
    timer before reading the packet waiting for it). Outside one it counts, unless the peer
    fired before even the device's previous packet could have expired: that voids the run.
(e) A device's own gap over budget is excused when it overlaps a peer gap over budget on the
    same session (the gates' max gap / budget check uses the counted ones).
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from .topo import Topology
from .util import LabError, run

STEAL_MIN_MS = 20.0  # steal records below this are tick noise (USER_HZ is 100: 10 ms steps)
SLACK_MS = 5.0  # the sampler's period: a steal is seen up to one period late
MAX_STEAL_COVERAGE = 0.05  # a phase more than 5 % inside steal windows is too noisy to judge
EXCUSE_REASON = "peer silent beyond budget during hypervisor steal"
EARLY_REASON = "peer declared Down early on waking from a hypervisor steal"
MS = 1_000_000


@dataclass(frozen=True)
class StealWindow:
    start_ns: int
    end_ns: int
    cpu: int
    steal_ms: float
    ts_ns: int  # when the sampler saw it (the window's end minus SLACK_MS)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PeerGap:
    """A silence of the peer on one session longer than its budget.

    source: "csv-gaps" (a counted gap, both packets Up), "episode" (the peer's first non-Up
    packet of an episode came after last_gap_ms over budget) or "detection" (the device
    declared Down with diag 1 after detect_ms of peer silence over budget: the gap was
    still open, its end unknown; end_ns is the detection's time).
    """

    session: str
    src: str
    dst: str
    tag: str
    start_ns: int
    end_ns: int
    gap_ns: int
    budget_ns: int
    source: str = "csv-gaps"

    def overlaps(self, w: StealWindow) -> bool:
        return self.start_ns <= w.end_ns and self.end_ns >= w.start_ns

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gap_ms"] = round(self.gap_ns / MS, 3)
        d["budget_ms"] = round(self.budget_ns / MS, 3)
        return d


# --- (a) steal windows -----------------------------------------------------------------------

def steal_windows(records: Iterable[dict[str, Any]]) -> list[StealWindow]:
    """Rule (a): one window per steal record of at least STEAL_MIN_MS, any CPU, by start."""
    out = []
    for r in records:
        ms = float(r.get("steal_ms", 0))
        if ms < STEAL_MIN_MS:
            continue
        ts = int(r["ts_ns"])
        back = ms + float(r.get("sampler_gap_ms", 0.0)) + SLACK_MS
        out.append(StealWindow(ts - round(back * MS), ts + round(SLACK_MS * MS),
                               int(r.get("cpu", -1)), ms, ts))
    return sorted(out, key=lambda w: w.start_ns)


def coverage(windows: list[StealWindow], start_ns: int, end_ns: int) -> float:
    """Fraction of [start_ns, end_ns) inside the union of WINDOWS (overlaps counted once)."""
    if end_ns <= start_ns:
        return 0.0
    covered, cur_s, cur_e = 0, None, None
    for w in sorted(windows, key=lambda w: w.start_ns):
        s, e = max(w.start_ns, start_ns), min(w.end_ns, end_ns)
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                covered += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        covered += cur_e - cur_s
    return covered / (end_ns - start_ns)


# --- (b) peer gaps over budget --------------------------------------------------------------

def csv_gaps(pcap: Path, tags: list[tuple[str, str]], window: tuple[int, int],
             bfdcap: Path) -> str:
    """bfdcap --csv-gaps - on PCAP for the main WINDOW (the text, header included)."""
    argv = [str(bfdcap)]
    for name, spec in tags:
        argv += ["--tag", f"{name}={spec}"]
    argv += ["--from", str(window[0]), "--to", str(window[1]), "--csv-gaps", "-", str(pcap)]
    try:
        return run(argv, timeout=300).stdout
    except LabError as e:
        raise LabError(f"bfdcap --csv-gaps failed: {e}") from e


def over_budget_rows(csv_text: str, tag_prefix: str = "") -> list[dict[str, Any]]:
    """CSV rows (of tags starting with TAG_PREFIX) whose gap exceeds its budget, typed."""
    out = []
    for r in csv.DictReader(io.StringIO(csv_text)):
        if not r.get("tag", "").startswith(tag_prefix):
            continue
        gap, budget = int(r["gap_ns"]), int(r["budget_ns"])
        if budget > 0 and gap > budget:
            out.append({"ts_ns": int(r["ts_ns"]), "session": r["session"], "src": r["src"],
                        "dst": r["dst"], "tag": r["tag"], "gap_ns": gap, "budget_ns": budget})
    return out


def peer_gaps(csv_text: str, analysis: dict[str, Any], peer_addrs: set[str],
              peer_tag_prefix: str = "peer-") -> list[PeerGap]:
    """Rule (b): every peer silence over budget, from bfdcap's CSV, episodes and detections.

    The CSV lists only gaps between two Up packets. A peer that stalls and wakes up to send
    Down first leaves no such row; bfdcap still shows the silence: as the last_gap_ms of the
    episode it starts (source "episode"), or as the device's detection of it (source
    "detection"). Those are added unless a CSV gap on the same session already covers them.
    """
    gaps = [PeerGap(r["session"], r["src"], r["dst"], r["tag"], r["ts_ns"] - r["gap_ns"],
                    r["ts_ns"], r["gap_ns"], r["budget_ns"])
            for r in over_budget_rows(csv_text, peer_tag_prefix)]
    lo, hi = _window(analysis)
    derived: list[PeerGap] = []
    for s in analysis.get("sessions") or []:
        ends = {e.get("src"): e for e in s.get("ends") or []}
        peer_end = next((e for a, e in ends.items() if a in peer_addrs), None)
        dev_end = next((e for a, e in ends.items() if a not in peer_addrs), None)
        if peer_end is None:
            continue
        budget_ns = round(float(peer_end.get("budget_ms") or 0) * MS)
        for ep in s.get("episodes") or []:
            lg = ep.get("last_gap_ms")
            if ep.get("src") in peer_addrs and lg is not None and budget_ns \
                    and round(lg * MS) > budget_ns and lo <= ep["start_ns"] < hi:
                g = round(lg * MS)
                derived.append(PeerGap(s["key"], peer_end["src"], peer_end["dst"],
                                       peer_end.get("tag", ""), ep["start_ns"] - g,
                                       ep["start_ns"], g, budget_ns, "episode"))
        for det in (dev_end or {}).get("detections") or []:
            d_ns, b_ns = round(det["detect_ms"] * MS), round(det["budget_ms"] * MS)
            if d_ns > b_ns and lo <= det["ts_ns"] < hi:
                derived.append(PeerGap(s["key"], peer_end["src"], peer_end["dst"],
                                       peer_end.get("tag", ""), det["ts_ns"] - d_ns,
                                       det["ts_ns"], d_ns, b_ns, "detection"))
    for g in derived:
        if not any(c.session == g.session and c.start_ns <= g.end_ns and c.end_ns >= g.start_ns
                   for c in gaps):
            gaps.append(g)
    return sorted(gaps, key=lambda g: (g.start_ns, g.session))


def _window(analysis: dict[str, Any]) -> tuple[int, int]:
    w = analysis.get("window") or {}
    lo = w.get("start_ns") if isinstance(w.get("start_ns"), int) else 0
    hi = w.get("end_ns") if isinstance(w.get("end_ns"), int) and w.get("end_ns") else 2**63
    return lo, hi


@dataclass(frozen=True)
class EarlyDown:
    """The peer declared Down with diag 1 only detect_ms after the device's last packet,
    under its budget (bfdcap's detections, with detect_ms < budget_ms)."""

    session: str
    src: str
    ts_ns: int
    detect_ms: float
    budget_ms: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def early_downs(analysis: dict[str, Any], peer_addrs: set[str],
                csv_text: str = "") -> tuple[list[EarlyDown], list[EarlyDown]]:
    """The peer's early Downs (bfdcap detections of a peer end with detect_ms < budget),
    split by the device's own gap ending at its last packet (from the CSV):

    - races: that gap plus detect_ms reaches the budget, so the peer's timer, counted from
      the device's previous packet, had expired or was about to, and the device's last
      packet came just before it. Returned first: excused only inside a steal window (the
      peer, frozen, could not read the packet in time); outside one they count against the
      device (it cut the budget that fine) and do not void the run;
    - impossible: the peer fired before even the previous packet's timer could expire.
      Returned second: the peer misbehaved; they void the run unless a steal explains them.
    """
    lo, hi = _window(analysis)
    cands: list[tuple[str, str, dict[str, Any]]] = []
    for s in analysis.get("sessions") or []:
        for e in s.get("ends") or []:
            if e.get("src") not in peer_addrs:
                continue
            for d in e.get("detections") or []:
                if d["detect_ms"] < d["budget_ms"] and lo <= d["ts_ns"] < hi:
                    cands.append((s["key"], e["src"], d))
    want = {(k, d["ts_ns"] - round(d["detect_ms"] * MS)) for k, _, d in cands}
    gap_at: dict[tuple[str, int], int] = {}
    if want:
        for r in csv.DictReader(io.StringIO(csv_text)):
            if r["src"] in peer_addrs:
                continue
            ts = int(r["ts_ns"])
            for k in (0, -1, 1):  # detect_ms is printed to the ns; allow rounding
                if (r["session"], ts + k) in want:
                    gap_at[(r["session"], ts + k)] = int(r["gap_ns"])
    races, impossible = [], []
    for key, src, d in cands:
        last = d["ts_ns"] - round(d["detect_ms"] * MS)
        ed = EarlyDown(key, src, d["ts_ns"], d["detect_ms"], d["budget_ms"])
        g = gap_at.get((key, last))
        if g is None or g + round(d["detect_ms"] * MS) >= round(d["budget_ms"] * MS):
            races.append(ed)  # no counted gap (not both Up): treat as a race, never void
        else:
            impossible.append(ed)
    key_ts = (lambda x: x.ts_ns)
    return sorted(races, key=key_ts), sorted(impossible, key=key_ts)


def in_window(ts: int, windows: list[StealWindow]) -> StealWindow | None:
    return next((w for w in windows if w.start_ns <= ts <= w.end_ns), None)


def explain(gaps: list[PeerGap], windows: list[StealWindow]
            ) -> tuple[list[tuple[PeerGap, StealWindow]], list[PeerGap]]:
    """Split peer gaps into (explained, with the first steal window each overlaps) and not."""
    explained, unexplained = [], []
    for g in gaps:
        w = next((w for w in windows if g.overlaps(w)), None)
        if w is None:
            unexplained.append(g)
        else:
            explained.append((g, w))
    return explained, unexplained


# --- (c) excused down episodes -------------------------------------------------------------

def excuse(start_ns: int, session: str, gaps: list[PeerGap]) -> PeerGap | None:
    """Rule (c): the peer gap over budget on SESSION that excuses an episode starting at
    START_NS: one that began before it and ended no earlier than the session's detection
    budget before it (or was still open at it). None: the episode counts."""
    for g in gaps:
        if g.session == session and g.start_ns < start_ns and g.end_ns >= start_ns - g.budget_ns:
            return g
    return None


@dataclass
class DeviceEpisodes:
    total: int = 0
    excused: int = 0
    episodes: list[dict[str, Any]] | None = None

    @property
    def counted(self) -> int:
        return self.total - self.excused


def device_episodes(topo: Topology, analysis: dict[str, Any], gaps: list[PeerGap],
                    phases: list[dict[str, Any]],
                    early: list[EarlyDown] = ()) -> dict[str, Any]:
    """Per device: its episodes (bfdcap's sessions) in the main window and in each phase,
    each with excused or not and why. Returns {device: {"all": {...}, "phases": {name: {...}}}}
    where each {...} holds down_events, down_events_excused, down_events_counted."""
    lo, hi = _window(analysis)
    dev_of: dict[str, str] = {}
    for d in topo.devices:
        for a in topo.device_addresses(d.name):
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
                             "reason": EXCUSE_REASON if g is not None else
                             EARLY_REASON if ed is not None else None,
                             "peer_gap": g.as_dict() if g is not None else None,
                             "peer_early_down": ed.as_dict() if ed is not None else None})
    out: dict[str, Any] = {}
    for dev, eps in per.items():
        out[dev] = {"all": counts(eps),
                    "phases": {p["name"]: counts([e for e in eps if e["phase"] == p["name"]])
                               for p in phases},
                    "episodes": eps}
    return out


def counts(eps: list[dict[str, Any]]) -> dict[str, Any]:
    exc = sum(1 for e in eps if e["excused"])
    out: dict[str, Any] = {"down_events": len(eps), "down_events_excused": exc,
                           "down_events_counted": len(eps) - exc}
    early = sum(1 for e in eps if e.get("reason") == EARLY_REASON)
    if early:
        out["down_events_excused_by_reason"] = {EXCUSE_REASON: exc - early, EARLY_REASON: early}
    return out


def class_of_ends(topo: Topology, analysis: dict[str, Any]) -> dict[tuple[str, str], str]:
    """(session key, sender) -> the topology class name of that end (bfdcap's class)."""
    out = {}
    for s in analysis.get("sessions") or []:
        for e in s.get("ends") or []:
            name = str(e.get("class"))
            for c in topo.classes:
                if e.get("interval_ms") == c.interval_ms and e.get("detect_mult") == c.detect_mult:
                    name = c.name
            out[(s["key"], e.get("src"))] = name
    return out


def device_gaps(topo: Topology, analysis: dict[str, Any], csv_text: str, gaps: list[PeerGap],
                phases: list[dict[str, Any]]) -> dict[str, Any]:
    """(e) The devices' own gaps over budget (CSV rows of device tags), each excused when it
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

    for r in over_budget_rows(csv_text):
        if r["tag"] not in devs:
            continue
        start = r["ts_ns"] - r["gap_ns"]
        exc = any(g.session == r["session"] and g.start_ns <= r["ts_ns"] and g.end_ns >= start
                  for g in gaps)
        c = cls.get((r["session"], r["src"]), "?")
        bump(out[r["tag"]]["all"], c, exc)
        for p in phases:
            if p["start_ns"] <= r["ts_ns"] < p["end_ns"]:
                bump(out[r["tag"]]["phases"][p["name"]], c, exc)
    return out


# --- the whole rule on one run ---------------------------------------------------------------

def assess(topo: Topology, analysis: dict[str, Any], csv_text: str,
           steal_records: list[dict[str, Any]], phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Rules (a)-(c) on one analysed run. Returns a JSON-ready dict:
    steal_windows, steal_coverage (per phase), peer_gaps_explained, peer_gaps_unexplained,
    devices (see device_episodes) and void_reasons (from (b) only)."""
    peer_addrs = set(topo.peer_addresses())
    windows = steal_windows(steal_records)
    gaps = peer_gaps(csv_text, analysis, peer_addrs)
    explained, unexplained = explain(gaps, windows)
    races, impossible = early_downs(analysis, peer_addrs, csv_text)
    early_expl = [(e, w) for e in races + impossible
                  if (w := in_window(e.ts_ns, windows)) is not None]
    early = [e for e, _ in early_expl]  # only these excuse an episode
    early_unexpl = [e for e in impossible if in_window(e.ts_ns, windows) is None]
    early_counted = [e for e in races if in_window(e.ts_ns, windows) is None]
    cov = {p["name"]: coverage(windows, p["start_ns"], p["end_ns"]) for p in phases}
    void: list[str] = []
    if early_unexpl:
        e = early_unexpl[0]
        void.append(f"{len(early_unexpl)} early Down(s) by the peer outside any hypervisor "
                    f"steal, before even the device's previous packet could have expired "
                    f"(the peer misjudged a live device), e.g. {e.src} on {e.session} "
                    f"{e.detect_ms:.1f} ms after the device's last packet, budget "
                    f"{e.budget_ms:.0f} ms{_phase_of(e.ts_ns, phases)}")
    if unexplained:
        g = unexplained[0]
        void.append(f"{len(unexplained)} peer gap(s) over budget outside any hypervisor steal "
                    f"(the peer stalled by itself), e.g. {g.src} -> {g.dst} "
                    f"{g.gap_ns / MS:.1f} ms on a {g.budget_ns / MS:.0f} ms budget"
                    f"{_phase_of(g.end_ns, phases)}")
    for name, c in cov.items():
        if c > MAX_STEAL_COVERAGE:
            void.append(f"hypervisor steal windows cover {100 * c:.1f} % of phase {name} "
                        f"(over {100 * MAX_STEAL_COVERAGE:.0f} %: too noisy to judge)")
    # Excuses use every peer gap over budget: an unexplained one already voids the run.
    devices = device_episodes(topo, analysis, gaps, phases, early)
    return {
        "device_gaps": device_gaps(topo, analysis, csv_text, gaps, phases),
        "steal_windows": [w.as_dict() for w in windows],
        "steal_coverage": {k: round(v, 4) for k, v in cov.items()},
        "peer_gaps_explained": [dict(g.as_dict(), steal_window=w.as_dict())
                                for g, w in explained],
        "peer_gaps_unexplained": [g.as_dict() for g in unexplained],
        "peer_early_downs_explained": [dict(e.as_dict(), steal_window=w.as_dict())
                                       for e, w in early_expl],
        "peer_early_downs_unexplained": [e.as_dict() for e in early_unexpl],
        "peer_early_downs_races": [e.as_dict() for e in early_counted],
        "devices": devices,
        "void_reasons": void,
    }


def _phase_of(ts: int, phases: list[dict[str, Any]]) -> str:
    for p in phases:
        if p["start_ns"] <= ts < p["end_ns"]:
            return f" in phase {p['name']}"
    return ""
