"""flood - `python3 -m lab.bare.flood`: one flood arm from the load host of the bare-metal
testbed towards each device under test (the arms of lab.rig.flood, ladder.md section 4).

    python3 -m lab.bare.flood ARM IFACE SECONDS --pps PPS --load-addr A --stranger S
        --target DEVICE=DEVICE_ADDR,PEER_ADDR [--target ...] --out ARM.json

Each target's MAC is learnt the ordinary way (one ping, then the neighbour table); the frames
are lab.rig.flood.frame()'s, sent by BPF live frames (lab/rig/livegen.py), one generator per
target, all at once. ARM.json: {"arm", "target_pps", "devices": {DEVICE: {"offered_pps",
"sent", "seconds"}}}, what the run folder's floods record (offered: what left the load host;
the switch between is not counted). Exit 0, or 3 when a target cannot be resolved.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from ..rig import flood
from ..util import PYTHON


def neighbour_mac(iface: str, addr: str) -> str:
    """ADDR's MAC on IFACE after one ping (ValueError when it does not answer ARP)."""
    subprocess.run(["ping", "-c", "1", "-W", "1", "-I", iface, addr], capture_output=True)
    out = subprocess.run(["ip", "-j", "neigh", "show", "to", addr, "dev", iface],
                         capture_output=True, text=True).stdout
    rows = [r for r in json.loads(out or "[]") if r.get("lladdr")]
    if not rows:
        raise ValueError(f"no MAC for {addr} on {iface} (no ARP reply)")
    return rows[0]["lladdr"]


def own_mac(iface: str) -> str:
    return Path(f"/sys/class/net/{iface}/address").read_text().strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.bare.flood", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("arm", choices=sorted(flood.ARMS))
    ap.add_argument("iface")
    ap.add_argument("seconds", type=float)
    ap.add_argument("--pps", type=float, default=0.0, help="per target; 0: as fast as it goes")
    ap.add_argument("--load-addr", required=True)
    ap.add_argument("--stranger", required=True, help="an address of the subnet in no session")
    ap.add_argument("--target", action="append", required=True,
                    help="DEVICE=DEVICE_ADDR,PEER_ADDR (the device's first session)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    arm = flood.ARMS[a.arm]
    gens = {}
    try:
        for spec in a.target:
            dev, _, addrs = spec.partition("=")
            dut_addr, _, peer_addr = addrs.partition(",")
            t = flood.Target(dev, neighbour_mac(a.iface, dut_addr), dut_addr, peer_addr,
                             own_mac(a.iface), a.load_addr, a.stranger)
            argv_ = [PYTHON, str(Path(flood.__file__).with_name("livegen.py")), a.iface,
                     flood.frame(a.arm, t).hex(), f"{a.seconds:.3f}"]
            argv_ += ["--pps", str(int(a.pps))] if a.pps else []
            argv_ += ["--random-sport"] if arm.random_sport else []
            gens[dev] = argv_
    except (ValueError, OSError) as e:
        print(f"flood: {e}", file=sys.stderr)
        return 3
    procs = {d: subprocess.Popen(g, stdout=subprocess.PIPE, text=True) for d, g in gens.items()}
    devices = {}
    for d, p in procs.items():
        out, _ = p.communicate(timeout=a.seconds + 30)
        res = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        devices[d] = {"offered_pps": int(res.get("pps", 0)), "sent": res.get("sent", 0),
                      "seconds": res.get("seconds", 0.0), "rc": p.returncode}
    a.out.write_text(json.dumps({"arm": a.arm, "description": arm.description,
                                 "expect": arm.expect, "target_pps": a.pps, "devices": devices},
                                indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
