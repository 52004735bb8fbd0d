"""report - summary.json, report.md and the terminal tables, from bfdcap's figures.

Nothing here computes a percentile: gap figures are copied from bfdcap's JSON (schema
bfdcap/1). This module picks them per device and class, decides VOID / PASS / FAIL and
renders them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .topo import Topology
from .validity import EXCUSE_REASON

SCHEMA = "xdp-bfd-lab-demo/2"  # 2: per-phase verdicts, steal per phase and CPU
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


def _counted(d: dict[str, Any]) -> int:
    v = d.get("down_events_counted")
    return int(v if v is not None else d.get("down_events") or 0)


def kinds(summary: dict[str, Any]) -> dict[str, str]:
    """Device name -> kind ("engine" | "bfdd") from the summary's whole-run device blocks."""
    return {n: d.get("kind", "") for n, d in summary["duts"].items()}


def step_result(duts: dict[str, Any], kinds_: dict[str, str], void_reasons: list[str],
                gated: bool = True) -> dict[str, Any]:
    """One step's verdict (docs/lab.md section 2, rule (d)).

    VOID when the step has VOID reasons (they win); else, for a gated step, FAIL when an
    engine has counted down events in it, PASS otherwise; an ungated step (floods A, F, G:
    reported, not judged) is INFO. Returns {"verdict", "void_reasons", "failures"}."""
    fails = [f"{n}: {_counted(d)} counted down events" for n, d in duts.items()
             if kinds_.get(n) == "engine" and _counted(d)]
    if void_reasons:
        return {"verdict": "VOID", "void_reasons": list(void_reasons), "failures": fails}
    if not gated:
        return {"verdict": "INFO", "void_reasons": [], "failures": [],
                "note": "reported, not judged" + (f" ({'; '.join(fails)})" if fails else "")}
    return {"verdict": "FAIL" if fails else "PASS", "void_reasons": [], "failures": fails}


def run_result(steps: dict[str, dict[str, Any]], required: Iterable[str],
               run_void: list[str], run_failures: list[str],
               void_fraction_max: float = 0.5) -> tuple[str, list[str], list[str]]:
    """The run's verdict from its steps' (docs/lab.md section 2, rule (d)): VOID when a
    required step is VOID (or missing), when more than VOID_FRACTION_MAX of the steps are
    VOID, or for a run-level reason (RUN_VOID); FAIL when a judged step fails or for a
    run-level failure (RUN_FAILURES: sessions not Up at the end); PASS otherwise.
    Returns (verdict, void reasons, failures); failures are listed even when VOID."""
    void = list(run_void)
    for r in required:
        st = steps.get(r)
        if st is None:
            void.append(f"required step {r} is not in the run")
        elif st["verdict"] == "VOID":
            void.append(f"required step {r} is VOID ({'; '.join(st['void_reasons'])})")
    nv = sum(1 for st in steps.values() if st["verdict"] == "VOID")
    if steps and nv > void_fraction_max * len(steps):
        void.append(f"{nv} of {len(steps)} steps are VOID (more than "
                    f"{100 * void_fraction_max:.0f} %)")
    failures = list(run_failures) + [f"{name}: {f}" for name, st in steps.items()
                                     if st["verdict"] == "FAIL" for f in st["failures"]]
    if void:
        return "VOID", void, failures
    return ("FAIL" if failures else "PASS"), [], failures


def void_first(steps: dict[str, dict[str, Any]]) -> list[str]:
    """Step names, VOID ones first (each group in run order)."""
    return ([n for n, st in steps.items() if st.get("verdict") == "VOID"]
            + [n for n, st in steps.items() if st.get("verdict") != "VOID"])


def conclude(summary: dict[str, Any], steps: dict[str, dict[str, Any]], phases: list[dict],
             required: Iterable[str], run_void: list[str],
             void_fraction_max: float) -> dict[str, dict[str, Any]]:
    """Write the run's verdict into SUMMARY (verdict, void, void_reasons, failures,
    steps_void) from its STEPS' results (name -> step_result()), as run_result() decides it.
    No step analysed (no capture figures): every planned phase in PHASES is VOID. A run
    without an engine is INFO rather than PASS or FAIL: there is nothing to judge.
    Returns the steps judged (STEPS, or the VOID stand-ins)."""
    if not steps:
        steps = {p["name"]: {"verdict": "VOID", "void_reasons": ["not analysed"],
                             "failures": []} for p in phases}
    verdict, why, failures = run_result(steps, required, run_void, end_failures(summary),
                                        void_fraction_max)
    if verdict != "VOID" and "engine" not in kinds(summary).values():
        verdict = "INFO"
    summary.update(verdict=verdict, void=verdict == "VOID", void_reasons=why,
                   failures=failures,
                   steps_void=[n for n, st in steps.items() if st["verdict"] == "VOID"])
    return steps


def end_failures(summary: dict[str, Any]) -> list[str]:
    """Run-level failures: an engine without every session Up at the end."""
    return [f"{n}: {d['sessions_up_end']}/{d['sessions']} sessions Up at the end"
            for n, d in summary["duts"].items()
            if d.get("kind") == "engine" and d["sessions_up_end"] != d["sessions"]]


def witness(summary: dict[str, Any], load_phases: list[str]) -> dict[str, list[str]]:
    """The contrast witness, per step of LOAD_PHASES: VOID reasons for the step when no stock
    bfdd had counted down events in it (the load did not bite there), or when no stock bfdd
    ran at all. Returns {step: [reason]} (empty lists when the witness holds)."""
    stock = [n for n, d in summary["duts"].items() if d["kind"] == "bfdd"]
    out: dict[str, list[str]] = {name: [] for name in load_phases}
    for p in summary.get("phases") or []:
        if p["name"] not in out:
            continue
        if not stock:
            out[p["name"]].append("no stock bfdd in the run: nothing witnesses that the "
                                  "load bit")
        for n in stock:
            if n in p["duts"] and not _counted(p["duts"][n]):
                out[p["name"]].append(f"the load did not bite: stock {n} had 0 counted down "
                                      f"events under {p['name']}")
    return out


def down_line(d: dict[str, Any]) -> str:
    """"T down events (E excused: peer silent ..., C counted)", totals never hidden."""
    tot, exc = d.get("down_events") or 0, d.get("down_events_excused") or 0
    cnt = d.get("down_events_counted")
    cnt = tot - exc if cnt is None else cnt
    why = f": {EXCUSE_REASON}" if exc else ""
    by = d.get("down_events_excused_by_reason")
    if by:
        why = ": " + ", ".join(f"{n} {r}" for r, n in by.items() if n)
    return f"{tot} down events ({exc} excused{why}; {cnt} counted)"


def _f(v: Any, nd: int = 2) -> str:
    x = _num(v)
    return "-" if x is None else f"{x:.{nd}f}"


def _i(v: Any) -> str:
    x = _num(v)
    return "-" if x is None else str(int(x))


def dut_title(name: str, kind: str) -> str:
    return f"{name} ({'bfdd + xdp-bfd' if kind == 'engine' else 'stock bfdd in software'})"


def _phase_counts(summary: dict[str, Any], name: str) -> str:
    return ", ".join(
        f"{p['name']} {p['duts'][name].get('down_events', 0)}/"
        f"{p['duts'][name].get('down_events_excused', 0)}/{_counted(p['duts'][name])}"
        for p in summary.get("phases") or [] if name in p["duts"])


def steal_cell(st: dict[str, Any] | None) -> str:
    """"cpu0 120 ms 0.6 %, cpu1 0 ms 0.0 %" from one step's steal (lab.validity.step_steal)."""
    if not st:
        return "-"
    return ", ".join(f"cpu{c} {v['ms']:.0f} ms {v['pct']:.1f} %" for c, v in st["cpus"].items())


def steal_lines(summary: dict[str, Any]) -> list[str]:
    """Steal per step and CPU, and what the rule made of the peer's gaps and early Downs."""
    from .validity import MAX_STEAL_FRACTION
    steal = summary.get("steal") or {}
    expl = summary.get("peer_gaps_explained") or []
    unex = summary.get("peer_gaps_unexplained") or []
    out = [f"host steal per step (per CPU; a step is VOID over {100 * MAX_STEAL_FRACTION:.0f} %"
           f" on one CPU): " + ("; ".join(f"{n} {steal_cell(v)}" for n, v in steal.items())
                               or "-")]
    out.append(f"peer gaps over budget: {len(expl) + len(unex)} ({len(expl)} explained by host "
               f"steal; {len(unex)} unexplained, each of which voids its step)")
    ee = summary.get("peer_early_downs_explained") or []
    eu = summary.get("peer_early_downs_unexplained") or []
    er = summary.get("peer_early_downs_races") or []
    if ee or eu or er:
        out.append(f"early Downs by the peer: {len(ee) + len(eu) + len(er)} ({len(ee)} explained "
                   f"by host steal, excused; {len(er)} races at the budget's edge, counted; "
                   f"{len(eu)} impossible, each of which voids its step)")
    return out


def peer_gap_table(summary: dict[str, Any], limit: int = 60) -> list[str]:
    """Markdown rows: every peer gap over budget (unexplained first) with the steal found."""
    gaps = ([dict(g, _ok=False) for g in summary.get("peer_gaps_unexplained") or []]
            + [dict(g, _ok=True) for g in summary.get("peer_gaps_explained") or []])
    if not gaps:
        return []
    out = ["", "| peer gap start ns | step | session | ms | budget ms | source | steal needed ms "
           "| most on one CPU ms | explained |", "|---|---|---|---|---|---|---|---|---|"]
    for g in gaps[:limit]:
        x = g.get("steal") or {}
        out.append(f"| {g['start_ns']} | {g.get('step') or '-'} | {g['session']} | "
                   f"{g['gap_ms']:.1f} | {g['budget_ms']:.0f} | {g['source']} | "
                   f"{_f(x.get('needed_ms'), 1)} | "
                   + (f"{_f(x.get('stolen_ms'), 0)} (cpu{x.get('cpu')})" if x.get('cpu')
                      is not None else "0") + f" | {'yes' if g['_ok'] else '**no**'} |")
    if len(gaps) > limit:
        out.append(f"| ... {len(gaps) - limit} more in summary.json | | | | | | | | |")
    return out


def step_lines(summary: dict[str, Any], steps: dict[str, dict[str, Any]]) -> list[str]:
    """One line per step, VOID steps first: verdict and why."""
    out = []
    for n in void_first(steps):
        st = steps[n]
        why = "; ".join(st.get("void_reasons") or st.get("failures") or [])
        if not why and st.get("note"):
            why = st["note"]
        out.append((f"  {n:<10} {st['verdict']:<5}" + (f" {why}" if why else "")).rstrip())
    return out


def tables(summary: dict[str, Any]) -> str:
    """The terminal tables: one per device, then the peer, the checks and the verdict."""
    lines: list[str] = []
    head = (f"  {'class':<7} {'sessions':>8} {'packets':>9} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'max ms':>8} {'budget ms':>9} {'max/budget':>10}")
    for name, d in summary["duts"].items():
        lines.append(f"{dut_title(name, d['kind'])}: {d['sessions_up_end']}/{d['sessions']} "
                     f"sessions Up at the end, {down_line(d)}")
        lines.append(head)
        for cname, c in d["classes"].items():
            g = c["gap_ms"]
            lines.append(f"  {cname:<7} {_i(c['sessions']):>8} {_i(c['packets']):>9} "
                         f"{_f(g.get('p50')):>8} {_f(g.get('p99')):>8} {_f(g.get('max')):>8} "
                         f"{_f(c['budget_ms'], 1):>9} {_f(c['max_over_budget'], 3):>10}")
        if summary.get("phases"):
            lines.append("  down events by phase (total/excused/counted): "
                         + _phase_counts(summary, name))
        lines.append("")
    peer = summary["peer"]
    sides = ", ".join(f"towards {n} {_f(p['max_over_budget'], 3)}"
                      for n, p in peer["towards"].items())
    lines.append(f"peer (stock bfdd, shielded: {summary['shield'].get('peer', '?')}): "
                 f"own max gap / budget {sides}")
    if summary.get("phases"):
        lines.append("  peer max gap / budget by phase: " + ", ".join(
            f"{p['name']} {_f(p['peer']['max_over_budget'], 3)}" for p in summary["phases"]))
    lines += steal_lines(summary)
    if summary.get("steps"):
        lines.append("steps (VOID first):")
        lines += step_lines(summary, summary["steps"])
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
    elif v == "FAIL":
        lines.append("verdict: FAIL - " + "; ".join(summary["failures"]))
    elif v == "PASS":
        lines.append("verdict: PASS - every engine session Up at the end, 0 counted engine "
                     "down events at every judged phase, stock bfdd flapped under the load")
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
            f"{summary['shield'].get('tcpdump')}; devices under test unshielded",
            "- down events: total, excused (the device's Down answered the peer's own silence "
            "beyond budget, during a hypervisor steal; docs/lab.md), counted", ""]
    out += ["## Phases", "", "VOID phases first. Host steal per CPU in ms and % of the phase "
            "(docs/lab.md section 2).", "",
            "| phase | verdict | load | seconds | host steal | why |", "|---|---|---|---|---|---|"]
    plan = {p["name"]: p for p in summary.get("phase_plan", [])}
    steps = summary.get("steps") or {p: {"verdict": "-"} for p in plan}
    for n in void_first(steps):
        p, st = plan.get(n, {}), steps[n]
        why = "; ".join(st.get("void_reasons") or st.get("failures") or []) or "-"
        secs = (p["end_ns"] - p["start_ns"]) / 1e9 if p else 0.0
        out.append(f"| {n} | **{st['verdict']}** | {p.get('load') or 'idle'} | {secs:.1f} | "
                   f"{steal_cell((summary.get('steal') or {}).get(n))} | {why} |")
    out.append("")
    for name, d in summary["duts"].items():
        out += [f"## {dut_title(name, d['kind'])}", "",
                f"{d['sessions_up_end']}/{d['sessions']} sessions Up at the end, "
                f"{down_line(d)} over the whole run.", "",
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
            out += ["| phase | down events | excused | counted | " + " | ".join(
                f"{c} p99 / max / max/budget" for c in d["classes"]) + " |",
                "|---|---|---|---|" + "---|" * len(d["classes"])]
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
                out.append(f"| {p['name']} | {pd.get('down_events', 0)} | "
                           f"{pd.get('down_events_excused', 0)} | {_counted(pd)} | "
                           + " | ".join(cells) + " |")
            out.append("")
    out += ["## Peer (validity)", "",
            "A peer gap over budget [t0, t1] (budget B) is explained by host steal when one CPU's "
            "steal recorded within [t0 - 5 ms, t1 + 5 ms] is at least (t1 - t0) - B; otherwise "
            "its phase is VOID (docs/lab.md section 2).", "",
            "| towards | class | p99 ms | max ms | budget ms | max/budget |",
            "|---|---|---|---|---|---|"]
    for n, p in summary["peer"]["towards"].items():
        for cname, c in p["classes"].items():
            out.append(f"| {n} | {cname} | {_f(c['gap_ms'].get('p99'))} | "
                       f"{_f(c['gap_ms'].get('max'))} | {_f(c['budget_ms'], 1)} | "
                       f"{_f(c['max_over_budget'], 3)} |")
    out += [""] + [f"- {x}" for x in steal_lines(summary)]
    out += peer_gap_table(summary)
    load = summary.get("load") or {}
    cap = summary.get("capture") or {}
    out += ["", "## Load and capture", "",
            f"- load: `{' '.join(load.get('argv', []))}`: rc {load.get('rc')}, "
            f"{load.get('cpu_s')} s CPU, bogo ops {load.get('bogo_ops')}, "
            f"problems {load.get('problems') or 'none'}",
            f"- capture: {cap.get('captured')} packets captured, {cap.get('dropped')} dropped "
            "by kernel", "",
            "Files: `capture.pcap`, `phases.json`, `summary.json`, `bfdcap.json`, "
            "`episodes.json` (every down episode with excused or not), `steal.jsonl`, `logs/` "
            "(commands.log, every daemon's log). Re-analyse with "
            "`/usr/bin/python3 -m lab report RUN_DIR`.", ""]
    for png in summary.get("plots") or []:
        out.append(f"![{png}]({png})")
    return "\n".join(out)


def write(run_dir: Path, summary: dict[str, Any]) -> None:
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n")
    (run_dir / "report.md").write_text(markdown(summary))
