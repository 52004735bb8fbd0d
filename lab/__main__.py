"""python3 -m lab {demo, ladder, gate, report, cleanup}: the lab's command line (run as root,
from the repo root).

Exit status of demo, ladder and report: 0 PASS (or INFO without an engine), 1 FAIL, 2 VOID,
3 error. gate: 0 pass, 1 regression, 2 VOID run, 3 error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import demo, gate, ladder, registry, report
from .nic import tune
from .topo import TopologyError
from .util import LabError

EXIT = {"PASS": 0, "INFO": 0, "FAIL": 1, "VOID": 2}


def _positive(text: str) -> float:
    v = float(text)
    if v < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="both devices side by side: idle, L4, idle; measured from "
                       "the wire")
    d.add_argument("--topology", type=Path, default=demo.DEFAULT_TOPOLOGY)
    d.add_argument("--dut", default=None,
                   help="devices under test, comma separated (default: all of the topology)")
    d.add_argument("--idle-s", type=_positive, default=15.0)
    d.add_argument("--load-s", type=_positive, default=30.0)
    d.add_argument("--idle2-s", type=_positive, default=15.0)
    d.add_argument("--settle-s", type=_positive, default=30.0,
                   help="how long sessions may take to come Up before the phases start")
    d.add_argument("--runs-dir", type=Path, default=None,
                   help="where run folders go (default results/runs)")
    lp = sub.add_parser("ladder", help="every level of ladder/ladder.toml, floods included, "
                        "both devices at once; per-level verdict")
    lp.add_argument("--profile", default="ci", help="ci | full | hostile (ladder/ladder.toml)")
    lp.add_argument("--topology", type=Path, default=demo.DEFAULT_TOPOLOGY)
    lp.add_argument("--dut", default=None, help="devices, comma separated (default: all)")
    lp.add_argument("--ladder", type=Path, default=ladder.LADDER)
    lp.add_argument("--with-memory", action="store_true",
                    help="include the memory-pressure levels (no swap: OOM kills; never ci)")
    lp.add_argument("--no-floods", action="store_true", help="skip the flood rotation")
    lp.add_argument("--bench-generators", action="store_true",
                    help="measure trafgen and BPF live frames into the device's link, then stop")
    lp.add_argument("--generator", choices=("live", "trafgen"), default=None,
                    help="flood generator (default: [flood] generator of the ladder file)")
    lp.add_argument("--peer-capture", action="store_true",
                    help="also capture the peer's own sends on its interface (peer-tx.pcap)")
    lp.add_argument("--settle-s", type=_positive, default=30.0)
    lp.add_argument("--runs-dir", type=Path, default=None)
    g = sub.add_parser("gate", help="judge a ladder run against results/gates.toml and a "
                       "baseline")
    g.add_argument("run_dir", type=Path)
    g.add_argument("--baseline", type=Path, default=None)
    g.add_argument("--gates", type=Path, default=gate.GATES)
    g.add_argument("--all", action="store_true", help="print every check, not only failures")
    b = sub.add_parser("baseline", help="write a baseline (JSON, stdout) from ladder runs: the "
                       "worst figure of the runs per step and class")
    b.add_argument("run_dirs", type=Path, nargs="+")
    b.add_argument("--name", required=True)
    b.add_argument("--description", default="")
    r = sub.add_parser("report", help="re-analyse a saved run folder and print its tables")
    r.add_argument("run_dir", type=Path, nargs="?", default=Path("results/runs/latest"))
    sub.add_parser("cleanup", help="remove what killed runs left behind (dead harness only)")
    tune.add_parser(sub)
    args = ap.parse_args(argv)

    try:
        if args.cmd == "demo":
            cfg = demo.DemoConfig(
                topology=args.topology,
                duts=[x for x in args.dut.split(",") if x] if args.dut else None,
                idle_s=args.idle_s, load_s=args.load_s, idle2_s=args.idle2_s,
                settle_s=args.settle_s, runs_root=args.runs_dir)
            summary = demo.run(cfg)
            return EXIT.get(summary["verdict"], 3)
        if args.cmd == "ladder":
            lcfg = ladder.LadderConfig(
                topology=args.topology,
                duts=[x for x in args.dut.split(",") if x] if args.dut else None,
                settle_s=args.settle_s, runs_root=args.runs_dir, profile=args.profile,
                ladder=args.ladder, with_memory=args.with_memory, floods=not args.no_floods,
                bench_generators=args.bench_generators, generator=args.generator,
                peer_capture=args.peer_capture)
            summary = ladder.run(lcfg)
            return EXIT.get(summary["verdict"], 3)
        if args.cmd == "baseline":
            import json as _json
            print(_json.dumps(gate.make_baseline(args.run_dirs, args.name, args.description),
                              indent=1))
            return 0
        if args.cmd == "gate":
            return gate.judge(args.run_dir, args.gates, args.baseline, args.all)
        if args.cmd == "report":
            rd = args.run_dir.resolve()
            if (rd / "ladder.toml").exists():
                from . import ladder_report
                summary = ladder_report.summarise(rd)
                print(ladder_report.tables(summary))
            else:
                summary = demo.summarise(rd)
                print(report.tables(summary))
            return EXIT.get(summary["verdict"], 3)
        if args.cmd == "tune":
            return tune.run(args)
        if args.cmd == "cleanup":
            runs = registry.stale()
            for reg in runs:
                for line in registry.cleanup(reg):
                    print(f"{reg.tag}: {line}")
            print(f"{len(runs)} stale run(s) cleaned up")
            return 0
    except (LabError, TopologyError, ValueError, OSError) as e:
        print(f"lab: {e}", file=sys.stderr)
        return 3
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        if args.cmd not in ("report", "gate", "baseline"):
            raise  # in a run it is a bug: keep the traceback
        # A saved run or summary of the wrong shape (hand-edited, truncated, another schema).
        print(f"lab {args.cmd}: malformed input ({type(e).__name__}: {e})", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("lab: interrupted; torn down", file=sys.stderr)
        return 130
    except demo.Interrupted as e:
        print(f"lab: stopped by {e}; torn down", file=sys.stderr)
        return 143
    return 3


if __name__ == "__main__":
    sys.exit(main())
