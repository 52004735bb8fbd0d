"""render_ladder - a ladder run's terminal tables and report.md: per step (idle, each level,
its recovery window, each flood arm, soak), per device and class; then the floods.

Renders a summary (lab.judge.summarise); computes nothing.
"""

from __future__ import annotations

import json
from typing import Any

from . import render
from .verdict import void_first


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


def _class_legend(s: dict[str, Any], classes: list[str]) -> list[str]:
    """One line per class: what it is (family, hop, peer, options; render.class_cells)."""
    out = []
    for c in classes:
        entry = next((d["classes"][c] for d in s["duts"].values() if c in d["classes"]), {})
        out.append(f"  class {c}: " + " ".join(render.class_cells(entry)))
    return out


def tables(s: dict[str, Any]) -> str:
    """Per-level tables: down events total/excused/counted and per class p99/max/budget."""
    devs = list(s["duts"])
    classes: list[str] = []
    for d in s["duts"].values():
        classes += [c for c in d["classes"] if c not in classes]
    lines = [f"ladder {s.get('profile')} run {s.get('run_id')}: per step, down events "
             "total/excused/counted and per class gap p99/max/budget (ms)"]
    lines += _class_legend(s, classes)
    head = f"  {'device':<7} {'down':>12} " + " ".join(f"{c:>20}" for c in classes)
    for name, lv in s["levels"].items():
        lines.append(f"{name} {lv.get('verdict', '-')} ({lv['seconds']:.0f} s; "
                     f"{_load_line(lv)}; host steal {render.steal_cell(lv.get('steal'))})")
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
                       if k in ("pass_non_bfd", "pass_spread", "pass_unowned", "rx_ctrl",
                                "tx_reply")}
                extra = ""
                if "engine_drops" in d or "engine_counters" in d:
                    extra = (" drops " + (", ".join(f"{k} +{v}" for k, v in eng.items()) or "none")
                             + "; " + ", ".join(f"{k} +{v}" for k, v in cnt.items()))
                lines.append(f"  {f['arm']} {dv:<7} {d['offered_pps']:>8} pps "
                             f"(sent {d['generator'].get('pps', '?')}){extra}; "
                             f"UdpRcvbufErrors +{d['udp_rcvbuf_errors']}")
                if "nic" in d:
                    lines.append(f"    {dv} device side: {nic_line(d)}")
    lines.append("")
    lines.append("whole run: " + "; ".join(
        f"{n} {render.up_at_end(d)} Up at the end, {render.down_line(d)}"
        for n, d in s["duts"].items()))
    lines += render.steal_lines(s)
    lines += witness_lines(s)
    lines.append("steps (VOID first):")
    lines += render.step_lines(s, s["levels"])
    nv = s.get("steps_void") or []
    text = ("engine: 0 counted down events at every judged step, every session Up at the end"
            + (f"; {len(nv)} VOID step(s) not judged: {', '.join(nv)}" if nv else "")
            + " (gates: python3 -m lab gate RUN_DIR)")
    lines += render.closing_lines(s, "", {"PASS": text, "INFO": text})
    return "\n".join(lines)


def markdown(s: dict[str, Any]) -> str:
    devs = list(s["duts"])
    classes: list[str] = []
    for d in s["duts"].values():
        classes += [c for c in d["classes"] if c not in classes]
    out = [f"# Ladder run {s.get('run_id')} (profile {s.get('profile')})", ""]
    out += render.verdict_lines(s)
    out += [f"- commit {s.get('commit')}{' (dirty tree)' if s.get('dirty') else ''}, kernel "
            f"{s.get('kernel')}, {s.get('nproc')} CPUs, devices {', '.join(devs)}",
            "- down events: total / excused (the peer silent beyond budget, or declaring Down "
            "early on waking from a hypervisor steal; each episode's cause in episodes.json) / "
            "counted; gaps: p99 / max / budget in ms, max/budget, gaps over budget (excused) "
            "(docs/lab.md)", ""]
    out += ["## Verdict per step", "", "VOID steps first: they are not judged and never "
            "counted as passed. Host steal per CPU in ms and % of the step (a step is VOID "
            "over 10 % on one CPU).", "",
            "| step | verdict | seconds | host steal | why |", "|---|---|---|---|---|"]
    for name in void_first(s["levels"]):
        lv = s["levels"][name]
        why = "; ".join(lv.get("void_reasons") or lv.get("failures") or []) \
            or lv.get("note") or "-"
        out.append(f"| {name} | **{lv.get('verdict', '-')}** | {lv['seconds']:.1f} | "
                   f"{render.steal_cell(lv.get('steal'))} | {why} |")
    out += ["", "## Session classes", "", "| class | family | hop | peer | options |",
            "|---|---|---|---|---|"]
    for c in classes:
        entry = next((d["classes"][c] for d in s["duts"].values() if c in d["classes"]), {})
        out.append(f"| {c} | " + " | ".join(render.class_cells(entry)) + " |")
    out.append("")
    for name, lv in s["levels"].items():
        out += [f"## {name}: {lv.get('verdict', '-')}", "",
                f"{lv['seconds']:.1f} s, {_load_line(lv)}, host steal "
                f"{render.steal_cell(lv.get('steal'))}, oom kills {lv.get('oom_kill')}"
                + _memcg_note(lv.get("memcg")), ""]
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
            out += [f"- {dv} device side: {nic_line(d)}" for dv, d in f["devices"].items()
                    if "nic" in d]
        out.append("")
    out += render.loop_late_table(s) + [""]
    out += ["## Validity", ""] + [f"- {x}" for x in render.steal_lines(s) + witness_lines(s)]
    out += render.peer_gap_table(s)
    out.append("")
    cap = s.get("capture") or {}
    out += [f"- capture: {cap.get('captured')} packets, {cap.get('dropped')} dropped by kernel",
            "", "Files: `capture.pcap`, `phases.json`, `run.json`, `summary.json`, "
            "`bfdcap.json`, `episodes.json`, `steal.jsonl`, `logs/`.", ""]
    for png in s.get("plots") or []:
        out.append(f"![{png}]({png})")
    return "\n".join(out) + "\n"


def witness_lines(s: dict[str, Any]) -> list[str]:
    """The witness run of a run of engines only (lab.judge.witness): what it showed, or why
    it does not witness."""
    w = s.get("witness_run")
    if not w:
        return []
    why = [f"{st}: {r}" for st, rs in w["reasons"].items() for r in rs]
    return [w["note"] if not why and w.get("note") else
            f"witness run {w['run']} does not witness: " + "; ".join(why)]


def nic_line(d: dict[str, Any]) -> str:
    """A bare-metal device's own counters over a flood step (lab.bare.counters.deltas): its
    link's rx packets, drops and misses, the NIC's drop and XDP counters that moved (ethtool
    -S), how many counters the driver gives, or why it gives none."""
    def moved(x: dict[str, int]) -> str:
        return ", ".join(f"{k} +{v}" for k, v in sorted(x.items())) or "none moved"
    nic = (f"NIC drops {moved(d.get('nic_drops') or {})}; XDP {moved(d.get('nic_xdp') or {})} "
           f"({d.get('nic_counters', 0)} ethtool -S counters)")
    if d.get("nic_error"):
        nic = d["nic_error"]
    return (f"link rx +{d.get('link_rx_packets')}, rx dropped +{d.get('link_rx_dropped')}, "
            f"missed +{d.get('link_rx_missed')}; {nic}; over {d.get('counters_span_s')} s "
            f"({d.get('counters_scope', 'arm')})")


def _memcg_note(cg: dict | None) -> str:
    """The memory cgroup's figures of one step (lab.rig.memcg), or nothing without one."""
    if not cg:
        return ""
    return (f"; memory cgroup: peak {cg['max_usage_bytes'] / (1 << 20):.0f} of "
            f"{cg['limit_bytes'] / (1 << 20):.0f} MiB, limit hit {cg['failcnt']} times, "
            f"{cg['oom_kill']} OOM kills inside")
