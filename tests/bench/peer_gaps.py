"""peer_gaps - the engine's gaps on the wire towards a peer kind, idle and under ladder loads,
and which path sent them (xdp_tx_packets against user_tx_packets per session): the measurement
behind the gate's BIRD checks (issue 8; docs/lab.md section 7).

    flock /tmp/xdp-bfd-lab.lock env PYTHONPATH=.:tests/lab /usr/bin/python3 \\
        tests/bench/peer_gaps.py --classes v4-bird,v6-bird --loads idle,L3,L4 \\
        [--engine-args "--sched-deadline 1000/10000"]

One engine_lab on topologies/classes.toml's engine device with the named classes only (the
peers shielded as in every lab run); per load a SECONDS window captured on the bridge
(tests/lab/wirerate.py), the load (ladder/ladder.toml's level, stress-ng --timeout) running
from LEAD_S before to after it. Prints one line per session and direction and writes the rows
as JSON (--out, default the run folder's peer_gaps.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

from lab.harness import ladder_file
from lab.rig import stress
from lab.topo import load as load_topology
from enginelab import REPO, engine_lab
from wirerate import lines, window

LEAD_S = 1.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--topology", default=str(REPO / "topologies" / "classes.toml"))
    ap.add_argument("--classes", required=True, help="comma-separated class names")
    ap.add_argument("--loads", default="idle,L3,L4", help="idle and/or ladder level names")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--engine-args", default="", help="more xdp-bfd options for the device")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    names = a.classes.split(",")
    topo = load_topology(a.topology).select(["engine"])
    topo = dataclasses.replace(topo, classes=tuple(c for c in topo.classes if c.name in names))
    if a.engine_args:
        dev = dataclasses.replace(topo.device("engine"), engine_args=a.engine_args)
        topo = dataclasses.replace(topo, devices=(dev,))
    levels = ladder_file.load_ladder().levels
    out = []
    with engine_lab(topo, "peer-gaps") as lab:
        time.sleep(3.0)  # past the handshake's userspace packets (transition, Poll, Final)
        for name in a.loads.split(","):
            run = None
            if name != "idle":
                load = levels[name].load(os.cpu_count() or 1)
                run = stress.LoadRun(load, a.seconds + 2 * LEAD_S + 1,
                                     lab.rd.logs / f"stress-{name}.log")
                lab.load_run = run
                time.sleep(LEAD_S)
            w = window(lab, topo, "engine", name, a.seconds, {"device": lab.engines["engine"]})
            if run is not None:
                w["load"] = run.finish().as_dict()
                run_ok = w["load"]["ran"]
                print(f"{name}: load ran {run_ok} {w['load']['problems']}")
            print("\n".join(lines(w)), flush=True)
            out.append(w)
        path = Path(a.out) if a.out else lab.rd.path / "peer_gaps.json"
        path.write_text(json.dumps({"engine_args": a.engine_args, "windows": out}, indent=1))
        print(f"rows in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
