"""Pictures of a capture's analysis: gap survival per class (log scale) and a down-event
timeline, as PNG files.

    /usr/bin/python3 -m lab plot RUN_DIR_OR_JSON [--out DIR] [--bfdcap build/bfdcap]

RUN_DIR_OR_JSON is a run folder (holding a capture and/or a bfdcap report), a bfdcap report
(schema "bfdcap/1"), or a lab summary.json (its folder is searched). Every figure comes from
bfdcap: the survival curves from its --csv-gaps output on the capture named by the report, the
timeline from the report's episodes. Without the capture, the curves fall back to the report's
percentile points. Runs headless (matplotlib's Agg backend).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from .bfdcap import analyse, gap_table  # noqa: E402
from .gaps import GapTable  # noqa: E402

SCHEMA = "bfdcap/1"
MAX_POINTS = 4000  # points per survival curve: enough to look continuous at any zoom we use


def _load_json(path: Path) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _find_capture(folder: Path) -> Path | None:
    for pattern in ("*.pcap", "*.pcapng", "*.pcap.gz", "*.pcapng.gz"):
        found = sorted(folder.glob(pattern))
        if found:
            return found[0]
    return None


def resolve(source, bfdcap: str = "build/bfdcap") -> tuple[dict, Path | None]:
    """The bfdcap report to draw and the capture it came from (None when unknown).

    source: a dict (bfdcap report or lab summary), or a path to a run folder, a bfdcap report
    or a summary.json. A folder or summary without a report is analysed from its capture.
    Raises FileNotFoundError when there is neither a report nor a capture.
    """
    folder = None
    if isinstance(source, dict):
        data = source
    else:
        path = Path(source)
        if path.is_dir():
            folder, data = path, None
            for cand in sorted(path.glob("*.json")):
                d = _load_json(cand)
                if d and d.get("schema") == SCHEMA:
                    data = d
                    break
        else:
            folder, data = path.parent, _load_json(path)
            if data is None:  # not JSON: the capture itself, never another one of its folder
                if not path.is_file():
                    raise FileNotFoundError(f"{source}: no such file or folder")
                return analyse(path, bfdcap=bfdcap), path
    if data is not None and data.get("schema") == SCHEMA:
        cap = Path(data["file"]) if data.get("file") not in (None, "-") else None
        if cap is not None and not cap.is_absolute() and folder is not None \
                and not cap.exists():
            cap = folder / cap.name
        return data, cap if cap is not None and cap.exists() else None
    capture = _find_capture(folder) if folder is not None else None
    if capture is None:
        raise FileNotFoundError(f"{source}: no bfdcap report and no capture to analyse")
    return analyse(capture, bfdcap=bfdcap), capture


def _end_classes(report: dict) -> dict:
    """(session key, src) -> (tag, class)."""
    return {(s["key"], e["src"]): (e["tag"], e["class"])
            for s in report["sessions"] for e in s["ends"]}


def capture_gaps(report: dict, capture: Path | None, bfdcap: str) -> GapTable | None:
    """The counted gaps of REPORT's main window read from CAPTURE with REPORT's tags (bfdcap
    --csv-gaps: the report may come from another pass), or None without the capture."""
    if capture is None:
        return None
    tags = [(t["name"], t["spec"]) for t in report.get("tags", [])]
    window = report.get("window") or {}
    lo = window["start_ns"] if window.get("start_ns", -(2**63)) > -(2**63) else None
    hi = window["end_ns"] if window.get("end_ns", 2**63 - 1) < 2**63 - 1 else None
    return gap_table(capture, tags, None if lo is None and hi is None else (lo, hi), bfdcap)


def gaps_by_class(report: dict, table: GapTable | None) -> dict | None:
    """{(tag, class): [gap_ns, ...] ascending} of TABLE (REPORT's counted gaps), or None
    without it. An end REPORT does not list is in (its tag, "?")."""
    if table is None:
        return None
    cls = _end_classes(report)
    return table.sorted_by_end_key(lambda key, src, tag: cls.get((key, src), (tag, "?")))


def _survival_points(gaps_ns: list[int]) -> tuple[list[float], list[float]]:
    """x: gap in ms, y: fraction of gaps >= x (empirical survival), thinned to MAX_POINTS."""
    g = sorted(gaps_ns)
    n = len(g)
    step = max(1, n // MAX_POINTS)
    idx = list(range(0, n, step))
    if idx[-1] != n - 1:
        idx.append(n - 1)
    return [g[i] / 1e6 for i in idx], [(n - i) / n for i in idx]


def plot_survival(report: dict, gaps: dict | None, path: Path) -> Path:
    """One panel per class, one line per tag: the same tag keeps its colour in every panel,
    the peer's ends are dashed, so engine and stock bfdd compare at a glance."""
    by_class: dict[str, list[dict]] = {}
    for c in report["classes"]:
        if (gaps is not None and gaps.get((c["tag"], c["class"]))) or c["gap_ms"]["n"]:
            by_class.setdefault(c["class"], []).append(c)
    names = sorted(by_class, key=lambda k: (k == "never-up", float(k.split("ms")[0])
                                            if k[0].isdigit() else 0.0, k))
    tags = sorted({c["tag"] for cs in by_class.values() for c in cs})
    colour = {t: plt.cm.tab10(i % 10) for i, t in enumerate(tags)}
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4.2 * max(1, len(names)), 4.8),
                             squeeze=False, sharey=True)
    for ax, name in zip(axes[0], names):
        budget = None
        for c in sorted(by_class[name], key=lambda c: c["tag"]):
            key = (c["tag"], c["class"])
            peer = c["tag"].startswith("peer")
            style, width = ("--", 1.2) if peer else ("-", 2.6)
            label = c["tag"] or "(untagged)"
            if gaps is not None and gaps.get(key):
                x, y = _survival_points(gaps[key])
                ax.step(x, y, where="post", linestyle=style, linewidth=width,
                        color=colour[c["tag"]], label=f"{label} (n={len(gaps[key])})")
            else:
                g = c["gap_ms"]
                n = g["n"]
                pts = [(float(g["p50"]), 0.5), (float(g["p90"]), 0.1), (float(g["p99"]), 0.01),
                       (float(g["p99_9"]), 0.001), (float(g["max"]), 1 / n)]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o" + style,
                        color=colour[c["tag"]], label=f"{label} (percentiles, n={n})")
            if c.get("budget_ms") is not None:
                budget = float(c["budget_ms"])
        if budget is not None:
            ax.axvline(budget, color="black", linestyle=":", linewidth=1,
                       label=f"detection budget {budget:g} ms")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name)
        ax.set_xlabel("gap (ms)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("fraction of gaps at least this long")
    fig.suptitle(f"Gap survival per class: {Path(report.get('file') or '').name} "
                 "(dashed: the peer's own gaps)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_timeline(report: dict, path: Path) -> Path:
    t0 = report.get("first_ts_ns") or 0
    t_end = report.get("last_ts_ns") or t0
    sessions = report["sessions"]
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.25 * len(sessions) + 1.5)))
    for i, ph in enumerate(report.get("phases", [])):
        x0, x1 = (ph["start_ns"] - t0) / 1e9, (ph["end_ns"] - t0) / 1e9
        ax.axvspan(x0, x1, alpha=0.10, color="tab:blue" if i % 2 else "tab:orange")
        ax.text(max(x0, 0.0), len(sessions) - 0.45, f" {ph['name']}", fontsize=7)
    diags = sorted({ep["diag"] for s in sessions for ep in s["episodes"]})
    colors = {d: plt.cm.tab10(i % 10) for i, d in enumerate(diags)}
    # One bar per episode, all in one collection, in session and episode order (the order
    # they are drawn in): one artist per episode took minutes at thousands of sessions.
    verts, faces, handles = [], [], {}
    for row, s in enumerate(sessions):
        for ep in s["episodes"]:
            start = (ep["start_ns"] - t0) / 1e9
            end = ((ep["end_ns"] if ep["end_ns"] is not None else t_end) - t0) / 1e9
            x0, x1, y0, y1 = start, start + max(end - start, 1e-3), row - 0.35, row - 0.35 + 0.7
            verts.append([(x0, y0), (x0, y1), (x1, y1), (x1, y0), (x0, y0)])
            faces.append(colors[ep["diag"]])
            if ep["diag"] not in handles:
                handles[ep["diag"]] = PolyCollection([], color=colors[ep["diag"]],
                                                     label=f"diag {ep['diag']}")
    if verts:
        ax.add_collection(PolyCollection(verts, color=faces), autolim=True)
    ax.set_yticks(range(len(sessions)))
    ax.set_yticklabels([s["key"] for s in sessions], fontsize=7)
    ax.set_ylim(-1, len(sessions))
    ax.set_xlim(0, max((t_end - t0) / 1e9, 1e-3))
    ax.set_xlabel("time since the first packet (s); bars: session not Up, from the first "
                  "non-Up packet")
    total = sum(s["down_events"] for s in sessions)
    ax.set_title(f"Down events: {total} in {len(sessions)} sessions")
    if handles:
        ax.legend(handles=list(handles.values()), fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot(summary_json_or_bfdcap_json, outdir, bfdcap: str = "build/bfdcap",
         gaps: GapTable | None = None, timeline: bool = True) -> list[Path]:
    """Write gap_survival.png and down_events.png into outdir; return their paths.

    summary_json_or_bfdcap_json: a bfdcap report (dict or path), a lab summary.json or a run
    folder (see resolve()). GAPS: the report's counted gaps (lab.judge.gaps.GapTable), when
    the caller has them: no second pass over the capture (without them: capture_gaps()).
    TIMELINE=False: gap_survival.png only (a ladder step's plots: one row per session of the
    whole mesh each time took as long as the step's analysis).
    """
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    report, capture = resolve(summary_json_or_bfdcap_json, bfdcap)
    by_class = gaps_by_class(report, gaps if gaps is not None
                             else capture_gaps(report, capture, bfdcap))
    return [plot_survival(report, by_class, out / "gap_survival.png")] + \
        ([plot_timeline(report, out / "down_events.png")] if timeline else [])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab plot", description=__doc__.split("\n")[0])
    ap.add_argument("source", help="run folder, bfdcap report, summary.json or a capture")
    ap.add_argument("--out", help="output folder (default: the run folder, or the report's)")
    ap.add_argument("--bfdcap", default="build/bfdcap")
    args = ap.parse_args(argv)
    src = Path(args.source)
    outdir = args.out or (src if src.is_dir() else src.parent)
    try:
        for p in plot(src, outdir, args.bfdcap):
            print(p)
    except (OSError, ValueError, RuntimeError, KeyError, TypeError, AttributeError) as e:
        # Wrong or missing input, an unwritable --out, a bfdcap that fails: one line, no trace.
        print(f"lab plot: {args.source}: {type(e).__name__}: {e}", file=sys.stderr)
        return 3
    return 0
