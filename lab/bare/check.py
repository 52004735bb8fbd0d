"""check - `python3 -m lab topo check FILE`: a topology description checked offline.

Every conflict is named, not only the first: the loader's (lab.topo.conflicts: limits, names,
address ranges and overlaps, the [hosts]) and the plan's, made on what the renderer would
write (lab.bare.plan): the data-plane port of every engine, the sessions each engine holds,
and both ends of every session (the peer's `peer X local-address Y` with its timers against
the device's mirror block, each local address on the host that claims it, no destination
twice on one bfdd: FRR 8.4.4 keys a single-hop peer by its destination alone).

Exit status: 0 sound, 1 conflicts (or a file that does not parse: kind "syntax").
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from pathlib import Path
from typing import Callable

from ..topo import Conflict, Topology, TopologyError, conflicts, load
from .plan import BIRD_IF, HostPlan, local_set, plan_hosts

BFD_PORTS = (3784, 3785, 4784, 6784)  # RFC 5881, 5883, 7130 (and the echo port)
ENGINE_SOURCE_PORTS = (61000, 65535)  # the engine's own UDP source ports (engine/tx.h)
ENGINE_MAX_SESSIONS = 8192  # one socket per session (xdp-bfd.service LimitNOFILE)
ROUTER_HOPS = 1  # a multihop session crosses the one router the description names
# The TTL each peer kind sends multihop packets with: "frr" classes 255 (FRR bfdd, and
# bfdpeer when it serves them: docs/bfdpeer.md "Sending"), BIRD 2 the system's default, 64
# (measured: 63 after one router; topologies/classes.toml).
SEND_TTL = {"frr": 255, "bird": 64}
BFDD_MIN_TTL = 254  # bfdd's minimum-ttl when a class leaves min_ttl 0


def dplane_port(spec: str) -> int | None:
    """The TCP port of a --dplaneaddr spec ("ipv4:127.0.0.1:50700", "ipv6:[::1]:50700");
    None for a unix socket. ValueError when it does not parse."""
    kind, _, rest = spec.partition(":")
    if kind == "unix":
        return None
    if kind not in ("ipv4", "ipv6", "ipv4c", "ipv6c") or ":" not in rest:
        raise ValueError(f"dplane {spec!r}: expected ipv4:ADDR:PORT, ipv6:[ADDR]:PORT or "
                         "unix:PATH")
    port = int(rest.rsplit(":", 1)[1])
    if not 1 <= port <= 65535:
        raise ValueError(f"dplane {spec!r}: port {port} outside 1..65535")
    return port


def _port_conflicts(t: Topology) -> list[Conflict]:
    out = []
    for d in t.devices:
        if d.kind != "engine":
            continue
        try:
            port = dplane_port(d.dplane)
        except ValueError as e:
            out.append(Conflict("port", f"{t.source}: device {d.name}: {e}"))
            continue
        if port in BFD_PORTS:
            out.append(Conflict("port", f"{t.source}: device {d.name}: dplane port {port} is a "
                                "BFD port (3784, 3785, 4784, 6784)"))
        elif port is not None and ENGINE_SOURCE_PORTS[0] <= port <= ENGINE_SOURCE_PORTS[1]:
            out.append(Conflict("port", f"{t.source}: device {d.name}: dplane port {port} is "
                                f"among the engine's source ports {ENGINE_SOURCE_PORTS[0]}-"
                                f"{ENGINE_SOURCE_PORTS[1]}"))
    return out


def pair_sessions(plans: dict[str, HostPlan], source: str = "") -> list[Conflict]:
    """Both ends of every session: each peer block (peer X local-address Y, timers) on the
    peer host needs exactly one dut host holding X with the mirror block (peer Y
    local-address X, the same timers), and the other way round; every local address on the
    host that claims it; no destination twice on one bfdd."""
    out: list[Conflict] = []

    def add(msg: str) -> None:
        out.append(Conflict("session-mismatch", f"{source}: {msg}"))

    for name, p in plans.items():
        dup = [d for d, n in Counter(b.peer for b in p.peers).items() if n > 1]
        if dup:
            add(f"host {name}: destination {dup[0]} is configured {len(dup)} time(s) over "
                "(FRR keys a peer by its destination)")
        ends = [(p.peers, local_set(p.addresses), p.host.iface)]
        if p.bird is not None:
            ends.append((p.bird.peers, local_set(p.bird.addresses), f"BIRD's {BIRD_IF}"))
        for blocks, mine, where in ends:
            for b in blocks:
                if b.local not in mine:
                    add(f"host {name}: peer {b.peer} local-address {b.local}: {b.local} is "
                        f"not an address of {where}")
    peers = [p for p in plans.values() if p.host.role == "peer"]
    duts = [p for p in plans.values() if p.host.role == "dut"]
    index = {(b.peer, b.local): (p.host.name, b) for p in duts for b in p.peers}
    matched = set()
    for pp in peers:
        for b in pp.peers + (pp.bird.peers if pp.bird else ()):
            hit = index.get((b.local, b.peer))
            if hit is None:
                add(f"peer {pp.host.name}: peer {b.peer} local-address {b.local} has no "
                    f"mirror block (peer {b.local} local-address {b.peer}) on any dut host")
                continue
            host, m = hit
            matched.add((b.local, b.peer))
            if (m.interval_ms, m.detect_mult) != (b.interval_ms, b.detect_mult):
                add(f"session {b.local} (peer) <-> {b.peer} ({host}): the peer has "
                    f"{b.interval_ms} ms x {b.detect_mult}, {host} has {m.interval_ms} ms x "
                    f"{m.detect_mult}")
    for key, (host, b) in index.items():
        if key not in matched:
            add(f"host {host}: peer {b.peer} local-address {b.local} has no mirror block on "
                "the peer")
    return out


def class_conflicts(t: Topology) -> list[Conflict]:
    """What each session class asks of bare metal, checked on every session's addresses:
    each written in its class's family (an IPv4 address, an IPv6 global one, an fe80::/10
    link-local one); a link-local session names an interface at both ends (RFC 5881 section
    5: the address means nothing without it), so every host needs one; a multihop session's
    packets arrive with the peer's TTL less the router's hop, which the device's min_ttl (bfdd's
    minimum-ttl) must admit (RFC 5883 section 2: the TTL check is local policy)."""
    out: list[Conflict] = []
    seen: set[str] = set()
    for d in t.devices:
        for s in t.sessions(d.name):
            c = s.cls
            for end, a in (("peer", s.peer_address), ("device", s.device_address)):
                try:
                    ip = ipaddress.ip_address(a)
                except ValueError as e:
                    out.append(Conflict("session-class", f"{t.source}: class {c.name}: {e}"))
                    continue
                ok = (ip.version == 4 if c.family == "ipv4" else
                      ip.version == 6 and ip.is_link_local == (c.family == "ipv6-ll"))
                if not ok:
                    out.append(Conflict("session-class", f"{t.source}: class {c.name}: "
                                        f"{end} address {a} is not an {c.family} address"))
            if c.name in seen:
                continue
            seen.add(c.name)
            if c.peer not in SEND_TTL:
                out.append(Conflict("session-class", f"{t.source}: class {c.name}: the "
                                    f"bare-metal rendering has no {c.peer!r} peer (frr, bird)"))
                continue
            if c.family == "ipv6-ll":
                bare = [h.name for h in t.hosts if h.role in ("dut", "peer") and not h.iface]
                if bare:
                    out.append(Conflict("session-class", f"{t.source}: class {c.name}: a "
                                        "link-local session needs an interface at each end; "
                                        f"host(s) {', '.join(bare)} have none"))
            if c.multihop:
                arrive = SEND_TTL[c.peer] - ROUTER_HOPS
                need = c.min_ttl or BFDD_MIN_TTL
                if need > arrive:
                    out.append(Conflict("session-class", f"{t.source}: class {c.name}: "
                                        f"min_ttl {need} drops every packet: the {c.peer} "
                                        f"peer sends TTL {SEND_TTL[c.peer]}, {ROUTER_HOPS} "
                                        f"router hop(s) leave {arrive} (set min_ttl <= "
                                        f"{arrive})"))
    return out


def check(t: Topology) -> list[Conflict]:
    """Every conflict of T: the loader's, then ports, session counts and both ends."""
    found = conflicts(t) + _port_conflicts(t)
    if not found and t.hosts:  # what bare metal asks of the classes
        found = class_conflicts(t)
    if not t.hosts or found:
        return found  # a plan is only made of a description the loader accepts
    plans = plan_hosts(t)
    for p in plans.values():
        if p.is_engine and len(p.peers) > ENGINE_MAX_SESSIONS:
            found.append(Conflict("session-count", f"{t.source}: host {p.host.name}: "
                                  f"{len(p.peers)} sessions, the engine holds at most "
                                  f"{ENGINE_MAX_SESSIONS}"))
    return found + pair_sessions(plans, t.source)


def main(path: Path, out: Callable[[str], None] = print) -> int:
    """Print the verdict on PATH: one line per conflict ("conflict KIND: MESSAGE"), or a
    one-line account of a sound description. Returns the exit status."""
    try:
        t = load(path, strict=False)
    except (TopologyError, OSError) as e:
        out(f"conflict syntax: {e}")
        return 1
    found = check(t)
    for c in found:
        out(f"conflict {c.kind}: {c.message}")
    if found:
        kinds = Counter(c.kind for c in found)
        out(f"{path}: {len(found)} conflict(s): "
            + ", ".join(f"{k} {n}" for k, n in kinds.items()))
        return 1
    n = t.sessions_per_device
    hosts = f"{len(t.hosts)} hosts ({', '.join(h.name for h in t.hosts)})" if t.hosts \
        else "no [hosts] (namespaces only)"
    out(f"{path}: ok: {len(t.devices)} device(s) x {n} sessions = {n * len(t.devices)} on "
        f"the peer; {hosts}")
    return 0
