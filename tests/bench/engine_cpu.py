#!/usr/bin/python3
"""Benchmark: what the engine costs with its sessions Up and the machine otherwise idle.

    /usr/bin/python3 tests/bench/engine_cpu.py [--seconds 60] [--topology topologies/demo.toml]

Builds the demo's namespaces with only the engine device and a shielded stock peer, brings the
topology's sessions Up (32 by default: 8 at 10 ms, 8 at 50 ms, 16 at 300 ms, all x3), waits 5 s,
then measures over the window:
- the engine process: utime + stime from /proc/PID/stat, as % of one CPU;
- the sweep timer (softirq, not charged to the process): its own total_scan_ns;
- the XDP program: run_time_ns / run_cnt from the kernel's BPF statistics
  (kernel.bpf_stats_enabled=1 during the window, restored after);
- packets answered in XDP and sent by userspace, from the engine's stats dump;
- for contrast, the peer: stock bfdd running the same sessions in software (it busy-polls, and
  runs under the lab's SCHED_DEADLINE shield, 8 ms per 10 ms).
Prints one JSON object. Root only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from lab import util
from lab.topo import load as load_topology
from enginelab import engine_lab

REPO = Path(__file__).resolve().parents[2]

STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")


def prog_stats(names: tuple[str, ...] = ("xdp_bfd_entry", "xdp_bfd")) -> tuple[int, int]:
    """(run_time_ns, run_cnt) summed over loaded programs called one of NAMES. The links run
    xdp_bfd_entry, which tail-calls xdp_bfd: the kernel accounts the tail-called run to the
    entry program (xdp_bfd's own figures count only direct runs, e.g. an older engine's link),
    so summing both counts every packet once."""
    out = json.loads(util.run(["bpftool", "prog", "show", "--json"]).stdout)
    progs = [p for p in out if p.get("name") in names]
    return sum(p.get("run_time_ns", 0) for p in progs), sum(p.get("run_cnt", 0) for p in progs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--topology", type=Path, default=REPO / "topologies" / "demo.toml")
    args = ap.parse_args()
    topo = load_topology(args.topology).select(["engine"])
    n = topo.sessions_per_device
    stats_before = STATS_SYSCTL.read_text().strip()
    with engine_lab(topo, "engine-cpu", root=REPO / "results" / "runs" / "bench") as lab:
        eng = lab.engines["engine"]
        epid = eng.pid
        assert epid is not None
        try:
            time.sleep(5)
            STATS_SYSCTL.write_text("1")
            assert lab.peer is not None and lab.peer.pid is not None
            peer0 = util.proc_cpu_s(lab.peer.pid)
            st0, cpu0, (rt0, rc0), t0 = eng.stats(), util.proc_cpu_s(epid), prog_stats(), \
                time.monotonic()
            time.sleep(args.seconds)
            st1, cpu1, (rt1, rc1), t1 = eng.stats(), util.proc_cpu_s(epid), prog_stats(), \
                time.monotonic()
            peer1 = util.proc_cpu_s(lab.peer.pid)
            wall = t1 - t0
            assert st0 and st1 and cpu0 is not None and cpu1 is not None
            assert peer0 is not None and peer1 is not None
            sweep_ns = st1["sweep"]["total_scan_ns"] - st0["sweep"]["total_scan_ns"]
            runs = st1["sweep"]["runs"] - st0["sweep"]["runs"]
            out = {
                "sessions": n, "sessions_up": st1["sessions_up"], "window_s": round(wall, 2),
                "engine_cpu_pct": round(100 * (cpu1 - cpu0) / wall, 3),
                "sweep_cpu_pct": round(100 * sweep_ns / 1e9 / wall, 3),
                "sweep_period_us": st1["sweep"]["period_us"],
                "sweep_mean_ns": round(sweep_ns / runs) if runs else None,
                "xdp_packets": rc1 - rc0,
                "xdp_ns_per_packet": round((rt1 - rt0) / (rc1 - rc0)) if rc1 > rc0 else None,
                "xdp_cpu_pct": round(100 * (rt1 - rt0) / 1e9 / wall, 3),
                "xdp_replies": st1["counters"]["tx_reply"] - st0["counters"]["tx_reply"],
                "userspace_tx": st1["engine"]["tx_packets"] - st0["engine"]["tx_packets"],
                "events": st1["counters"]["event_posted"] - st0["counters"]["event_posted"],
                "down_events": sum(s["down_events"] for s in st1["sessions"]),
                "peer_stock_bfdd_cpu_pct": round(100 * (peer1 - peer0) / wall, 3),
                "kernel": os.uname().release, "nproc": os.cpu_count(),
            }
            print(json.dumps(out, indent=1))
            (lab.rd.path / "result.json").write_text(json.dumps(out, indent=1) + "\n")
            return 0
        finally:
            STATS_SYSCTL.write_text(stats_before)


if __name__ == "__main__":
    sys.exit(main())
