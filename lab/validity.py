"""validity - the lab's rule for hypervisor steal, peer silence and excused down events.

One rule, used identically by the demo and the ladder, written in docs/lab.md (section 2).
Everything here is filtering, summing and interval arithmetic on figures bfdcap computed and
on lab/steal.py's records: no gap, percentile or episode is recomputed in Python.

(a) Steal records: every nonzero per-CPU steal increment lab/steal.py saw, each tick of each
    CPU once at its earliest observation (steal.merge()).
(b) Peer gaps over budget: the peer's gaps with gap > budget (bfdcap --csv-gaps rows of ends
    tagged peer-*), plus the peer silences bfdcap shows only through an episode or a
    detection. A gap [t0, t1] over budget B is explained by host steal when, on some CPU,
    the steal recorded within [t0 - SLACK_MS, t1 + SLACK_MS] is at least (t1 - t0) - B:
    without the stolen time the peer would have met its budget. Otherwise it is unexplained
    and the step holding t1 is VOID: the peer stalled by itself.
(s) A step is VOID as too noisy when any CPU's steal recorded within it exceeds
    MAX_STEAL_FRACTION of the step's duration.
(c) A down episode of a device is excused only when the peer's packets on that same session
    had a gap over budget that ended within the session's detection budget before the
    episode's start, or was still open at it. Every other episode counts.
(c') A down episode that starts with the peer declaring Down early (diag 1 while the
    device's last packet is younger than the budget: bfdcap's detections of the peer's end)
    is excused when host steal explains it: on some CPU, the steal recorded within
    [T - SLACK_MS, D + SLACK_MS] (T the device's last packet, D the peer's Down) is at least
    B - g (g the device's gap ending at T, B the budget: the time the peer had to read that
    packet before its timer was due; 0 when g is unknown) and nonzero. Otherwise a race at
    the budget's edge counts against the device; an impossible one (the peer fired before
    even the device's previous packet could have expired) voids its step.
(e) A device's own gap over budget is excused when it overlaps a peer gap over budget on the
    same session (the gates' max gap / budget check uses the counted ones).
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from .topo import Topology
from .util import LabError, run

SLACK_MS = 5.0  # the sampler's period: steal is seen up to one period after it is accounted
MAX_STEAL_FRACTION = 0.10  # a step with more steal than this on one CPU is too noisy to judge
EXCUSE_REASON = "peer silent beyond budget during hypervisor steal"
EARLY_REASON = "peer declared Down early on waking from a hypervisor steal"
MS = 1_000_000


# --- (a) steal records ------------------------------------------------------------------------

def steal_on(records: Iterable[dict[str, Any]], lo_ns: int, hi_ns: int) -> dict[int, float]:
    """Steal in ms per CPU of the records seen within [LO_NS, HI_NS] (both ends included)."""
    out: dict[int, float] = {}
    for r in records:
        if r.get("late"):
            continue
        ts = int(r["ts_ns"])
        if lo_ns <= ts <= hi_ns:
            cpu = int(r.get("cpu", -1))
            out[cpu] = out.get(cpu, 0.0) + float(r.get("steal_ms", 0.0))
    return out


@dataclass(frozen=True)
class Explanation:
    """What rule (b) (or (c')) found around one event: the steal per CPU recorded within
    [lo_ns, hi_ns], the most on one CPU (cpu, stolen_ms) and the amount needed."""

    lo_ns: int
    hi_ns: int
    needed_ms: float
    cpu: int | None
    stolen_ms: float
    per_cpu: dict[int, float]

    @property
    def explained(self) -> bool:
        return self.stolen_ms > 0 and self.stolen_ms >= self.needed_ms

    def as_dict(self) -> dict[str, Any]:
        return {"explained": self.explained, "needed_ms": round(self.needed_ms, 3),
                "cpu": self.cpu, "stolen_ms": round(self.stolen_ms, 3),
                "per_cpu_ms": {str(k): round(v, 3) for k, v in sorted(self.per_cpu.items())},
                "window": [self.lo_ns, self.hi_ns]}


def explanation(records: list[dict[str, Any]], lo_ns: int, hi_ns: int,
                needed_ms: float) -> Explanation:
    """The steal recorded within [LO_NS - SLACK_MS, HI_NS + SLACK_MS] against NEEDED_MS."""
    lo, hi = lo_ns - round(SLACK_MS * MS), hi_ns + round(SLACK_MS * MS)
    per = steal_on(records, lo, hi)
    cpu = max(per, key=lambda c: (per[c], -c)) if per else None
    return Explanation(lo, hi, needed_ms, cpu, per.get(cpu, 0.0) if cpu is not None else 0.0,
                       per)


def step_steal(records: list[dict[str, Any]], steps: list[dict[str, Any]],
               ncpu: int) -> dict[str, dict[str, Any]]:
    """Rule (s): per step, each CPU's steal recorded within it, in ms and % of the step:
    {step: {"seconds": s, "cpus": {"0": {"ms": x, "pct": y}, ...}, "max_pct": z}}."""
    out: dict[str, dict[str, Any]] = {}
    for p in steps:
        dur_ms = max(1e-9, (p["end_ns"] - p["start_ns"]) / MS)
        per = steal_on(records, p["start_ns"], p["end_ns"] - 1)
        cpus = {str(c): {"ms": round(per.get(c, 0.0), 1),
                         "pct": round(100 * per.get(c, 0.0) / dur_ms, 2)}
                for c in sorted(set(range(ncpu)) | set(per))}
        out[p["name"]] = {"seconds": round(dur_ms / 1000, 3), "cpus": cpus,
                          "max_pct": max((v["pct"] for v in cpus.values()), default=0.0)}
    return out


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

    def needed_ms(self) -> float:
        """Rule (b): the steal that would account for the gap's excess over its budget."""
        return (self.gap_ns - self.budget_ns) / MS

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["gap_ms"] = round(self.gap_ns / MS, 3)
        d["budget_ms"] = round(self.budget_ns / MS, 3)
        return d


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


def detections_open(analysis: dict[str, Any], peer_addrs: set[str]) -> list[tuple[str, str, int]]:
    """(peer src, device dst, ts_ns) of every device detection over budget in the window:
    the peer silences whose end peer_gaps() looks up (packet_source)."""
    lo, hi = _window(analysis)
    out = []
    for s in analysis.get("sessions") or []:
        ends = {e.get("src"): e for e in s.get("ends") or []}
        peer = next((e for a, e in ends.items() if a in peer_addrs), None)
        dev = next((e for a, e in ends.items() if a not in peer_addrs), None)
        if peer is None or dev is None:
            continue
        for det in dev.get("detections") or []:
            if det["detect_ms"] > det["budget_ms"] and lo <= det["ts_ns"] < hi:
                out.append((peer["src"], peer["dst"], int(det["ts_ns"])))
    return out


Packets = Callable[[list[tuple[str, str, int, int]]], list[dict[str, Any]]]
"""Given (src, dst, lo_ns, hi_ns) windows, the BFD packets (bfdcap --packets lines) of those
sender/receiver pairs inside them, by time; ("*", "*", lo, hi) asks for every packet."""


def packet_source(pcap: Path, bfdcap: Path) -> Packets:
    """A Packets lookup on PCAP: windows are clustered (less than a second apart) and each
    cluster read with one `bfdcap --packets --from --to` (bfdcap stops reading at --to)."""
    import json

    def get(wins: list[tuple[str, str, int, int]]) -> list[dict[str, Any]]:
        by_pair: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for a, b, lo, hi in wins:
            by_pair.setdefault((a, b), []).append((lo, hi))
        spans: list[list[int]] = []
        for _, _, lo, hi in sorted(wins, key=lambda w: w[2]):
            if spans and lo - spans[-1][1] < 1_000 * MS:
                spans[-1][1] = max(spans[-1][1], hi)
            else:
                spans.append([lo, hi])
        out = []
        for lo, hi in spans:
            argv = [str(bfdcap), "--packets", "--from", str(lo), "--to", str(hi + 1), str(pcap)]
            try:
                text = run(argv, timeout=300).stdout
            except LabError as e:
                raise LabError(f"bfdcap --packets failed: {e}") from e
            for line in text.splitlines():
                if '"src"' not in line:
                    continue
                pk = json.loads(line)
                ts = int(pk["ts_ns"])
                if any(a <= ts <= b for a, b in by_pair.get((pk.get("src"), pk.get("dst")), ())) \
                        or any(a <= ts <= b for a, b in by_pair.get(("*", "*"), ())):
                    out.append(pk)
        return sorted(out, key=lambda pk: pk["ts_ns"])
    return get


DETECTION_HORIZON_NS = 3_000 * MS  # how far after a detection the peer's next packet is sought


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
              peer_tag_prefix: str = "peer-", packets: Packets | None = None
              ) -> list[PeerGap]:
    """Rule (b): every peer silence over budget, from bfdcap's CSV, episodes and detections.

    The CSV lists only gaps between two Up packets. A peer that stalls and wakes up to send
    Down first leaves no such row; bfdcap still shows the silence: as the last_gap_ms of the
    episode it starts (source "episode"), or as the device's detection of it (source
    "detection"). Those are added unless a CSV gap on the same session already covers them.
    A detection only says the silence had lasted detect_ms; its real end is the peer's next
    packet on the pair (any state; from PACKETS, bfdcap --packets), since the steal that
    froze the peer is recorded when the peer wakes, after the device's detection. Without
    PACKETS (or no packet within DETECTION_HORIZON_NS) the gap ends at the detection.
    """
    gaps = [PeerGap(r["session"], r["src"], r["dst"], r["tag"], r["ts_ns"] - r["gap_ns"],
                    r["ts_ns"], r["gap_ns"], r["budget_ns"])
            for r in over_budget_rows(csv_text, peer_tag_prefix)]
    lo, hi = _window(analysis)
    derived: list[PeerGap] = []
    nxt: dict[tuple[str, str], list[int]] = {}
    if packets is not None:
        wins = [(a, b, t, t + DETECTION_HORIZON_NS) for a, b, t in
                detections_open(analysis, peer_addrs)]
        for pk in packets(wins) if wins else []:
            nxt.setdefault((pk["src"], pk["dst"]), []).append(int(pk["ts_ns"]))
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
                t0 = det["ts_ns"] - d_ns
                later = [t for t in nxt.get((peer_end["src"], peer_end["dst"]), ())
                         if det["ts_ns"] < t <= det["ts_ns"] + DETECTION_HORIZON_NS]
                t1 = min(later) if later else det["ts_ns"]
                derived.append(PeerGap(s["key"], peer_end["src"], peer_end["dst"],
                                       peer_end.get("tag", ""), t0, t1, t1 - t0, b_ns,
                                       "detection"))
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
    dev_gap_ms: float | None = None  # the device's gap ending at its last packet (CSV)

    def needed_ms(self) -> float:
        """Rule (c'): the time the peer had to read the device's last packet before its
        timer (counted from the device's previous packet) was due; 0 when unknown."""
        if self.dev_gap_ms is None:
            return 0.0
        return max(0.0, self.budget_ms - self.dev_gap_ms)

    def last_packet_ns(self) -> int:
        return self.ts_ns - round(self.detect_ms * MS)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def early_downs(analysis: dict[str, Any], peer_addrs: set[str],
                csv_text: str = "") -> tuple[list[EarlyDown], list[EarlyDown]]:
    """The peer's early Downs (bfdcap detections of a peer end with detect_ms < budget),
    split by the device's own gap ending at its last packet (from the CSV):

    - races: that gap plus detect_ms reaches the budget, so the peer's timer, counted from
      the device's previous packet, had expired or was about to, and the device's last
      packet came just before it. Returned first: excused only when host steal explains
      them (rule (c'): the peer, frozen, could not read the packet in time); otherwise they
      count against the device (it cut the budget that fine) and do not void the step;
    - impossible: the peer fired before even the previous packet's timer could expire.
      Returned second: the peer misbehaved; they void the step unless steal explains them.
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
        g = gap_at.get((key, last))
        ed = EarlyDown(key, src, d["ts_ns"], d["detect_ms"], d["budget_ms"],
                       None if g is None else g / MS)
        if g is None or g + round(d["detect_ms"] * MS) >= round(d["budget_ms"] * MS):
            races.append(ed)  # no counted gap (not both Up): treat as a race, never void
        else:
            impossible.append(ed)
    key_ts = (lambda x: x.ts_ns)
    return sorted(races, key=key_ts), sorted(impossible, key=key_ts)


def explain_gap(g: PeerGap, records: list[dict[str, Any]]) -> Explanation:
    """Rule (b) on one peer gap over budget: steal within [t0 - 5 ms, t1 + 5 ms] on some CPU
    of at least (t1 - t0) - B."""
    return explanation(records, g.start_ns, g.end_ns, g.needed_ms())


def explain_early(e: EarlyDown, records: list[dict[str, Any]]) -> Explanation:
    """Rule (c') on one early Down: steal within [T - 5 ms, D + 5 ms] on some CPU of at
    least B - g (and nonzero)."""
    return explanation(records, e.last_packet_ns(), e.ts_ns, e.needed_ms())


def explain(gaps: list[PeerGap], records: list[dict[str, Any]]
            ) -> tuple[list[tuple[PeerGap, Explanation]], list[tuple[PeerGap, Explanation]]]:
    """Split peer gaps into (explained, unexplained), each with what rule (b) found."""
    explained, unexplained = [], []
    for g in gaps:
        x = explain_gap(g, records)
        (explained if x.explained else unexplained).append((g, x))
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

def _near(records: list[dict[str, Any]], lo_ns: int, hi_ns: int) -> list[dict[str, Any]]:
    keep = ("ts_ns", "cpu", "steal_ms", "sampler_gap_ms", "sampler", "on_cpu", "late",
            "cpu_ms")
    return [{k: r[k] for k in keep if k in r} for r in records
            if lo_ns <= int(r["ts_ns"]) <= hi_ns]


NEAR_MS = 200  # steal records kept beside an unexplained event, each side (diagnosis)


def assess(topo: Topology, analysis: dict[str, Any], csv_text: str,
           steal_records: list[dict[str, Any]], phases: list[dict[str, Any]],
           late: list[dict[str, Any]] = (), ncpu: int = 0,
           packets: Packets | None = None) -> dict[str, Any]:
    """Rules (a)-(e) on one analysed run, step by step (PHASES are the steps). Returns a
    JSON-ready dict: steal (per step and CPU), peer_gaps_explained / _unexplained and
    peer_early_downs_* (each with what the steal rule found), devices (see
    device_episodes), device_gaps, step_void_reasons {step: [reason]} and void_reasons
    (events outside every step: the run's)."""
    import os
    ncpu = ncpu or os.cpu_count() or 1
    peer_addrs = set(topo.peer_addresses())
    gaps = peer_gaps(csv_text, analysis, peer_addrs, packets=packets)
    explained, unexplained = explain(gaps, steal_records)
    diag_of = diagnose([g for g, _ in unexplained], packets, peer_addrs) \
        if packets and unexplained else {}
    races, impossible = early_downs(analysis, peer_addrs, csv_text)
    early_x = [(e, explain_early(e, steal_records)) for e in races + impossible]
    early_expl = [(e, x) for e, x in early_x if x.explained]
    early = [e for e, _ in early_expl]  # only these excuse an episode
    early_unexpl = [(e, x) for e, x in early_x if not x.explained and e in impossible]
    early_counted = [(e, x) for e, x in early_x if not x.explained and e in races]
    steal = step_steal(steal_records, phases, ncpu)
    step_void: dict[str, list[str]] = {p["name"]: [] for p in phases}
    run_void: list[str] = []

    def put(ts: int, reason: str) -> None:
        name = _step_at(ts, phases)
        (step_void[name] if name is not None else run_void).append(
            reason if name is not None else reason + " (outside every step)")

    by_step: dict[str | None, list[tuple[EarlyDown, Explanation]]] = {}
    for e, x in early_unexpl:
        by_step.setdefault(_step_at(e.ts_ns, phases), []).append((e, x))
    for name, evs in by_step.items():
        e, x = evs[0]
        put(e.ts_ns, f"{len(evs)} early Down(s) by the peer not explained by host steal, "
                     f"before even the device's previous packet could have expired (the peer "
                     f"misjudged a live device), e.g. {e.src} on {e.session} "
                     f"{e.detect_ms:.1f} ms after the device's last packet, budget "
                     f"{e.budget_ms:.0f} ms; steal needed {x.needed_ms:.1f} ms, recorded "
                     f"{x.stolen_ms:.0f} ms")
    by_gap: dict[str | None, list[tuple[PeerGap, Explanation]]] = {}
    for g, x in unexplained:
        by_gap.setdefault(_step_at(g.end_ns, phases), []).append((g, x))
    for name, gs in by_gap.items():
        g, x = max(gs, key=lambda gx: gx[1].needed_ms - gx[1].stolen_ms)
        dg = [diag_of[id(g2)] for g2, _ in gs if id(g2) in diag_of]
        pw = [d for d in dg if d["poll_wait"]]
        note = ""
        if pw:
            rep = [d["poll_wait"]["device_reply_ms"] for d in pw]
            quiet = max(d["peer_silent_all_ms"] for d in pw)
            note = (f"; {len(pw)} of them began with the peer's Poll, which the device answered "
                    f"only {min(rep):.1f}-{max(rep):.1f} ms later (a Final is owed as soon as "
                    f"practicable, RFC 5880 6.8.7), while the peer kept sending on its other "
                    f"sessions (silent on all of them {quiet:.1f} ms at most): the peer waited "
                    f"for the device")
        if len(pw) < len(dg):
            quiet = max(d["peer_silent_all_ms"] for d in dg if not d["poll_wait"])
            note += (f"; {len(dg) - len(pw)} without a Poll, the peer silent on all its "
                     f"sessions up to {quiet:.1f} ms")
        put(g.end_ns, f"{len(gs)} peer gap(s) over budget not explained by host steal"
                      + ("" if len(pw) == len(gs) else " (the peer stalled by itself)")
                      + f", worst {g.src} -> {g.dst} "
                      f"{g.gap_ns / MS:.1f} ms on a {g.budget_ns / MS:.0f} ms budget: "
                      f"{x.needed_ms:.1f} ms of steal needed, at most {x.stolen_ms:.0f} ms "
                      f"recorded on one CPU within [t0 - {SLACK_MS:g} ms, t1 + {SLACK_MS:g} ms]"
                      + note)
    for name, st in steal.items():
        for cpu, v in st["cpus"].items():
            if v["pct"] > 100 * MAX_STEAL_FRACTION:
                step_void[name].append(
                    f"host steal {v['ms']:.0f} ms on cpu{cpu}, {v['pct']:.1f} % of the step "
                    f"(over {100 * MAX_STEAL_FRACTION:.0f} %: too noisy to judge)")

    def diag(lo: int, hi: int) -> dict[str, Any]:
        return {"steal_near": _near(steal_records, lo - NEAR_MS * MS, hi + NEAR_MS * MS),
                "late_samples_near": _near(list(late), lo - NEAR_MS * MS, hi + NEAR_MS * MS)}

    # Excuses use every peer gap over budget: an unexplained one already voids its step.
    devices = device_episodes(topo, analysis, gaps, phases, early)
    return {
        "device_gaps": device_gaps(topo, analysis, csv_text, gaps, phases),
        "steal": steal,
        "steal_records": len(steal_records),
        "peer_gaps_explained": [dict(g.as_dict(), step=_step_at(g.end_ns, phases),
                                     steal=x.as_dict()) for g, x in explained],
        "peer_gaps_unexplained": [dict(g.as_dict(), step=_step_at(g.end_ns, phases),
                                       steal=x.as_dict(),
                                       **(diag_of.get(id(g)) or {"poll_wait": None}),
                                       **diag(g.start_ns, g.end_ns))
                                  for g, x in unexplained],
        "peer_early_downs_explained": [dict(e.as_dict(), step=_step_at(e.ts_ns, phases),
                                            steal=x.as_dict()) for e, x in early_expl],
        "peer_early_downs_unexplained": [dict(e.as_dict(), step=_step_at(e.ts_ns, phases),
                                              steal=x.as_dict(),
                                              **diag(e.last_packet_ns(), e.ts_ns))
                                         for e, x in early_unexpl],
        "peer_early_downs_races": [dict(e.as_dict(), step=_step_at(e.ts_ns, phases),
                                        steal=x.as_dict()) for e, x in early_counted],
        "devices": devices,
        "step_void_reasons": step_void,
        "void_reasons": run_void,
    }


def diagnose(gaps: list[PeerGap], packets: Packets,
             peer_addrs: set[str]) -> dict[int, dict[str, Any]]:
    """Diagnosis of unexplained peer gaps (it changes no verdict), keyed by id() of the gap:

    - "peer_silent_all_ms": the longest stretch inside the gap with no packet of the peer on
      any of its sessions (about the gap itself when the whole peer froze; a few ms when it
      kept sending elsewhere);
    - "poll_wait": when the gap began with the peer's Poll and the device answered nothing
      until at most the gap's end: FRR keeps its old (slow, 1 s after a Down) transmit
      interval until its Poll is answered, so the peer stays silent on that session until
      the device replies (with the Final, or with its own Poll, which the peer answers at
      once): {"device_reply_ms": the device's first packet after the Poll, "device_reply":
      its kind, "device_final_ms": its first Final (None when none came within 200 ms after
      the gap), "peer_after_reply_ms": the gap's end after that reply}; else None."""
    wins = [w for g in gaps for w in ((g.src, g.dst, g.start_ns, g.start_ns),
                                       (g.dst, g.src, g.start_ns, g.end_ns + NEAR_MS * MS),
                                       ("*", "*", g.start_ns, g.end_ns))]
    pks = packets(wins)
    peer_ts = sorted(int(p["ts_ns"]) for p in pks if p["src"] in peer_addrs)
    out: dict[int, dict[str, Any]] = {}
    for g in gaps:
        inside = [g.start_ns] + [t for t in peer_ts if g.start_ns < t < g.end_ns] + [g.end_ns]
        silent = max(b - a for a, b in zip(inside, inside[1:]))
        d: dict[str, Any] = {"peer_silent_all_ms": round(silent / MS, 3), "poll_wait": None}
        out[id(g)] = d
        poll = any(p["src"] == g.src and p["dst"] == g.dst and int(p["ts_ns"]) == g.start_ns
                   and p.get("poll") for p in pks)
        dev = [p for p in pks if p["src"] == g.dst and p["dst"] == g.src
               and g.start_ns < int(p["ts_ns"]) <= g.end_ns + NEAR_MS * MS]
        if not poll or not dev or int(dev[0]["ts_ns"]) > g.end_ns:
            continue
        fin = next((int(p["ts_ns"]) for p in dev if p.get("final")), None)
        reply = int(dev[0]["ts_ns"])
        d["poll_wait"] = {
            "device_reply_ms": round((reply - g.start_ns) / MS, 3),
            "device_reply": "Final" if dev[0].get("final") else
                            "Poll" if dev[0].get("poll") else f"state {dev[0].get('state')}",
            "device_final_ms": None if fin is None else round((fin - g.start_ns) / MS, 3),
            "peer_after_reply_ms": round((g.end_ns - reply) / MS, 3)}
    return out


def _step_at(ts: int, phases: list[dict[str, Any]]) -> str | None:
    for p in phases:
        if p["start_ns"] <= ts < p["end_ns"]:
            return p["name"]
    return None
