"""assess - the lab's rule (docs/lab.md section 2) on one analysed run, and its diagnosis.

assess() is pure (bfdcap's report, its counted gaps as a lab.judge.gaps.GapTable, the steal
records, the steps);
judge_run() reads a run folder, runs bfdcap through lab.judge.bfdcap and calls it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..topo import Topology
from ..topo_checks import at
from . import bfdcap as bfdcap_client
from . import figures, steal_log
from .episodes import device_episodes, device_gaps
from .validity import (MAX_STEAL_FRACTION, MS, SLACK_MS, EarlyDown, Explanation, Packets,
                       PeerGap, early_downs, explain, explain_early, peer_gaps, step_steal)

if TYPE_CHECKING:  # numpy: imported by whoever builds the table (lab.judge.bfdcap, tests)
    from .gaps import GapTable


def packet_source(pcap: Path, bfdcap: Path) -> Packets:
    """A Packets lookup on PCAP: windows are clustered (less than a second apart) and each
    cluster read with one `bfdcap --packets --from --to` (bfdcap stops reading at --to).

    get.prefetch(wins) reads WINS once and keeps their packets: a later lookup whose every
    window lies inside a kept window of the same pair (or of "*") is answered from memory,
    with the same packets in the same order (each pass reads the whole capture: at the
    1,024-session mesh the rules asked for about 30 of them)."""
    kept: dict[str, Any] = {"wins": {}, "pks": []}

    def fetch(wins: list[tuple[str, str, int, int]]) -> list[dict[str, Any]]:
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
        pairs = None if ("*", "*") in by_pair else set(by_pair)
        for lo, hi in spans:
            for pk in bfdcap_client.packets(pcap, lo, hi + 1, bfdcap, pairs):
                ts = int(pk["ts_ns"])
                if any(a <= ts <= b for a, b in by_pair.get((pk.get("src"), pk.get("dst")), ())) \
                        or any(a <= ts <= b for a, b in by_pair.get(("*", "*"), ())):
                    out.append(pk)
        return sorted(out, key=lambda pk: pk["ts_ns"])

    def covered(a: str, b: str, lo: int, hi: int) -> bool:
        return any(c_lo <= lo and hi <= c_hi for pair in ((a, b), ("*", "*"))
                   for c_lo, c_hi in kept["wins"].get(pair, ()))

    def get(wins: list[tuple[str, str, int, int]]) -> list[dict[str, Any]]:
        if not kept["wins"] or not all(covered(*w) for w in wins):
            return fetch(wins)
        by_pair: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for a, b, lo, hi in wins:
            by_pair.setdefault((a, b), []).append((lo, hi))
        out = [pk for pk in kept["pks"]
               if any(a <= int(pk["ts_ns"]) <= b
                      for a, b in by_pair.get((pk.get("src"), pk.get("dst")), ()))
               or any(a <= int(pk["ts_ns"]) <= b for a, b in by_pair.get(("*", "*"), ()))]
        return sorted(out, key=lambda pk: pk["ts_ns"])

    def prefetch(wins: list[tuple[str, str, int, int]]) -> None:
        kept["pks"] = fetch(wins) if wins else []
        kept["wins"] = {}
        for a, b, lo, hi in wins:
            kept["wins"].setdefault((a, b), []).append((lo, hi))

    get.prefetch = prefetch  # type: ignore[attr-defined]
    return get


# --- the whole rule on one run ---------------------------------------------------------------

def near(records: list[dict[str, Any]], lo_ns: int, hi_ns: int) -> list[dict[str, Any]]:
    keep = ("ts_ns", "cpu", "steal_ms", "sampler_gap_ms", "sampler", "on_cpu", "late",
            "cpu_ms")
    return [{k: r[k] for k in keep if k in r} for r in records
            if lo_ns <= int(r["ts_ns"]) <= hi_ns]


NEAR_MS = 200  # steal records kept beside an unexplained event, each side (diagnosis)


def assess(topo: Topology, analysis: dict[str, Any], table: GapTable,
           steal_records: list[dict[str, Any]], phases: list[dict[str, Any]],
           late: list[dict[str, Any]] = (), ncpu: int = 0,
           packets: Packets | None = None) -> dict[str, Any]:
    """Rules (a)-(e) on one analysed run, step by step (PHASES are the steps). Returns a
    JSON-ready dict: steal (per step and CPU), peer_gaps_explained / _unexplained and
    peer_early_downs_* (each with what the steal rule found), devices (see
    device_episodes), device_gaps, step_void_reasons {step: [reason]} and void_reasons
    (events outside every step: the run's)."""
    ncpu = ncpu or os.cpu_count() or 1
    peer_addrs = set(topo.peer_session_addresses())
    passive = frozenset((s.peer_address, s.device_address) for d in topo.devices
                        for s in topo.sessions(d.name) if at(s.cls.passive, "peer"))
    gaps = peer_gaps(table, analysis, peer_addrs, packets=packets, passive_pairs=passive)
    explained, unexplained = explain(gaps, steal_records)
    diag_of = diagnose([g for g, _ in unexplained], packets, peer_addrs) \
        if packets and unexplained else {}
    races, impossible = early_downs(analysis, peer_addrs, table)
    early_x = [(e, explain_early(e, steal_records)) for e in races + impossible]
    early_expl = [(e, x) for e, x in early_x if x.explained]
    early = [e for e, _ in early_expl]  # only these excuse an episode
    early_unexpl = [(e, x) for e, x in early_x if not x.explained and e in impossible]
    early_counted = [(e, x) for e, x in early_x if not x.explained and e in races]
    steal = step_steal(steal_records, phases, ncpu)
    step_void: dict[str, list[str]] = {p["name"]: [] for p in phases}
    run_void: list[str] = []

    def put(ts: int, reason: str) -> None:
        name = step_at(ts, phases)
        (step_void[name] if name is not None else run_void).append(
            reason if name is not None else reason + " (outside every step)")

    by_step: dict[str | None, list[tuple[EarlyDown, Explanation]]] = {}
    for e, x in early_unexpl:
        by_step.setdefault(step_at(e.ts_ns, phases), []).append((e, x))
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
        by_gap.setdefault(step_at(g.end_ns, phases), []).append((g, x))
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
        return {"steal_near": near(steal_records, lo - NEAR_MS * MS, hi + NEAR_MS * MS),
                "late_samples_near": near(list(late), lo - NEAR_MS * MS, hi + NEAR_MS * MS)}

    # Excuses use every peer gap over budget: an unexplained one already voids its step.
    devices = device_episodes(topo, analysis, gaps, phases, early,
                              steal_gaps={g for g, _ in explained})
    return {
        "device_gaps": device_gaps(topo, analysis, table, gaps, phases),
        "steal": steal,
        "steal_records": len(steal_records),
        "peer_gaps_explained": [dict(g.as_dict(), step=step_at(g.end_ns, phases),
                                     steal=x.as_dict()) for g, x in explained],
        "peer_gaps_unexplained": [dict(g.as_dict(), step=step_at(g.end_ns, phases),
                                       steal=x.as_dict(),
                                       **(diag_of.get(id(g)) or {"poll_wait": None}),
                                       **diag(g.start_ns, g.end_ns))
                                  for g, x in unexplained],
        "peer_early_downs_explained": [dict(e.as_dict(), step=step_at(e.ts_ns, phases),
                                            steal=x.as_dict()) for e, x in early_expl],
        "peer_early_downs_unexplained": [dict(e.as_dict(), step=step_at(e.ts_ns, phases),
                                              steal=x.as_dict(),
                                              **diag(e.last_packet_ns(), e.ts_ns))
                                         for e, x in early_unexpl],
        "peer_early_downs_races": [dict(e.as_dict(), step=step_at(e.ts_ns, phases),
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


def step_at(ts: int, phases: list[dict[str, Any]]) -> str | None:
    for p in phases:
        if p["start_ns"] <= ts < p["end_ns"]:
            return p["name"]
    return None


def judge_run(topo: Topology, run_dir: Path, analysis: dict[str, Any], figs: dict[str, Any],
              phases: list[dict[str, Any]], bfdcap: Path,
              gaps: GapTable | None = None) -> dict[str, Any]:
    """Rules (a)-(e) of docs/lab.md on one analysed run folder (every kind of run).

    Puts the down-event counts into FIGS (lab.judge.figures.apply_validity), writes
    episodes.json and returns the assessment (assess()) with its VOID reasons: per step
    (step_void_reasons) and for the run (void_reasons: the steal sampler, events outside
    every step). GAPS: the counted gaps of ANALYSIS (lab.judge.gaps.GapTable, from
    bfdcap_client.analyse_gaps()); None reads them with bfdcap --csv-gaps (gap_table())."""
    tags = figures.Tags(topo).all()
    window = (phases[0]["start_ns"], phases[-1]["end_ns"])
    pcap = run_dir / "capture.pcap"
    table = gaps if gaps is not None else bfdcap_client.gap_table(pcap, tags, window, bfdcap)
    records = steal_log.load(run_dir / "steal.jsonl")
    late = steal_log.load_late(run_dir / "steal.jsonl")
    meta = json.loads((run_dir / "run.json").read_text())
    a = assess(topo, analysis, table, records, phases, late, int(meta.get("nproc") or 0),
               packet_source(pcap, bfdcap))
    if not (run_dir / "steal.jsonl").exists():
        a["void_reasons"].append("the steal sampler left no log (steal.jsonl): hypervisor "
                                 "steal cannot be told apart from a stalled peer")
    elif meta.get("steal_sampler_alive") is False:
        a["void_reasons"].append("the steal sampler died before the phases ended: "
                                 "hypervisor steal is not fully recorded")
    figures.apply_validity(figs, a)
    eps = {dev: v.pop("episodes") for dev, v in a["devices"].items()}
    (run_dir / "episodes.json").write_text(json.dumps(eps, indent=1) + "\n")
    return a
