"""render - the terminal tables and report.md of a run, and the pieces every kind of run
shares (down-event line, steal cells and lines, the peer-gap table, the step lines).

Renders a summary (lab.judge.summarise); computes nothing.
"""

from __future__ import annotations

from typing import Any

from . import loop_late
from .episodes import EXCUSE_REASON
from .figures import num
from .validity import MAX_STEAL_FRACTION
from .verdict import counted, to_be_up, void_first


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
    x = num(v)
    return "-" if x is None else f"{x:.{nd}f}"


def _i(v: Any) -> str:
    x = num(v)
    return "-" if x is None else str(int(x))


def class_cells(c: dict[str, Any]) -> tuple[str, str, str, str]:
    """(family, hop, peer, options) of a class entry (SessionClass.report): options lists echo,
    demand, asym(metric timers), passive and shut (at which end) when set, else "-"; "?" for an
    entry without them."""
    if "family" not in c:
        return "?", "?", "?", "?"
    opts = [n for n, k in (("echo", "echo"), ("demand", "demand"), ("asym", "asymmetric"))
            if c.get(k)]
    opts += [f"{n}({c[k]})" for n, k in (("passive", "passive"), ("shut", "admin_down"))
             if c.get(k)]
    return (c["family"], "multihop" if c.get("multihop") else "1hop", str(c.get("peer")),
            ",".join(opts) or "-")


def up_at_end(d: dict[str, Any]) -> str:
    """"Up/to be Up" of device block D, and how many are shut (never Up) when any."""
    shut = d["sessions"] - to_be_up(d)
    return f"{d['sessions_up_end']}/{to_be_up(d)}" + (f" (+{shut} shut)" if shut else "")


def dut_title(name: str, kind: str) -> str:
    return f"{name} ({'bfdd + xdp-bfd' if kind == 'engine' else 'stock bfdd in software'})"


# Each class peer kind: its name in the report and its shield's key in summary["shield"].
_PEER_NAMES = {"frr": ("stock bfdd", "peer"), "bird": ("BIRD 2", "bird"),
               "engine": ("engine", "epeer")}


def _peer_kinds(summary: dict[str, Any]) -> str:
    """The far ends the classes name, each with its shield, e.g. "stock bfdd, shielded:
    deadline; engine, shielded: deadline"."""
    kinds = sorted({c.get("peer", "frr") for d in summary["duts"].values()
                    for c in d.get("classes", {}).values()} or {"frr"})
    out = []
    for k in kinds:
        name, key = _PEER_NAMES.get(k, (k, k))
        if k == "frr" and summary.get("peer_kind") == "bfdpeer":
            name = "bfdpeer"
        out.append(f"{name}, shielded: {summary['shield'].get(key, '?')}")
    return "; ".join(out)


def _phase_counts(summary: dict[str, Any], name: str) -> str:
    return ", ".join(
        f"{p['name']} {p['duts'][name].get('down_events', 0)}/"
        f"{p['duts'][name].get('down_events_excused', 0)}/{counted(p['duts'][name])}"
        for p in summary.get("phases") or [] if name in p["duts"])


def steal_cell(st: dict[str, Any] | None) -> str:
    """"cpu0 120 ms 0.6 %, cpu1 0 ms 0.0 %" from one step's steal (lab.validity.step_steal)."""
    if not st:
        return "-"
    return ", ".join(f"cpu{c} {v['ms']:.0f} ms {v['pct']:.1f} %" for c, v in st["cpus"].items())


def steal_lines(summary: dict[str, Any]) -> list[str]:
    """Steal per step and CPU, and what the rule made of the peer's gaps and early Downs."""
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


def loop_late_table(summary: dict[str, Any]) -> list[str]:
    """Markdown rows: each engine's loop lateness per step (lab.judge.loop_late); [] when no
    step has figures (no engine device, or an engine without the counters)."""
    phases = summary.get("phases") or []
    engines = sorted({n for ph in phases for n, f in (ph.get("engine_loop") or {}).items() if f})
    if not engines:
        return []
    out = ["", "## Engine loop lateness", "",
           "How long after a timer was due (the transmit timer, which paces what userspace "
           "sends: asymmetric, Demand, echo, Polls, BIRD's peers; the 100 ms tick) the "
           "engine's loop ran it, from its stats (buckets 10 us-1 s, 1-2-5; max exact unless "
           "\"<=\"). docs/lab.md.", "",
           "| step | " + " | ".join(engines) + " |", "|---|" + "---|" * len(engines)]
    for ph in phases:
        el = ph.get("engine_loop") or {}
        cells = [loop_late.cell(el.get(n)) for n in engines]
        out.append(f"| {ph['name']} | " + " | ".join(cells) + " |")
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
    w = max([7] + [len(c) for d in summary["duts"].values() for c in d["classes"]])
    ow = max([7] + [len(class_cells(c)[3]) for d in summary["duts"].values()
                    for c in d["classes"].values()])
    head = (f"  {'class':<{w}} {'family':<7} {'hop':<8} {'peer':<7} {'options':<{ow}} "
            f"{'sessions':>8} {'packets':>9} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'max ms':>8} {'budget ms':>9} {'max/budget':>10}")
    for name, d in summary["duts"].items():
        lines.append(f"{dut_title(name, d['kind'])}: {up_at_end(d)} sessions Up at the end, "
                     f"{down_line(d)}")
        lines.append(head)
        for cname, c in d["classes"].items():
            g = c["gap_ms"]
            fam, hop, peer, opts = class_cells(c)
            lines.append(f"  {cname:<{w}} {fam:<7} {hop:<8} {peer:<7} {opts:<{ow}} "
                         f"{_i(c['sessions']):>8} {_i(c['packets']):>9} "
                         f"{_f(g.get('p50')):>8} {_f(g.get('p99')):>8} {_f(g.get('max')):>8} "
                         f"{_f(c['budget_ms'], 1):>9} {_f(c['max_over_budget'], 3):>10}")
        if summary.get("phases"):
            lines.append("  down events by phase (total/excused/counted): "
                         + _phase_counts(summary, name))
        lines.append("")
    peer = summary["peer"]
    sides = ", ".join(f"towards {n} {_f(p['max_over_budget'], 3)}"
                      for n, p in peer["towards"].items())
    lines.append(f"peer ({_peer_kinds(summary)}): own max gap / budget {sides}")
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
    shield = f" (tcpdump shielded: {summary['shield'].get('tcpdump', '?')})"
    lines += closing_lines(summary, shield, {
        "PASS": "every engine session Up at the end, 0 counted engine down events at every "
                "judged phase, stock bfdd flapped under the load",
        "INFO": "no engine in this run"})
    return "\n".join(lines)


def closing_lines(s: dict[str, Any], capture_note: str, verdict_text: dict[str, str]) -> list[str]:
    """The terminal report's last lines for any kind of run: the capture, the warnings, the
    verdict (VOID and FAIL with their reasons, others with VERDICT_TEXT[verdict]) and the run
    folder."""
    cap = s.get("capture") or {}
    out = [f"capture: {cap.get('captured', '?')} packets, {cap.get('dropped', '?')} dropped by "
           f"kernel{capture_note}"]
    out += [f"warning: {w}" for w in s.get("warnings", [])]
    v = s["verdict"]
    why = {"VOID": s.get("void_reasons"), "FAIL": s.get("failures")}.get(v)
    text = "; ".join(why or []) if v in ("VOID", "FAIL") else verdict_text.get(v, "")
    out.append(f"verdict: {v} - {text}")
    out.append(f"run folder: {s.get('run_dir', '?')}")
    return out


def verdict_lines(summary: dict[str, Any]) -> list[str]:
    """report.md's first list items: the verdict, why VOID, the failures, the warnings."""
    out = [f"- verdict: **{summary['verdict']}**"]
    if summary["void_reasons"]:
        out.append("- VOID because: " + "; ".join(summary["void_reasons"]))
    if summary["failures"]:
        out.append("- failures: " + "; ".join(summary["failures"]))
    return out + [f"- warning: {w}" for w in summary.get("warnings", [])]


def markdown(summary: dict[str, Any]) -> str:
    """report.md: the same figures as the terminal, plus the per-phase tables."""
    out = [f"# Demo run {summary.get('run_id', '')}", ""] + verdict_lines(summary)
    out += [f"- commit {summary.get('commit')}{' (dirty tree)' if summary.get('dirty') else ''},"
            f" kernel {summary.get('kernel')}, {summary.get('nproc')} CPUs",
            f"- topology `{summary.get('topology')}`, devices: {', '.join(summary['duts'])}",
            f"- shield: peer {summary['shield'].get('peer')}, tcpdump "
            f"{summary['shield'].get('tcpdump')}; devices under test unshielded",
            "- down events: total, excused (the device's Down answered the peer's own silence "
            "beyond budget, or the peer declared Down early on waking from a hypervisor steal; "
            "each episode's cause in episodes.json; docs/lab.md), counted", ""]
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
                f"{up_at_end(d)} sessions Up at the end, "
                f"{down_line(d)} over the whole run.", "",
                "| class | family | hop | peer | options | sessions | packets | p50 ms | p99 ms "
                "| p99.9 ms | max ms | budget ms | max/budget | gaps over budget | down events |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for cname, c in d["classes"].items():
            g = c["gap_ms"]
            out.append(f"| {cname} | {' | '.join(class_cells(c))} | {_i(c['sessions'])} | "
                       f"{_i(c['packets'])} | {_f(g.get('p50'))}"
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
                           f"{pd.get('down_events_excused', 0)} | {counted(pd)} | "
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
    out += loop_late_table(summary)
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
