"""topo_checks - the topology loader's checks that span tables (lab.topo): BIRD's shared
timers, the [router], and the per-end session options of a class.

Per-end options (RFC 5880), each "" (neither end), "device", "peer" or "both":
- passive: the Passive role (6.1): that end sends nothing until it knows the other's
  discriminator (bfdd `passive-mode`; bfdpeer `passive`);
- admin_down: that end is shut (6.8.16: AdminDown, diag 7; bfdd `shutdown`; bfdpeer
  `admin_down`). "both" is refused: nothing would ever come Up or say anything of use;
- demand: Demand mode (6.6) asked for by that end: at the device by an engine (`--demand
  PEER`, engine_demand_args()); a stock bfdd device runs the class without it (8.4.4 cannot
  ask, SessionClass.demand_on), so its reports say demand false; the peer only through
  build/bfdpeer ([peer] kind "bfdpeer"; FRR 8.4.4 and BIRD 2 cannot).
Options at the peer end need a peer the lab configures per session: not BIRD.
"""

from __future__ import annotations

import ipaddress
from typing import Any

ENDS = ("", "device", "peer", "both")
END_OPTIONS = ("passive", "admin_down", "demand")


class TopologyError(ValueError):
    """The topology file is malformed; the message names the file, table and key."""


def at(value: str, side: str) -> bool:
    """Whether a per-end option VALUE applies at SIDE ("device" or "peer")."""
    return value in (side, "both")


def check_ends(where: str, c: Any) -> None:
    """Class C's per-end options: known values, and what one class alone cannot have."""
    for opt in END_OPTIONS:
        if getattr(c, opt) not in ENDS:
            raise TopologyError(f"{where}: {opt} {getattr(c, opt)!r} not in {ENDS}")
    if c.admin_down == "both":
        raise TopologyError(f"{where}: admin_down \"both\": neither end would say anything")
    if c.peer == "bird" and any(at(getattr(c, o), "peer") for o in END_OPTIONS):
        raise TopologyError(f"{where}: {', '.join(END_OPTIONS)} at the peer end are not "
                            "rendered for BIRD (its options are per interface)")


def ends_conflicts(t: Any) -> list[str]:
    """What the per-end options and echo of T's classes need of the rest of T."""
    out = []
    for c in t.classes:
        if at(c.demand, "peer") and (c.peer != "frr" or t.peer.kind != "bfdpeer"):
            out.append(f"{t.source}: class {c.name}: demand at the peer needs [peer] kind "
                       "\"bfdpeer\" (FRR 8.4.4 and BIRD 2 have no Demand mode)")
        if c.echo and c.peer == "frr" and t.peer.kind == "bfdpeer":
            # it advertises Required Min Echo RX 0, so no device may send it echo (RFC 5880
            # 6.8.9): the class would run as a plain session and measure nothing of echo
            out.append(f"{t.source}: class {c.name}: echo with [peer] kind \"bfdpeer\": "
                       "bfdpeer has no Echo function (docs/bfdpeer.md)")
    return out


def engine_demand_args(t: Any, device: str) -> list[str]:
    """`--demand PEER,...` for DEVICE's sessions whose class asks for Demand mode at the
    device (xdp-bfd keys it by peer address); [] when none does."""
    peers = [s.peer_address for s in t.sessions(device) if at(s.cls.demand, "device")]
    return ["--demand", ",".join(peers)] if peers else []


def check_bird_timers(src: str, classes: tuple[Any, ...]) -> None:
    """BIRD 2.0 sets timers per interface (single hop) and once for multihop, not per
    neighbour: its classes of one hop kind must share their peer timers."""
    for mh in (False, True):
        timers = {c.peer_timers for c in classes if c.peer == "bird" and c.multihop == mh}
        if len(timers) > 1:
            raise TopologyError(f"{src}: BIRD {'multihop' if mh else 'single-hop'} classes "
                                f"have different peer timers {sorted(timers)}: BIRD 2.0 sets "
                                "them once per interface and once for multihop")


def check_router(src: str, r: Any, net: ipaddress.IPv4Network,
                 every: list[ipaddress.IPv4Address]) -> None:
    try:
        addr = ipaddress.IPv4Address(r.address)
        mh = ipaddress.IPv4Network(r.multihop_prefix)
    except ValueError as e:
        raise TopologyError(f"{src} [router]: {e}") from e
    if addr not in net or addr in every or addr in (net.network_address, net.broadcast_address):
        raise TopologyError(f"{src} [router]: address {addr} must be a free host of {net}")
    if mh.prefixlen != net.prefixlen:
        raise TopologyError(f"{src} [router]: multihop_prefix {mh} must be a /{net.prefixlen} "
                            "like the lab's subnet (host bits are kept)")
    if mh.overlaps(net):
        raise TopologyError(f"{src} [router]: multihop_prefix {mh} overlaps the lab's {net}")
