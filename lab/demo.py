"""demo - `python3 -m lab demo`: both devices side by side under one load, measured from the wire.

Plan: build the namespaces, start the capture and the shielded peer, start each device under
test (stock bfdd with its peers in its config; or bfdd --dplaneaddr with no peers, the engine
connected to it, then the peers added in one vtysh call so no connect burst exceeds FRR
8.4.4's 58 messages), wait for the sessions, run the phases (idle, L4, idle) with a progress
line, snapshot every daemon's view, stop the capture, tear everything down, then analyse the
capture with bfdcap and write summary.json and report.md.

The run folder holds what each stage reads and writes (run.json, phases.json, capture.pcap),
so `python3 -m lab report RUN_DIR` re-analyses a saved run without the lab.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import capture, frr, report, steal, stress, util, validity
from .engine import Engine
from .netns import DUT_IF, Netns
from . import registry as _registry
from .registry import Registry
from .topo import Topology, load as load_topology
from .util import LabError, RunDir, realtime_ns

DEFAULT_TOPOLOGY = util.REPO / "topologies" / "demo.toml"
BUILD = util.REPO / "build"
SHIELD_WAIT_S = 90.0  # how long to wait for deadline bandwidth another run holds


class Interrupted(Exception):
    """SIGTERM/SIGHUP arrived: unwind through the finally blocks and tear down."""


@dataclass
class DemoConfig:
    topology: Path = DEFAULT_TOPOLOGY
    duts: list[str] | None = None  # None: every device of the topology
    idle_s: float = 15.0
    load_s: float = 30.0
    idle2_s: float = 15.0
    load: stress.Load = stress.L4
    settle_s: float = 30.0  # how long sessions may take to come Up before the phases
    runs_root: Path | None = None
    build: Path = BUILD
    out: Callable[[str], None] = print
    progress: bool = True
    capture_exclude_mac: str = ""  # a sender left out of the capture (the ladder's floods)
    peer_capture: bool = False  # also capture the peer's sends on peer0 itself (diagnosis)


@dataclass
class Lab:
    """Everything one run started, so teardown() can stop it by PID and name."""

    topo: Topology
    rd: RunDir
    tag: str
    netns: Netns
    registry: Registry
    cap: capture.Capture | None = None
    peer_cap: capture.Capture | None = None
    peer: frr.Bfdd | None = None
    duts: dict[str, frr.Bfdd] = field(default_factory=dict)
    engines: dict[str, Engine] = field(default_factory=dict)
    load_run: stress.LoadRun | None = None
    steal_proc: Any = None  # the steal sampler (subprocess.Popen)
    extra: list[tuple[str, Callable[[], Any]]] = field(default_factory=list)  # e.g. floods

    def teardown(self) -> list[str]:
        problems: list[str] = []
        steps: list[tuple[str, Callable[[], Any]]] = list(self.extra)
        if self.load_run is not None:
            steps.append(("stress-ng", self.load_run.kill))
        if self.steal_proc is not None:
            pid = self.steal_proc.pid
            steps.append(("steal sampler", lambda: util.stop_pid(pid, "steal.py")))
        if self.cap is not None:
            steps.append(("tcpdump", self.cap.stop))
        if self.peer_cap is not None:
            steps.append(("tcpdump (peer)", self.peer_cap.stop))
        steps += [(f"engine {n}", e.stop) for n, e in self.engines.items()]
        steps += [(f"bfdd {b.inst}", b.stop) for b in self.duts.values()]
        if self.peer is not None:
            steps.append((f"bfdd {self.peer.inst}", self.peer.stop))
        for what, fn in steps:
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - keep tearing down whatever happens
                problems.append(f"stopping {what}: {e}")
        problems += self.netns.teardown()
        self.registry.remove()
        return problems


class Monitor(threading.Thread):
    """Polls the peer (shielded, so it answers under load) and the engines every PERIOD_S.

    Sessions Up and down events per device come from the peer's view: an unshielded device
    under L4 may not answer vtysh for seconds. The engine's own count comes from its stats.
    """

    def __init__(self, lab: Lab, period_s: float = 2.0) -> None:
        super().__init__(name="monitor", daemon=True)
        self.lab, self.period_s = lab, period_s
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.up: dict[str, int | None] = {d.name: None for d in lab.topo.devices}
        self.down: dict[str, int | None] = dict(self.up)
        self.engine_up: dict[str, int | None] = {n: None for n in lab.engines}
        self.base_down: dict[str, int] = {}
        self.addr_dev = {a: d.name for d in lab.topo.devices
                         for a in lab.topo.device_addresses(d.name)}

    def _per_device(self, rows: list[dict], key: Callable[[dict], int]) -> dict[str, int]:
        out = {d.name: 0 for d in self.lab.topo.devices}
        for r in rows:
            dev = self.addr_dev.get(r.get("peer", ""))
            if dev is not None:
                out[dev] += key(r)
        return out

    def poll(self) -> None:
        peer = self.lab.peer
        assert peer is not None
        try:
            up = self._per_device(peer.peers(timeout=5), lambda r: r.get("status") == "up")
        except LabError:
            up = {}
        try:
            down = self._per_device(peer.counters(timeout=5), lambda r: r.get("session-down", 0))
        except LabError:
            down = {}
        eng = {}
        for n, e in self.lab.engines.items():
            st = e.stats(timeout_s=2)
            eng[n] = st.get("sessions_up") if st else None
        with self.lock:
            for d in self.up:
                self.up[d] = up.get(d)
                if d in down:
                    self.base_down.setdefault(d, down[d])
                    self.down[d] = down[d] - self.base_down[d]
            self.engine_up.update(eng)

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.poll()
            self.stop_event.wait(self.period_s)

    def line(self, phase: str, left_s: float) -> str:
        n = self.lab.topo.sessions_per_device
        parts = []
        with self.lock:
            for d in self.up:
                up = "?" if self.up[d] is None else self.up[d]
                down = "?" if self.down[d] is None else self.down[d]
                extra = ""
                if d in self.engine_up:
                    eu = self.engine_up[d]
                    extra = f" (engine says {'?' if eu is None else eu})"
                parts.append(f"{d} {up}/{n} Up{extra}, {down} down")
        return f"[{phase:<6} {left_s:5.1f} s left] " + " | ".join(parts)


def _check_prereqs(cfg: DemoConfig, topo: Topology) -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (namespaces, XDP, SCHED_DEADLINE)")
    need = [cfg.build / "xdp_pass.bpf.o", cfg.build / "bfdcap"]
    if any(d.kind == "engine" for d in topo.devices):
        need.append(cfg.build / "xdp-bfd")
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        raise LabError(f"missing {', '.join(missing)}: build with make "
                       "(without the engine, --dut bfdd runs stock bfdd alone)")


def _peer_cfgs(topo: Topology, device: str, side: str) -> list[frr.PeerCfg]:
    out = []
    for s in topo.sessions(device):
        if side == "peer":
            out.append(frr.PeerCfg(s.device_address, s.peer_address, s.cls.interval_ms,
                                   s.cls.detect_mult))
        else:
            out.append(frr.PeerCfg(s.peer_address, s.device_address, s.cls.interval_ms,
                                   s.cls.detect_mult))
    return out


def _start(lab: Lab, cfg: DemoConfig, meta: dict[str, Any]) -> None:
    topo, rd, tag = lab.topo, lab.rd, lab.tag
    cfg.out(f"lab {tag}: namespaces, bridge, veths ({', '.join(d.name for d in topo.devices)})")
    lab.netns.build()

    lab.cap = capture.Capture(lab.netns.wire, rd.path / "capture.pcap", rd.logs / "tcpdump.log",
                              exclude_src_mac=cfg.capture_exclude_mac)
    pid = lab.cap.start()
    lab.registry.add_pid(pid, "tcpdump")
    meta["shield"]["tcpdump"] = stress.shield(pid, "tcpdump", stress.CAPTURE_DEADLINE_ARGS,
                                              wait_s=SHIELD_WAIT_S)

    if cfg.peer_capture:
        # the peer's packets as it sends them (peer0, outbound): against the wire capture,
        # this tells a peer that sent late from packets delayed after it sent them
        lab.peer_cap = capture.Capture(lab.netns.peer, rd.path / "peer-tx.pcap",
                                       rd.logs / "tcpdump-peer.log", iface="peer0")
        pid = lab.peer_cap.start()
        lab.registry.add_pid(pid, "tcpdump")
        meta["shield"]["tcpdump-peer"] = stress.shield(pid, "tcpdump (peer)",
                                                       stress.CAPTURE_DEADLINE_ARGS,
                                                       wait_s=SHIELD_WAIT_S)

    peer_cfgs = [c for d in topo.devices for c in _peer_cfgs(topo, d.name, "peer")]
    lab.peer = frr.Bfdd(f"{tag}-peer", lab.netns.peer, rd.logs / "frr-peer")
    lab.peer.write_config(peer_cfgs)
    lab.registry.add_frr(lab.peer.inst)
    pid = lab.peer.start()
    lab.registry.add_pid(pid, f"-N {lab.peer.inst}")
    meta["shield"]["peer"] = stress.shield(pid, "peer bfdd", wait_s=SHIELD_WAIT_S)
    if meta["shield"]["peer"] != "deadline":
        # FIFO 99 shares RT throttling with the FIFO hogs: the peer would stall under L4 and
        # the run be VOID. Do not load the machine for nothing.
        raise LabError(f"the peer bfdd could not get SCHED_DEADLINE (got "
                       f"{meta['shield']['peer']}; deadline threads now: "
                       f"{stress.deadline_holders()}); see {rd.logs / 'commands.log'}")
    cfg.out(f"peer bfdd: {len(peer_cfgs)} sessions, shielded with {meta['shield']['peer']}; "
            f"tcpdump shielded with {meta['shield']['tcpdump']}")

    # Stock devices first: their peers are in the config. Engines last, peers added live.
    for d in sorted(topo.devices, key=lambda d: d.kind == "engine"):
        ns = lab.netns.device_ns(d.name)
        b = frr.Bfdd(f"{tag}-{d.name}", ns, rd.logs / f"frr-{d.name}",
                     dplane=d.dplane if d.kind == "engine" else None)
        lab.duts[d.name] = b
        lab.registry.add_frr(b.inst)
        if d.kind == "bfdd":
            b.write_config(_peer_cfgs(topo, d.name, "device"))
            lab.registry.add_pid(b.start(), f"-N {b.inst}")
            cfg.out(f"{d.name}: stock bfdd with {topo.sessions_per_device} sessions")
            continue
        b.write_config([])  # no peers: the engine must be connected before they exist
        lab.registry.add_pid(b.start(), f"-N {b.inst}")
        eng = Engine(cfg.build / "xdp-bfd", ns, DUT_IF, d.dplane,
                     rd.path / f"{d.name}-stats.json", rd.logs / f"{d.name}.log",
                     rd.logs / f"{d.name}.stderr")
        lab.engines[d.name] = eng
        pid = eng.start()
        lab.registry.add_pid(pid, "xdp-bfd")
        meta["engine_attach"][d.name] = eng.attach_line()
        b.add_peers(_peer_cfgs(topo, d.name, "device"))
        cfg.out(f"{d.name}: xdp-bfd pid {pid} connected to bfdd; {topo.sessions_per_device} "
                f"peers added. {eng.attach_line() or 'no kernel-tx attach line yet'}")


def _wait_sessions(lab: Lab, cfg: DemoConfig, meta: dict[str, Any]) -> None:
    assert lab.peer is not None
    want = lab.topo.sessions_per_device * len(lab.topo.devices)
    t0 = time.monotonic()

    def all_up() -> bool | None:
        try:
            return frr.up_count(lab.peer.peers()) == want or None  # type: ignore[union-attr]
        except LabError:
            return None

    try:
        util.wait_until(all_up, cfg.settle_s, f"all {want} sessions Up on the peer", poll_s=0.5)
        cfg.out(f"all {want} sessions Up after {time.monotonic() - t0:.1f} s")
    except LabError as e:
        up = frr.up_count(lab.peer.peers())
        meta["warnings"].append(f"only {up}/{want} sessions Up on the peer after "
                                f"{cfg.settle_s:.0f} s; phases started anyway")
        cfg.out(f"warning: {e} ({up}/{want} Up); going on")


def _phases(lab: Lab, cfg: DemoConfig, meta: dict[str, Any]) -> list[capture.Phase]:
    plan: list[tuple[str, float, stress.Load | None]] = [
        ("idle", cfg.idle_s, None), (cfg.load.name, cfg.load_s, cfg.load),
        ("idle2", cfg.idle2_s, None)]
    plan = [p for p in plan if p[1] > 0]
    phases: list[capture.Phase] = []
    total = sum(p[1] for p in plan) + 30  # the sampler stops itself even if we die
    lab.steal_proc = util.spawn([util.PYTHON, str(Path(steal.__file__)),
                                 str(lab.rd.path / "steal.jsonl"), f"{total:.0f}"])
    lab.registry.add_pid(lab.steal_proc.pid, "steal.py")
    meta["shield"]["steal-sampler"] = stress.shield(lab.steal_proc.pid, "steal sampler",
                                                    steal.RESERVATION)
    mon = Monitor(lab)
    mon.poll()  # baseline for the down counters, before anything is stressed
    mon.start()
    tty = sys.stdout.isatty() and cfg.progress
    last_print = 0.0
    try:
        for name, dur, load in plan:
            start_ns, t0, steal0 = realtime_ns(), time.monotonic(), util.cpu_steal_ms()
            if load is not None:
                lab.load_run = stress.LoadRun(load, dur, lab.rd.logs / "stress-ng.log")
                lab.registry.add_pid(lab.load_run.proc.pid, "stress-ng")
            while True:
                elapsed = time.monotonic() - t0
                if lab.load_run is not None and load is not None:
                    if lab.load_run.done():
                        break
                elif elapsed >= dur:
                    break
                now = time.monotonic()
                if tty and now - last_print >= 0.5:
                    sys.stdout.write("\r\x1b[K" + mon.line(name, max(0.0, dur - elapsed)))
                    sys.stdout.flush()
                    last_print = now
                elif not tty and cfg.progress and now - last_print >= 5.0:
                    cfg.out(mon.line(name, max(0.0, dur - elapsed)))
                    last_print = now
                time.sleep(0.05 if load is not None else min(0.1, max(0.0, dur - elapsed)))
            if load is not None and lab.load_run is not None:
                res = lab.load_run.finish()
                lab.load_run = None
                meta["load"] = res.as_dict()
            end_ns = realtime_ns()
            meta["steal_ms"][name] = round(util.cpu_steal_ms() - steal0, 1)
            phases.append(capture.Phase(name, start_ns, end_ns, load.name if load else ""))
            capture.write_phases(lab.rd.path / "phases.json", phases)
            if tty:
                sys.stdout.write("\r\x1b[K")
            cfg.out(mon.line(name, 0.0).replace("  0.0 s left", " done"))
    finally:
        mon.stop_event.set()
        mon.join(timeout=10)
        meta["steal_sampler_alive"] = lab.steal_proc.poll() is None
    return phases


def _snapshot(lab: Lab, meta: dict[str, Any]) -> None:
    """Every daemon's own view at the end of the phases, kept in logs/ and run.json."""
    views: dict[str, Any] = {}
    for name, b in [("peer", lab.peer)] + list(lab.duts.items()):
        if b is None:
            continue
        try:
            peers = b.peers(timeout=10)
            views[name] = {"sessions": len(peers), "up": frr.up_count(peers)}
            (lab.rd.logs / f"final-peers-{name}.json").write_text(json.dumps(peers, indent=1))
        except LabError as e:
            views[name] = {"error": str(e)}
    if lab.peer is not None:
        try:
            cnt = lab.peer.counters(timeout=10)
            (lab.rd.logs / "final-counters-peer.json").write_text(json.dumps(cnt, indent=1))
            for d in lab.topo.devices:
                addrs = set(lab.topo.device_addresses(d.name))
                views.setdefault(f"peer-counters-{d.name}", {})["session_down"] = sum(
                    r.get("session-down", 0) for r in cnt if r.get("peer") in addrs)
        except LabError as e:
            views["peer-counters"] = {"error": str(e)}
    for name, e in lab.engines.items():
        st = e.stats(timeout_s=5)
        meta["engine_stats"][name] = _engine_stats_brief(st)
        views[f"{name}-engine"] = {"sessions_up": st.get("sessions_up") if st else None,
                                   "sessions_configured":
                                       st.get("sessions_configured") if st else None}
        if not e.alive():
            meta["warnings"].append(f"xdp-bfd of {name} is not running at the end "
                                    f"(exit status {e.proc.returncode if e.proc else '?'})")
    meta["final_views"] = views


def _engine_stats_brief(st: dict[str, Any] | None) -> dict[str, Any] | None:
    if st is None:
        return None
    keep = {k: v for k, v in st.items() if k != "sessions"}
    keep["sessions_listed"] = len(st.get("sessions") or [])
    return keep


def run(cfg: DemoConfig) -> dict[str, Any]:
    """Run the demo end to end and return its summary (also written to the run folder)."""
    topo = load_topology(cfg.topology)
    if cfg.duts:
        topo = topo.select(cfg.duts)
    _check_prereqs(cfg, topo)
    for old in _registry.stale():  # a killed earlier run (its harness is gone): clear it first
        for line in _registry.cleanup(old):
            cfg.out(f"cleanup of dead run {old.tag}: {line}")
    rd = RunDir.create("demo", cfg.runs_root)
    util.set_command_log(rd.logs / "commands.log")
    util.OOM_REFUSED.clear()
    util.set_oom_score_adj(os.getpid())
    util.become_subreaper()
    tag = "xb" + util.run_id_hex()
    (rd.path / "topology.toml").write_text(Path(cfg.topology).read_text())
    meta: dict[str, Any] = {
        "run_id": rd.path.name, "tag": tag, "topology": str(cfg.topology),
        "duts": [d.name for d in topo.devices], "commit": rd.commit, "dirty": rd.dirty,
        "kernel": platform.release(), "nproc": os.cpu_count(),
        "shield": {}, "engine_attach": {}, "steal_ms": {}, "engine_stats": {}, "warnings": [],
        "load": None,
        "capture": {}, "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    cfg.out(f"run folder {rd.path}")
    lab = Lab(topo, rd, tag, Netns(tag, topo, cfg.build / "xdp_pass.bpf.o"),
              Registry.create(tag))
    lab.registry.add_namespaces([lab.netns.ns(r) for r in
                                 ["wire", "peer"] + [d.name for d in topo.devices]])

    def on_signal(signum: int, _frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    def on_int(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt  # also when started with SIGINT ignored (a background job)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    old[signal.SIGINT] = signal.signal(signal.SIGINT, on_int)
    error: str | None = None
    try:
        _start(lab, cfg, meta)
        _wait_sessions(lab, cfg, meta)
        phases = _phases(lab, cfg, meta)
        _snapshot(lab, meta)
        meta["capture"] = lab.cap.stop() if lab.cap else {}
        meta["phases"] = [p.as_dict() for p in phases]
    except (KeyboardInterrupt, Interrupted) as e:
        error = f"interrupted ({type(e).__name__} {e})"
        raise
    except LabError as e:
        error = str(e)
        raise
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not cut the teardown
        problems = lab.teardown()
        for s, h in old.items():
            signal.signal(s, h)
        if problems:
            meta["warnings"] += [f"teardown: {p}" for p in problems]
        meta["error"] = error
        if util.OOM_REFUSED:
            meta["warnings"].append(
                f"oom_score_adj -1000 refused for {len(util.OOM_REFUSED)} processes "
                f"({util.OOM_REFUSED[0]}; this container lacks CAP_SYS_RESOURCE: the lab's "
                f"daemons are not shielded from the OOM killer, which matters only under the "
                f"memory levels)")
        (rd.path / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
        if error:
            cfg.out(f"run aborted: {error}; everything torn down; logs in {rd.logs}")
    cfg.out("lab torn down; analysing the capture with bfdcap")
    summary = summarise(rd.path, cfg.build / "bfdcap")
    cfg.out("")
    cfg.out(report.tables(summary))
    return summary


def judge(topo: Topology, run_dir: Path, analysis: dict[str, Any], figs: dict[str, Any],
          phases: list[dict[str, Any]], bfdcap: Path) -> dict[str, Any]:
    """Rules (a)-(e) of docs/lab.md on one analysed run (shared with the ladder).

    Puts the down-event counts into FIGS (report.apply_validity), writes episodes.json and
    returns the assessment (lab.validity.assess) with its VOID reasons: per step
    (step_void_reasons) and for the run (void_reasons: the steal sampler, events outside
    every step).
    """
    tags = report.Tags(topo).all()
    window = (phases[0]["start_ns"], phases[-1]["end_ns"])
    csv_text = validity.csv_gaps(run_dir / "capture.pcap", tags, window, bfdcap)
    records = steal.load(run_dir / "steal.jsonl")
    late = steal.load_late(run_dir / "steal.jsonl")
    meta = json.loads((run_dir / "run.json").read_text())
    a = validity.assess(topo, analysis, csv_text, records, phases, late,
                        int(meta.get("nproc") or 0),
                        validity.packet_source(run_dir / "capture.pcap", bfdcap))
    if not (run_dir / "steal.jsonl").exists():
        a["void_reasons"].append("the steal sampler left no log (steal.jsonl): hypervisor "
                                 "steal cannot be told apart from a stalled peer")
    elif meta.get("steal_sampler_alive") is False:
        a["void_reasons"].append("the steal sampler died before the phases ended: "
                                 "hypervisor steal is not fully recorded")
    report.apply_validity(figs, a)
    eps = {dev: v.pop("episodes") for dev, v in a["devices"].items()}
    (run_dir / "episodes.json").write_text(json.dumps(eps, indent=1) + "\n")
    return a


def summarise(run_dir: Path, bfdcap: Path = BUILD / "bfdcap") -> dict[str, Any]:
    """Analyse a finished run folder (run.json, phases.json, capture.pcap) into its summary.

    Verdicts phase by phase, then the run's (docs/lab.md section 2, rule (d); the required
    phases come from results/gates.toml [demo])."""
    from . import gate
    from .topo import load as _load
    meta = json.loads((run_dir / "run.json").read_text())
    topo = _load(run_dir / "topology.toml").select(meta["duts"])
    phases = meta.get("phases") or []
    void: list[str] = []  # run-level reasons
    warnings = list(meta.get("warnings") or [])
    analysis: dict[str, Any] = {}
    if meta.get("error"):
        void.append(f"run did not complete: {meta['error']}")
    if phases:
        try:
            analysis = capture.analyse(run_dir / "capture.pcap", report.Tags(topo).all(),
                                       run_dir / "phases.json", bfdcap,
                                       window=(phases[0]["start_ns"], phases[-1]["end_ns"]))
            (run_dir / "bfdcap.json").write_text(json.dumps(analysis, indent=1) + "\n")
        except LabError as e:
            void.append(str(e))
    figs = report.figures(topo, analysis) if analysis else report.figures(topo, {})
    assessment: dict[str, Any] = {}
    if analysis:
        try:
            assessment = judge(topo, run_dir, analysis, figs, phases, bfdcap)
            void += assessment["void_reasons"]
        except LabError as e:
            void.append(str(e))
    load = meta.get("load")
    if load is None:
        void.append("the load did not run")
    elif not load.get("ran"):
        void.append("the load is not proven to have run: " + "; ".join(load.get("problems", [])))
    cap = meta.get("capture") or {}
    if "dropped" not in cap:
        void.append("tcpdump printed no drop count")
    elif cap["dropped"]:
        void.append(f"tcpdump dropped {cap['dropped']} packets")
    for dev, p in figs["peer"]["towards"].items():
        if analysis and p["max_over_budget"] is None:
            void.append(f"no transmit gaps of the peer towards {dev} in the capture")
    for name, d in figs["duts"].items():
        if d.get("down_events_bfdcap") is not None and d["down_events_bfdcap"] != d["down_events"]:
            warnings.append(f"{name}: bfdcap's class tables count {d['down_events_bfdcap']} "
                            f"down events, its episodes {d['down_events']}")
    for role in ("peer", "tcpdump"):
        if meta.get("shield", {}).get(role) not in ("deadline",):
            warnings.append(f"{role} shielded with {meta.get('shield', {}).get(role)}, "
                            "not SCHED_DEADLINE")
    summary: dict[str, Any] = {
        "schema": report.SCHEMA,
        "run_id": meta.get("run_id"), "run_dir": str(run_dir),
        "commit": meta.get("commit"), "dirty": meta.get("dirty"),
        "kernel": meta.get("kernel"), "nproc": meta.get("nproc"),
        "topology": meta.get("topology"), "tag": meta.get("tag"),
        "verdict": "", "void": bool(void), "void_reasons": void, "run_void_reasons": void,
        "failures": [], "warnings": warnings,
        "duts": figs["duts"], "peer": figs["peer"], "phases": figs["phases"],
        "phase_plan": phases, "steal_ms": meta.get("steal_ms") or {},
        "steal": assessment.get("steal", {}),
        "steal_records": assessment.get("steal_records"),
        "peer_gaps_explained": assessment.get("peer_gaps_explained", []),
        "peer_gaps_unexplained": assessment.get("peer_gaps_unexplained", []),
        "peer_early_downs_explained": assessment.get("peer_early_downs_explained", []),
        "peer_early_downs_unexplained": assessment.get("peer_early_downs_unexplained", []),
        "peer_early_downs_races": assessment.get("peer_early_downs_races", []),
        "load": load,
        "capture": cap, "shield": meta.get("shield", {}),
        "engine_attach": meta.get("engine_attach", {}),
        "engine_stats": meta.get("engine_stats", {}),
        "final_views": meta.get("final_views", {}),
        "percentiles": "nearest rank, computed by bfdcap",
        "rules": "docs/lab.md",
    }
    step_void = {p["name"]: list((assessment.get("step_void_reasons") or {}).get(p["name"])
                                 or []) for p in phases}
    if analysis:
        for name, why in report.witness(summary, [p["name"] for p in phases
                                                  if p.get("load")]).items():
            step_void.setdefault(name, []).extend(why)
    kinds = report.kinds(summary)
    steps: dict[str, dict[str, Any]] = {}
    for ph in summary["phases"]:
        res = report.step_result(ph["duts"], kinds, step_void.get(ph["name"], []))
        res["steal"] = summary["steal"].get(ph["name"])
        steps[ph["name"]] = res
        ph.update(verdict=res["verdict"], void_reasons=res["void_reasons"],
                  failures=res["failures"])
    g = gate.load_gates()
    summary["steps"] = report.conclude(summary, steps, phases, g.demo_required, void,
                                       g.void_fraction_max)
    summary["plots"] = _plots(run_dir, bfdcap, analysis, warnings)
    report.write(run_dir, summary)
    return summary


def _plots(run_dir: Path, bfdcap: Path, analysis: dict[str, Any], warnings: list[str]) -> list[str]:
    """gap_survival.png and down_events.png through lab.plot (optional: a failure only warns)."""
    if not analysis:
        return []
    try:
        from . import plot  # the capture engineer's module; imports matplotlib
        return [p.name for p in plot.plot(analysis, run_dir, str(bfdcap))]
    except Exception as e:  # noqa: BLE001 - pictures are a bonus, never a reason to fail
        warnings.append(f"plots not drawn: {type(e).__name__}: {e}")
        return []
