"""topo - topology descriptions: frozen dataclasses loaded from topologies/*.toml.

A topology names the peer, the devices under test and the session classes. Every device gets
the same sessions from the same peer. A misspelt or missing key fails at load.

    [topology]  name, prefix_len
    [peer]      first_address; kind ("frr": FRR bfdd, the default | "bfdpeer": build/bfdpeer)
                serves the classes whose peer is "frr"
    [router]    address, multihop_prefix (only when a class is multihop)
    [[device]]  name, kind ("engine" | "bfdd"), first_address, dplane and engine_args (engine only)
    [[class]]   name, interval_ms, detect_mult, count; optional: family ("ipv4" | "ipv6" |
                "ipv6-ll"), multihop, peer ("frr" | "bird" | "engine"), peer_interval_ms,
                peer_detect_mult, echo and echo_interval_ms (both ends; single-hop FRR only),
                and per end ("device" | "peer" | "both"): passive, admin_down, demand

Session classes. interval_ms and detect_mult are the device's timers; peer_interval_ms and
peer_detect_mult (0: the same) the peer's, so a class may be asymmetric. family picks how a
session's address slot (below) is written: ipv4 as is; ipv6 as fd00::<the 32 bits>/(96 +
prefix_len); ipv6-ll as fe80::<the 32 bits>/64 on the bridge link, scoped by its interface.
A multihop class (RFC 5883) runs through the router namespace: both ends hold the slot's address
moved into [router] multihop_prefix (same host bits), as a host address, and reach the other
end only through the router, which decrements the TTL. peer names the implementation at the
far end: FRR 8.4.4 bfdd, BIRD 2 (its own namespace on the same bridge), or another engine (FRR
bfdd --dplaneaddr plus build/xdp-bfd in an "epeer" namespace: two engines facing each other;
single hop only, as its engine attaches to its one link). min_ttl is the
lowest TTL the device accepts on a multihop session (bfdd's minimum-ttl, default 254): BIRD 2
sends multihop packets with the system's default TTL (64), so its multihop classes need 63.

[hosts.NAME] (bare metal only, lab.bare): role ("dut" | "peer" | "load" | "capture"), ssh,
iface, device (dut), ssh_user, nproc, netns (docs/baremetal.md).

Addressing. FRR 8.4.4 keys a single-hop peer by (dest-addr, interface, vrf) only
(frr-bfdd.yang: `key "dest-addr interface vrf"`): a second `peer X local-address B` for the
same X silently rewrites the first. So every session needs a destination address of its own
at both ends: session i of a device runs between peer address first+i and device address
first+i, and each side holds one address per session on its single link.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, TypeVar

from .topo_checks import (TopologyError, check_bird_timers, check_ends, check_router,
                          ends_conflicts)

__all__ = ["TopologyError"]

DEVICE_KINDS = ("engine", "bfdd")
HOST_ROLES = ("dut", "peer", "load", "capture")
FAMILIES = ("ipv4", "ipv6", "ipv6-ll")
PEER_KINDS = ("frr", "bird", "engine")
# What serves the classes whose peer is "frr": FRR bfdd itself or build/bfdpeer ([peer] kind).
PEER_RUNNERS = ("frr", "bfdpeer")
V6_GLOBAL = ipaddress.IPv6Address("fd00::")  # the slot's 32 bits go in the low bits
V6_LINK_LOCAL = ipaddress.IPv6Address("fe80::")

T = TypeVar("T")


@dataclass(frozen=True)
class Meta:
    name: str
    prefix_len: int  # every lab address sits in one subnet of this length, on one bridge


@dataclass(frozen=True)
class Peer:
    first_address: str  # the peer holds first_address .. first_address + sessions - 1
    kind: str = "frr"  # "frr": stock bfdd, shielded; "bfdpeer": build/bfdpeer (docs/bfdpeer.md)


@dataclass(frozen=True)
class Router:
    """The router namespace multihop classes run through (RFC 5883): on the bridge at ADDRESS
    (IPv4, in the lab's subnet; its IPv6 twin is derived like a session's), forwarding between
    the devices and each peer. Multihop sessions' addresses live in MULTIHOP_PREFIX (IPv4, the
    lab's prefix length), outside the bridge's subnet, so nothing reaches them on-link."""

    address: str
    multihop_prefix: str


@dataclass(frozen=True)
class Device:
    name: str  # "engine" | "bfdd" | any other label; used for namespaces and bfdcap tags
    kind: str  # "engine": bfdd --dplaneaddr plus xdp-bfd; "bfdd": stock bfdd in software
    first_address: str  # the device holds first_address .. first_address + sessions - 1
    dplane: str = "ipv4:127.0.0.1:50700"  # bfdd --dplaneaddr (server mode); engine only
    engine_args: str = ""  # more xdp-bfd options, e.g. "--spread-pass"; engine only

    @property
    def engine_argv(self) -> list[str]:
        return shlex.split(self.engine_args)


@dataclass(frozen=True)
class SessionClass:
    name: str  # "10ms", ...: the key under which results are reported
    interval_ms: int  # desired min TX = required min RX
    detect_mult: int
    count: int  # sessions of this class per device
    family: str = "ipv4"  # "ipv4" | "ipv6" (global) | "ipv6-ll" (link-local, interface-scoped)
    multihop: bool = False  # RFC 5883: UDP 4784 through the router namespace
    peer: str = "frr"  # the implementation at the far end: "frr" | "bird" | "engine"
    peer_interval_ms: int = 0  # the peer's desired min TX = required min RX; 0: interval_ms
    peer_detect_mult: int = 0  # the peer's Detect Mult; 0: detect_mult
    min_ttl: int = 0  # multihop: the lowest TTL the device accepts (bfdd's minimum-ttl); 0: 254
    echo: bool = False  # echo-mode at both ends (BIRD 2 has none; multihop none, RFC 5883)
    echo_interval_ms: int = 50  # echo transmit and receive interval at both ends
    # Per end (lab.topo_checks.ENDS: "", "device", "peer", "both"), RFC 5880: the Passive role
    # (6.1), shut (6.8.16, AdminDown), Demand mode (6.6; the engine's --demand, bfdpeer's).
    passive: str = ""
    admin_down: str = ""
    demand: str = ""

    @property
    def peer_timers(self) -> tuple[int, int]:
        """(interval_ms, detect_mult) the peer is configured with."""
        return (self.peer_interval_ms or self.interval_ms,
                self.peer_detect_mult or self.detect_mult)

    @property
    def budget_ms(self) -> int:
        """Detection time of the device's end (RFC 5880 6.8.4): the peer's Detect Mult times
        the slower of our Required Min RX and the peer's Desired Min TX."""
        peer_ms, peer_mult = self.peer_timers
        return max(self.interval_ms, peer_ms) * peer_mult

    @property
    def asymmetric(self) -> bool:
        """The peer's timers differ from the device's."""
        return self.peer_timers != (self.interval_ms, self.detect_mult)

    @property
    def comes_up(self) -> bool:
        """Whether the class's sessions ever come Up: not when either end is shut (6.8.16)."""
        return not self.admin_down

    def demand_on(self, device_kind: str) -> bool:
        """Whether Demand mode is asked for on a session of this class on a device of
        DEVICE_KIND: at the peer's end, or at the device's when the device is an engine (stock
        bfdd 8.4.4 cannot ask for it, so there the class runs without)."""
        return bool(self.demand) and (self.demand != "device" or device_kind == "engine")

    @property
    def report(self) -> dict[str, Any]:
        """report_on() an engine device."""
        return self.report_on("engine")

    def report_on(self, device_kind: str) -> dict[str, Any]:
        """What every report says of the class on a device of DEVICE_KIND (issue 8 item 11);
        demand: asked for at either end (demand_on); passive, admin_down: at which end ("",
        "device", "peer")."""
        return {"family": self.family, "multihop": self.multihop, "echo": self.echo,
                "demand": self.demand_on(device_kind), "asymmetric": self.asymmetric,
                "peer": self.peer, "passive": self.passive, "admin_down": self.admin_down}

    @property
    def label(self) -> str:
        """family/hop/peer, e.g. "ipv6-ll 1hop bird"."""
        return f"{self.family} {'multihop' if self.multihop else '1hop'} {self.peer}"


@dataclass(frozen=True)
class Session:
    device: str  # Device.name
    cls: SessionClass
    peer_address: str  # as the family writes it (no scope: see ifname)
    device_address: str
    slot: int = 0  # the session's index among the device's sessions
    peer_prefix_len: int = 32  # the length each end's address is added with
    device_prefix_len: int = 32

    @property
    def family(self) -> str:
        return self.cls.family

    @property
    def multihop(self) -> bool:
        return self.cls.multihop


def slot_address(family: str, v4: str, multihop_net: str = "") -> str:
    """The address session slot V4 (an IPv4 address of the lab's subnet) stands for in FAMILY:
    moved into MULTIHOP_NET's network (same host bits) when given; then IPv6 global fd00::/96
    or link-local fe80::/64 with the 32 bits in the low bits."""
    a = ipaddress.IPv4Address(v4)
    if multihop_net:
        net = ipaddress.IPv4Network(multihop_net)
        a = net.network_address + (int(a) & int(net.hostmask))
    if family == "ipv4":
        return str(a)
    base = V6_LINK_LOCAL if family == "ipv6-ll" else V6_GLOBAL
    return str(ipaddress.IPv6Address(int(base) | int(a)))


@dataclass(frozen=True)
class Host:
    """A machine of the bare-metal testbed ([hosts.NAME]; lab.bare renders it to Ansible)."""

    name: str  # the inventory name (the table's key)
    role: str  # one of HOST_ROLES
    ssh: str  # how Ansible reaches it (ansible_host): a DNS name or an address
    iface: str  # the test interface: the link to the switch (capture: the mirror port)
    device: str = ""  # dut only: the [[device]] this host runs (one device per machine)
    ssh_user: str = "root"
    nproc: int = 0  # dut: its CPUs, which scale the ladder's stress-ng counts (0: as written)
    netns: str = ""  # run this host's tasks in this network namespace (one-machine rehearsal)


@dataclass(frozen=True)
class Conflict:
    """One problem of a description: KIND names its sort (CONFLICT_KINDS), MESSAGE says
    where and what."""

    kind: str
    message: str


# Every sort of problem `python3 -m lab topo check` names (docs/baremetal.md).
CONFLICT_KINDS = ("limits", "address-range", "address-overlap", "name", "engine-args",
                  "host-role", "host-missing", "host-device", "host-duplicate",
                  "session-count", "port", "session-class", "session-mismatch")


@dataclass(frozen=True)
class Topology:
    meta: Meta
    peer: Peer
    devices: tuple[Device, ...]
    classes: tuple[SessionClass, ...]
    source: str = ""
    router: Router | None = None
    hosts: tuple[Host, ...] = ()  # [hosts]: empty for a namespace-only description

    @property
    def sessions_per_device(self) -> int:
        return sum(c.count for c in self.classes)

    @property
    def up_per_device(self) -> int:
        """Sessions per device that come Up (SessionClass.comes_up: not the shut ones)."""
        return sum(c.count for c in self.classes if c.comes_up)

    def _range(self, first: str) -> list[str]:
        a = ipaddress.IPv4Address(first)
        return [str(a + i) for i in range(self.sessions_per_device)]

    def peer_addresses(self) -> list[str]:
        return self._range(self.peer.first_address)

    def device_addresses(self, device: str) -> list[str]:
        return self._range(self.device(device).first_address)

    def session_addresses(self, device: str) -> list[str]:
        """Every address DEVICE holds, as its sessions write them (any family)."""
        return [s.device_address for s in self.sessions(device)]

    def peer_session_addresses(self) -> list[str]:
        """Every address the peer holds, as the sessions write them (any family, one per
        slot: the devices share them)."""
        return [s.peer_address for s in self.sessions(self.devices[0].name)]

    def peer_prefix(self) -> str:
        """Smallest prefix holding every peer address, e.g. '10.77.1.0/26' for .1-.32."""
        return _cover(self.peer_addresses())

    def device_prefix(self, device: str) -> str:
        """Smallest prefix holding every address of DEVICE."""
        return _cover(self.device_addresses(device))

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        raise TopologyError(f"{self.source}: no device named {name!r}")

    def sessions(self, device: str) -> list[Session]:
        """The device's sessions in class order: class 0 takes the first address slots. Each
        session's addresses are its slots written in its class's family (slot_address)."""
        dev = self.device(device)
        pairs = list(zip(self.peer_addresses(), self.device_addresses(device)))
        out = []
        for c in self.classes:
            for _ in range(c.count):
                i = len(out)
                mh = self.router.multihop_prefix if c.multihop and self.router else ""
                plen = {"ipv4": self.meta.prefix_len, "ipv6": 96 + self.meta.prefix_len,
                        "ipv6-ll": 64}[c.family]
                if c.multihop:  # host addresses: only the router reaches them
                    plen = 32 if c.family == "ipv4" else 128
                out.append(Session(dev.name, c, slot_address(c.family, pairs[i][0], mh),
                                   slot_address(c.family, pairs[i][1], mh), i, plen, plen))
        return out

    @property
    def peer_kinds(self) -> list[str]:
        """The peer implementations the classes name, in PEER_KINDS order."""
        return [k for k in PEER_KINDS if any(c.peer == k for c in self.classes)]

    def with_peer_kind(self, kind: str) -> "Topology":
        """The same topology with its "frr" classes served by KIND (PEER_RUNNERS): --peer."""
        if kind not in PEER_RUNNERS:
            raise TopologyError(f"peer kind {kind!r} not in {PEER_RUNNERS}")
        return dataclasses.replace(self, peer=dataclasses.replace(self.peer, kind=kind))

    def hosts_of(self, role: str) -> list[Host]:
        return [h for h in self.hosts if h.role == role]

    def host_of(self, device: str) -> Host | None:
        """The dut host that runs DEVICE, or None."""
        return next((h for h in self.hosts if h.role == "dut" and h.device == device), None)

    def select(self, names: list[str]) -> "Topology":
        """The same topology with only the named devices, in the order given."""
        return dataclasses.replace(self, devices=tuple(self.device(n) for n in names))


def _cover(addrs: list[str]) -> str:
    lo, hi = ipaddress.IPv4Address(addrs[0]), ipaddress.IPv4Address(addrs[-1])
    for plen in range(32, -1, -1):
        net = ipaddress.IPv4Network(f"{lo}/{plen}", strict=False)
        if hi in net:
            return str(net)
    raise AssertionError("unreachable")


def _build(cls: type[T], table: Any, where: str) -> T:
    if not isinstance(table, Mapping):
        raise TopologyError(f"{where}: expected a table, got {type(table).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(table) - set(fields))
    if unknown:
        raise TopologyError(f"{where}: unknown key(s) {', '.join(unknown)} "
                            f"(known: {', '.join(fields)})")
    required = [n for n, f in fields.items()
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in required if n not in table]
    if missing:
        raise TopologyError(f"{where}: missing key(s) {', '.join(missing)}")
    for n, v in table.items():
        want = fields[n].type
        want_t = {"str": str, "int": int, "bool": bool}.get(
            want if isinstance(want, str) else want.__name__)
        if want_t is not None and (not isinstance(v, want_t)
                                   or (isinstance(v, bool) and want_t is not bool)):
            raise TopologyError(f"{where}: {n} must be {want_t.__name__}, got {v!r}")
    return cls(**table)  # type: ignore[call-arg]


def parse(text: str, source: str = "<string>", strict: bool = True) -> Topology:
    """Parse a topology from TOML text. A malformed file (TOML, tables, keys, types) raises
    TopologyError; so does the first of conflicts() unless STRICT is False (`topo check`
    lists them all)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{source}: {e}") from e
    top_keys = ("topology", "peer", "device", "class")  # required, in this order
    optional = ("router", "hosts")
    unknown = sorted(set(doc) - set(top_keys) - set(optional))
    if unknown:
        raise TopologyError(f"{source}: unknown table(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(top_keys + optional))})")
    for k in top_keys:
        if k not in doc:
            raise TopologyError(f"{source}: missing [{k}]" if k in ("topology", "peer")
                                else f"{source}: missing [[{k}]]")
    if not isinstance(doc["device"], list) or not isinstance(doc["class"], list):
        raise TopologyError(f"{source}: device and class must be arrays of tables ([[...]])")
    meta = _build(Meta, doc["topology"], f"{source} [topology]")
    peer = _build(Peer, doc["peer"], f"{source} [peer]")
    devices = tuple(_build(Device, d, f"{source} [[device]] #{i + 1}")
                    for i, d in enumerate(doc["device"]))
    classes = tuple(_build(SessionClass, c, f"{source} [[class]] #{i + 1}")
                    for i, c in enumerate(doc["class"]))
    router = _build(Router, doc["router"], f"{source} [router]") if "router" in doc else None
    hosts = _hosts(doc.get("hosts", {}), source)
    topo = Topology(meta, peer, devices, classes, source, router=router, hosts=hosts)
    if strict:
        found = conflicts(topo)
        if found:
            raise TopologyError(found[0].message)
    return topo


def _hosts(table: Any, source: str) -> tuple[Host, ...]:
    if not isinstance(table, Mapping):
        raise TopologyError(f"{source}: [hosts] must be a table of [hosts.NAME] tables")
    out = []
    for name, h in table.items():
        where = f"{source} [hosts.{name}]"
        if not isinstance(h, Mapping):
            raise TopologyError(f"{where}: expected a table, got {type(h).__name__}")
        if "name" in h:
            raise TopologyError(f"{where}: unknown key(s) name (the table's key is the name)")
        out.append(_build(Host, {"name": name, **h}, where))
    return tuple(out)


def load(path: str | Path, strict: bool = True) -> Topology:
    """Load and validate topologies/NAME.toml (STRICT: see parse())."""
    p = Path(path)
    return parse(p.read_text(encoding="utf-8"), str(p), strict)


# Options the lab gives the engine itself (lab.rig.engine): a topology may not set them again.
LAB_ENGINE_OPTIONS = ("--dplane-connect", "--dplane", "--kernel-tx", "--stats-dump",
                      "--log-file")


def _engine_args_problem(src: str, d: Device) -> str | None:
    if not d.engine_args:
        return None
    if d.kind != "engine":
        return f"{src}: device {d.name}: engine_args is for kind \"engine\" only"
    try:
        argv = d.engine_argv
    except ValueError as e:
        return f"{src}: device {d.name}: engine_args: {e}"
    if argv and not argv[0].startswith("--"):
        return f"{src}: device {d.name}: engine_args must start with an option, got {argv[0]!r}"
    taken = [a for a in argv if a.split("=", 1)[0] in LAB_ENGINE_OPTIONS]
    if taken:
        return (f"{src}: device {d.name}: engine_args sets {', '.join(taken)}, "
                "which the lab sets itself")
    return None


def conflicts(t: Topology) -> list[Conflict]:
    """Every problem of the description, in the order a reader meets them: limits, names,
    addresses, then the [hosts] (when there are any). Empty when the topology is sound.
    The plan-level checks (ports and sessions per host, both ends of every session) are
    lab.bare.check's."""
    src = t.source
    out: list[Conflict] = []

    def add(kind: str, msg: str) -> None:
        out.append(Conflict(kind, f"{src}: {msg}"))

    if not 8 <= t.meta.prefix_len <= 30:
        add("limits", f"prefix_len {t.meta.prefix_len} outside 8..30")
    if not t.devices:
        add("limits", "no [[device]]")
    if not t.classes:
        add("limits", "no [[class]]")
    if t.peer.kind not in PEER_RUNNERS:
        add("limits", f"[peer] kind {t.peer.kind!r} not in {PEER_RUNNERS}")
    names = [d.name for d in t.devices]
    if len(set(names)) != len(names):
        add("name", f"duplicate device names {names}")
    cnames = [c.name for c in t.classes]
    if len(set(cnames)) != len(cnames):
        add("name", f"duplicate class names {cnames}")
    for d in t.devices:
        if d.kind not in DEVICE_KINDS:
            add("name", f"device {d.name}: kind {d.kind!r} not in {DEVICE_KINDS}")
        if not d.name.replace("-", "").isalnum() or len(d.name) > 8:
            add("name", f"device name {d.name!r}: use up to 8 letters/digits")
        why = _engine_args_problem(src, d)
        if why:
            out.append(Conflict("engine-args", why))
    for c in t.classes:
        if not 10 <= c.interval_ms <= 60000:
            add("limits", f"class {c.name}: interval_ms {c.interval_ms} outside bfdd's 10..60000")
        if not 2 <= c.detect_mult <= 255:
            add("limits", f"class {c.name}: detect_mult {c.detect_mult} outside 2..255")
        if c.count < 1:
            add("session-count", f"class {c.name}: count must be >= 1")
        _caught(out, "limits", _check_class, src, c, t.router)
    _caught(out, "limits", check_bird_timers, src, t.classes)
    out += [Conflict("limits", m) for m in ends_conflicts(t)]
    out += _address_conflicts(t)
    if t.hosts:
        out += _host_conflicts(t)
    return out


def _caught(out: list[Conflict], kind: str, check: Any, *args: Any) -> None:
    """Run a check that raises TopologyError; its message becomes a Conflict of KIND."""
    try:
        check(*args)
    except TopologyError as e:
        out.append(Conflict(kind, str(e)))


def _address_conflicts(t: Topology) -> list[Conflict]:
    src = t.source
    n = max(t.sessions_per_device, 0)
    try:
        firsts = [ipaddress.IPv4Address(t.peer.first_address)]
        firsts += [ipaddress.IPv4Address(d.first_address) for d in t.devices]
    except ipaddress.AddressValueError as e:
        return [Conflict("address-range", f"{src}: {e}")]
    if not 0 <= t.meta.prefix_len <= 32:
        return []
    net = ipaddress.IPv4Network(f"{firsts[0]}/{t.meta.prefix_len}", strict=False)
    out: list[Conflict] = []
    for f in firsts:
        bad = [f + i for i in range(n) if int(f) + i > 0xFFFFFFFF or f + i not in net
               or f + i in (net.network_address, net.broadcast_address)]
        if bad:
            out.append(Conflict("address-range", f"{src}: address {bad[0]} is not a host of "
                                f"{net}" + (f" ({len(bad)} addresses of the {n} from {f})"
                                            if len(bad) > 1 else "")))
    every = [int(f) + i for f in firsts for i in range(n)]
    if len(set(every)) != len(every):
        out.append(Conflict("address-overlap", f"{src}: the address ranges of the peer and "
                            f"devices overlap ({n} addresses each)"))
    if t.router is not None and not out:
        _caught(out, "address-range", check_router, src, t.router, net,
                [f + i for f in firsts for i in range(n)])
    return out


def _host_conflicts(t: Topology) -> list[Conflict]:
    src = t.source
    out: list[Conflict] = []

    def add(kind: str, msg: str) -> None:
        out.append(Conflict(kind, f"{src}: {msg}"))

    for h in t.hosts:
        if h.name in HOST_ROLES or h.name in ("all", "localhost", "ungrouped"):
            add("name", f"host {h.name}: named like an Ansible group (the roles are groups)")
        if h.role not in HOST_ROLES:
            add("host-role", f"host {h.name}: role {h.role!r} not in {HOST_ROLES}")
        if not h.iface:
            add("host-missing", f"host {h.name}: no iface (the test interface)")
        if h.device and h.role != "dut":
            add("host-device", f"host {h.name}: device is for role \"dut\" only")
        if h.device and h.device not in {x.name for x in t.devices}:
            add("host-device", f"host {h.name}: no [[device]] named {h.device!r}")
    for role in ("peer", "load", "capture"):
        n = len(t.hosts_of(role))
        if n != 1:
            add("host-missing", f"{n} hosts of role {role}; the testbed has exactly one")
    for d in t.devices:
        on = [h.name for h in t.hosts_of("dut") if h.device == d.name]
        if not on:
            add("host-device", f"device {d.name} runs on no host (no dut host names it)")
        elif len(on) > 1:
            add("host-device", f"device {d.name} is named by several hosts: {', '.join(on)}")
    for h in t.hosts_of("dut"):
        if not h.device:
            add("host-device", f"host {h.name}: a dut host must name its device")
    for what, key in (("ssh name", lambda h: (h.ssh, h.netns)),
                      ("netns", lambda h: h.netns if h.netns else None)):
        seen: dict[Any, str] = {}
        for h in t.hosts:
            k = key(h)
            if k is None:
                continue
            if k in seen:
                add("host-duplicate", f"hosts {seen[k]} and {h.name} share the {what} "
                    f"{k[0] if isinstance(k, tuple) else k}")
            seen.setdefault(k, h.name)
    if any(h.netns for h in t.hosts) and not all(h.netns for h in t.hosts):
        add("host-duplicate", "some hosts have a netns and some not: a rehearsal puts every "
            "host in a namespace of its own")
    return out


def _check_class(src: str, c: SessionClass, router: Router | None) -> None:
    where = f"{src}: class {c.name}"
    if c.family not in FAMILIES:
        raise TopologyError(f"{where}: family {c.family!r} not in {FAMILIES}")
    if c.peer not in PEER_KINDS:
        raise TopologyError(f"{where}: peer {c.peer!r} not in {PEER_KINDS}")
    if c.multihop and c.family == "ipv6-ll":
        raise TopologyError(f"{where}: a link-local address cannot be multihop (RFC 5883 "
                            "sessions are routed; use family \"ipv6\")")
    if c.multihop and c.peer == "engine":
        raise TopologyError(f"{where}: an engine peer is single hop only (its engine attaches "
                            "XDP to its one link on the bridge; multihop packets reach it "
                            "through the router's link)")
    if c.multihop and router is None:
        raise TopologyError(f"{where}: multihop needs a [router] table (address, "
                            "multihop_prefix)")
    if c.peer_interval_ms and not 10 <= c.peer_interval_ms <= 60000:
        raise TopologyError(f"{where}: peer_interval_ms {c.peer_interval_ms} outside 10..60000 "
                            "(0: interval_ms)")
    if c.peer_detect_mult and not 2 <= c.peer_detect_mult <= 255:
        raise TopologyError(f"{where}: peer_detect_mult {c.peer_detect_mult} outside 2..255 "
                            "(0: detect_mult)")
    if c.min_ttl and not c.multihop:
        raise TopologyError(f"{where}: min_ttl is for multihop classes (single hop is 255, "
                            "RFC 5881 section 5)")
    if c.min_ttl and not 1 <= c.min_ttl <= 254:
        raise TopologyError(f"{where}: min_ttl {c.min_ttl} outside bfdd's 1..254 (0: 254)")
    if c.peer_interval_ms < 0 or c.peer_detect_mult < 0:
        raise TopologyError(f"{where}: peer timers cannot be negative")
    if c.echo and (c.multihop or c.peer != "frr" or not 10 <= c.echo_interval_ms <= 60000):
        raise TopologyError(f"{where}: echo is single-hop FRR only, echo_interval_ms 10..60000")
    check_ends(where, c)
