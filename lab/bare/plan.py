"""plan - what each host of a bare-metal topology holds: its addresses on its test interface,
the BFD peers of its FRR, the engine it runs. The one place both the renderer and the checker
take these from, so what is checked is what is rendered.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..harness.bringup import bird_neighbors, needs_zebra, peer_cfgs
from ..rig import bird
from ..rig.flood import load_address
from ..rig.frr import PeerCfg
from ..topo import Device, Host, Session, Topology, slot_address

BIRD_IF = "bird0"  # BIRD's macvlan of the peer host's test interface, in a namespace of its own


@dataclass(frozen=True)
class Route:
    """`ip route replace DST via VIA dev DEV onlink`: a multihop prefix through the router the
    description names ([router] address; onlink, as the host may hold only /32 and /128
    addresses of a family)."""

    dst: str
    via: str

    def command(self, dev: str) -> str:
        return f"route replace {self.dst} via {self.via} dev {dev} onlink"


@dataclass(frozen=True)
class BirdPlan:
    """BIRD 2 on the peer host, for the classes whose peer is "bird": in network namespace
    NETNS on a macvlan (BIRD_IF) of the test interface, since FRR's bfdd and BIRD both bind
    UDP 3784 and 4784. NEIGHBORS and the timers are lab.harness.bringup.bird_neighbors'."""

    netns: str
    addresses: tuple[str, ...]
    routes: tuple[Route, ...]
    neighbors: tuple[bird.Neighbor, ...]
    single_hop: bird.Timers | None
    multihop: bird.Timers | None

    def config(self, log: str) -> str:
        return bird.config_text(list(self.neighbors), self.single_hop, self.multihop, BIRD_IF,
                                log)

    @property
    def peers(self) -> tuple[PeerCfg, ...]:
        """Its neighbours as `peer X local-address Y` blocks with BIRD's timers, for pairing
        both ends of every session (lab.bare.check)."""
        out = []
        for n in self.neighbors:
            t = self.multihop if n.multihop else self.single_hop
            assert t is not None
            out.append(PeerCfg(n.peer, n.local, t.interval_ms, t.detect_mult, n.multihop,
                               n.ifname if not n.multihop else ""))
        return tuple(out)


@dataclass(frozen=True)
class HostPlan:
    """One host's share of the topology. ADDRESSES are "address/len" (any family) on
    host.iface; PEERS the `peer X [multihop] local-address Y [interface IF]` blocks of its bfdd
    (on an engine device added with vtysh once the engine is connected: FRR 8.4.4 offers at
    most 58 sessions when the data plane connects; on a peer of kind "bfdpeer" they are its
    session list instead); ROUTES the multihop prefixes through the router; DEVICE the
    [[device]] of a dut host; BIRD the peer host's BIRD, when a class names it."""

    host: Host
    addresses: tuple[str, ...] = ()
    peers: tuple[PeerCfg, ...] = ()
    device: Device | None = None
    routes: tuple[Route, ...] = ()
    bird: BirdPlan | None = None

    @property
    def is_engine(self) -> bool:
        return self.device is not None and self.device.kind == "engine"

    @property
    def zebra(self) -> bool:
        """bfdd resolves a link-local peer's interface through zebra (lab.rig.frr)."""
        return needs_zebra(list(self.peers))


def _addrs(sessions: list[Session], side: str) -> tuple[str, ...]:
    """Each session's address at SIDE ("peer" | "device") with its length, once each."""
    return tuple(dict.fromkeys(
        f"{s.peer_address}/{s.peer_prefix_len}" if side == "peer"
        else f"{s.device_address}/{s.device_prefix_len}" for s in sessions))


def multihop_routes(t: Topology, sessions: list[Session]) -> tuple[Route, ...]:
    """The routes a host with SESSIONS needs: the multihop prefix of each family its multihop
    sessions use, via the router's address in that family (IPv6: the router's IPv4 address
    written as the lab writes a slot, fd00::/96 + its 32 bits)."""
    if t.router is None:
        return ()
    net4 = ipaddress.IPv4Network(t.router.multihop_prefix)
    out = []
    for fam in ("ipv4", "ipv6"):
        if any(s.multihop and s.family == fam for s in sessions):
            dst = (str(net4) if fam == "ipv4" else
                   f"{slot_address('ipv6', str(net4.network_address))}/{96 + net4.prefixlen}")
            out.append(Route(dst, slot_address(fam, t.router.address)))
    return tuple(out)


def _bird(t: Topology, h: Host) -> BirdPlan | None:
    if "bird" not in t.peer_kinds:
        return None
    mine = [s for s in t.sessions(t.devices[0].name) if s.cls.peer == "bird"]
    nbrs, single, multi = bird_neighbors(t, BIRD_IF)
    return BirdPlan(f"{h.netns or 'xbm'}-bird", _addrs(mine, "peer"), multihop_routes(t, mine),
                    tuple(nbrs), single, multi)


def plan_hosts(t: Topology) -> dict[str, HostPlan]:
    """{host name: HostPlan} for a topology with [hosts] (already free of conflicts()).
    The peer holds the peer addresses of the classes its runner serves (FRR bfdd or bfdpeer)
    and a block towards every device's address; BIRD's classes are BIRD's, in its own
    namespace; a dut host the addresses of its device and the mirror blocks; the load host the
    lab's load address (the subnet's last host but one: lab.rig.flood), to learn the devices'
    MACs; the capture host none (a mirror port only listens)."""
    out: dict[str, HostPlan] = {}
    for h in t.hosts:
        if h.role == "peer":
            mine = [s for s in t.sessions(t.devices[0].name) if s.cls.peer == "frr"]
            blocks = [c for d in t.devices
                      for c in peer_cfgs(t, d.name, "peer", ifname=h.iface)]
            out[h.name] = HostPlan(h, _addrs(mine, "peer"), tuple(blocks),
                                   routes=multihop_routes(t, mine), bird=_bird(t, h))
        elif h.role == "dut":
            d = t.device(h.device)
            ss = t.sessions(d.name)
            out[h.name] = HostPlan(h, _addrs(ss, "device"),
                                   tuple(peer_cfgs(t, d.name, "device", ifname=h.iface)),
                                   d,
                                   routes=multihop_routes(t, ss))
        elif h.role == "load":
            out[h.name] = HostPlan(h, (f"{load_address(t)[0]}/{t.meta.prefix_len}",))
        else:
            out[h.name] = HostPlan(h)
    return out


def local_set(addresses: tuple[str, ...]) -> set[str]:
    """The addresses of "address/len" strings, without their lengths (any family)."""
    return {str(ipaddress.ip_interface(a).ip) for a in addresses}


def stress_hosts(t: Topology) -> list[Host]:
    """The dut hosts that run each level's stress-ng: every one on real machines (a stock
    bfdd device on a machine of its own under the same load witnesses that the load bit);
    only the first when the hosts are namespaces of one machine, which share its CPUs."""
    duts = t.hosts_of("dut")
    return duts[:1] if duts and duts[0].netns else duts
