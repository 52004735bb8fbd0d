"""enginelab - one engine device and a shielded stock FRR peer, for the engine's own tests and
benchmarks (test_engine_frr.py, test_engine_hold.py, tests/bench/engine_cpu.py).

    with engine_lab(topology, "engine-frr") as lab:
        lab.engines["engine"].stats()

Built from the lab's parts (lab.netns, lab.frr, lab.engine): namespaces, the peer bfdd with its
sessions in its config (shielded like the demo's), the device's bfdd with --dplaneaddr and no
peers, the engine connected to it, then the peers added in one vtysh call (FRR 8.4.4 loses
sessions beyond 58 in a connect burst). Everything is torn down on exit, by PID and name.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from lab import util
from lab.rig import frr, stress
from lab.harness.lab import Lab
from lab.rig.engine import Engine
from lab.rig.bfdpeer import BfdPeer
from lab.rig.netns import DUT_IF, PEER_IF, Netns
from lab.rig.registry import Registry
from lab.topo import Topology

REPO = Path(__file__).resolve().parents[2]

DPLANE = "ipv4:127.0.0.1:50700"
DEVICE = "engine"


def cfgs(topo: Topology, side: str) -> list[frr.PeerCfg]:
    """The peer blocks of the engine device's sessions, as SIDE ("peer" or "device") sees them."""
    out = []
    for s in topo.sessions(DEVICE):
        a, b = (s.device_address, s.peer_address) if side == "peer" else \
            (s.peer_address, s.device_address)
        out.append(frr.PeerCfg(a, b, s.cls.interval_ms, s.cls.detect_mult))
    return out


def up(b: frr.Bfdd) -> int:
    """Sessions Up in B's view (-1 when it does not answer)."""
    try:
        return frr.up_count(b.peers())
    except util.LabError:
        return -1


def wait_all_up(lab: Lab, timeout_s: float = 30.0) -> None:
    """Every session of the topology Up at both ends."""
    n = lab.topo.sessions_per_device
    assert lab.peer is not None
    util.wait_until(lambda: up(lab.peer) == n and up(lab.duts[DEVICE]) == n or None,
                    timeout_s, f"all {n} sessions Up at both ends", poll_s=0.5)


def restart_bfdd(lab: Lab) -> frr.Bfdd:
    """Start the device's bfdd again (new random lids), with no peers; the engine reconnects."""
    dut = lab.duts[DEVICE]
    dut.rundir.mkdir(parents=True, exist_ok=True)
    dut.write_config([])
    lab.registry.add_pid(dut.start(), f"-N {dut.inst}")
    return dut


@contextmanager
def engine_lab(topo: Topology, kind: str, engine_cls: type[Engine] = Engine,
               root: Path = REPO / "results" / "runs" / "tests",
               peer_kind: str = "frr") -> Iterator[Lab]:
    """The lab above for TOPO's engine device, all sessions Up; run folder ROOT/<utc>-KIND.
    PEER_KIND "bfdpeer": build/bfdpeer is the peer instead of FRR (lab.rig.bfdpeer)."""
    build = REPO / "build"
    tag = "xb" + util.run_id_hex()
    # bfdd runs as user frr: its files live where frr can reach them (not in a 0700 tmp dir).
    rd = util.RunDir.create(kind, root=root)
    util.set_command_log(rd.logs / "commands.log")
    lab = Lab(topo, rd, tag, Netns.for_topology(tag, topo, build / "xdp_pass.bpf.o"),
              Registry.create(tag))
    try:
        lab.netns.build()
        lab.registry.add_namespaces(list(lab.netns.created))
        if peer_kind == "bfdpeer":
            fast = BfdPeer(build / "bfdpeer", lab.netns.peer, PEER_IF, rd.logs)
            fast.write_sessions(topo)
            lab.peer = fast  # type: ignore[assignment]
            pid = fast.start()
            lab.registry.add_pid(pid, "bfdpeer")
        else:
            lab.peer = frr.Bfdd(f"{tag}-peer", lab.netns.peer, rd.logs / "frr-peer")
            lab.peer.write_config(cfgs(topo, "peer"))
            lab.registry.add_frr(lab.peer.inst)
            pid = lab.peer.start()
            lab.registry.add_pid(pid, f"-N {lab.peer.inst}")
        stress.shield(pid, "peer")  # the reference side must never be what fails
        ns = lab.netns.device_ns(DEVICE)
        dut = frr.Bfdd(f"{tag}-{DEVICE}", ns, rd.logs / f"frr-{DEVICE}", dplane=DPLANE)
        dut.write_config([])
        lab.duts[DEVICE] = dut
        lab.registry.add_frr(dut.inst)
        lab.registry.add_pid(dut.start(), f"-N {dut.inst}")
        eng = engine_cls(build / "xdp-bfd", ns, DUT_IF, DPLANE, rd.path / "stats.json",
                         rd.logs / "engine.log", rd.logs / "engine.stderr",
                         tuple(topo.device(DEVICE).engine_argv))
        lab.engines[DEVICE] = eng
        lab.registry.add_pid(eng.start(), "xdp-bfd")
        dut.add_peers(cfgs(topo, "device"))
        wait_all_up(lab)
        yield lab
    finally:
        problems = lab.teardown()
        assert not problems, problems
