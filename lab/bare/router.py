"""router - the router multihop sessions cross on bare metal (RFC 5883), as notes for whoever
sets it up: `router-notes.md` of a rendering.

The router is the one the description names ([router] address): a router or layer-3 switch
on the testbed's segment, not one of the hosts Ansible drives (the switch is not managed
either: mirror-notes.md). Each end holds its multihop addresses as host addresses (/32, /128)
on its test interface and routes the multihop prefix via the router (onlink); the router
reaches every multihop address on-link (ARP/ND on the segment) and forwards between them,
decrementing the TTL once, which is the hop the sessions' min_ttl counts (lab.bare.check).
"""

from __future__ import annotations

import ipaddress

from ..topo import Topology, slot_address
from .plan import BIRD_IF, HostPlan


def multihop_addresses(p: HostPlan) -> list[tuple[str, str]]:
    """(address, where) of every multihop address a host holds: its /32 and /128 ones."""
    out = []
    for addrs, where in ((p.addresses, f"{p.host.name} {p.host.iface}"),
                         (p.bird.addresses if p.bird else (), f"{p.host.name} BIRD {BIRD_IF}")):
        for a in addrs:
            ip = ipaddress.ip_interface(a)
            if ip.network.prefixlen == ip.max_prefixlen:
                out.append((str(ip.ip), where))
    return out


def router_notes(t: Topology, plans: dict[str, HostPlan]) -> str:
    """The router's part of a rendering with multihop classes (Markdown)."""
    r = t.router
    assert r is not None
    plen = t.meta.prefix_len
    v6 = f"{slot_address('ipv6', r.address)}/{96 + plen}"
    rows = [(a, where) for p in plans.values() for a, where in multihop_addresses(p)]
    cmds = [f"ip route replace {a}/{32 if ':' not in a else 128} dev RIF  # {w}"
            for a, w in rows]
    return f"""# Router for the multihop sessions of topology {t.meta.name}

Multihop sessions (RFC 5883, UDP 4784) cross one router: the one this description names,
at {r.address}/{plen} and {v6} on the testbed's segment (a router or layer-3 switch; the
playbooks do not manage it). Every host with multihop sessions holds its multihop addresses
(in {r.multihop_prefix} and its IPv6 twin) as host addresses and routes the multihop prefix
via {r.address} and {slot_address('ipv6', r.address)} (host_vars lab_ip_batch).

The router must:

- hold {r.address}/{plen} and {v6} on its port to the segment;
- forward IPv4 and IPv6, and decrement the TTL / hop limit (each session's min_ttl counts
  this one hop: `python3 -m lab topo check`);
- reach each of the {len(rows)} multihop addresses below on-link (ARP/ND on the segment);
- send no ICMP redirects: it sends each packet back out of the port it came in on, and a
  redirect would teach the hosts a direct path (the hosts also ignore them: sysctl.conf).

On a Linux router whose port to the segment is RIF:

```
sysctl -w net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
sysctl -w net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.RIF.send_redirects=0
ip address add {r.address}/{plen} dev RIF
ip address add {v6} dev RIF nodad
{chr(10).join(cmds)}
```
"""
