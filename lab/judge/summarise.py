"""summarise - a finished run folder into summary.json, report.md and the plots: the one
summary for every kind of run (a demo's phases, a ladder's steps and floods).

Reads run.json, phases.json, topology.toml and capture.pcap (plus ladder.toml for a ladder
run); bfdcap cuts the capture per step (--phases); lab.judge.assess applies the rule of
docs/lab.md section 2 to every step; lab.judge.verdict gives each step and the run its verdict.
Nothing here computes a percentile. `python3 -m lab report RUN_DIR` runs this on a saved
run, without root and without the lab.
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .. import runfiles
from ..topo import load as load_topology
from ..util import LabError
from . import bfdcap as bfdcap_client
from . import render, render_ladder
from . import witness as witness_run
from .assess import judge_run
from .figures import Tags, figures
from .gate import load_gates
from .verdict import conclude, kinds, step_result, witness

DEMO_SCHEMA = "xdp-bfd-lab-demo/2"  # 2: per-phase verdicts, steal per phase and CPU
LADDER_SCHEMA = "xdp-bfd-lab-ladder/2"  # 2: per-step verdicts, steal per step and CPU
CONTRAST_LEVELS = ("L4",)  # a ladder's stock bfdd must show counted down events here
COMMON = ("commit", "dirty", "kernel", "nproc", "topology", "tag", "peer_kind")
TAIL = ("shield", "engine_attach", "engine_stats", "final_views")
PEER_EVENTS = ("peer_gaps_explained", "peer_gaps_unexplained", "peer_early_downs_explained",
               "peer_early_downs_unexplained", "peer_early_downs_races")


def is_ladder(run_dir: Path) -> bool:
    """A ladder run keeps its ladder/ladder.toml; a demo run does not."""
    return (run_dir / "ladder.toml").exists()


def _flood_void(floods: list[dict[str, Any]]) -> list[str]:
    out = []
    for f in floods:
        tgt = f.get("target_pps") or 0
        for dev, d in f["devices"].items():
            if tgt and d["offered_pps"] < 0.5 * tgt:
                out.append(f"flood {f['arm']} towards {dev} reached {d['offered_pps']} pps, "
                           f"under half its target {tgt:.0f} pps")
    return out


def _level_void(lv: dict[str, Any]) -> list[str]:
    """A ladder step's own VOID reasons beside the validity rule's: its load not proven to
    have run, its floods under half their rate. A baseline may use the steps that have none
    (lab.judge.baseline)."""
    out = []
    ld = lv.get("load")
    if lv.get("kind") == "level" and not (ld and ld.get("ran")):
        why = "; ".join((ld or {}).get("problems") or ["no stress-ng result"])
        out.append(f"the load is not proven to have run ({why})")
    return out + _flood_void(lv.get("floods") or [])


def _analyse(run_dir: Path, topo: Any, phases: list[dict[str, Any]], bfdcap: Path,
             void: list[str]) -> tuple[dict[str, Any], Any]:
    """bfdcap's report of the run and its counted gaps (one pass: analyse_gaps)."""
    if not phases:
        return {}, None
    try:
        runfiles.read("phases", run_dir / "phases.json")
        analysis, gaps = bfdcap_client.analyse_gaps(
            run_dir / "capture.pcap", Tags(topo).all(), run_dir / "phases.json", bfdcap,
            window=(phases[0]["start_ns"], phases[-1]["end_ns"]))
    except (LabError, runfiles.RunFileError) as e:
        void.append(str(e))
        return {}, None
    (run_dir / "bfdcap.json").write_text(json.dumps(analysis, indent=1) + "\n")
    return analysis, gaps


def summarise(run_dir: Path, bfdcap: Path = bfdcap_client.BFDCAP) -> dict[str, Any]:
    """Analyse a finished run folder into its summary (also written: summary.json, report.md,
    the plots). Verdicts step by step, then the run's (docs/lab.md section 2, rule (d); the
    required steps from results/gates.toml [demo] or [ladder]; ungated steps INFO).
    Raises RunFileError (ValueError) on a malformed run.json, KeyError/TypeError on one of
    the wrong shape; a capture bfdcap cannot read makes the run VOID, with why."""
    pool = ThreadPoolExecutor(max_workers=1)  # bfdcap's passes for the per-step plots
    try:
        return _summarise(run_dir, bfdcap, pool)
    finally:
        pool.shutdown(cancel_futures=True)


def _summarise(run_dir: Path, bfdcap: Path, pool: ThreadPoolExecutor) -> dict[str, Any]:
    ladder = is_ladder(run_dir)
    meta = json.loads((run_dir / "run.json").read_text())
    topo = load_topology(run_dir / "topology.toml").select(meta["duts"])
    phases = runfiles.check("phases", meta.get("phases") or [], f"{run_dir / 'run.json'} phases")
    void: list[str] = []  # run-level reasons
    warnings = list(meta.get("warnings") or [])
    if meta.get("error"):
        void.append(f"run did not complete: {meta['error']}")
    analysis, gaps = _analyse(run_dir, topo, phases, bfdcap, void)
    # bfdcap's passes for the per-step plots run beside the judge (their own process)
    step_passes = _step_passes(pool, run_dir, bfdcap, topo, meta, phases) \
        if ladder and analysis else {}
    figs = figures(topo, analysis or {})
    assessment: dict[str, Any] = {}
    if analysis:
        try:
            assessment = judge_run(topo, run_dir, analysis, figs, phases, bfdcap, gaps)
            void += assessment["void_reasons"]
        except LabError as e:
            void.append(str(e))
    load = meta.get("load")
    if not ladder:
        if load is None:
            void.append("the load did not run")
        elif not load.get("ran"):
            void.append("the load is not proven to have run: "
                        + "; ".join(load.get("problems", [])))
    cap = meta.get("capture") or {}
    if "dropped" not in cap:
        void.append("tcpdump printed no drop count")
    elif cap["dropped"]:
        void.append(f"tcpdump dropped {cap['dropped']} packets")
    for dev, p in figs["peer"]["towards"].items():
        if analysis and p["max_over_budget"] is None:
            void.append(f"no transmit gaps of the peer towards {dev} in the capture")
    if not ladder:
        warnings += _demo_warnings(meta, figs)
    floods = meta.get("floods") or []
    levels: dict[str, Any] = {}
    s: dict[str, Any] = {"schema": LADDER_SCHEMA if ladder else DEMO_SCHEMA,
                         "run_id": meta.get("run_id"), "run_dir": str(run_dir)}
    if ladder:
        s["profile"] = meta.get("profile")
    s.update((k, meta.get(k)) for k in COMMON)
    if ladder:
        s.update(generator=meta.get("generator"), flood_pps=meta.get("flood_pps"))
    s.update(verdict="", void=bool(void), void_reasons=void, run_void_reasons=void,
             failures=[], warnings=warnings, duts=figs["duts"], peer=figs["peer"],
             phases=figs["phases"])
    for ph in s["phases"]:  # the engines' loop lateness per step (lab.judge.loop_late)
        ph["engine_loop"] = (meta.get("engine_loop") or {}).get(ph["name"]) or {}
    if ladder:
        s.update(levels=levels, floods=floods)
    s["phase_plan"] = phases
    if not ladder:
        s["steal_ms"] = meta.get("steal_ms") or {}
    s.update(steal=assessment.get("steal", {}), steal_records=assessment.get("steal_records"))
    s.update((k, assessment.get(k, [])) for k in PEER_EVENTS)
    if not ladder:
        s["load"] = load
    s["capture"] = cap
    s.update((k, meta.get(k, {})) for k in TAIL)
    s.update(percentiles="nearest rank, computed by bfdcap", rules="docs/lab.md")
    g = load_gates()
    if ladder:
        steps = _ladder_steps(s, meta, assessment, bool(analysis), g.ungated_steps)
        conclude(s, steps, phases, g.ladder_required, void, g.void_fraction_max)
        s["ungated_steps"] = sorted(set(g.ungated_steps) & set(levels))
    else:
        steps = _demo_steps(s, phases, assessment, bool(analysis))
        s["steps"] = conclude(s, steps, phases, g.demo_required, void, g.void_fraction_max)
    s["plots"] = _plots(run_dir, bfdcap, analysis, levels, warnings, topo, gaps, step_passes)
    runfiles.write("summary", run_dir / "summary.json", s)
    (run_dir / "report.md").write_text(
        render_ladder.markdown(s) if ladder else render.markdown(s))
    return s


def tables(summary: dict[str, Any]) -> str:
    """The terminal tables of either kind of summary."""
    if "levels" in summary:
        return render_ladder.tables(summary)
    return render.tables(summary)


def _demo_warnings(meta: dict[str, Any], figs: dict[str, Any]) -> list[str]:
    out = []
    for name, d in figs["duts"].items():
        if d.get("down_events_bfdcap") is not None and d["down_events_bfdcap"] != d["down_events"]:
            out.append(f"{name}: bfdcap's class tables count {d['down_events_bfdcap']} "
                       f"down events, its episodes {d['down_events']}")
    for role in ("peer", "tcpdump"):
        if meta.get("shield", {}).get(role) not in ("deadline",):
            out.append(f"{role} shielded with {meta.get('shield', {}).get(role)}, "
                       "not SCHED_DEADLINE")
    return out


def _demo_steps(s: dict[str, Any], phases: list[dict[str, Any]], assessment: dict[str, Any],
                analysed: bool) -> dict[str, dict[str, Any]]:
    """Each phase's verdict; the contrast witness on the phases that ran a load."""
    step_void = {p["name"]: list((assessment.get("step_void_reasons") or {}).get(p["name"])
                                 or []) for p in phases}
    if analysed:
        for name, why in witness(s, [p["name"] for p in phases if p.get("load")]).items():
            step_void.setdefault(name, []).extend(why)
    kinds_ = kinds(s)
    steps: dict[str, dict[str, Any]] = {}
    for ph in s["phases"]:
        res = step_result(ph["duts"], kinds_, step_void.get(ph["name"], []))
        res["steal"] = s["steal"].get(ph["name"])
        steps[ph["name"]] = res
        ph.update(verdict=res["verdict"], void_reasons=res["void_reasons"],
                  failures=res["failures"])
    return steps


def _ladder_steps(s: dict[str, Any], meta: dict[str, Any], assessment: dict[str, Any],
                  analysed: bool, ungated: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each step's block in s["levels"] and its verdict; the witness on CONTRAST_LEVELS."""
    by_name = {st["name"]: st for st in meta.get("steps") or []}
    external = None
    if meta.get("witness_run") and analysed:  # a run of engines only: lab.judge.witness
        external = witness_run.from_run(Path(s["run_dir"]), meta, list(CONTRAST_LEVELS))
        s["witness_run"] = {"run": meta["witness_run"], "reasons": external,
                            "note": witness_run.note(Path(s["run_dir"]), meta,
                                                     list(CONTRAST_LEVELS))}
    wit = witness(s, list(CONTRAST_LEVELS), external) if analysed else {}
    kinds_ = kinds(s)
    verdicts: dict[str, dict[str, Any]] = {}
    for ph in s["phases"]:
        name = ph["name"]
        st = by_name.get(name, {})
        lv = s["levels"][name] = {
            "kind": st.get("kind"), "of": st.get("of"), "level": st.get("level"),
            "start_ns": ph["start_ns"], "end_ns": ph["end_ns"],
            "seconds": round((ph["end_ns"] - ph["start_ns"]) / 1e9, 3),
            "load": st.get("load"), "steal_ms": st.get("steal_ms"),
            "steal": s["steal"].get(name), "oom_kill": st.get("oom_kill"),
            "memcg": st.get("memcg"), "engine_loop": ph.get("engine_loop") or {},
            "duts": ph["duts"], "peer": ph["peer"],
            "floods": [f for f in s["floods"] if f.get("step") == name],
        }
        why = (list((assessment.get("step_void_reasons") or {}).get(name) or [])
               + _level_void(lv) + wit.get(name, []))
        gated = name not in ungated
        res = step_result(ph["duts"], kinds_, why, gated=gated)
        lv.update(verdict=res["verdict"], void_reasons=res["void_reasons"],
                  failures=res["failures"], gated=gated)
        if res.get("note"):
            lv["note"] = res["note"]
        ph.update(verdict=res["verdict"], void_reasons=res["void_reasons"])
        verdicts[name] = res
    return verdicts


PLOTTED_KINDS = ("level", "flood")  # the ladder steps with their own gap survival plot


def _step_passes(pool: ThreadPoolExecutor, run_dir: Path, bfdcap: Path, topo: Any,
                 meta: dict[str, Any], phases: list[dict[str, Any]]) -> dict[str, Future]:
    """{step: the future of bfdcap's report and gaps over the step's window} for the ladder
    steps of PLOTTED_KINDS, started on POOL."""
    kind = {st["name"]: st.get("kind") for st in meta.get("steps") or [] if "name" in st}
    tags = Tags(topo).all()
    return {p["name"]: pool.submit(bfdcap_client.analyse_gaps, run_dir / "capture.pcap",
                                   tags, None, bfdcap,
                                   (p["start_ns"], p["end_ns"]))
            for p in phases if kind.get(p["name"]) in PLOTTED_KINDS}


def _plots(run_dir: Path, bfdcap: Path, analysis: dict[str, Any], levels: dict[str, Any],
           warnings: list[str], topo: Any, gaps: Any = None,
           step_passes: dict[str, Future] | None = None) -> list[str]:
    """gap_survival.png and down_events.png of the run (lab.judge.plot), plus gap survival
    per ladder level and flood arm in plots/<step>/ (optional: a failure only warns), from
    STEP_PASSES (_step_passes())."""
    if not analysis:
        return []
    out: list[str] = []
    try:
        from . import plot  # imports matplotlib: only when drawing
        out += [p.name for p in plot.plot(analysis, run_dir, str(bfdcap), gaps)]
        for name, lv in levels.items():
            if lv.get("kind") not in PLOTTED_KINDS:
                continue
            fut = (step_passes or {}).get(name)
            one, one_gaps = fut.result() if fut is not None else bfdcap_client.analyse_gaps(
                run_dir / "capture.pcap", Tags(topo).all(), None, bfdcap,
                (lv["start_ns"], lv["end_ns"]))
            got = plot.plot(one, run_dir / "plots" / name, str(bfdcap), one_gaps,
                            timeline=False)
            out += [str(p.relative_to(run_dir)) for p in got if p.name == "gap_survival.png"]
    except Exception as e:  # noqa: BLE001 - pictures are a bonus, never a reason to fail
        warnings.append(f"plots not drawn: {type(e).__name__}: {e}")
    return out
