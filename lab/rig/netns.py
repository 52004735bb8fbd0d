"""netns - the one namespace-lab builder: a wire namespace with a bridge, and one namespace per
end, each joined to the bridge by a veth. The lab and every test that needs namespaces use it.

    peer ns    peer0 ─veth─ to-peer   ┐
    engine ns  dut0  ─veth─ to-engine ├─ br0 (wire ns: the capture point)
    bfdd ns    dut0  ─veth─ to-bfdd   ┘

Names are unique per run (<tag>-<role>, the lab's tag being xb<6 hex>) and both veth ends are
created directly inside their namespaces, so nothing collides with another run on the same
machine. Every veth sends complete UDP checksums (tx off, platform.md section 6), and a
wire-side port facing an XDP sender holds xdp_pass in native mode: a veth delivers XDP_TX frames
only to a peer with a native XDP program (platform.md section 5). IPv6 addresses are added
with nodad, so they are usable at once.

Multihop classes (RFC 5883) add a router namespace on the bridge (rtr0) with a direct veth to
each peer namespace (FRR's "peer", BIRD's "bird"); it forwards, so it decrements the TTL:

    peer ns (lo: multihop addrs)  rtr0 ─veth─ rtr-frr  ┐ router ns ── rtr0 ── br0 ── dut0
    bird ns (lo: multihop addrs)  rtr0 ─veth─ rtr-bird ┘              (device multihop addrs
                                                                       as host addresses)

A device's multihop addresses sit on dut0 as host addresses (the router finds them by ARP/ND on
the bridge, XDP sees their packets on dut0); a peer's sit on its lo. Neither end holds a
prefix covering the other's, so their packets go through the router both ways.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import ipaddress

from ..topo import Topology, slot_address
from ..util import LabError, run

BRIDGE = "br0"
PEER_IF = "peer0"
ADDR_BATCH_FROM = 64  # more addresses than this on one end go in through one `ip -batch`
DUT_IF = "dut0"
ROUTER_IF = "rtr0"
ROUTER_LL = "fe80::1"  # the router's link-local on the bridge: every end's IPv6 next hop
# The router's veth to each peer namespace (RFC 2544's benchmarking range): router, peer.
PEER_LINKS = {"peer": (("198.18.0.1/30", "fd00:198:18::1/126"),
                       ("198.18.0.2/30", "fd00:198:18::2/126")),
              "bird": (("198.18.0.5/30", "fd00:198:18::5/126"),
                       ("198.18.0.6/30", "fd00:198:18::6/126"))}
# the namespace role of each peer kind ("engine": bfdd --dplaneaddr plus xdp-bfd)
PEER_ROLES = {"frr": "peer", "bird": "bird", "engine": "epeer"}


@dataclass(frozen=True)
class End:
    """One namespace on the bridge: ROLE names it, IFNAME is its veth end, ADDRS are
    "address/prefix" (IPv4 or IPv6), MAC is set when given, XDP_PASS puts xdp_pass on its
    wire-side port (needed when it sends XDP_TX frames)."""

    role: str
    ifname: str
    addrs: tuple[str, ...] = ()
    mac: str = ""
    xdp_pass: bool = False
    lo_addrs: tuple[str, ...] = ()  # "address/prefix" on lo (a peer's multihop addresses)
    forwarding: bool = False  # a router: forwards IPv4 and IPv6


@dataclass(frozen=True)
class Link:
    """A direct veth between two ends (no bridge): ROLE_A's IF_A with ADDRS_A, and B's."""

    role_a: str
    if_a: str
    addrs_a: tuple[str, ...]
    role_b: str
    if_b: str
    addrs_b: tuple[str, ...]


@dataclass(frozen=True)
class Route:
    """`ip route add DST [via VIA] dev DEV` in ROLE's namespace (VIA empty: on-link)."""

    role: str
    dst: str
    via: str
    dev: str


@dataclass
class Netns:
    """The namespaces of one lab. build() creates the wire and ENDS; add() one more end to a
    built lab; teardown() removes what exists."""

    tag: str
    ends: list[End]
    xdp_pass_obj: Path | None = None
    created: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)

    @classmethod
    def for_topology(cls, tag: str, topo: Topology, xdp_pass_obj: Path) -> "Netns":
        """The lab's: each peer kind's namespace ("peer" for FRR, always; "bird" when a class
        names BIRD) with its sessions' addresses, each device with its addresses on dut0 and
        xdp_pass on its port, and the router when a class is multihop (tag "xb" + 6 hex).
        With an echo class, the peer and stock bfdd devices forward (IPv4 echo is self-addressed
        and comes back only through a forwarder, RFC 5881 4); the engine's do not: its XDP
        program returns echo itself, whatever the forwarding settings."""
        sessions = [s for d in topo.devices for s in topo.sessions(d.name)]
        echo = any(c.echo for c in topo.classes)
        ends = []
        for kind, role in PEER_ROLES.items():
            if kind != "frr" and kind not in topo.peer_kinds:
                continue
            mine = [s for s in topo.sessions(topo.devices[0].name) if s.cls.peer == kind]
            ends.append(End(role, PEER_IF,
                            _unique(f"{s.peer_address}/{s.peer_prefix_len}" for s in mine
                                    if not s.multihop),
                            lo_addrs=_unique(f"{s.peer_address}/{s.peer_prefix_len}"
                                             for s in mine if s.multihop),
                            xdp_pass=kind == "engine",  # its engine sends XDP_TX frames
                            forwarding=echo))
        ends += [End(d.name, DUT_IF,
                     _unique(f"{s.device_address}/{s.device_prefix_len}"
                             for s in topo.sessions(d.name)), xdp_pass=True,
                     forwarding=echo and d.kind == "bfdd")
                 for d in topo.devices]
        ns = cls(tag, ends, xdp_pass_obj)
        mh = [s for s in sessions if s.multihop]
        if mh and topo.router is not None:
            ns._add_router(topo, mh)
        return ns

    def _add_router(self, topo: Topology, mh: list) -> None:
        r = topo.router
        assert r is not None
        plen = topo.meta.prefix_len
        self.ends.append(End("router", ROUTER_IF,
                             (f"{r.address}/{plen}",
                              f"{slot_address('ipv6', r.address)}/{96 + plen}",
                              f"{ROUTER_LL}/64"), forwarding=True))
        net4 = ipaddress.IPv4Network(r.multihop_prefix)
        net6 = f"{slot_address('ipv6', str(net4.network_address))}/{96 + net4.prefixlen}"
        kinds = sorted({s.cls.peer for s in mh})
        for kind in kinds:
            role = PEER_ROLES[kind]
            rtr, far = PEER_LINKS[role]
            self.links.append(Link("router", f"rtr-{role}", rtr, role, ROUTER_IF, far))
            # the peer reaches every multihop address through the router
            self.routes += [Route(role, str(net4), rtr[0].split("/")[0], ROUTER_IF),
                            Route(role, net6, rtr[1].split("/")[0], ROUTER_IF)]
        for d in topo.devices:
            self.routes += [Route(d.name, str(net4), r.address, DUT_IF),
                            Route(d.name, net6, ROUTER_LL, DUT_IF)]
        for s in mh:
            role = PEER_ROLES[s.cls.peer]
            far = PEER_LINKS[role][1][0 if s.family == "ipv4" else 1].split("/")[0]
            self.routes += [Route("router", s.peer_address, far, f"rtr-{role}"),
                            Route("router", s.device_address, "", ROUTER_IF)]
        self.routes = list(dict.fromkeys(self.routes))  # every device shares the peer's

    def ns(self, role: str) -> str:
        return f"{self.tag}-{role}"

    @property
    def wire(self) -> str:
        return self.ns("wire")

    @property
    def peer(self) -> str:
        return self.ns("peer")

    def device_ns(self, device: str) -> str:
        return self.ns(device)

    @staticmethod
    def wire_port(role: str) -> str:
        return f"to-{role}"

    def roles(self) -> list[str]:
        return ["wire"] + [e.role for e in self.ends]

    def build(self) -> None:
        if any(e.xdp_pass for e in self.ends) and (self.xdp_pass_obj is None
                                                   or not self.xdp_pass_obj.exists()):
            raise LabError(f"{self.xdp_pass_obj} missing: run make first")
        for role in self.roles():
            self.add_ns(self.ns(role))
        w = self.wire
        run(["ip", "-n", w, "link", "add", BRIDGE, "type", "bridge", "stp_state", "0",
             "forward_delay", "0"])
        run(["ip", "-n", w, "link", "set", BRIDGE, "up"])
        # The wire is a switch, not a firewall: bridged frames skip iptables/ip6tables/arptables
        # (br_netfilter, built into this kernel, per namespace). On, its hooks were a fifth of
        # what each packet cost its sender (perf on bfdpeer at 16,384 sessions); -e: a kernel
        # without br_netfilter has no such keys.
        run(nsexec(w, ["sysctl", "-qew", "net.bridge.bridge-nf-call-iptables=0",
                       "net.bridge.bridge-nf-call-ip6tables=0",
                       "net.bridge.bridge-nf-call-arptables=0"]))
        for e in self.ends:
            self._wire_end(e)
            self._end_setup(e)
        for k in self.links:
            self.link(k.role_a, k.if_a, k.addrs_a, k.role_b, k.if_b, k.addrs_b)
        for r in self.routes:
            self._route(r)

    def _route(self, r: Route) -> None:
        run(["ip", "-n", self.ns(r.role), "route", "add", r.dst]
            + (["via", r.via] if r.via else []) + ["dev", r.dev])

    def _end_setup(self, e: End) -> None:
        """What rewire() must not repeat: lo addresses, forwarding."""
        ns = self.ns(e.role)
        for a in e.lo_addrs:
            self._addr(ns, "lo", a)
        if e.forwarding:
            run(nsexec(ns, ["sysctl", "-qw", "net.ipv4.ip_forward=1",
                            "net.ipv6.conf.all.forwarding=1", "net.ipv4.conf.all.rp_filter=0",
                            "net.ipv4.conf.default.rp_filter=0"]))

    def add(self, end: End) -> str:
        """One more end on a built lab (e.g. the ladder's load namespace); returns its name."""
        self.ends.append(end)
        self.add_ns(self.ns(end.role))
        self._wire_end(end)
        self._end_setup(end)
        return self.ns(end.role)

    def rewire(self, role: str) -> None:
        """Create ROLE's veth to the bridge again, as build() did (its interface was deleted:
        the wire-side port went with it), with its addresses, xdp_pass and routes."""
        end = next(e for e in self.ends if e.role == role)
        self._wire_end(end)
        for r in self.routes:  # the routes through it went with it
            if r.role == role and r.dev == end.ifname:
                self._route(r)

    def link(self, role_a: str, if_a: str, addr_a: str | tuple[str, ...], role_b: str,
             if_b: str, addr_b: str | tuple[str, ...]) -> None:
        """A direct veth between two ends' namespaces (no bridge, no XDP); addresses (one, or
        a tuple) with their prefix length."""
        a, b = self.ns(role_a), self.ns(role_b)
        run(["ip", "-n", a, "link", "add", if_a, "type", "veth", "peer", "name", if_b,
             "netns", b])
        for ns, i, addrs in ((a, if_a, addr_a), (b, if_b, addr_b)):
            run(["ip", "netns", "exec", ns, "ethtool", "-K", i, "tx", "off"])
            for addr in (addrs,) if isinstance(addrs, str) else addrs:
                self._addr(ns, i, addr)
            run(["ip", "-n", ns, "link", "set", i, "up"])

    def add_ns(self, name: str) -> None:
        """Create namespace NAME with lo up, recorded for teardown (also used by lab.bare's
        rehearsal for its capture host)."""
        run(["ip", "netns", "add", name])
        self.created.append(name)
        run(["ip", "-n", name, "link", "set", "lo", "up"])

    @staticmethod
    def _addr(ns: str, ifname: str, addr: str) -> None:
        run(["ip", "-n", ns, "addr", "add", addr, "dev", ifname]
            + (["nodad"] if ":" in addr else []))

    def _wire_end(self, e: End) -> None:
        ns, port = self.ns(e.role), self.wire_port(e.role)
        run(["ip", "-n", ns, "link", "add", e.ifname, "type", "veth", "peer", "name", port,
             "netns", self.wire])
        for n, i in ((ns, e.ifname), (self.wire, port)):
            # complete UDP checksums on every sending veth (CHECKSUM_PARTIAL otherwise)
            run(["ip", "netns", "exec", n, "ethtool", "-K", i, "tx", "off"])
        if e.mac:
            run(["ip", "-n", ns, "link", "set", e.ifname, "address", e.mac])
        run(["ip", "-n", self.wire, "link", "set", port, "master", BRIDGE])
        run(["ip", "-n", self.wire, "link", "set", port, "up"])
        run(["ip", "-n", ns, "link", "set", e.ifname, "up"])
        if len(e.addrs) > ADDR_BATCH_FROM:
            # one `ip -batch` for many: 1,024 addresses one command each take half a minute
            lines = [f"addr add {a} dev {e.ifname}" + (" nodad" if ":" in a else "")
                     for a in e.addrs]
            # the kernel's insert is linear in the device's addresses: 65,536 took 59-155 s
            # here, so the bound grows with the batch
            run(["ip", "-n", ns, "-batch", "-"], input_text="\n".join(lines) + "\n",
                timeout=120 + len(lines) / 50)
        else:
            for a in e.addrs:
                self._addr(ns, e.ifname, a)
        if e.xdp_pass:
            # XDP_TX replies reach the wire only through a native program here.
            run(["ip", "-n", self.wire, "link", "set", "dev", port, "xdpdrv",
                 "obj", str(self.xdp_pass_obj), "sec", "xdp"])

    def teardown(self) -> list[str]:
        """Delete every namespace this lab created; returns the problems met (never raises)."""
        problems: list[str] = []
        for name in reversed(self.created):
            try:
                run(["ip", "netns", "del", name], timeout=20)
            except LabError as e:
                if Path(f"/run/netns/{name}").exists():
                    problems.append(str(e))
        self.created.clear()
        return problems


def _unique(addrs) -> tuple[str, ...]:
    return tuple(dict.fromkeys(addrs))


def nsexec(ns: str, argv: list[str]) -> list[str]:
    """ARGV run inside NS via `ip netns exec` (remounts /sys; fine for everything but bpffs)."""
    return ["ip", "netns", "exec", ns, *argv]


def nsenter(ns: str, argv: list[str]) -> list[str]:
    """ARGV run inside NS via nsenter --net: keeps the host /sys/fs/bpf (platform.md section 8)."""
    return ["nsenter", f"--net=/run/netns/{ns}", *argv]


def exists(ns: str) -> bool:
    return Path(f"/run/netns/{ns}").exists()


def list_lab_namespaces(prefix: str = "xb") -> list[str]:
    """Namespaces that look like lab runs (xb<6 hex>-role)."""
    try:
        names = sorted(p.name for p in Path("/run/netns").iterdir())
    except OSError:
        return []
    out = []
    for n in names:
        head, _, _ = n.partition("-")
        if head.startswith(prefix) and len(head) == len(prefix) + 6:
            try:
                int(head[len(prefix):], 16)
            except ValueError:
                continue
            out.append(n)
    return out
