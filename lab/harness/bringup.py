"""bringup - the lab of one run brought up and taken stock of: namespaces, the capture, the
shielded peer, each device under test (stock bfdd with its peers in its config; or bfdd
--dplaneaddr with no peers, the engine connected to it, then the peers added in one vtysh call
so no connect burst exceeds FRR 8.4.4's 58 messages), all sessions Up; at the end every
daemon's own view.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from .. import util
from ..rig import capture, frr, neigh, stress
from ..rig.engine import Engine
from ..rig.bfdpeer import BfdPeer
from ..rig.netns import DUT_IF, PEER_IF
from ..topo import Topology
from ..util import LabError
from .lab import Lab, RunConfig

SHIELD_WAIT_S = 90.0  # how long to wait for deadline bandwidth another run holds


def check_prereqs(cfg: RunConfig, topo: Topology) -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (namespaces, XDP, SCHED_DEADLINE)")
    need = [cfg.build / "xdp_pass.bpf.o", cfg.build / "bfdcap"]
    if any(d.kind == "engine" for d in topo.devices):
        need.append(cfg.build / "xdp-bfd")
    if topo.peer.kind == "bfdpeer":
        need.append(cfg.build / "bfdpeer")
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        raise LabError(f"missing {', '.join(missing)}: build with make "
                       "(without the engine, --dut bfdd runs stock bfdd alone)")


def peer_cfgs(topo: Topology, device: str, side: str) -> list[frr.PeerCfg]:
    out = []
    for s in topo.sessions(device):
        if side == "peer":
            out.append(frr.PeerCfg(s.device_address, s.peer_address, s.cls.interval_ms,
                                   s.cls.detect_mult))
        else:
            out.append(frr.PeerCfg(s.peer_address, s.device_address, s.cls.interval_ms,
                                   s.cls.detect_mult))
    return out


def start(lab: Lab, cfg: RunConfig, meta: dict[str, Any]) -> None:
    topo, rd, tag = lab.topo, lab.rd, lab.tag
    cfg.out(f"lab {tag}: namespaces, bridge, veths ({', '.join(d.name for d in topo.devices)})")
    # one neighbour entry per session at each end, counted over every namespace (lab.rig.neigh)
    lab.neigh_limits = neigh.raise_for(2 * topo.sessions_per_device * len(topo.devices) + 64)
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

    start_peer(lab, cfg, meta)

    # Stock devices first: their peers are in the config. Engines last, peers added live.
    for d in sorted(topo.devices, key=lambda d: d.kind == "engine"):
        ns = lab.netns.device_ns(d.name)
        b = frr.Bfdd(f"{tag}-{d.name}", ns, rd.logs / f"frr-{d.name}",
                     dplane=d.dplane if d.kind == "engine" else None)
        lab.duts[d.name] = b
        lab.registry.add_frr(b.inst)
        if d.kind == "bfdd":
            b.write_config(peer_cfgs(topo, d.name, "device"))
            lab.registry.add_pid(b.start(), f"-N {b.inst}")
            cfg.out(f"{d.name}: stock bfdd with {topo.sessions_per_device} sessions")
            continue
        b.write_config([])  # no peers: the engine must be connected before they exist
        lab.registry.add_pid(b.start(), f"-N {b.inst}")
        eng = Engine(cfg.build / "xdp-bfd", ns, DUT_IF, d.dplane,
                     rd.path / f"{d.name}-stats.json", rd.logs / f"{d.name}.log",
                     rd.logs / f"{d.name}.stderr", tuple(d.engine_argv))
        lab.engines[d.name] = eng
        pid = eng.start()
        lab.registry.add_pid(pid, "xdp-bfd")
        meta["engine_attach"][d.name] = eng.attach_line()
        # FRR 8.4.4 takes longer per peer the more it holds: 128 more took 30 s past 500
        b.add_peers(peer_cfgs(topo, d.name, "device"), timeout=180)
        cfg.out(f"{d.name}: xdp-bfd pid {pid} connected to bfdd; {topo.sessions_per_device} "
                f"peers added. {eng.attach_line() or 'no kernel-tx attach line yet'}")


def start_peer(lab: Lab, cfg: RunConfig, meta: dict[str, Any]) -> None:
    """The peer of the topology's [peer] kind, with every device's sessions, shielded."""
    topo, rd, tag = lab.topo, lab.rd, lab.tag
    meta["peer_kind"] = topo.peer.kind
    if topo.peer.kind == "bfdpeer":
        fast = BfdPeer(cfg.build / "bfdpeer", lab.netns.peer, PEER_IF, rd.logs)
        n = fast.write_sessions(topo)
        lab.peer = fast
        pid = fast.start()
        lab.registry.add_pid(pid, "bfdpeer")
        what = "bfdpeer"
    else:
        peer_blocks = [c for d in topo.devices for c in peer_cfgs(topo, d.name, "peer")]
        n = len(peer_blocks)
        bfdd = frr.Bfdd(f"{tag}-peer", lab.netns.peer, rd.logs / "frr-peer")
        lab.peer = bfdd
        bfdd.write_config(peer_blocks)
        lab.registry.add_frr(bfdd.inst)
        pid = bfdd.start()
        lab.registry.add_pid(pid, f"-N {bfdd.inst}")
        what = "peer bfdd"
    meta["shield"]["peer"] = stress.shield(pid, what, wait_s=SHIELD_WAIT_S)
    if meta["shield"]["peer"] != "deadline":
        # FIFO 99 shares RT throttling with the FIFO hogs: the peer would stall under L4 and
        # the run be VOID. Do not load the machine for nothing.
        raise LabError(f"the {what} could not get SCHED_DEADLINE (got "
                       f"{meta['shield']['peer']}; deadline threads now: "
                       f"{stress.deadline_holders()}); see {rd.logs / 'commands.log'}")
    cfg.out(f"{what}: {n} sessions, shielded with {meta['shield']['peer']}; "
            f"tcpdump shielded with {meta['shield']['tcpdump']}")


def wait_sessions(lab: Lab, cfg: RunConfig, meta: dict[str, Any]) -> None:
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
                addrs = set(lab.topo.device_addresses(d.name))
                views.setdefault(f"peer-counters-{d.name}", {})["session_down"] = sum(
                    r.get("session-down", 0) for r in cnt if r.get("peer") in addrs)
        except LabError as e:
            views["peer-counters"] = {"error": str(e)}
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
