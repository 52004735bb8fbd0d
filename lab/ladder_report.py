"""ladder_report - a ladder run folder into summary.json, report.md, plots and tables.

Figures come from bfdcap (cut per step with --phases); lab.validity applies the steal rule of
docs/lab.md to every step; nothing here computes a percentile. The summary is keyed by step
(idle, each level, its recovery window, each flood arm, soak) and, inside, by device and
class, the shape `python3 -m lab gate` reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import capture, demo, gate, report
from .ladder import CONTRAST_LEVELS, SCHEMA
from .topo import load as load_topology
from .util import REPO, LabError

BUILD = REPO / "build"


def _flood_void(floods: list[dict[str, Any]]) -> list[str]:
    out = []
    for f in floods:
        tgt = f.get("target_pps") or 0
        for dev, d in f["devices"].items():
            if tgt and d["offered_pps"] < 0.5 * tgt:
                out.append(f"flood {f['arm']} towards {dev} reached {d['offered_pps']} pps, "
                           f"under half its target {tgt:.0f} pps")
    return out


def _step_void(lv: dict[str, Any], a: dict[str, Any], name: str) -> list[str]:
    """The VOID reasons of one step: lab.validity's (steal over 10 % on a CPU, unexplained
    peer gaps or impossible early Downs ending in it), its load, its floods. A baseline may
    use the steps that have none (lab.gate.make_baseline)."""
    out = list((a.get("step_void_reasons") or {}).get(name) or [])
    ld = lv.get("load")
    if lv.get("kind") == "level" and not (ld and ld.get("ran")):
        why = "; ".join((ld or {}).get("problems") or ["no stress-ng result"])
        out.append(f"the load is not proven to have run ({why})")
    out += _flood_void(lv.get("floods") or [])
    return out


def summarise(run_dir: Path, bfdcap: Path = BUILD / "bfdcap") -> dict[str, Any]:
    """Analyse a ladder run folder into summary.json and report.md: figures per step, each
    step's verdict (PASS, FAIL or VOID with its reasons; ungated steps INFO), the run's
    (docs/lab.md section 2, rule (d); required steps from results/gates.toml [ladder])."""
    meta = json.loads((run_dir / "run.json").read_text())
    topo = load_topology(run_dir / "topology.toml").select(meta["duts"])
    phases = meta.get("phases") or []
    void: list[str] = []  # run-level reasons
    warnings = list(meta.get("warnings") or [])
    if meta.get("error"):
        void.append(f"run did not complete: {meta['error']}")
    analysis: dict[str, Any] = {}
    if phases:
        try:
            analysis = capture.analyse(run_dir / "capture.pcap", report.Tags(topo).all(),
                                       run_dir / "phases.json", bfdcap,
                                       window=(phases[0]["start_ns"], phases[-1]["end_ns"]))
            (run_dir / "bfdcap.json").write_text(json.dumps(analysis, indent=1) + "\n")
        except LabError as e:
            void.append(str(e))
    figs = report.figures(topo, analysis or {})
    assessment: dict[str, Any] = {}
    if analysis:
        try:
            assessment = demo.judge(topo, run_dir, analysis, figs, phases, bfdcap)
            void += assessment["void_reasons"]
        except LabError as e:
            void.append(str(e))
    steps = meta.get("steps") or []
    floods = meta.get("floods") or []
    cap = meta.get("capture") or {}
    if "dropped" not in cap:
        void.append("tcpdump printed no drop count")
    elif cap["dropped"]:
        void.append(f"tcpdump dropped {cap['dropped']} packets")
    for dev, p in figs["peer"]["towards"].items():
        if analysis and p["max_over_budget"] is None:
            void.append(f"no transmit gaps of the peer towards {dev} in the capture")
    g = gate.load_gates()
    ungated = set(g.ungated_steps)
    levels: dict[str, Any] = {}
    by_name = {st["name"]: st for st in steps}
    summary: dict[str, Any] = {
        "schema": SCHEMA,
        "run_id": meta.get("run_id"), "run_dir": str(run_dir), "profile": meta.get("profile"),
        "commit": meta.get("commit"), "dirty": meta.get("dirty"), "kernel": meta.get("kernel"),
        "nproc": meta.get("nproc"), "topology": meta.get("topology"), "tag": meta.get("tag"),
        "generator": meta.get("generator"), "flood_pps": meta.get("flood_pps"),
        "verdict": "", "void": bool(void), "void_reasons": void, "run_void_reasons": void,
        "failures": [], "warnings": warnings,
        "duts": figs["duts"], "peer": figs["peer"], "phases": figs["phases"],
        "levels": levels, "floods": floods, "phase_plan": phases,
        "steal": assessment.get("steal", {}),
        "steal_records": assessment.get("steal_records"),
        "peer_gaps_explained": assessment.get("peer_gaps_explained", []),
        "peer_gaps_unexplained": assessment.get("peer_gaps_unexplained", []),
        "peer_early_downs_explained": assessment.get("peer_early_downs_explained", []),
        "peer_early_downs_unexplained": assessment.get("peer_early_downs_unexplained", []),
        "peer_early_downs_races": assessment.get("peer_early_downs_races", []),
        "capture": cap, "shield": meta.get("shield", {}),
        "engine_attach": meta.get("engine_attach", {}),
        "engine_stats": meta.get("engine_stats", {}),
        "final_views": meta.get("final_views", {}),
        "percentiles": "nearest rank, computed by bfdcap", "rules": "docs/lab.md",
    }
    witness = report.witness(summary, list(CONTRAST_LEVELS)) if analysis else {}
    kinds = report.kinds(summary)
    verdicts: dict[str, dict[str, Any]] = {}
    for ph in figs.get("phases") or []:
        st = by_name.get(ph["name"], {})
        lv = levels[ph["name"]] = {
            "kind": st.get("kind"), "of": st.get("of"), "level": st.get("level"),
            "start_ns": ph["start_ns"], "end_ns": ph["end_ns"],
            "seconds": round((ph["end_ns"] - ph["start_ns"]) / 1e9, 3),
            "load": st.get("load"), "steal_ms": st.get("steal_ms"),
            "steal": summary["steal"].get(ph["name"]),
            "oom_kill": st.get("oom_kill"),
            "duts": ph["duts"], "peer": ph["peer"],
            "floods": [f for f in floods if f.get("step") == ph["name"]],
        }
        why = _step_void(lv, assessment, ph["name"]) + witness.get(ph["name"], [])
        res = report.step_result(ph["duts"], kinds, why, gated=ph["name"] not in ungated)
        lv.update(verdict=res["verdict"], void_reasons=res["void_reasons"],
                  failures=res["failures"], gated=ph["name"] not in ungated)
        if res.get("note"):
            lv["note"] = res["note"]
        ph.update(verdict=res["verdict"], void_reasons=res["void_reasons"])
        verdicts[ph["name"]] = res
    report.conclude(summary, verdicts, phases, g.ladder_required, void, g.void_fraction_max)
    summary["ungated_steps"] = sorted(ungated & set(levels))
    summary["plots"] = _plots(run_dir, bfdcap, analysis, levels, warnings, topo)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (run_dir / "report.md").write_text(markdown(summary))
    return summary


def _plots(run_dir: Path, bfdcap: Path, analysis: dict[str, Any], levels: dict[str, Any],
           warnings: list[str], topo: Any) -> list[str]:
    """Whole-run plots (lab.plot) plus gap survival per level in plots/<level>/."""
    if not analysis:
        return []
    out: list[str] = []
    try:
        from . import plot  # the capture engineer's module (matplotlib)
        out += [p.name for p in plot.plot(analysis, run_dir, str(bfdcap))]
        for name, lv in levels.items():
            if lv.get("kind") not in ("level", "flood"):
                continue
            sub = run_dir / "plots" / name
            one = capture.analyse(run_dir / "capture.pcap", report.Tags(topo).all(), None,
                                  bfdcap, window=(lv["start_ns"], lv["end_ns"]))
            got = plot.plot(one, sub, str(bfdcap))
            out += [str(p.relative_to(run_dir)) for p in got if p.name == "gap_survival.png"]
    except Exception as e:  # noqa: BLE001 - pictures are a bonus, never a reason to fail
        warnings.append(f"plots not drawn: {type(e).__name__}: {e}")
    return out


# --- rendering ---------------------------------------------------------------------------------

def _f(v: Any, nd: int = 2) -> str:
    return "-" if not isinstance(v, (int, float)) or isinstance(v, bool) else f"{v:.{nd}f}"


def _down(d: dict[str, Any]) -> str:
    return (f"{d.get('down_events', 0)}/{d.get('down_events_excused', 0)}/"
            f"{d.get('down_events_counted', d.get('down_events', 0))}")


def _cls(c: dict[str, Any] | None) -> str:
    if not c:
        return "-"
    g = c.get("gap_ms") or {}
    return f"{_f(g.get('p99'))}/{_f(g.get('max'), 1)}/{_f(c.get('budget_ms'), 0)}"


def _load_line(lv: dict[str, Any]) -> str:
    ld = lv.get("load")
    if not ld:
        return lv.get("kind") or ""
    return (f"{' '.join(ld['argv'][1:-3])}; CPU {ld['cpu_s']:.1f} s"
            + ("" if ld["ran"] else " (NOT proven)"))


def tables(s: dict[str, Any]) -> str:
    """Per-level tables: down events total/excused/counted and per class p99/max/budget."""
    devs = list(s["duts"])
    classes: list[str] = []
    for d in s["duts"].values():
        classes += [c for c in d["classes"] if c not in classes]
    lines = [f"ladder {s.get('profile')} run {s.get('run_id')}: per step, down events "
             "total/excused/counted and per class gap p99/max/budget (ms)"]
    head = f"  {'device':<7} {'down':>12} " + " ".join(f"{c:>20}" for c in classes)
    for name, lv in s["levels"].items():
        lines.append(f"{name} {lv.get('verdict', '-')} ({lv['seconds']:.0f} s; "
                     f"{_load_line(lv)}; host steal {report.steal_cell(lv.get('steal'))})")
        lines.append(head)
        for dv in devs:
            d = lv["duts"].get(dv)
            if d is None:
                continue
            lines.append(f"  {dv:<7} {_down(d):>12} "
                         + " ".join(f"{_cls(d['classes'].get(c)):>20}" for c in classes))
    if s.get("floods"):
        lines.append("")
        lines.append("floods (target %s pps per device, generator %s): offered pps, engine "
                     "counters moved, UdpRcvbufErrors" % (s.get("flood_pps"), s.get("generator")))
        for f in s["floods"]:
            for dv, d in f["devices"].items():
                eng = d.get("engine_drops") or {}
                cnt = {k: v for k, v in (d.get("engine_counters") or {}).items()
                       if k in ("pass_non_bfd", "pass_unowned", "rx_ctrl", "tx_reply")}
                extra = ""
                if "engine_drops" in d or "engine_counters" in d:
                    extra = (" drops " + (", ".join(f"{k} +{v}" for k, v in eng.items()) or "none")
                             + "; " + ", ".join(f"{k} +{v}" for k, v in cnt.items()))
                lines.append(f"  {f['arm']} {dv:<7} {d['offered_pps']:>8} pps "
                             f"(sent {d['generator'].get('pps', '?')}){extra}; "
                             f"UdpRcvbufErrors +{d['udp_rcvbuf_errors']}")
    lines.append("")
    lines.append("whole run: " + "; ".join(
        f"{n} {d['sessions_up_end']}/{d['sessions']} Up at the end, {report.down_line(d)}"
        for n, d in s["duts"].items()))
    lines += report.steal_lines(s)
    lines.append("steps (VOID first):")
    lines += report.step_lines(s, s["levels"])
    cap = s.get("capture") or {}
    lines.append(f"capture: {cap.get('captured', '?')} packets, {cap.get('dropped', '?')} "
                 "dropped by kernel")
    for w in s.get("warnings", []):
        lines.append(f"warning: {w}")
    v = s["verdict"]
    if v == "VOID":
        lines.append("verdict: VOID - " + "; ".join(s["void_reasons"]))
    elif v == "FAIL":
        lines.append("verdict: FAIL - " + "; ".join(s["failures"]))
    else:
        nv = s.get("steps_void") or []
        lines.append(f"verdict: {v} - engine: 0 counted down events at every judged step, "
                     "every session Up at the end"
                     + (f"; {len(nv)} VOID step(s) not judged: {', '.join(nv)}" if nv else "")
                     + " (gates: python3 -m lab gate RUN_DIR)")
    lines.append(f"run folder: {s.get('run_dir')}")
    return "\n".join(lines)


def markdown(s: dict[str, Any]) -> str:
    devs = list(s["duts"])
    classes: list[str] = []
    for d in s["duts"].values():
        classes += [c for c in d["classes"] if c not in classes]
    out = [f"# Ladder run {s.get('run_id')} (profile {s.get('profile')})", "",
           f"- verdict: **{s['verdict']}**"]
    if s["void_reasons"]:
        out.append("- VOID because: " + "; ".join(s["void_reasons"]))
    if s["failures"]:
        out.append("- failures: " + "; ".join(s["failures"]))
    for w in s.get("warnings", []):
        out.append(f"- warning: {w}")
    out += [f"- commit {s.get('commit')}{' (dirty tree)' if s.get('dirty') else ''}, kernel "
            f"{s.get('kernel')}, {s.get('nproc')} CPUs, devices {', '.join(devs)}",
            "- down events: total / excused (peer silent beyond budget during hypervisor "
            "steal) / counted; gaps: p99 / max / budget in ms, max/budget, gaps over budget "
            "(excused) (docs/lab.md)", ""]
    out += ["## Verdict per step", "", "VOID steps first: they are not judged and never "
            "counted as passed. Host steal per CPU in ms and % of the step (a step is VOID "
            "over 10 % on one CPU).", "",
            "| step | verdict | seconds | host steal | why |", "|---|---|---|---|---|"]
    for name in report.void_first(s["levels"]):
        lv = s["levels"][name]
        why = "; ".join(lv.get("void_reasons") or lv.get("failures") or []) \
            or lv.get("note") or "-"
        out.append(f"| {name} | **{lv.get('verdict', '-')}** | {lv['seconds']:.1f} | "
                   f"{report.steal_cell(lv.get('steal'))} | {why} |")
    out.append("")
    for name, lv in s["levels"].items():
        out += [f"## {name}: {lv.get('verdict', '-')}", "",
                f"{lv['seconds']:.1f} s, {_load_line(lv)}, host steal "
                f"{report.steal_cell(lv.get('steal'))}, oom kills {lv.get('oom_kill')}", ""]
        if lv.get("void_reasons"):
            out += ["VOID: " + "; ".join(lv["void_reasons"]), ""]
        out += [
                "| device | down events | " + " | ".join(classes) + " |",
                "|---|---|" + "---|" * len(classes)]
        for dv in devs:
            d = lv["duts"].get(dv)
            if d is None:
                continue
            cells = []
            for c in classes:
                x = d["classes"].get(c)
                cells.append("-" if not x else f"{_cls(x)}, {_f(x.get('max_over_budget'), 3)}, "
                             f"{x.get('gaps_over_budget')} ({x.get('gaps_over_budget_excused')})")
            out.append(f"| {dv} | {_down(d)} | " + " | ".join(cells) + " |")
        for f in lv.get("floods") or []:
            out += ["", f"Flood {f['arm']}: {f['description']} (expected: {f['expect']}); "
                    f"target {f['target_pps']:.0f} pps per device", "",
                    "| device | offered pps | generator pps | engine drops | engine counters | "
                    "UdpRcvbufErrors | link rx dropped |", "|---|---|---|---|---|---|---|"]
            for dv, d in f["devices"].items():
                out.append(f"| {dv} | {d['offered_pps']} | {d['generator'].get('pps', '?')} | "
                           f"{json.dumps(d.get('engine_drops', '-'))} | "
                           f"{json.dumps(d.get('engine_counters', '-'))} | "
                           f"{d['udp_rcvbuf_errors']} | {d['link_rx_dropped']} |")
        out.append("")
    out += ["## Validity", ""] + [f"- {x}" for x in report.steal_lines(s)]
    out += report.peer_gap_table(s)
    out.append("")
    cap = s.get("capture") or {}
    out += [f"- capture: {cap.get('captured')} packets, {cap.get('dropped')} dropped by kernel",
            "", "Files: `capture.pcap`, `phases.json`, `run.json`, `summary.json`, "
            "`bfdcap.json`, `episodes.json`, `steal.jsonl`, `logs/`.", ""]
    for png in s.get("plots") or []:
        out.append(f"![{png}]({png})")
    return "\n".join(out) + "\n"
