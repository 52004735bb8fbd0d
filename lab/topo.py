"""topo - topology descriptions: frozen dataclasses loaded from topologies/*.toml.

A topology names the peer, the devices under test and the session classes. Every device gets
the same sessions from the same peer. A misspelt or missing key fails at load.

    [topology]  name, prefix_len
    [peer]      first_address, kind ("frr": stock bfdd, the default | "bfdpeer": build/bfdpeer)
    [[device]]  name, kind ("engine" | "bfdd"), first_address, dplane and engine_args (engine only)
    [[class]]   name, interval_ms, detect_mult, count

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

DEVICE_KINDS = ("engine", "bfdd")
PEER_KINDS = ("frr", "bfdpeer")

T = TypeVar("T")


class TopologyError(ValueError):
    """The topology file is malformed; the message names the file, table and key."""


@dataclass(frozen=True)
class Meta:
    name: str
    prefix_len: int  # every lab address sits in one subnet of this length, on one bridge


@dataclass(frozen=True)
class Peer:
    first_address: str  # the peer holds first_address .. first_address + sessions - 1
    kind: str = "frr"  # "frr": stock bfdd, shielded; "bfdpeer": build/bfdpeer (docs/bfdpeer.md)


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

    @property
    def budget_ms(self) -> int:
        """Detection time when both ends use these timers (RFC 5880 6.8.4)."""
        return self.interval_ms * self.detect_mult


@dataclass(frozen=True)
class Session:
    device: str  # Device.name
    cls: SessionClass
    peer_address: str
    device_address: str


@dataclass(frozen=True)
class Topology:
    meta: Meta
    peer: Peer
    devices: tuple[Device, ...]
    classes: tuple[SessionClass, ...]
    source: str = ""

    @property
    def sessions_per_device(self) -> int:
        return sum(c.count for c in self.classes)

    def _range(self, first: str) -> list[str]:
        a = ipaddress.IPv4Address(first)
        return [str(a + i) for i in range(self.sessions_per_device)]

    def peer_addresses(self) -> list[str]:
        return self._range(self.peer.first_address)

    def device_addresses(self, device: str) -> list[str]:
        return self._range(self.device(device).first_address)

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
        """The device's sessions in class order: class 0 takes the first peer addresses."""
        dev = self.device(device)
        pairs = iter(zip(self.peer_addresses(), self.device_addresses(device)))
        return [Session(dev.name, c, *next(pairs)) for c in self.classes for _ in range(c.count)]

    def with_peer_kind(self, kind: str) -> "Topology":
        """The same topology with a peer of KIND (PEER_KINDS): the CLI's --peer."""
        if kind not in PEER_KINDS:
            raise TopologyError(f"peer kind {kind!r} not in {PEER_KINDS}")
        return dataclasses.replace(self, peer=dataclasses.replace(self.peer, kind=kind))

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
        want_t = {"str": str, "int": int}.get(want if isinstance(want, str) else want.__name__)
        if want_t is not None and (not isinstance(v, want_t) or isinstance(v, bool)):
            raise TopologyError(f"{where}: {n} must be {want_t.__name__}, got {v!r}")
    return cls(**table)  # type: ignore[call-arg]


def parse(text: str, source: str = "<string>") -> Topology:
    """Parse and validate a topology from TOML text."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{source}: {e}") from e
    top_keys = {"topology", "peer", "device", "class"}
    unknown = sorted(set(doc) - top_keys)
    if unknown:
        raise TopologyError(f"{source}: unknown table(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(top_keys))})")
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
    topo = Topology(meta, peer, devices, classes, source)
    _validate(topo)
    return topo


def load(path: str | Path) -> Topology:
    """Load and validate topologies/NAME.toml."""
    p = Path(path)
    return parse(p.read_text(encoding="utf-8"), str(p))


# Options the lab gives the engine itself (lab.rig.engine): a topology may not set them again.
LAB_ENGINE_OPTIONS = ("--dplane-connect", "--dplane", "--kernel-tx", "--stats-dump",
                      "--log-file")


def _check_engine_args(src: str, d: Device) -> None:
    if not d.engine_args:
        return
    if d.kind != "engine":
        raise TopologyError(f"{src}: device {d.name}: engine_args is for kind \"engine\" only")
    try:
        argv = d.engine_argv
    except ValueError as e:
        raise TopologyError(f"{src}: device {d.name}: engine_args: {e}") from e
    if argv and not argv[0].startswith("--"):
        raise TopologyError(f"{src}: device {d.name}: engine_args must start with an option, "
                            f"got {argv[0]!r}")
    taken = [a for a in argv if a.split("=", 1)[0] in LAB_ENGINE_OPTIONS]
    if taken:
        raise TopologyError(f"{src}: device {d.name}: engine_args sets {', '.join(taken)}, "
                            "which the lab sets itself")


def _validate(t: Topology) -> None:
    src = t.source
    if not 8 <= t.meta.prefix_len <= 30:
        raise TopologyError(f"{src}: prefix_len {t.meta.prefix_len} outside 8..30")
    if not t.devices:
        raise TopologyError(f"{src}: no [[device]]")
    if not t.classes:
        raise TopologyError(f"{src}: no [[class]]")
    if t.peer.kind not in PEER_KINDS:
        raise TopologyError(f"{src}: [peer] kind {t.peer.kind!r} not in {PEER_KINDS}")
    names = [d.name for d in t.devices]
    if len(set(names)) != len(names):
        raise TopologyError(f"{src}: duplicate device names {names}")
    cnames = [c.name for c in t.classes]
    if len(set(cnames)) != len(cnames):
        raise TopologyError(f"{src}: duplicate class names {cnames}")
    for d in t.devices:
        if d.kind not in DEVICE_KINDS:
            raise TopologyError(f"{src}: device {d.name}: kind {d.kind!r} not in {DEVICE_KINDS}")
        if not d.name.replace("-", "").isalnum() or len(d.name) > 8:
            raise TopologyError(f"{src}: device name {d.name!r}: use up to 8 letters/digits")
        _check_engine_args(src, d)
    for c in t.classes:
        if not 10 <= c.interval_ms <= 60000:
            raise TopologyError(f"{src}: class {c.name}: interval_ms {c.interval_ms} "
                                "outside bfdd's 10..60000")
        if not 2 <= c.detect_mult <= 255:
            raise TopologyError(f"{src}: class {c.name}: detect_mult {c.detect_mult} "
                                "outside 2..255")
        if c.count < 1:
            raise TopologyError(f"{src}: class {c.name}: count must be >= 1")
    n = t.sessions_per_device
    try:
        firsts = [ipaddress.IPv4Address(t.peer.first_address)]
        firsts += [ipaddress.IPv4Address(d.first_address) for d in t.devices]
    except ipaddress.AddressValueError as e:
        raise TopologyError(f"{src}: {e}") from e
    net = ipaddress.IPv4Network(f"{firsts[0]}/{t.meta.prefix_len}", strict=False)
    every = [f + i for f in firsts for i in range(n)]
    for a in every:
        if a not in net or a in (net.network_address, net.broadcast_address):
            raise TopologyError(f"{src}: address {a} is not a host of {net}")
    if len(set(every)) != len(every):
        raise TopologyError(f"{src}: the address ranges of the peer and devices overlap "
                            f"({n} addresses each)")
