#!/usr/bin/python3
"""Benchmark: the engine's userspace tick (loop.c, 10 a second) with many idle fast-path sessions.

    /usr/bin/python3 tests/bench/engine_tick.py [--sessions 1024,8192,65536] [--seconds 10]

Per size: a device namespace whose dut0 runs the XDP program, the engine listening for bfdd
(--dplane), and lab.rig.standin adding that many passive IPv4 single-hop sessions on dut0
(RFC 5880 6.1: a passive session sends nothing until its peer speaks; no peer does, so the
machine is otherwise quiet and every session stays on the fast path, Down). After every
session has its slot, over the window: the engine's own tick counters (engine.ticks, tick_ns,
tick_sessions_visited from its stats dump) and the process's CPU (utime + stime). Prints one
JSON object per size. Root only; run under the lab lock.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from lab import util
from lab.rig import standin
from lab.rig.netns import DUT_IF, End, Netns, nsenter, nsexec
from lab.rig.registry import Registry

REPO = Path(__file__).resolve().parents[2]
PORT = 50790


def engine_stats(pid: int, path: Path) -> dict:
    got = util.signal_for_json(pid, path, 60, "engine stats dump")
    if got is None:
        raise util.LabError("the engine wrote no stats dump")
    return got


def one_size(n: int, seconds: float, rd: util.RunDir) -> dict:
    build = REPO / "build"
    tag = "xb" + util.run_id_hex()
    net = Netns(tag, [End("engine", DUT_IF, tuple(standin.local_addresses(n)), xdp_pass=True)],
                build / "xdp_pass.bpf.o")
    reg = Registry.create(tag)
    out = rd.path / f"standin-{n}.json"
    spec = rd.path / f"sessions-{n}.json"
    stats = rd.path / f"engine-{n}.json"
    spec.write_text(json.dumps({"sessions": standin.scale_sessions(n, 300000, passive=True)}))
    eng = si = None
    try:
        net.build()
        reg.add_namespaces(list(net.created))
        ns = net.device_ns("engine")
        eng = util.spawn(nsenter(ns, [str(build / "xdp-bfd"), "--dplane", str(PORT),
                                      "--kernel-tx", DUT_IF, "--max-sessions", str(n),
                                      "--stats-dump", str(stats), "--log-level", "warn",
                                      "--log-file", str(rd.logs / f"engine-{n}.log")]))
        reg.add_pid(eng.pid, "xdp-bfd")
        time.sleep(1.0)  # listening (the stand-in retries below otherwise)
        si = util.spawn(nsexec(ns, ["env", f"PYTHONPATH={REPO}", "/usr/bin/python3", "-m",
                                    "lab.rig.standin", "--port", str(PORT), "--sessions",
                                    str(spec), "--out", str(out)]))
        reg.add_pid(si.pid, "lab.rig.standin")
        t0 = time.monotonic()
        util.wait_until(lambda: engine_stats(eng.pid, stats)["sessions_configured"] == n or None,
                        300, f"{n} sessions in the engine", poll_s=1.0)
        added_s = time.monotonic() - t0
        time.sleep(2.0)
        a = engine_stats(eng.pid, stats)
        cpu0, w0 = util.proc_cpu_s(eng.pid), time.monotonic()
        time.sleep(seconds)
        cpu1, w1 = util.proc_cpu_s(eng.pid), time.monotonic()
        b = engine_stats(eng.pid, stats)
        ea, eb = a["engine"], b["engine"]
        ticks = eb["ticks"] - ea["ticks"]
        fast = sum(1 for s in b["sessions"] if s["fast_path"])
        return {"sessions": n, "fast_path": fast, "added_s": round(added_s, 1),
                "window_s": round(w1 - w0, 2), "ticks": ticks,
                "tick_us_mean": round((eb["tick_ns"] - ea["tick_ns"]) / ticks / 1000, 1),
                "tick_sessions_visited_per_tick":
                    (eb["tick_sessions_visited"] - ea["tick_sessions_visited"]) / ticks,
                "tick_cpu_pct": round((eb["tick_ns"] - ea["tick_ns"]) / 1e9 / (w1 - w0) * 100,
                                      3),
                "engine_cpu_pct": round((cpu1 - cpu0) / (w1 - w0) * 100, 3)}
    finally:
        for p, what in ((si, "lab.rig.standin"), (eng, "xdp-bfd")):
            if p is not None and p.poll() is None:
                util.stop_pid(p.pid, what, timeout_s=60)
        net.teardown()
        reg.remove()


def main() -> int:
    if os.geteuid() != 0:
        print("root only", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", default="1024,8192,65536")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    rd = util.RunDir.create("engine-tick", root=REPO / "results" / "runs" / "bench")
    util.set_command_log(rd.logs / "commands.log")
    for n in (int(x) for x in args.sessions.split(",")):
        print(json.dumps(one_size(n, args.seconds, rd)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
