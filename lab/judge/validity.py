"""validity - the lab's rule for hypervisor steal, peer silence and excused down events.

One rule, used identically by every kind of run, written in docs/lab.md (section 2), as pure
functions over bfdcap's output and the steal records: rules (a), (b), (s) and the early
Downs of (c') here; the excuses (c), (e) in lab.judge.episodes; the whole rule on one run in
lab.judge.assess.
Everything here is filtering, summing and interval arithmetic on figures bfdcap computed and
on lab/rig/steal.py's records: no gap, percentile or episode is recomputed in Python.

(a) Steal records: every nonzero per-CPU steal increment lab/rig/steal.py saw, each tick of each
    CPU once at its earliest observation (steal.merge()).
(b) Peer gaps over budget: the peer's gaps with gap > budget (bfdcap's counted gaps, a
    lab.judge.gaps.GapTable: rows of ends tagged peer-*), plus the peer silences bfdcap
    shows only through an episode or a detection. A gap [t0, t1] over budget B is explained
    by host steal when, on some CPU, the steal recorded within [t0 - SLACK_MS, t1 + SLACK_MS]
    is at least (t1 - t0) - B: without the stolen time the peer would have met its budget.
    Otherwise it is unexplained and the step holding t1 is VOID: the peer stalled by itself.
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

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

if TYPE_CHECKING:  # numpy: imported by whoever builds the table (lab.judge.bfdcap, tests)
    from .gaps import GapTable

SLACK_MS = 5.0  # the sampler's period: steal is seen up to one period after it is accounted
MAX_STEAL_FRACTION = 0.10  # a step with more steal than this on one CPU is too noisy to judge
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

def detections_open(analysis: dict[str, Any], peer_addrs: set[str]) -> list[tuple[str, str, int]]:
    """(peer src, device dst, ts_ns) of every device detection over budget in the window:
    the peer silences whose end peer_gaps() looks up (packet_source)."""
    lo, hi = window_of(analysis)
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


DETECTION_HORIZON_NS = 3_000 * MS  # how far after a detection the peer's next packet is sought


def over_budget_rows(table: GapTable, tag_prefix: str = "") -> list[dict[str, Any]]:
    """The rows of TABLE (bfdcap's counted gaps; from --csv-gaps text: GapTable.from_csv())
    of tags starting with TAG_PREFIX whose gap exceeds a nonzero budget, in order."""
    return table.over_budget(tag_prefix)


def peer_gaps(table: GapTable, analysis: dict[str, Any], peer_addrs: set[str],
              peer_tag_prefix: str = "peer-", packets: Packets | None = None,
              passive_pairs: frozenset[tuple[str, str]] = frozenset()
              ) -> list[PeerGap]:
    """Rule (b): every peer silence over budget, from bfdcap's counted gaps (TABLE, the rows
    of --csv-gaps), episodes and detections.

    The CSV lists only gaps between two Up packets. A peer that stalls and wakes up to send
    Down first leaves no such row; bfdcap still shows the silence: as the last_gap_ms of the
    episode it starts (source "episode"), or as the device's detection of it (source
    "detection"). Those are added unless a CSV gap on the same session already covers them.
    A detection only says the silence had lasted detect_ms; its real end is the peer's next
    packet on the pair (any state; from PACKETS, bfdcap --packets), since the steal that
    froze the peer is recorded when the peer wakes, after the device's detection. Without
    PACKETS (or no packet within DETECTION_HORIZON_NS) the gap ends at the detection.
    Silences the device asked for (asked_quiet) and those of a peer end in the Passive role,
    (peer, device) in PASSIVE_PAIRS, after it declared the device Down (passive_quiet) are
    not the peer's stalls and are left out.
    """
    gaps = [PeerGap(r["session"], r["src"], r["dst"], r["tag"], r["ts_ns"] - r["gap_ns"],
                    r["ts_ns"], r["gap_ns"], r["budget_ns"])
            for r in over_budget_rows(table, peer_tag_prefix)]
    lo, hi = window_of(analysis)
    derived: list[PeerGap] = []
    dev_detect_ns: dict[str, int] = {}  # session -> the peer's Detection Time of the device
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
        dev_detect_ns[s["key"]] = round(float((dev_end or {}).get("budget_ms") or 0) * MS)
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
    if packets is not None:
        pre = getattr(packets, "prefetch", None)  # one pass for every lookup below
        if pre is not None:
            pre([w for g in derived for w in
                 ([(g.dst, g.src, g.start_ns, g.end_ns)] if g.source == "episode" else [])
                 + ([(g.dst, g.src, g.start_ns - DETECTION_HORIZON_NS, g.end_ns)]
                    if (g.src, g.dst) in passive_pairs and dev_detect_ns.get(g.session)
                    else [])])
        derived = [g for g in derived if g.source != "episode" or not asked_quiet(g, packets)]
        derived = [g for g in derived if (g.src, g.dst) not in passive_pairs
                   or not dev_detect_ns.get(g.session)
                   or not passive_quiet(g, packets, dev_detect_ns[g.session])]
    for g in derived:
        if not any(c.session == g.session and c.start_ns <= g.end_ns and c.end_ns >= g.start_ns
                   for c in gaps):
            gaps.append(g)
    return sorted(gaps, key=lambda g: (g.start_ns, g.session))


def asked_quiet(g: PeerGap, packets: Packets) -> bool:
    """Whether the device asked the peer for the silence G (ended by the peer's Down): every
    packet of the device to it during G said Up with Demand set (RFC 5880 6.8.7: no periodic
    packets then). Such a peer was not stalled: BIRD 2 honours the engine's --demand, and
    goes Down only when the device itself falls silent (bfdcap's CSV, which counts a gap only
    while the other end is not in Demand mode, has no row for it either)."""
    mine = packets([(g.dst, g.src, g.start_ns, g.end_ns)])
    return bool(mine) and all(p.get("state") == 3 and p.get("demand") for p in mine)


SLOW_TX_NS = 1_000 * MS  # RFC 5880 6.8.3: at least 1 s between packets while not Up
PASSIVE_SLACK_NS = 10 * MS  # the peer's wake-up and send after its slow timer (bfdpeer's scan)


def passive_quiet(g: PeerGap, packets: Packets, detect_ns: int) -> bool:
    """Whether G is the silence of a peer in the Passive role that had declared the session
    Down. The device sent nothing for longer than the peer's Detection Time DETECT_NS, which
    expired within the peer's own budget of G's start: the peer went Down then, and RFC 5880
    6.8.1 zeroes bfd.RemoteDiscr, while 6.8.7 forbids a passive system to send while it is
    zero. It learns the device's discriminator again from each packet the device sends, and
    forgets it after DETECT_NS without one (6.8.1): so the silence is conformant as long as
    no stretch of the device's packets after the expiry (consecutive ones at most DETECT_NS
    apart, known until DETECT_NS after the last) lasted more than the peer's slow rate (1 s,
    6.8.3) before G ended. Such a peer was not stalled: it was Down because the device was
    silent (stock bfdd under load; its own down events count)."""
    dev = [int(p["ts_ns"]) for p in packets([(g.dst, g.src, g.start_ns - DETECTION_HORIZON_NS,
                                              g.end_ns)])]
    # the first expiry of the peer's Detection Time at or after its last packet
    expiry = next((a + detect_ns for a, b in zip(dev, dev[1:] + [2**63])
                   if b - a > detect_ns and a + detect_ns >= g.start_ns), None)
    if expiry is None or expiry > min(g.end_ns, g.start_ns + g.budget_ns):
        return False
    after = [t for t in dev if expiry < t <= g.end_ns]
    runs: list[list[int]] = []
    for t in after:
        if runs and t - runs[-1][-1] <= detect_ns:
            runs[-1].append(t)
        else:
            runs.append([t])
    return all(min(r[-1] + detect_ns, g.end_ns) - r[0] <= SLOW_TX_NS + PASSIVE_SLACK_NS
               for r in runs)


def window_of(analysis: dict[str, Any]) -> tuple[int, int]:
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
    dev_gap_ms: float | None = None  # the device's counted gap ending at its last packet

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
                table: GapTable) -> tuple[list[EarlyDown], list[EarlyDown]]:
    """The peer's early Downs (bfdcap detections of a peer end with detect_ms < budget),
    split by the device's own gap ending at its last packet (a row of TABLE):

    - races: that gap plus detect_ms reaches the budget, so the peer's timer, counted from
      the device's previous packet, had expired or was about to, and the device's last
      packet came just before it. Returned first: excused only when host steal explains
      them (rule (c'): the peer, frozen, could not read the packet in time); otherwise they
      count against the device (it cut the budget that fine) and do not void the step;
    - impossible: the peer fired before even the previous packet's timer could expire.
      Returned second: the peer misbehaved; they void the step unless steal explains them.
    """
    lo, hi = window_of(analysis)
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
        for r in table.at_times({ts + k for _, ts in want for k in (0, -1, 1)}):
            if r["src"] in peer_addrs:
                continue
            ts = r["ts_ns"]
            for k in (0, -1, 1):  # detect_ms is printed to the ns; allow rounding
                if (r["session"], ts + k) in want:
                    gap_at[(r["session"], ts + k)] = r["gap_ns"]
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
