"""scale - `python3 -m lab scale`: the engine at several session counts against bfdpeer.

Per size N, one run through the run frame (lab.harness.frame) on a generated topology: the
engine device alone, N IPv4 single-hop sessions of one class (default 300 ms x3), bfdpeer as the
peer (shielded like every lab peer), the sessions added by real FRR 8.4.4 bfdd through the
data-plane protocol (lab.harness.bringup), or, above --bfdd-max, by the bfdd stand-in
lab.rig.standin (driver "standin" in the table). Then two steps through the step loop
(lab.harness.steps): idle and L4. Measured per size:
- bring-up: from the start of the lab until the peer sees all N Up (namespaces, daemons and
  bfdd's adds included), and sessions Up at the engine;
- down events (Up to anything else) at the engine, per step, from its stats (sessions'
  down_events);
- at idle: the engine process's CPU (utime + stime), the detection sweep's (its own
  total_scan_ns; it runs in softirq, not charged to the process) and the XDP program's
  (run_time_ns from the kernel's BPF statistics, enabled for the run), each as % of one CPU;
  the XDP program's ns per packet;
- memory: the engine's VmRSS and the bytes_memlock of the maps its XDP program uses;
- detection: bfdpeer killed with SIGKILL (no AdminDown), then each engine session's time to Down
  (from its state_age_ms), median and max, in ms.
Each size's run is judged like the demo (lab.judge.summarise: the peer's timing by the validity
rules, so a size where bfdpeer fell behind is VOID). The sizes' figures go into one summary.json
(schema results/schema/scale.schema.json) in a run folder of kind "scale".
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import runfiles, util
from ..judge.plot_scale import plot
from ..judge.summarise import summarise
from ..judge.verdict import end_failures, run_result
from ..rig import stress
from ..rig.netns import DUT_IF, nsenter
from ..util import LabError
from . import bringup, frame
from .lab import Lab, RunConfig
from .steps import Plan, Step, run_steps

BPF_STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
SCHEMA = "xdp-bfd-lab-scale/1"
DETECT_WAIT_S = 15.0
NO_WITNESS = "no stock bfdd in the run"  # lab.judge.verdict.witness()'s reason


@dataclass
class ScaleConfig(RunConfig):
    sizes: list[int] = field(default_factory=lambda: [1024, 4096, 16384, 65536])
    interval_ms: int = 300
    detect_mult: int = 3
    idle_s: float = 20.0
    load_s: float = 20.0
    load: stress.Load = stress.L4
    bfdd_max: int = 1024  # larger sizes are driven by lab.rig.standin instead of FRR bfdd


def topology_text(n: int, interval_ms: int, detect_mult: int) -> str:
    """A topology of N sessions of one class between the engine and bfdpeer (10.96.0.0/12:
    the peer from 10.96.0.1, the device from 10.104.0.1; one address per session at each end,
    as every lab topology)."""
    extra = f'engine_args = "--max-sessions {n}"\n' if n > 1024 else ""
    return (f'[topology]\nname = "scale-{n}"\nprefix_len = 12\n\n'
            f'[peer]\nfirst_address = "10.96.0.1"\nkind = "bfdpeer"\n\n'
            f'[[device]]\nname = "engine"\nkind = "engine"\nfirst_address = "10.104.0.1"\n'
            f'dplane = "ipv4:127.0.0.1:50700"\n{extra}\n'
            f'[[class]]\nname = "{interval_ms}ms"\ninterval_ms = {interval_ms}\n'
            f'detect_mult = {detect_mult}\ncount = {n}\n')


def xdp_prog(ns: str) -> tuple[int, int, list[int]]:
    """(run_time_ns, run_cnt, map ids) of the XDP program attached to dut0 in namespace NS
    (`bpftool net show` there names it; other programs of the same name elsewhere on the
    machine, e.g. a prog_test run, are not this engine's). The link runs xdp_bfd_entry, which
    tail-calls xdp_bfd from slot 0 of its prog array: the kernel accounts a tail call's run time
    to the program the link ran, so the entry's figures are the fast path's, tail call included
    (xdp_bfd's own count only direct runs, none here: not added, nothing counted twice). The
    map ids are xdp_bfd's and the array's, for the memory figure."""
    net = json.loads(util.run(nsenter(ns, ["bpftool", "net", "show", "dev", DUT_IF,
                                           "--json"])).stdout)
    ids = {x["id"] for e in net for x in e.get("xdp", []) if "id" in x}
    progs = {p.get("id"): p for p in json.loads(util.run(["bpftool", "prog", "show",
                                                          "--json"]).stdout)}
    entry = [progs[i] for i in ids if progs.get(i, {}).get("name") == "xdp_bfd_entry"]
    if len(entry) != 1:
        raise LabError(f"{DUT_IF} in {ns}: {len(entry)} xdp_bfd_entry programs attached, "
                       "not one")
    e = entry[0]
    # its code uses the prog array only; libbpf also binds the object's .rodata to it
    maps = {m.get("id"): m for m in json.loads(util.run(["bpftool", "map", "show",
                                                         "--json"]).stdout)}
    arrays = [i for i in e.get("map_ids", []) if maps.get(i, {}).get("type") == "prog_array"]
    if len(arrays) != 1:
        raise LabError(f"xdp_bfd_entry {e.get('id')}: maps {e.get('map_ids')}, not one prog "
                       "array")
    slot = json.loads(util.run(["bpftool", "map", "lookup", "id", str(arrays[0]), "key", "0",
                                "0", "0", "0", "--json"]).stdout)
    fast = progs.get(int.from_bytes(bytes(int(b, 16) for b in slot["value"]), "little"), {})
    return e.get("run_time_ns", 0), e.get("run_cnt", 0), arrays + fast.get("map_ids", [])


def maps_bytes(ids: list[int]) -> int:
    maps = json.loads(util.run(["bpftool", "map", "show", "--json"]).stdout)
    return sum(m.get("bytes_memlock", 0) for m in maps if m.get("id") in set(ids))


def rss_bytes(pid: int) -> int:
    for line in util.lines_of(Path(f"/proc/{pid}/status")):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def wire_drops(wire_ns: str, port: str) -> int:
    """Frames the wire's veth PORT dropped on their way into the device's interface (its
    tx_dropped: the other end's receive ring was full because its NAPI had not run). They were
    captured on the bridge but never reached the device's XDP program."""
    link = json.loads(util.run(["ip", "-n", wire_ns, "-s", "-j", "link", "show", port]).stdout)
    return int(link[0]["stats64"]["tx"]["dropped"])


class Sampler:
    """The step loop's hook (its Floods protocol, with no floods): the engine's figures at the
    start and end of each step."""

    def __init__(self, lab: Lab) -> None:
        self.eng = lab.engines["engine"]
        self.wire, self.port = lab.netns.wire, lab.netns.wire_port("engine")
        self.steps: dict[str, dict[str, Any]] = {}
        self._start: dict[str, Any] = {}
        self._step = ""

    def _take(self, dump_first: bool) -> dict[str, Any]:
        """The figures; the stats dump (SIGUSR1: the engine writes every session's JSON, 43 MB at
        65,536) before the clocks at a step's start and after them at its end, so the window
        holds none of the dumps the sampler asks for."""
        assert self.eng.pid is not None
        st = self.eng.stats(timeout_s=60) if dump_first else None
        run_ns, cnt, _ = xdp_prog(self.eng.ns)
        out = {"t": time.monotonic(), "cpu_s": util.proc_cpu_s(self.eng.pid), "xdp_ns": run_ns,
               "xdp_cnt": cnt, "wire_drops": wire_drops(self.wire, self.port)}
        st = st if dump_first else self.eng.stats(timeout_s=60)
        if st is None:
            raise LabError("the engine wrote no stats dump")
        return {**out, "sweep_ns": st["sweep"]["total_scan_ns"],
                "down": sum(s["down_events"] for s in st["sessions"]), "up": st["sessions_up"]}

    def begin(self, step: Step, t0: float) -> None:
        self._step = step.name
        self._start = self._take(dump_first=True)

    def tick(self, step: Step, now: float, elapsed: float) -> None:
        pass

    def end(self) -> list[dict[str, Any]]:
        a, b = self._start, self._take(dump_first=False)
        wall = b["t"] - a["t"]
        pkts = b["xdp_cnt"] - a["xdp_cnt"]
        self.steps[self._step] = {
            "seconds": round(wall, 2), "down_events": b["down"] - a["down"],
            "sessions_up_end": b["up"],
            "engine_cpu_pct": round((b["cpu_s"] - a["cpu_s"]) / wall * 100, 3),
            "sweep_cpu_pct": round((b["sweep_ns"] - a["sweep_ns"]) / 1e9 / wall * 100, 3),
            "xdp_cpu_pct": round((b["xdp_ns"] - a["xdp_ns"]) / 1e9 / wall * 100, 3),
            "xdp_ns_per_packet": round((b["xdp_ns"] - a["xdp_ns"]) / pkts, 1) if pkts else None,
            "xdp_packets": pkts, "wire_drops": b["wire_drops"] - a["wire_drops"]}
        return []  # no flood arms


def detect_wait_s(n: int) -> float:
    """How long N sessions may take to be Down after the kill: the Detection Time, then the
    engine's userspace taking in N expiries at once under its SCHED_DEADLINE budget (4,096
    took 3.6 s here), so it grows with N."""
    return DETECT_WAIT_S + n / 1000


def detection(lab: Lab, standin_status: Path | None) -> dict[str, Any]:
    """SIGKILL bfdpeer (silence, no AdminDown: RFC 5880 6.8.4 detection), then each session's
    time from the kill to Down as bfdd hears it. With the stand-in driving the size
    (STANDIN_STATUS, rewritten every 500 ms): its own time of each session's Down (its
    last_down_ns, CLOCK_MONOTONIC as ours); the engine is not asked for a dump, which at 65,536
    sessions it could not write while it sends every Down session's packets from userspace.
    Else (FRR bfdd): each engine session's state_age_ms in one stats dump, so a latency is over
    by at most `dump_ms` (signal to file)."""
    assert lab.peer is not None and lab.peer.pid is not None
    eng = lab.engines["engine"]
    n = lab.topo.sessions_per_device
    t_kill = time.monotonic()
    os.kill(lab.peer.pid, signal.SIGKILL)

    def figures(lat: list[float], **extra: Any) -> dict[str, Any]:
        lat = sorted(lat)
        return {"sessions": len(lat), "median_ms": round(statistics.median(lat), 1),
                "max_ms": round(lat[-1], 1), "min_ms": round(lat[0], 1), **extra}

    if standin_status is not None:
        def standin_down() -> dict | None:
            try:
                st = json.loads(standin_status.read_text())
            except (OSError, ValueError):
                return None  # caught mid-write
            return st if st.get("sessions_up") == 0 else None

        st = util.wait_until(standin_down, detect_wait_s(n), "bfdd (the stand-in) hears every "
                             "session Down", poll_s=0.1)
        kill_ns = t_kill * 1e9
        return figures([(t - kill_ns) / 1e6 for t in st["last_down_ns"] if t >= kill_ns],
                       source="stand-in")

    t_sig = [0.0]

    def all_down() -> dict | None:
        t_sig[0] = time.monotonic()
        st = eng.stats(timeout_s=60)
        return st if st is not None and st["sessions_up"] == 0 else None

    st = util.wait_until(all_down, detect_wait_s(n), "every engine session Down", poll_s=0.5)
    t_read = time.monotonic()
    return figures([(t_read - t_kill) * 1000 - s["state_age_ms"] for s in st["sessions"]],
                   source="engine dump", dump_ms=round((t_read - t_sig[0]) * 1000, 1))


def size_verdict(summary: dict[str, Any],
                 wire_drops: dict[str, int] | None = None) -> dict[str, Any]:
    """The size's verdict from the demo's judge (lab.judge.summarise), less the contrast
    witness: no stock bfdd runs beside the engine at these sizes (it cannot hold them), so the
    judge's "no stock bfdd in the run" does not void a step. The steps are judged again without
    it (lab.judge.verdict.run_result, every step required): every other VOID reason (the peer's
    timing by the validity rules, host steal) in any step, or of the run, voids the size. So do
    frames the wire dropped on their way into the engine's interface in a step (WIRE_DROPS, by
    step name): captured, so the judge counts them as sent, but never seen by the engine (at
    65,536 sessions this VM's softirqs fell behind and the interface's receive ring overflowed:
    the engine then rightly found peers silent)."""
    steps = {}
    for name, st in (summary.get("steps") or {}).items():
        reasons = [r for r in st.get("void_reasons") or [] if NO_WITNESS not in r]
        if (wire_drops or {}).get(name):
            reasons.append(f"the wire dropped {wire_drops[name]} frames into the engine's "
                           f"interface (its receive ring full, its NAPI late): packets the "
                           f"capture saw and the engine never did")
        verdict = "VOID" if reasons else ("FAIL" if st.get("failures") else "PASS")
        steps[name] = {"verdict": verdict, "void_reasons": reasons,
                       "failures": st.get("failures") or []}
    run_void = [r for r in summary.get("run_void_reasons") or [] if NO_WITNESS not in r
                and not r.startswith("required step") and " steps are VOID " not in r]
    verdict, void, failures = run_result(steps, list(steps), run_void, end_failures(summary),
                                         void_fraction_max=0.0)
    return {"verdict": verdict, "judge_verdict": summary["verdict"], "void_reasons": void,
            "failures": failures}


def one_size(cfg: ScaleConfig, n: int, topo_path: Path) -> dict[str, Any]:
    """Run size N; returns its entry of summary.json's `sizes`."""
    from ..topo import load as load_topology

    topo = load_topology(topo_path)
    standin = n > cfg.bfdd_max
    out: dict[str, Any] = {"sessions": n, "driver": "standin" if standin else "frr-bfdd",
                           "class_ms": cfg.interval_ms}
    if standin:
        out["standin_window"] = cfg.standin_window
    rcfg = RunConfig(topology=topo_path, settle_s=cfg.settle_s, runs_root=cfg.runs_root,
                     build=cfg.build, out=cfg.out, progress=cfg.progress,
                     standin_window=cfg.standin_window)

    def body(lab: Lab, meta: dict[str, Any], rc: RunConfig) -> None:
        t0 = time.monotonic()
        bringup.start(lab, rc, meta, standin=standin)
        bringup.wait_sessions(lab, rc, meta)
        out["bringup_s"] = round(time.monotonic() - t0, 1)
        out["netns_s"] = meta.get("netns_build_s", 0.0)
        eng = lab.engines["engine"]
        st = eng.stats(timeout_s=60)
        out["sessions_up"] = st["sessions_up"] if st else 0
        sampler = Sampler(lab)
        plan = Plan([Step("idle", cfg.idle_s),
                     Step(cfg.load.name, cfg.load_s, "level", cfg.load,
                          phase_load=cfg.load.name)], engine_stats=False)
        records = run_steps(lab, rc, meta, plan, sampler)
        for rec in records:
            meta["steal_ms"][rec["name"]] = rec["steal_ms"]
            if rec["load"] is not None:
                meta["load"] = rec["load"]  # the judge's proof that the load ran
        out["steps"] = sampler.steps
        assert eng.pid is not None
        out["memory"] = {"engine_rss_bytes": rss_bytes(eng.pid),
                         "maps_bytes": maps_bytes(xdp_prog(eng.ns)[2])}
        st = eng.stats(timeout_s=60)
        out["sessions_up_end"] = st["sessions_up"] if st else 0
        bringup.snapshot(lab, meta)
        meta["capture"] = lab.cap.stop() if lab.cap else {}
        meta["phases"] = [rec["phase"] for rec in records]
        out["detection"] = detection(lab, lab.rd.logs / "standin-engine.json" if standin
                                     else None)

    rd, _meta = frame.run(rcfg, topo, f"scale-{n}", {"steal_ms": {}, "load": None}, body)
    out["run"] = rd.path.name
    summary = summarise(rd.path, cfg.build / "bfdcap")
    out.update(size_verdict(summary, {k: v["wire_drops"] for k, v in out["steps"].items()}))
    idle, load = out["steps"]["idle"], out["steps"][cfg.load.name]
    out["down_events"] = {"idle": idle["down_events"], "load": load["down_events"]}
    out["engine_cpu_pct"] = {k: idle[f"{k}_cpu_pct"] for k in ("engine", "sweep", "xdp")}
    out["xdp_ns_per_packet"] = idle["xdp_ns_per_packet"]
    return out


def run(cfg: ScaleConfig) -> dict[str, Any]:
    """Every size in turn; writes summary.json into a run folder of kind "scale"."""
    before = BPF_STATS.read_text().strip()
    sizes: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    try:
        BPF_STATS.write_text("1")
        with tempfile.TemporaryDirectory(prefix="xdp-bfd-scale-") as tmp:
            for n in cfg.sizes:
                p = Path(tmp) / f"scale-{n}.toml"
                p.write_text(topology_text(n, cfg.interval_ms, cfg.detect_mult))
                cfg.out(f"== {n} sessions")
                root = cfg.runs_root or util.REPO / "results" / "runs"
                runs_before = set(root.glob(f"*-scale-{n}"))
                try:
                    sizes.append(one_size(cfg, n, p))
                except LabError as e:
                    # the sizes measured are kept: one size's error (a lab that could not
                    # be built) says nothing about the others
                    run_dirs = sorted(set(root.glob(f"*-scale-{n}")) - runs_before)
                    errors.append({"sessions": n, "error": str(e),
                                   "run": run_dirs[-1].name if run_dirs else ""})
                    cfg.out(f"{n} sessions: {e}")
                    continue
                cfg.out(json.dumps(sizes[-1]))
    finally:
        BPF_STATS.write_text(before)
    if not sizes:
        raise LabError(f"no size measured: {errors}")
    rd = util.RunDir.create("scale", cfg.runs_root)
    summary = {"schema": SCHEMA, "run_id": rd.path.name, "commit": rd.commit,
               "class": {"interval_ms": cfg.interval_ms, "detect_mult": cfg.detect_mult},
               "idle_s": cfg.idle_s, "load_s": cfg.load_s, "load": cfg.load.name,
               "sizes": sizes, **({"errors": errors} if errors else {})}
    runfiles.write("scale", rd.path / "summary.json", summary)
    plot(summary, rd.path / "scale.png")
    cfg.out(table(summary))
    return summary


def table(summary: dict[str, Any]) -> str:
    """The curve as a Markdown table (the README's)."""
    rows = ["| sessions | class | driver | verdict | Up | bring-up s (of it namespaces and "
            "addresses) | down idle / L4 | engine CPU % (process / sweep / XDP) | XDP ns/pkt | "
            "RSS MiB | maps MiB | detection ms (median / max) |", "|" + "---|" * 12]
    for s in summary["sizes"]:
        c, m, d = s["engine_cpu_pct"], s["memory"], s["detection"]
        window = f", window {s['standin_window']}" if s.get("standin_window") else ""
        rows.append(f"| {s['sessions']:,} | {s.get('class_ms', '-')} ms x3 | "
                    f"{s['driver']}{window} | {s['verdict']} | "
                    f"{s['sessions_up']:,} | {s['bringup_s']} ({s.get('netns_s', '-')}) | "
                    f"{s['down_events']['idle']} / "
                    f"{s['down_events']['load']} | {c['engine']} / {c['sweep']} / {c['xdp']} | "
                    f"{s['xdp_ns_per_packet']} | {m['engine_rss_bytes'] / 2**20:.1f} | "
                    f"{m['maps_bytes'] / 2**20:.1f} | {d['median_ms']} / {d['max_ms']} |")
    rows += [f"| {e['sessions']:,} | - | - | error | {e['error']} |"
             for e in summary.get("errors", [])]
    return "\n".join(rows)
