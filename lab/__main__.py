"""python3 -m lab {demo, ladder, handover, scale, gate, baseline, report, plot, cleanup, tune,
topo, peer-sessions}: the lab's command line (run as root, from the repo root; gate, baseline,
report and plot need no root).

Exit status of demo, ladder, handover, report: 0 PASS (or INFO without an engine), 1 FAIL, 2 VOID,
3 error. gate: 0 pass, 1 regression, 2 VOID run, 3 error. plot: 0, or 3 on bad input.
topo check: 0 sound, 1 conflicts; topo render: 0, or 1 when the description has conflicts.

One sub-command per block below: its arguments in add_X(), its action in do_X().
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import runfiles, util
from .bare import cli as bare_cli
from .harness import demo, handover, ladder, scale
from .harness.lab import Interrupted
from .harness.ladder_file import LADDER
from .judge import baseline, gate
from .judge.summarise import summarise, tables
from .nic import tune
from .rig import registry
from .rig.bfdpeer import session_list
from .topo import PEER_RUNNERS, TopologyError, load as load_topology
from .util import LabError

EXIT = {"PASS": 0, "INFO": 0, "FAIL": 1, "VOID": 2}
DEFAULT_TOPOLOGY = util.REPO / "topologies" / "demo.toml"


def _positive(text: str) -> float:
    v = float(text)
    if v < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return v


def _duts(text: str | None) -> list[str] | None:
    return [x for x in text.split(",") if x] if text else None


# --- demo ----------------------------------------------------------------------------------------

def add_demo(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", help="both devices side by side: idle, L4, idle; measured from "
                       "the wire")
    d.add_argument("--topology", type=Path, default=DEFAULT_TOPOLOGY)
    d.add_argument("--dut", default=None,
                   help="devices under test, comma separated (default: all of the topology)")
    d.add_argument("--peer", choices=PEER_RUNNERS, default="",
                   help="the peer: stock FRR bfdd or build/bfdpeer (default: the topology's "
                   "[peer] kind, else frr)")
    d.add_argument("--idle-s", type=_positive, default=15.0)
    d.add_argument("--load-s", type=_positive, default=30.0)
    d.add_argument("--idle2-s", type=_positive, default=15.0)
    d.add_argument("--settle-s", type=_positive, default=30.0,
                   help="how long sessions may take to come Up before the phases start")
    d.add_argument("--runs-dir", type=Path, default=None,
                   help="where run folders go (default results/runs)")


def do_demo(args: argparse.Namespace) -> int:
    cfg = demo.DemoConfig(topology=args.topology, duts=_duts(args.dut), peer=args.peer,
                          idle_s=args.idle_s,
                          load_s=args.load_s, idle2_s=args.idle2_s, settle_s=args.settle_s,
                          runs_root=args.runs_dir)
    return EXIT.get(demo.run(cfg)["verdict"], 3)


# --- ladder --------------------------------------------------------------------------------------

def add_ladder(sub: argparse._SubParsersAction) -> None:
    lp = sub.add_parser("ladder", help="every level of ladder/ladder.toml, floods included, "
                        "both devices at once; per-level verdict")
    lp.add_argument("--profile", default="ci", help="ci | full | hostile (ladder/ladder.toml)")
    lp.add_argument("--topology", type=Path, default=DEFAULT_TOPOLOGY)
    lp.add_argument("--dut", default=None, help="devices, comma separated (default: all)")
    lp.add_argument("--peer", choices=PEER_RUNNERS, default="",
                    help="the peer: frr | bfdpeer (default: the topology's [peer] kind)")
    lp.add_argument("--ladder", type=Path, default=LADDER)
    lp.add_argument("--with-memory", action="store_true",
                    help="include the memory-pressure levels, confined to a memory cgroup "
                    "around the devices and the load (never ci)")
    lp.add_argument("--mem-limit-gib", type=_positive, default=None,
                    help="that cgroup's limit (default: 4 GiB or a quarter of RAM)")
    lp.add_argument("--no-floods", action="store_true", help="skip the flood rotation")
    lp.add_argument("--bench-generators", action="store_true",
                    help="measure trafgen and BPF live frames into the device's link, then stop")
    lp.add_argument("--generator", choices=("live", "trafgen"), default=None,
                    help="flood generator (default: [flood] generator of the ladder file)")
    lp.add_argument("--peer-capture", action="store_true",
                    help="also capture the peer's own sends on its interface (peer-tx.pcap)")
    lp.add_argument("--settle-s", type=_positive, default=30.0)
    lp.add_argument("--runs-dir", type=Path, default=None)


def do_ladder(args: argparse.Namespace) -> int:
    cfg = ladder.LadderConfig(
        topology=args.topology, duts=_duts(args.dut), peer=args.peer, settle_s=args.settle_s,
        runs_root=args.runs_dir, profile=args.profile, ladder=args.ladder,
        with_memory=args.with_memory, floods=not args.no_floods,
        bench_generators=args.bench_generators, generator=args.generator,
        peer_capture=args.peer_capture,
        mem_limit_bytes=int(args.mem_limit_gib * (1 << 30)) if args.mem_limit_gib else None)
    return EXIT.get(ladder.run(cfg)["verdict"], 3)


# --- handover ------------------------------------------------------------------------------------

def add_handover(sub: argparse._SubParsersAction) -> None:
    h = sub.add_parser("handover", help="the engine replaced under running sessions (--pin): "
                       "K handovers, a SIGUSR2 restart and a plain restart, judged at the peer")
    h.add_argument("--topology", type=Path, default=DEFAULT_TOPOLOGY,
                   help="its engine devices are used (stock bfdd devices are left out)")
    h.add_argument("--count", type=int, default=3, help="handovers per engine device")
    h.add_argument("--settle-s", type=_positive, default=60.0)
    h.add_argument("--runs-dir", type=Path, default=None)


def do_handover(args: argparse.Namespace) -> int:
    cfg = handover.HandoverConfig(topology=args.topology, settle_s=args.settle_s,
                                  runs_root=args.runs_dir, count=args.count)
    return EXIT.get(handover.run(cfg)["verdict"], 3)


# --- scale ---------------------------------------------------------------------------------------

def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not a list of counts: {text}") from e
    if not sizes or any(not 1 <= n <= 65536 for n in sizes):
        raise argparse.ArgumentTypeError("each size must be 1..65536")
    return sizes


def add_scale(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scale", help="the engine at each session count against bfdpeer: "
                       "bring-up, down events idle and under L4, CPU, memory, detection")
    s.add_argument("--sessions", type=_sizes, default=[1024, 4096, 16384, 65536],
                   help="session counts, comma separated (default 1024,4096,16384,65536)")
    s.add_argument("--class", dest="cls", default="300ms",
                   help="the sessions' interval as NNms (Detect Mult 3; default 300ms)")
    s.add_argument("--idle-s", type=_positive, default=20.0)
    s.add_argument("--load-s", type=_positive, default=20.0)
    s.add_argument("--settle-s", type=_positive, default=120.0)
    s.add_argument("--bfdd-max", type=int, default=1024,
                   help="sizes above this are driven by the bfdd stand-in (lab.rig.standin) "
                   "instead of FRR bfdd (default 1024)")
    s.add_argument("--window", type=int, default=0,
                   help="the stand-in adds sessions so that at most this many are added and "
                   "not yet Up at a time (0: all at once, the default)")
    s.add_argument("--runs-dir", type=Path, default=None)


def do_scale(args: argparse.Namespace) -> int:
    if not args.cls.endswith("ms") or not args.cls[:-2].isdigit():
        raise LabError(f"--class {args.cls}: expected NNms, e.g. 300ms")
    cfg = scale.ScaleConfig(sizes=args.sessions, interval_ms=int(args.cls[:-2]),
                            idle_s=args.idle_s, load_s=args.load_s, settle_s=args.settle_s,
                            bfdd_max=args.bfdd_max, runs_root=args.runs_dir,
                            standin_window=args.window)
    if args.window < 0:
        raise LabError(f"--window {args.window}: expected 0 or more")
    sizes = scale.run(cfg)["sizes"]
    return 2 if any(s["verdict"] == "VOID" for s in sizes) else 0


# --- gate ----------------------------------------------------------------------------------------

def add_gate(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser("gate", help="judge a ladder run against results/gates.toml and a "
                       "baseline")
    g.add_argument("run_dir", type=Path)
    g.add_argument("--baseline", type=Path, default=None)
    g.add_argument("--gates", type=Path, default=gate.GATES)
    g.add_argument("--all", action="store_true", help="print every check, not only failures")


def do_gate(args: argparse.Namespace) -> int:
    return gate.judge(args.run_dir, args.gates, args.baseline, args.all)


# --- baseline ------------------------------------------------------------------------------------

def add_baseline(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("baseline", help="write a baseline (JSON, stdout) from ladder runs: the "
                       "worst figure of the runs per step and class")
    b.add_argument("run_dirs", type=Path, nargs="+")
    b.add_argument("--name", required=True)
    b.add_argument("--description", default="")
    b.add_argument("--extend", type=Path, default=None, metavar="BASELINE",
                   help="start from this baseline's figures and sources (worst of both)")


def do_baseline(args: argparse.Namespace) -> int:
    extend = runfiles.read("baseline", args.extend) if args.extend else None
    print(json.dumps(baseline.make_baseline(args.run_dirs, args.name, args.description,
                                            extend=extend), indent=1))
    return 0


# --- report --------------------------------------------------------------------------------------

def add_report(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("report", help="re-analyse a saved run folder and print its tables")
    r.add_argument("run_dir", type=Path, nargs="?", default=Path("results/runs/latest"))


def do_report(args: argparse.Namespace) -> int:
    rd = args.run_dir.resolve()
    if (rd / "logs").is_dir():  # bfdcap's command lines go with the run's others
        util.set_command_log(rd / "logs" / "commands.log")
    summary = summarise(rd)
    print(tables(summary))
    return EXIT.get(summary["verdict"], 3)


# --- plot ----------------------------------------------------------------------------------------

def add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw gap survival per class and the down-event timeline "
                       "(PNG) from a run folder, a bfdcap report, a summary or a capture")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="SOURCE [--out DIR] [--bfdcap PATH]")


def do_plot(args: argparse.Namespace) -> int:
    from .judge import plot  # imports matplotlib: only when drawing
    return plot.main(args.rest)


# --- cleanup -------------------------------------------------------------------------------------

def add_cleanup(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("cleanup", help="remove what killed runs left behind (dead harness only)")


def do_cleanup(args: argparse.Namespace) -> int:
    runs = registry.stale()
    for reg in runs:
        for line in registry.cleanup(reg):
            print(f"{reg.tag}: {line}")
    print(f"{len(runs)} stale run(s) cleaned up")
    return 0


# --- peer-sessions -------------------------------------------------------------------------------

def add_peer_sessions(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("peer-sessions", help="print the peer side of a topology's sessions as "
                       "a build/bfdpeer session list (JSON)")
    p.add_argument("topology", type=Path)


def do_peer_sessions(args: argparse.Namespace) -> int:
    print(json.dumps(session_list(load_topology(args.topology)), indent=1))
    return 0


COMMANDS = {"demo": (add_demo, do_demo), "ladder": (add_ladder, do_ladder),
            "scale": (add_scale, do_scale),
            "handover": (add_handover, do_handover),
            "gate": (add_gate, do_gate), "baseline": (add_baseline, do_baseline),
            "report": (add_report, do_report), "plot": (add_plot, do_plot),
            "cleanup": (add_cleanup, do_cleanup), "tune": (tune.add_parser, tune.run),
            "topo": (bare_cli.add_parser, bare_cli.run),
            "peer-sessions": (add_peer_sessions, do_peer_sessions)}
# Read saved files: bad input is an error.
OFFLINE = ("report", "gate", "baseline", "plot", "topo", "peer-sessions")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for add, _ in COMMANDS.values():
        add(sub)
    args = ap.parse_args(argv)
    try:
        return COMMANDS[args.cmd][1](args)
    except (LabError, TopologyError, ValueError, OSError) as e:
        print(f"lab: {e}", file=sys.stderr)
        return 3
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        if args.cmd not in OFFLINE:
            raise  # in a run it is a bug: keep the traceback
        # A saved run or summary of the wrong shape (hand-edited, truncated, another schema).
        print(f"lab {args.cmd}: malformed input ({type(e).__name__}: {e})", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("lab: interrupted; torn down", file=sys.stderr)
        return 130
    except Interrupted as e:
        print(f"lab: stopped by {e}; torn down", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
