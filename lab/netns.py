"""netns - the namespace lab: a wire namespace with a bridge, a peer, and the devices under test.

    peer ns    peer0 ─veth─ to-peer   ┐
    engine ns  dut0  ─veth─ to-engine ├─ br0 (wire ns: the capture point)
    bfdd ns    dut0  ─veth─ to-bfdd   ┘

Names are unique per run (xb<6 hex>-<role>) and both veth ends are created directly inside
their namespaces, so nothing collides with another run on the same machine. Every veth
sends complete UDP checksums (tx off, platform.md section 6), and each wire-side end facing
a device holds xdp_pass in native mode: a veth delivers XDP_TX frames only to a peer with a
native XDP program (platform.md section 5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .topo import Topology
from .util import LabError, run

BRIDGE = "br0"
PEER_IF = "peer0"
DUT_IF = "dut0"


@dataclass
class Netns:
    """The namespaces of one run. build() creates them; teardown() removes what exists."""

    tag: str  # "xb" + 6 hex digits
    topo: Topology
    xdp_pass_obj: Path
    created: list[str] = field(default_factory=list)

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

    def build(self) -> None:
        if not self.xdp_pass_obj.exists():
            raise LabError(f"{self.xdp_pass_obj} missing: run make first")
        plen = self.topo.meta.prefix_len
        roles = ["wire", "peer"] + [d.name for d in self.topo.devices]
        for role in roles:
            name = self.ns(role)
            run(["ip", "netns", "add", name])
            self.created.append(name)
            run(["ip", "-n", name, "link", "set", "lo", "up"])
        w = self.wire
        run(["ip", "-n", w, "link", "add", BRIDGE, "type", "bridge", "stp_state", "0",
             "forward_delay", "0"])
        run(["ip", "-n", w, "link", "set", BRIDGE, "up"])

        self._veth(self.peer, PEER_IF, "peer")
        for a in self.topo.peer_addresses():
            run(["ip", "-n", self.peer, "addr", "add", f"{a}/{plen}", "dev", PEER_IF])
        for d in self.topo.devices:
            ns = self.device_ns(d.name)
            self._veth(ns, DUT_IF, d.name)
            for a in self.topo.device_addresses(d.name):
                run(["ip", "-n", ns, "addr", "add", f"{a}/{plen}", "dev", DUT_IF])
            # xdp-bfd's XDP_TX replies reach the wire only through a native program here.
            run(["ip", "-n", w, "link", "set", "dev", self.wire_port(d.name), "xdpdrv",
                 "obj", str(self.xdp_pass_obj), "sec", "xdp"])

    def _veth(self, ns: str, ifname: str, role: str) -> None:
        port = self.wire_port(role)
        run(["ip", "-n", ns, "link", "add", ifname, "type", "veth", "peer", "name", port,
             "netns", self.wire])
        for n, i in ((ns, ifname), (self.wire, port)):
            # complete UDP checksums on every sending veth (CHECKSUM_PARTIAL otherwise)
            run(["ip", "netns", "exec", n, "ethtool", "-K", i, "tx", "off"])
        run(["ip", "-n", self.wire, "link", "set", port, "master", BRIDGE])
        run(["ip", "-n", self.wire, "link", "set", port, "up"])
        run(["ip", "-n", ns, "link", "set", ifname, "up"])

    def teardown(self) -> list[str]:
        """Delete every namespace this run created; returns the problems met (never raises)."""
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

