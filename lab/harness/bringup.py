"""bringup - the lab of one run brought up and taken stock of: namespaces, the capture, the
shielded peers (FRR bfdd, and BIRD when a class names it; start_peers, shared with the
engine's tests), each device under test (stock bfdd with its peers in its config; or bfdd
--dplaneaddr with no peers, the engine connected to it, then the peers added in one vtysh call
so no connect burst exceeds FRR 8.4.4's 58 messages), all sessions Up; at the end every
daemon's own view.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from .. import util
from ..rig import bird, capture, frr, neigh, stress
from ..rig.bfdpeer import BfdPeer, interfaces as bfdpeer_interfaces
from ..rig.engine import Engine
from ..rig.netns import DUT_IF, PEER_IF, PEER_ROLES, ROUTER_IF, nsexec
from ..topo import Topology
from ..topo_checks import at, engine_demand_args
from ..util import LabError
from .lab import BUILD, Lab, RunConfig

SHIELD_WAIT_S = 90.0  # how long to wait for deadline bandwidth another run holds
EPEER_DPLANE = "ipv4:127.0.0.1:50700"  # the engine peer's bfdd, in its own namespace


def check_prereqs(cfg: RunConfig, topo: Topology) -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (namespaces, XDP, SCHED_DEADLINE)")
    need = [cfg.build / "xdp_pass.bpf.o", cfg.build / "bfdcap"]
    if any(d.kind == "engine" for d in topo.devices) or "engine" in topo.peer_kinds:
        need.append(cfg.build / "xdp-bfd")
    if topo.peer.kind == "bfdpeer":
        need.append(cfg.build / "bfdpeer")
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        raise LabError(f"missing {', '.join(missing)}: build with make "
                       "(without the engine, --dut bfdd runs stock bfdd alone)")


def peer_cfgs(topo: Topology, device: str, side: str, kind: str = "frr",
              ifname: str = "") -> list[frr.PeerCfg]:
    """DEVICE's sessions as FRR blocks. SIDE "device": every session, with the class's device
    timers; "peer": the sessions whose peer is KIND ("frr", or "engine": the engine peer's
    bfdd), with the peer's timers. A link-local session names its end's interface (RFC 5881
    section 5 scoping), and so does an echo session: FRR 8.4.4 sends IPv4 echo from a packet
    socket on the peer's interface, which it knows only when named (through zebra); unnamed, it
    sends none and fails its own echo. IFNAME: that interface, by default the namespace lab's
    (peer0, dut0; lab.bare gives each host's test interface)."""
    out = []
    for s in topo.sessions(device):
        if side == "peer" and s.cls.peer != kind:
            continue
        a, b, ifname = ((s.device_address, s.peer_address, ifname or PEER_IF) if side == "peer"
                        else (s.peer_address, s.device_address, ifname or DUT_IF))
        ms, mult = s.cls.peer_timers if side == "peer" else (s.cls.interval_ms, s.cls.detect_mult)
        out.append(frr.PeerCfg(a, b, ms, mult, multihop=s.multihop,
                               ifname=ifname if s.family == "ipv6-ll" or s.cls.echo else "",
                               minimum_ttl=s.cls.min_ttl if side == "device" else 0,
                               echo_ms=s.cls.echo_interval_ms if s.cls.echo else 0,
                               passive=at(s.cls.passive, side),
                               shutdown=at(s.cls.admin_down, side)))
    return out


def bird_neighbors(topo: Topology, ifname: str = PEER_IF
                   ) -> tuple[list[bird.Neighbor], bird.Timers | None, bird.Timers | None]:
    """Every device's sessions whose peer is BIRD, as BIRD neighbours on IFNAME, and the
    single-hop and multihop timers they share (lab.topo checks they do)."""
    out, timers = [], {}
    for d in topo.devices:
        for s in topo.sessions(d.name):
            if s.cls.peer != "bird":
                continue
            out.append(bird.Neighbor(s.device_address, s.peer_address, ifname, s.multihop))
            timers[s.multihop] = bird.Timers(*s.cls.peer_timers)
    return out, timers.get(False), timers.get(True)


def needs_zebra(cfgs: list[frr.PeerCfg]) -> bool:
    """bfdd resolves a peer's interface through zebra: without it such a peer stays Down."""
    return any(c.ifname for c in cfgs)


def split_shut(cfgs: list[frr.PeerCfg]) -> tuple[list[frr.PeerCfg], list[frr.PeerCfg]]:
    """An engine device's peer blocks as (shut, the rest). The shut ones go in bfdd's config,
    so they exist AdminDown before the engine connects and bfdd offers them so (FRR 8.4.4
    offers at most 58 on a connect: more is refused here). Added live instead, a `peer` line
    starts the session before its `shutdown` line applies, and a quick handshake brought one
    Up at the peer first (FRR counted a session-down on v4shut-frr)."""
    shut = [c for c in cfgs if c.shutdown]
    if len(shut) > 58:
        raise LabError(f"{len(shut)} shut sessions on one engine device: FRR 8.4.4 offers at "
                       f"most 58 on a connect")
    return shut, [c for c in cfgs if not c.shutdown]


def start_peers(lab: Lab, wait_s: float = 0.0, build: Path = BUILD) -> dict[str, str]:
    """Start every peer the topology's classes name, each shielded (stress.shield, waiting up to
    WAIT_S s for deadline bandwidth): FRR bfdd in the "peer" namespace (always; with zebra when
    a session is link-local), BIRD in "bird" and the engine peer in "epeer" when a class names
    them. Returns the scheduling policy each got, {"peer": ..., "bird": ..., "epeer": ...}."""
    topo, rd, tag = lab.topo, lab.rd, lab.tag
    shields = {}
    if topo.peer.kind == "bfdpeer":  # build/bfdpeer serves the "frr" classes instead
        ifs = bfdpeer_interfaces(topo, PEER_IF, ROUTER_IF)
        fast = BfdPeer(build / "bfdpeer", lab.netns.peer, ifs[0], rd.logs, ifs[1:])
        fast.write_sessions(topo)
        lab.peer = fast
        pid = fast.start()
        lab.registry.add_pid(pid, "bfdpeer")
        shields["peer"] = stress.shield(pid, "bfdpeer", wait_s=wait_s)
    else:
        blocks = [c for d in topo.devices for c in peer_cfgs(topo, d.name, "peer")]
        bfdd = frr.Bfdd(f"{tag}-peer", lab.netns.peer, rd.logs / "frr-peer",
                        zebra=needs_zebra(blocks))
        lab.peer = bfdd
        bfdd.write_config(blocks)
        lab.registry.add_frr(bfdd.inst)
        pid = bfdd.start()
        lab.registry.add_pid(pid, f"-N {bfdd.inst}")
        if bfdd.zebra_pid:
            lab.registry.add_pid(bfdd.zebra_pid, f"-N {bfdd.inst}")
        shields["peer"] = stress.shield(pid, "peer bfdd", wait_s=wait_s)
    if "bird" in topo.peer_kinds:
        lab.bird = bird.Bird(lab.netns.ns("bird"), rd.logs / "bird", PEER_IF)
        lab.bird.write_config(*bird_neighbors(topo))
        pid = lab.bird.start()
        lab.registry.add_pid(pid, str(lab.bird.conf))
        shields["bird"] = stress.shield(pid, "peer bird", stress.BIRD_DEADLINE_ARGS,
                                        wait_s=wait_s)
    if "engine" in topo.peer_kinds:
        shields.update(start_engine_peer(lab, wait_s, build))
    return shields


def start_engine_peer(lab: Lab, wait_s: float, build: Path) -> dict[str, str]:
    """The far end of the classes whose peer is "engine" (issue 8 item 9: two engines facing
    each other): FRR bfdd --dplaneaddr in the "epeer" namespace, build/xdp-bfd connected to it
    and attached to its link, then its peers added live (as a device's engine), both shielded
    with stress.EPEER_DEADLINE_ARGS. Returns the policy each got, {"epeer-bfdd", "epeer"}."""
    topo, rd = lab.topo, lab.rd
    blocks = [c for d in topo.devices for c in peer_cfgs(topo, d.name, "peer", "engine")]
    b = frr.Bfdd(f"{lab.tag}-epeer", lab.netns.ns(PEER_ROLES["engine"]), rd.logs / "frr-epeer",
                 dplane=EPEER_DPLANE, zebra=needs_zebra(blocks))
    lab.epeer_bfdd = b
    lab.registry.add_frr(b.inst)
    b.write_config([])  # no peers: the engine must be connected before they exist
    start_bfdd(lab, b)
    eng = Engine(build / "xdp-bfd", b.ns, PEER_IF, EPEER_DPLANE, rd.path / "epeer-stats.json",
                 rd.logs / "epeer.log", rd.logs / "epeer.stderr")
    lab.epeer = eng
    pid = eng.start()
    lab.registry.add_pid(pid, "xdp-bfd")
    b.add_peers(blocks, timeout=180)
    assert b.pid is not None
    return {"epeer-bfdd": stress.shield(b.pid, "peer engine's bfdd", stress.EPEER_DEADLINE_ARGS,
                                        wait_s=wait_s),
            "epeer": stress.shield(pid, "peer engine", stress.EPEER_DEADLINE_ARGS,
                                   wait_s=wait_s)}


def device_bfdd(lab: Lab, name: str, dplane: str | None) -> frr.Bfdd:
    """Device NAME's bfdd (not started): with DPLANE for an engine device, with zebra when a
    session is link-local."""
    b = frr.Bfdd(f"{lab.tag}-{name}", lab.netns.device_ns(name), lab.rd.logs / f"frr-{name}",
                 dplane=dplane, zebra=needs_zebra(peer_cfgs(lab.topo, name, "device")))
    lab.duts[name] = b
    lab.registry.add_frr(b.inst)
    return b


def start_bfdd(lab: Lab, b: frr.Bfdd) -> int:
    """Start B (and its zebra) and register their pids."""
    pid = b.start()
    lab.registry.add_pid(pid, f"-N {b.inst}")
    if b.zebra_pid:
        lab.registry.add_pid(b.zebra_pid, f"-N {b.inst}")
    return pid


def peers_up(lab: Lab) -> int:
    """Sessions Up at the far end: FRR's, BIRD's and the engine peer's bfdd's together (-1 when
    one does not answer)."""
    assert lab.peer is not None
    try:
        n = frr.up_count(lab.peer.peers())
        if lab.epeer_bfdd is not None:
            n += frr.up_count(lab.epeer_bfdd.peers())
    except LabError:
        return -1
    if lab.bird is not None:
        b = lab.bird.up_count()
        return -1 if b < 0 else n + b
    return n


def start(lab: Lab, cfg: RunConfig, meta: dict[str, Any],
          engine_extra: dict[str, tuple[str, ...]] | None = None, standin: bool = False) -> None:
    """Bring the lab up; ENGINE_EXTRA: options added to a device's engine (by device name).
    STANDIN: engine devices get no bfdd; the engine listens and lab.rig.standin adds their
    sessions through the data-plane protocol (sizes FRR 8.4.4's bfdd cannot hold)."""
    topo, rd, tag = lab.topo, lab.rd, lab.tag
    cfg.out(f"lab {tag}: namespaces, bridge, veths ({', '.join(d.name for d in topo.devices)})")
    # one neighbour entry per session at each end, counted over every namespace (lab.rig.neigh)
    lab.neigh_limits = neigh.raise_for(2 * topo.sessions_per_device * len(topo.devices) + 64)
    t_ns = time.monotonic()
    lab.netns.build()
    # the kernel's share of a large bring-up: it inserts each address into a list per device
    meta["netns_build_s"] = round(time.monotonic() - t_ns, 1)

    lab.cap = capture.Capture(lab.netns.wire, rd.path / "capture.pcap", rd.logs / "tcpdump.log",
                              buffer_kib=capture.RUN_BUFFER_KIB,  # no session runs yet
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

    meta["peer_kind"] = topo.peer.kind
    meta["shield"].update(start_peers(lab, SHIELD_WAIT_S, cfg.build))
    if meta["shield"]["peer"] != "deadline":
        # FIFO 99 shares RT throttling with the FIFO hogs: the peer would stall under L4 and
        # the run be VOID. Do not load the machine for nothing.
        raise LabError(f"the peer bfdd could not get SCHED_DEADLINE (got "
                       f"{meta['shield']['peer']}; deadline threads now: "
                       f"{stress.deadline_holders()}); see {rd.logs / 'commands.log'}")
    cfg.out(f"peers: {', '.join(f'{k} shielded with {v}' for k, v in meta['shield'].items())}")

    # Stock devices first: their peers are in the config. Engines last, peers added live.
    for d in sorted(topo.devices, key=lambda d: d.kind == "engine"):
        if standin and d.kind == "engine":
            start_standin(lab, cfg, d.name, (engine_extra or {}).get(d.name, ()))
            continue
        b = device_bfdd(lab, d.name, d.dplane if d.kind == "engine" else None)
        if d.kind == "bfdd":
            b.write_config(peer_cfgs(topo, d.name, "device"))
            start_bfdd(lab, b)
            cfg.out(f"{d.name}: stock bfdd with {topo.sessions_per_device} sessions")
            continue
        shut, live = split_shut(peer_cfgs(topo, d.name, "device"))
        b.write_config(shut)  # the rest once the engine is connected (split_shut())
        start_bfdd(lab, b)
        eng = Engine(cfg.build / "xdp-bfd", b.ns, DUT_IF, d.dplane,
                     rd.path / f"{d.name}-stats.json", rd.logs / f"{d.name}.log",
                     rd.logs / f"{d.name}.stderr",
                     tuple(d.engine_argv) + tuple(engine_demand_args(topo, d.name)) +
                     (engine_extra or {}).get(d.name, ()))
        lab.engines[d.name] = eng
        pid = eng.start()
        lab.registry.add_pid(pid, "xdp-bfd")
        meta["engine_attach"][d.name] = eng.attach_line()
        # FRR 8.4.4 takes longer per peer the more it holds: 128 more took 30 s past 500
        b.add_peers(live, timeout=180)
        cfg.out(f"{d.name}: xdp-bfd pid {pid} connected to bfdd; {topo.sessions_per_device} "
                f"peers added. {eng.attach_line() or 'no kernel-tx attach line yet'}")


def start_standin(lab: Lab, cfg: RunConfig, name: str, extra: tuple[str, ...]) -> None:
    """Device NAME's engine listening, and lab.rig.standin adding its sessions (status in
    logs/standin-NAME.json)."""
    d = next(x for x in lab.topo.devices if x.name == name)
    ns, rd = lab.netns.device_ns(name), lab.rd
    eng = Engine(cfg.build / "xdp-bfd", ns, DUT_IF, d.dplane, rd.path / f"{name}-stats.json",
                 rd.logs / f"{name}.log", rd.logs / f"{name}.stderr",
                 tuple(d.engine_argv) + extra, listen=True)
    lab.engines[name] = eng
    lab.registry.add_pid(eng.start(), "xdp-bfd")
    spawn_standin(lab, name, [
        {"lid": 0x5CA1E000 + s.slot, "local": s.device_address, "peer": s.peer_address,
         "interval_us": s.cls.interval_ms * 1000, "detect_mult": s.cls.detect_mult}
        for s in lab.topo.sessions(name)], window=cfg.standin_window)
    cfg.out(f"{name}: xdp-bfd listening; the bfdd stand-in adds {lab.topo.sessions_per_device} "
            f"sessions" + (f", at most {cfg.standin_window} not yet Up at a time"
                           if cfg.standin_window else ""))


def spawn_standin(lab: Lab, name: str, sessions: list[dict[str, Any]],
                  window: int = 0) -> Path:
    """lab.rig.standin in device NAME's namespace, adding SESSIONS (its --sessions entries) to
    the listening engine lab.engines[NAME], registered and stopped at teardown; WINDOW: its
    --window (0: every session at once). Returns the status file it writes
    (logs/standin-NAME.json)."""
    ns, rd, eng = lab.netns.device_ns(name), lab.rd, lab.engines[name]
    spec = rd.path / f"standin-{name}-sessions.json"
    spec.write_text(json.dumps({"sessions": sessions}))
    status = rd.logs / f"standin-{name}.json"
    proc = util.spawn(nsexec(ns, ["env", f"PYTHONPATH={util.REPO}", util.PYTHON, "-m",
                                  "lab.rig.standin", "--port", str(eng.port), "--sessions",
                                  str(spec), "--out", str(status),
                                  "--window", str(window)]))
    lab.registry.add_pid(proc.pid, "lab.rig.standin")
    lab.extra.append((f"standin {name}", lambda: util.stop_pid(proc.pid, "lab.rig.standin")))
    return status


def wait_sessions(lab: Lab, cfg: RunConfig, meta: dict[str, Any]) -> None:
    assert lab.peer is not None
    want = lab.topo.up_per_device * len(lab.topo.devices)  # shut classes never come Up
    t0 = time.monotonic()

    try:
        util.wait_until(lambda: peers_up(lab) == want or None, cfg.settle_s,
                        f"all {want} sessions Up on the peer", poll_s=0.5)
        cfg.out(f"all {want} sessions Up after {time.monotonic() - t0:.1f} s")
    except LabError as e:
        up = peers_up(lab)
        meta["warnings"].append(f"only {up}/{want} sessions Up on the peer after "
                                f"{cfg.settle_s:.0f} s; phases started anyway")
        cfg.out(f"warning: {e} ({up}/{want} Up); going on")


def snapshot(lab: Lab, meta: dict[str, Any]) -> None:
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
                addrs = set(lab.topo.session_addresses(d.name))
                views.setdefault(f"peer-counters-{d.name}", {})["session_down"] = sum(
                    r.get("session-down", 0) for r in cnt if r.get("peer") in addrs)
        except LabError as e:
            views["peer-counters"] = {"error": str(e)}
    if lab.epeer is not None:  # the engine peer's own view (its down events, its tx paths)
        meta["engine_stats"]["epeer"] = engine_stats_brief(lab.epeer.stats(timeout_s=5))
    for name, e in lab.engines.items():
        st = e.stats(timeout_s=5)
        meta["engine_stats"][name] = engine_stats_brief(st)
        views[f"{name}-engine"] = {"sessions_up": st.get("sessions_up") if st else None,
                                   "sessions_configured":
                                       st.get("sessions_configured") if st else None}
        if not e.alive():
            meta["warnings"].append(f"xdp-bfd of {name} is not running at the end "
                                    f"(exit status {e.proc.returncode if e.proc else '?'})")
    meta["final_views"] = views


def engine_stats_brief(st: dict[str, Any] | None) -> dict[str, Any] | None:
    if st is None:
        return None
    keep = {k: v for k, v in st.items() if k != "sessions"}
    keep["sessions_listed"] = len(st.get("sessions") or [])
    return keep
