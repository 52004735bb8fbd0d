"""cli - `python3 -m lab topo {check,render}` (no root, no lab run; docs/baremetal.md).

    topo check FILE                                   every conflict of a description
    topo render FILE --backend bare-metal --out DIR   Ansible inventory, playbooks, host files
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import check


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("topo", help="check a topology description offline; render it to "
                       "Ansible for the bare-metal testbed")
    ts = t.add_subparsers(dest="topo_cmd", required=True)
    c = ts.add_parser("check", help="name every conflict: addresses, session counts, ports, "
                      "hosts, both ends of every session (exit 1 on any)")
    c.add_argument("file", type=Path)


def run(args: argparse.Namespace) -> int:
    if args.topo_cmd == "check":
        return check.main(args.file)
    raise AssertionError(args.topo_cmd)
