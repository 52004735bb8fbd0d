"""cli - `python3 -m lab topo {check,render,collect,rehearse}` (docs/baremetal.md).

    topo check FILE                                   every conflict of a description
    topo render FILE --backend bare-metal --out DIR   Ansible inventory, playbooks, host files
    topo render ... --stock                           engines as stock bfdd (a witness run)
    topo collect RUN_DIR --rendered DIR [--witness W] ladder.yml's fetch made a run folder
    topo rehearse {up,down} FILE                      namespace hosts and a mirroring switch
                                                      on this machine, for the playbooks
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..harness.ladder_file import LADDER
from ..topo import load, parse
from . import check, collect, rehearse, render


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("topo", help="check a topology description offline; render it to "
                       "Ansible for the bare-metal testbed")
    ts = t.add_subparsers(dest="topo_cmd", required=True)
    c = ts.add_parser("check", help="name every conflict: addresses, session counts, ports, "
                      "hosts, both ends of every session (exit 1 on any)")
    c.add_argument("file", type=Path)
    r = ts.add_parser("render", help="an Ansible inventory, deploy.yml and ladder.yml, and "
                      "every host's files, from a description with [hosts]")
    r.add_argument("file", type=Path)
    r.add_argument("--backend", choices=render.BACKENDS, required=True)
    r.add_argument("--out", type=Path, required=True, help="output folder (created)")
    r.add_argument("--ladder", type=Path, default=LADDER, help="ladder file (ladder.toml)")
    r.add_argument("--profile", default="ci", help="its profile whose steps ladder.yml runs")
    r.add_argument("--no-floods", action="store_true", help="leave the flood arms out")
    r.add_argument("--stock", action="store_true", help="every engine device as a stock "
                   "bfdd: the contrast witness run of a single-device testbed")
    k = ts.add_parser("collect", help="make RUN_DIR (ladder.yml's fetch) a run folder for "
                      "lab report / lab gate")
    k.add_argument("run_dir", type=Path)
    k.add_argument("--rendered", type=Path, required=True, help="the render's folder")
    k.add_argument("--witness", default="", help="a stock-bfdd run of the same machine and "
                   "ladder (render --stock), reported, that witnesses L4 for a run of engines "
                   "only (absolute, or beside RUN_DIR)")
    h = ts.add_parser("rehearse", help="(root) namespace hosts of a description's [hosts] "
                      "(netns keys) and a switch that mirrors to the capture host")
    h.add_argument("action", choices=("up", "down"))
    h.add_argument("file", type=Path)


def run(args: argparse.Namespace) -> int:
    if args.topo_cmd == "check":
        return check.main(args.file)
    if args.topo_cmd == "collect":
        meta = collect.collect(args.run_dir, args.rendered, args.witness)
        print(f"{args.run_dir}: run folder of {len(meta['phases'])} phases; "
              f"python3 -m lab report {args.run_dir}")
        return 0
    t = load(args.file, strict=False)
    if getattr(args, "stock", False):
        t = parse(render.stock_text(args.file.read_text()), str(args.file), strict=False)
    found = check.check(t)
    if args.topo_cmd == "render" and not t.hosts:
        print(f"{args.file}: no [hosts]: nothing to render for bare metal (docs/baremetal.md)")
        return 1
    if found:
        for c in found:
            print(f"conflict {c.kind}: {c.message}")
        return 1
    if args.topo_cmd == "rehearse":
        return rehearse.main(t, args.action)
    opts = render.Options(ladder=args.ladder, profile=args.profile, floods=not args.no_floods,
                          stock=args.stock)
    files = render.render(t, args.out, opts)
    print(f"{args.out}: {len(files)} files for {len(t.hosts)} hosts; "
          f"ansible-playbook -i {args.out}/inventory.ini {args.out}/deploy.yml, then ladder.yml")
    return 0
