"""enginelab - one engine device and a shielded stock FRR peer, for the engine's own tests and
benchmarks (test_engine_frr.py, test_engine_hold.py, tests/bench/engine_cpu.py).

    with engine_lab(topology, "engine-frr") as lab:
        lab.engines["engine"].stats()

Built from the lab's parts (lab.netns, lab.frr, lab.bird, lab.engine; bringup.start_peers):
namespaces, the peers with their sessions in their config (shielded like the demo's: FRR bfdd,
and BIRD for the classes that name it), the device's bfdd with --dplaneaddr and no
peers, the engine connected to it, then the peers added in one vtysh call (FRR 8.4.4 loses
sessions beyond 58 in a connect burst). Everything is torn down on exit, by PID and name.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from lab import util
from lab.harness import bringup
from lab.rig import frr
from lab.harness.lab import Lab
from lab.rig.engine import Engine
from lab.rig.netns import DUT_IF, Netns
from lab.rig.registry import Registry
from lab import topo as topo_mod
from lab.topo import Topology
from lab.topo_checks import engine_demand_args

REPO = Path(__file__).resolve().parents[2]

DPLANE = "ipv4:127.0.0.1:50700"
DEVICE = "engine"


def echo_topology() -> Topology:
    """topologies/classes.toml's engine device with its echo classes only (test_engine_echo.py:
    the peer's echo; test_engine_echo_own.py: ours)."""
    every = topo_mod.load(REPO / "topologies" / "classes.toml").select([DEVICE])
    return dataclasses.replace(every, classes=tuple(c for c in every.classes if c.echo))


def cfgs(topo: Topology, side: str) -> list[frr.PeerCfg]:
    """The peer blocks of the engine device's sessions, as SIDE ("peer" or "device") sees them."""
    return bringup.peer_cfgs(topo, DEVICE, side)


def up(b: frr.Bfdd) -> int:
    """Sessions Up in B's view (-1 when it does not answer)."""
    try:
        return frr.up_count(b.peers())
    except util.LabError:
        return -1


def wait_all_up(lab: Lab, timeout_s: float = 30.0) -> None:
    """Every session of the topology that comes Up (not the shut ones) Up at both ends."""
    n = lab.topo.up_per_device
    util.wait_until(lambda: bringup.peers_up(lab) == n and up(lab.duts[DEVICE]) == n or None,
                    timeout_s, f"all {n} sessions Up at both ends", poll_s=0.5)


@contextmanager
def echo_dropped(lab: Lab, dst_addresses: list[str], device: str = DEVICE) -> Iterator[None]:
    """Inside the block, UDP 3785 to DST_ADDRESSES is dropped where DEVICE sends into the wire
    (a u32 filter on its bridge port's ingress, redirected to the wire namespace's lo, where
    nothing takes it: this kernel has u32 and mirred, no flower or gact); Control and echo to
    other addresses pass. The peer's echo, returned by us, goes to the peer's addresses; our own
    goes to ours (RFC 5881 section 4)."""
    port = Netns.wire_port(device)

    def tc(*args: str) -> None:
        util.run(["ip", "netns", "exec", lab.netns.wire, "tc", *args])

    tc("qdisc", "add", "dev", port, "clsact")
    try:
        for a in dst_addresses:
            proto, ipv, plen = ("ipv6", "ip6", 128) if ":" in a else ("ip", "ip", 32)
            tc("filter", "add", "dev", port, "ingress", "protocol", proto, "u32", "match", ipv,
               "dst", f"{a}/{plen}", "match", ipv, "protocol", "17", "0xff", "match", ipv,
               "dport", "3785", "0xffff", "action", "mirred", "egress", "redirect", "dev", "lo")
        yield
    finally:
        tc("qdisc", "del", "dev", port, "clsact")


def stop_with_admin_down(lab: Lab, device: str, timeout_s: float = 5.0) -> Engine:
    """SIGTERM DEVICE's engine (exit 0 asserted), then wait until the peer shows every session
    Down with remote diagnostic "administratively down" (RFC 5880 6.8.16). Returns the engine."""
    peer, eng = lab.peer, lab.engines[device]
    assert peer is not None
    assert eng.stop() == 0

    def all_admin_down() -> bool | None:
        rows = peer.peers()
        return all(r["status"] == "down" and r["remote-diagnostic"] == "administratively down"
                   for r in rows) or None

    util.wait_until(all_admin_down, timeout_s, "every session AdminDown at the peer")
    return eng


def restart_bfdd(lab: Lab) -> frr.Bfdd:
    """Start the device's bfdd again (new random lids), with no peers; the engine reconnects."""
    dut = lab.duts[DEVICE]
    dut.rundir.mkdir(parents=True, exist_ok=True)
    dut.write_config([])
    bringup.start_bfdd(lab, dut)
    return dut


@contextmanager
def engine_lab(topo: Topology, kind: str, engine_cls: type[Engine] = Engine,
               root: Path = REPO / "results" / "runs" / "tests",
               peer_kind: str = "frr") -> Iterator[Lab]:
    """The lab above for TOPO's engine device, all sessions Up; run folder ROOT/<utc>-KIND.
    PEER_KIND "bfdpeer": build/bfdpeer is the peer instead of FRR (lab.rig.bfdpeer)."""
    build = REPO / "build"
    if peer_kind != "frr":
        topo = topo.with_peer_kind(peer_kind)
    tag = "xb" + util.run_id_hex()
    # bfdd runs as user frr: its files live where frr can reach them (not in a 0700 tmp dir).
    rd = util.RunDir.create(kind, root=root)
    util.set_command_log(rd.logs / "commands.log")
    lab = Lab(topo, rd, tag, Netns.for_topology(tag, topo, build / "xdp_pass.bpf.o"),
              Registry.create(tag))
    try:
        lab.netns.build()
        lab.registry.add_namespaces(list(lab.netns.created))
        bringup.start_peers(lab)  # the reference side must never be what fails: shielded
        dut = bringup.device_bfdd(lab, DEVICE, DPLANE)
        shut, live = bringup.split_shut(cfgs(topo, "device"))
        dut.write_config(shut)
        bringup.start_bfdd(lab, dut)
        ns = dut.ns
        eng = engine_cls(build / "xdp-bfd", ns, DUT_IF, DPLANE, rd.path / "stats.json",
                         rd.logs / "engine.log", rd.logs / "engine.stderr",
                         tuple(topo.device(DEVICE).engine_argv) +
                         tuple(engine_demand_args(topo, DEVICE)))
        lab.engines[DEVICE] = eng
        lab.registry.add_pid(eng.start(), "xdp-bfd")
        dut.add_peers(live)
        wait_all_up(lab)
        yield lab
    finally:
        problems = lab.teardown()
        assert not problems, problems
