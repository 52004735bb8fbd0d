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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..topo import Topology
from ..util import LabError, run

BRIDGE = "br0"
PEER_IF = "peer0"
ADDR_BATCH_FROM = 64  # more addresses than this on one end go in through one `ip -batch`
DUT_IF = "dut0"


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


@dataclass
class Netns:
    """The namespaces of one lab. build() creates the wire and ENDS; add() one more end to a
    built lab; teardown() removes what exists."""

    tag: str
    ends: list[End]
    xdp_pass_obj: Path | None = None
    created: list[str] = field(default_factory=list)

    @classmethod
    def for_topology(cls, tag: str, topo: Topology, xdp_pass_obj: Path) -> "Netns":
        """The lab's: the peer with every peer address, each device with its addresses on
        dut0 and xdp_pass on its port (tag "xb" + 6 hex digits)."""
        plen = topo.meta.prefix_len
        ends = [End("peer", PEER_IF, tuple(f"{a}/{plen}" for a in topo.peer_addresses()))]
        ends += [End(d.name, DUT_IF, tuple(f"{a}/{plen}" for a in topo.device_addresses(d.name)),
                     xdp_pass=True) for d in topo.devices]
        return cls(tag, ends, xdp_pass_obj)

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
            self._add_ns(self.ns(role))
        w = self.wire
        run(["ip", "-n", w, "link", "add", BRIDGE, "type", "bridge", "stp_state", "0",
             "forward_delay", "0"])
        run(["ip", "-n", w, "link", "set", BRIDGE, "up"])
        for e in self.ends:
            self._wire_end(e)

    def add(self, end: End) -> str:
        """One more end on a built lab (e.g. the ladder's load namespace); returns its name."""
        self.ends.append(end)
        self._add_ns(self.ns(end.role))
        self._wire_end(end)
        return self.ns(end.role)

    def rewire(self, role: str) -> None:
        """Create ROLE's veth to the bridge again, as build() did (its interface was deleted:
        the wire-side port went with it), with its addresses and xdp_pass."""
        self._wire_end(next(e for e in self.ends if e.role == role))

    def link(self, role_a: str, if_a: str, addr_a: str, role_b: str, if_b: str,
             addr_b: str) -> None:
        """A direct veth between two ends' namespaces (no bridge, no XDP); addresses with
        their prefix length."""
        a, b = self.ns(role_a), self.ns(role_b)
        run(["ip", "-n", a, "link", "add", if_a, "type", "veth", "peer", "name", if_b,
             "netns", b])
        for ns, i, addr in ((a, if_a, addr_a), (b, if_b, addr_b)):
            run(["ip", "netns", "exec", ns, "ethtool", "-K", i, "tx", "off"])
            self._addr(ns, i, addr)
            run(["ip", "-n", ns, "link", "set", i, "up"])

    def _add_ns(self, name: str) -> None:
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
            run(["ip", "-n", ns, "-batch", "-"], input_text="\n".join(lines) + "\n",
                timeout=120)
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
