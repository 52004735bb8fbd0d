"""gate - `python3 -m lab gate RUN_DIR [--baseline FILE]`: judge a ladder run.

Reads RUN_DIR/summary.json (lab.judge.summarise), checks every gated step of every gated
device against results/gates.toml, and, with --baseline, against a baseline file
(results/baselines/*.json). Prints a readable diff of what regressed and exits 0 when all
checks hold, 1 on a regression or failed threshold, 2 when the run is VOID (a VOID run
cannot pass), 3 on an error (missing or malformed files).

Baseline files (results/schema/baseline.schema.json; written by lab.judge.baseline):
    {"schema", "name", "description", "source": [...],
     "devices": {DEVICE: {"steps": {STEP or "*": {"down_events_counted": n,
         "classes": {CLASS or "*": {"p99_ms": x, "max_over_budget": x}}}}}}}
"""

from __future__ import annotations

import dataclasses
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import runfiles
from ..util import REPO
from .verdict import run_result, to_be_up, void_first

GATES = REPO / "results" / "gates.toml"
BASELINE_SCHEMA = "xdp-bfd-lab-baseline/1"


@dataclass(frozen=True)
class Gates:
    kinds: tuple[str, ...] = ("engine",)
    down_events_counted_max: int = 0
    max_over_budget_below: float = 1.0
    p99_over_interval_max: float = 1.10
    sessions_up_at_end: bool = True
    ungated_steps: tuple[str, ...] = ()
    down_events_counted_over: int = 0
    p99_relative: float = 0.10
    max_over_budget_absolute: float = 0.10
    # [verdict], [ladder], [demo]: how step verdicts make the run's (docs/lab.md section 2)
    void_fraction_max: float = 0.5
    ladder_required: tuple[str, ...] = ("L4",)
    demo_required: tuple[str, ...] = ("L4",)


# table -> {key in the file: field of Gates}; [gate], [baseline] and [verdict] keys are fields
_PREFIXED = {"ladder": "ladder_", "demo": "demo_"}


def ladder_summary_problem(s: dict[str, Any]) -> str | None:
    """Why @s (a summary.json its schema accepts) cannot be judged as a ladder run, or None."""
    if not s.get("levels"):
        return "summary.json is not a ladder summary (no levels)"
    return None


def load_gates(path: Path = GATES) -> Gates:
    doc = tomllib.loads(Path(path).read_text())
    unknown = sorted(set(doc) - {"gate", "baseline", "verdict", *_PREFIXED})
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {unknown}")
    kw: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(Gates)}
    for table in ("gate", "baseline", "verdict", *_PREFIXED):
        for k, v in (doc.get(table) or {}).items():
            field = _PREFIXED.get(table, "") + k
            if field not in names or (table not in _PREFIXED and field.startswith(
                    tuple(_PREFIXED.values()))):
                raise ValueError(f"{path} [{table}]: unknown key {k}")
            kw[field] = tuple(v) if isinstance(v, list) else v
    defaults = Gates()
    for field, v in kw.items():
        want = type(getattr(defaults, field))
        ok = isinstance(v, want) or (want is float and isinstance(v, int))
        if not ok or isinstance(v, bool) != isinstance(getattr(defaults, field), bool):
            raise ValueError(f"{path}: {field} = {v!r}: expected {want.__name__}")
    return Gates(**kw)


@dataclass
class Check:
    step: str
    device: str
    cls: str  # "" for device-level checks
    figure: str
    value: Any
    limit: Any
    against: str  # "gate" | baseline name
    ok: bool
    note: str = ""

    def line(self) -> str:
        where = f"{self.step} {self.device}" + (f" {self.cls}" if self.cls else "")
        v = _fmt(self.value)
        return (f"  {'ok  ' if self.ok else 'FAIL'} {where:<26} {self.figure:<22} {v:>9} "
                f"{'<=' if self.ok else '> '} {_fmt(self.limit):>9}  ({self.against})"
                + (f"  {self.note}" if self.note else ""))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def gated_devices(s: dict[str, Any], g: Gates) -> list[str]:
    return [n for n, d in s["duts"].items() if d.get("kind") in g.kinds]


def gated_steps(s: dict[str, Any], g: Gates) -> list[tuple[str, dict[str, Any]]]:
    return [(n, lv) for n, lv in (s.get("levels") or {}).items() if n not in g.ungated_steps]


def check_gates(s: dict[str, Any], g: Gates) -> list[Check]:
    out: list[Check] = []
    for dev in gated_devices(s, g):
        d = s["duts"][dev]
        if g.sessions_up_at_end:
            out.append(Check("end", dev, "", "sessions Up", d["sessions_up_end"], to_be_up(d),
                             "gate", d["sessions_up_end"] == to_be_up(d)))
        for step, lv in gated_steps(s, g):
            sd = lv["duts"].get(dev)
            if sd is None:
                continue
            cnt = sd.get("down_events_counted", sd.get("down_events", 0))
            out.append(Check(step, dev, "", "down events counted", cnt,
                             g.down_events_counted_max, "gate", cnt <= g.down_events_counted_max,
                             f"total {sd.get('down_events', 0)}, excused "
                             f"{sd.get('down_events_excused', 0)}"))
            for cname, c in sd["classes"].items():
                mob = c.get("max_over_budget")
                counted = c.get("gaps_over_budget_counted", c.get("gaps_over_budget", 0)) or 0
                if mob is not None:
                    ok = mob < g.max_over_budget_below or counted == 0
                    note = ""
                    if mob >= g.max_over_budget_below:
                        note = (f"{c.get('gaps_over_budget')} gaps over budget, "
                                f"{c.get('gaps_over_budget_excused', 0)} excused "
                                "(peer silent during steal)")
                    out.append(Check(step, dev, cname, "max gap / budget", mob,
                                     g.max_over_budget_below, "gate", ok, note))
                p99 = (c.get("gap_ms") or {}).get("p99")
                iv = c.get("interval_ms")
                if p99 is not None and iv:
                    peer = _peer_p99(lv, dev, cname)
                    ref = max(iv, peer or 0)
                    lim = round(g.p99_over_interval_max * ref, 3)
                    why = (f"{g.p99_over_interval_max:g} x interval {iv:g}" if ref == iv else
                           f"{g.p99_over_interval_max:g} x the peer's own p99 {peer:g} "
                           f"(interval {iv:g})")
                    out.append(Check(step, dev, cname, "gap p99 ms", p99, lim, "gate",
                                     p99 <= lim, why))
    return out


def _peer_class(lv: dict[str, Any], dev: str, cname: str) -> dict[str, Any]:
    """The peer's own figures towards DEV in class CNAME at this step."""
    c = (((lv.get("peer") or {}).get("towards") or {}).get(dev) or {}).get("classes", {})
    return c.get(cname) or {}


def _peer_p99(lv: dict[str, Any], dev: str, cname: str) -> float | None:
    """The peer's own gap p99 towards DEV in class CNAME at this step: an RX-clocked device
    answers the peer's packets, so its gaps cannot be shorter than the peer's."""
    return (_peer_class(lv, dev, cname).get("gap_ms") or {}).get("p99")


def _pick(table: dict[str, Any], key: str) -> dict[str, Any] | None:
    return table.get(key, table.get("*"))


def check_baseline(s: dict[str, Any], g: Gates, base: dict[str, Any]) -> list[Check]:
    name = base.get("name", "baseline")
    out: list[Check] = []
    for dev in gated_devices(s, g):
        bdev = (base.get("devices") or {}).get(dev)
        if bdev is None:
            continue
        for step, lv in gated_steps(s, g):
            bst = _pick(bdev.get("steps") or {}, step)
            sd = lv["duts"].get(dev)
            if bst is None or sd is None:
                continue
            if "down_events_counted" in bst:
                cnt = sd.get("down_events_counted", sd.get("down_events", 0))
                lim = bst["down_events_counted"] + g.down_events_counted_over
                out.append(Check(step, dev, "", "down events counted", cnt, lim, name,
                                 cnt <= lim))
            for cname, c in sd["classes"].items():
                bc = _pick(bst.get("classes") or {}, cname)
                if bc is None:
                    continue
                # An RX-clocked engine's gaps follow its peer's: the reference is the worse
                # of the baseline and the peer's own figure in this step (a peer stretched
                # by a steal under its budget excuses nothing, yet is no engine regression).
                peer = _peer_class(lv, dev, cname)
                p99 = (c.get("gap_ms") or {}).get("p99")
                if p99 is not None and bc.get("p99_ms") is not None:
                    ppeer = (peer.get("gap_ms") or {}).get("p99") or 0
                    ref = max(bc["p99_ms"], ppeer)
                    lim = round(ref * (1 + g.p99_relative), 3)
                    why = (f"baseline {bc['p99_ms']}" if ref == bc["p99_ms"] else
                           f"the peer's own p99 {ppeer} (baseline {bc['p99_ms']})")
                    if c.get("gaps_over_budget_excused"):
                        out.append(Check(step, dev, cname, "gap p99 ms", p99, lim, name, True,
                                         "not compared: gaps excused (peer silent)"))
                    else:
                        out.append(Check(step, dev, cname, "gap p99 ms", p99, lim, name,
                                         p99 <= lim, why))
                mob = c.get("max_over_budget")
                if mob is not None and bc.get("max_over_budget") is not None:
                    mpeer = peer.get("max_over_budget") or 0
                    ref = max(bc["max_over_budget"], mpeer)
                    lim = round(ref + g.max_over_budget_absolute, 3)
                    why = (f"baseline {bc['max_over_budget']}" if ref == bc["max_over_budget"]
                           else f"the peer's own {mpeer} (baseline {bc['max_over_budget']})")
                    if c.get("gaps_over_budget_excused"):
                        out.append(Check(step, dev, cname, "max gap / budget", mob, lim, name,
                                         True, "not compared: gaps excused (peer silent)"))
                    else:
                        out.append(Check(step, dev, cname, "max gap / budget", mob, lim, name,
                                         mob <= lim, why))
    return out


def step_void_reasons(s: dict[str, Any]) -> dict[str, list[str]]:
    """Each step's VOID reasons as the summary recorded them (lab.judge.summarise)."""
    return {n: list(lv.get("void_reasons") or []) for n, lv in (s.get("levels") or {}).items()}


def run_void_reasons(s: dict[str, Any]) -> list[str]:
    """The run-level VOID reasons (not a step's). Summaries written before per-step verdicts
    carry none apart: then the run's reasons count when no step has any."""
    if "run_void_reasons" in s:
        return list(s["run_void_reasons"])
    if s.get("void") and not any(step_void_reasons(s).values()):
        return list(s.get("void_reasons") or [])
    return []


def judge(run_dir: Path, gates: Path = GATES, baseline: Path | None = None,
          show_all: bool = False, out: Any = print) -> int:
    """Print the verdicts and the diff; return the exit status (0 PASS, 1 FAIL: a threshold
    or the baseline regressed, 2 VOID, 3 error).

    Step by step (docs/lab.md section 2, rule (d)): a step the summary marks VOID is not
    judged (never counted as passed) and is printed first with its reasons; every other
    gated step is checked against the gates and the baseline and is FAIL when a check
    fails, PASS otherwise; ungated steps are INFO. The run is VOID when a required step
    ([ladder] required) is VOID, when more than [verdict] void_fraction_max of the steps are
    VOID, or for a run-level reason; FAIL when a judged step fails (or a session is not Up
    at the end); PASS otherwise."""
    try:
        s = runfiles.read("summary", Path(run_dir) / "summary.json")
        g = load_gates(gates)
        base = runfiles.read("baseline", Path(baseline)) if baseline else None
    except (OSError, ValueError) as e:  # RunFileError is a ValueError, so are TOML errors
        print(f"gate: {e}", file=sys.stderr)
        return 3
    why = ladder_summary_problem(s)
    if why:
        print(f"gate: {run_dir}: {why}", file=sys.stderr)
        return 3
    svoid = step_void_reasons(s)
    judged = {n: lv for n, lv in s["levels"].items() if not svoid.get(n)}
    valid = dict(s, levels=judged)
    checks = check_gates(valid, g) + (check_baseline(valid, g, base) if base else [])
    bad = [c for c in checks if not c.ok]
    steps: dict[str, dict[str, Any]] = {}
    for n in s["levels"]:
        if svoid.get(n):
            steps[n] = {"verdict": "VOID", "void_reasons": svoid[n], "failures": []}
        elif n in g.ungated_steps:
            steps[n] = {"verdict": "INFO", "void_reasons": [], "failures": [],
                        "note": "reported, not gated"}
        else:
            fl = [c for c in bad if c.step == n]
            steps[n] = {"verdict": "FAIL" if fl else "PASS", "void_reasons": [],
                        "failures": [f"{c.device}{' ' + c.cls if c.cls else ''} {c.figure} "
                                     f"{_fmt(c.value)} > {_fmt(c.limit)} ({c.against})"
                                     for c in fl]}
    run_fail = [f"{c.device} {c.figure} {_fmt(c.value)} of {_fmt(c.limit)}"
                for c in bad if c.step not in steps]
    verdict, void, _failures = run_result(steps, g.ladder_required, run_void_reasons(s),
                                          run_fail, g.void_fraction_max)
    out(f"gate {s.get('run_id')} (profile {s.get('profile')}) against {gates}"
        + (f" and {baseline}" if baseline else "")
        + f": {len(checks)} checks on "
        f"{sum(1 for x in steps.values() if x['verdict'] in ('PASS', 'FAIL'))} judged steps"
        + ("" if show_all else ", failures only (--all: every one)"))
    nvoid = [n for n, x in steps.items() if x["verdict"] == "VOID"]
    if nvoid:
        out(f"VOID steps ({len(nvoid)} of {len(steps)}; not judged, never counted as passed):")
        for n in nvoid:
            out(f"  VOID {n}: " + "; ".join(steps[n]["void_reasons"]))
    out("steps: " + ", ".join(f"{n} {x['verdict']}" for n, x in
                              ((n, steps[n]) for n in void_first(steps))))
    for c in checks if show_all else bad:
        out(c.line())
    # stock bfdd beside it, for the record (never gated)
    for n, d in s["duts"].items():
        if d.get("kind") not in g.kinds:
            at = {st: lv["duts"][n].get("down_events_counted", 0)
                  for st, lv in s["levels"].items() if n in lv["duts"]}
            wit = ", ".join(f"{st} {at[st]}" for st in g.ladder_required if st in at)
            out(f"  contrast {n}: {d.get('down_events', 0)} down events "
                f"({d.get('down_events_counted', 0)} counted"
                + (f"; at {wit}" if wit else "") + "), not gated")
    if verdict == "VOID":
        out("VOID: " + "; ".join(void) + " (a VOID run cannot pass)")
        return 2
    if bad:
        out(f"REGRESSED: {len(bad)} of {len(checks)} checks failed: "
            + "; ".join(f"{c.step} {c.device}{' ' + c.cls if c.cls else ''} {c.figure} "
                        f"{_fmt(c.value)} > {_fmt(c.limit)} ({c.against})" for c in bad[:8])
            + (" ..." if len(bad) > 8 else ""))
        return 1
    out(f"PASS: {len(checks)} checks hold"
        + (f"; {len(nvoid)} VOID step(s) not judged: {', '.join(nvoid)}" if nvoid else ""))
    return 0
