"""plan - what each host of a bare-metal topology holds: its addresses on its test interface,
the BFD peers of its FRR, the engine it runs. The one place both the renderer and the checker
take these from, so what is checked is what is rendered.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..harness.bringup import peer_cfgs
from ..rig.flood import load_address
from ..rig.frr import PeerCfg
from ..topo import Device, Host, Topology


@dataclass(frozen=True)
class HostPlan:
    """One host's share of the topology. ADDRESSES are "a.b.c.d/len" on host.iface; PEERS
    the `peer X local-address Y` blocks of its bfdd (for an engine device they are added
    with vtysh once the engine is connected: FRR 8.4.4 offers at most 58 sessions when the
    data plane connects); DEVICE the [[device]] of a dut host."""

    host: Host
    addresses: tuple[str, ...] = ()
    peers: tuple[PeerCfg, ...] = ()
    device: Device | None = None

    @property
    def is_engine(self) -> bool:
        return self.device is not None and self.device.kind == "engine"


def _with_len(t: Topology, addrs: list[str]) -> tuple[str, ...]:
    return tuple(f"{a}/{t.meta.prefix_len}" for a in addrs)


def plan_hosts(t: Topology) -> dict[str, HostPlan]:
    """{host name: HostPlan} for a topology with [hosts] (already free of conflicts()).
    The peer holds the peer addresses and a block towards every device's address; a dut
    host the addresses of its device and the mirror blocks; the load host the lab's load
    address (the subnet's last host but one: lab.rig.flood), to learn the devices' MACs;
    the capture host none (a mirror port only listens)."""
    out: dict[str, HostPlan] = {}
    for h in t.hosts:
        if h.role == "peer":
            blocks = [c for d in t.devices for c in peer_cfgs(t, d.name, "peer")]
            out[h.name] = HostPlan(h, _with_len(t, t.peer_addresses()), tuple(blocks))
        elif h.role == "dut":
            d = t.device(h.device)
            out[h.name] = HostPlan(h, _with_len(t, t.device_addresses(d.name)),
                                   tuple(peer_cfgs(t, d.name, "device")), d)
        elif h.role == "load":
            out[h.name] = HostPlan(h, _with_len(t, [load_address(t)[0]]))
        else:
            out[h.name] = HostPlan(h)
    return out


def local_set(p: HostPlan) -> set[str]:
    return {str(ipaddress.IPv4Interface(a).ip) for a in p.addresses}


def stress_hosts(t: Topology) -> list[Host]:
    """The dut hosts that run each level's stress-ng: every one on real machines (a stock
    bfdd device on a machine of its own under the same load witnesses that the load bit);
    only the first when the hosts are namespaces of one machine, which share its CPUs."""
    duts = t.hosts_of("dut")
    return duts[:1] if duts and duts[0].netns else duts
