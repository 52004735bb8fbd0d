"""A capture holding one of each kind of BFD packet bfdcap decodes, for decode comparisons with
tcpdump and tshark: every state, diag and flag, every authentication type, the three control
ports, IPv4 with options, IPv6 with extension headers, VLAN tags, and echo packets."""

from __future__ import annotations

import pcapgen as g
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting
from scapy.layers.l2 import Dot1Q, Ether

from lab.wire import bfd as wbfd

T0 = 1_700_000_000_000_000_000


def auth_digest(atype: int, key_id: int, seq: int) -> bytes:
    n = 16 if atype in (wbfd.AUTH_KEYED_MD5, wbfd.AUTH_METICULOUS_MD5) else 20
    return wbfd.auth_digest(atype, key_id, seq, bytes(range(1, n + 1)))


def frames() -> list[tuple[int, bytes]]:
    out = []
    mac = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")

    def add(pkt):
        out.append((T0 + len(out) * 1_000_123, bytes(pkt)))

    ports = [3784, 4784, 6784]
    for i in range(64):
        flags = "".join(c for c, bit in zip("PFCDM", (32, 16, 8, 2, 1)) if i & bit)
        body = g.bfd(state=list(g.STATE)[i % 4], diag=i % 9, flags=flags, mult=1 + i % 255,
                     my=0x01000000 * (i + 1) + i, your=i * 7919, tx_us=1000 * (i + 1),
                     rx_us=333 * i, echo_us=50000 * (i % 3))
        add(mac / IP(src="198.51.100.1", dst="198.51.100.2", ttl=255 - i % 3)
            / UDP(sport=49153 + i, dport=ports[i % 3]) / body)
    for j, auth in enumerate([wbfd.auth_simple(1, b"s"), wbfd.auth_simple(9, b"password"),
                              wbfd.auth_simple(255, b"0123456789abcdef"), auth_digest(2, 2, 5),
                              auth_digest(3, 7, 0xFFFFFFFF), auth_digest(4, 0, 1),
                              auth_digest(5, 200, 0x12345678)]):
        add(mac / IP(src="198.51.100.3", dst="198.51.100.4") / UDP(sport=1024, dport=3784)
            / g.bfd(state="Down", your=0, my=j + 1, tx_us=1_000_000, rx_us=1_000_000,
                    auth=auth))
    # Extremes of every field.
    add(mac / IP(src="203.0.113.9", dst="203.0.113.10") / UDP(sport=65535, dport=3784)
        / g.bfd(state="Up", diag=31, mult=255, my=0xFFFFFFFF, your=0xFFFFFFFF,
                tx_us=0xFFFFFFFF, rx_us=0xFFFFFFFF, echo_us=0xFFFFFFFF))
    # IPv4 with options, IPv6 with extension headers, VLAN and QinQ tags.
    add(mac / IP(src="198.51.100.5", dst="198.51.100.6", options=b"\x01\x01\x01\x00")
        / UDP(sport=50000, dport=3784) / g.bfd(my=11, your=12))
    add(mac / IPv6(src="2001:db8::5", dst="2001:db8::6", hlim=255) / IPv6ExtHdrHopByHop()
        / IPv6ExtHdrDestOpt() / UDP(sport=50001, dport=3784) / g.bfd(my=13, your=14))
    add(mac / IPv6(src="2001:db8::7", dst="2001:db8::8", hlim=254)
        / IPv6ExtHdrRouting(addresses=[]) / UDP(sport=50002, dport=4784)
        / g.bfd(state="Init", my=15, your=16))
    add(mac / Dot1Q(vlan=100) / IP(src="198.51.100.7", dst="198.51.100.8")
        / UDP(sport=50003, dport=3784) / g.bfd(my=17, your=18))
    add(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x88A8)
        / Dot1Q(vlan=10, type=0x8100) / Dot1Q(vlan=20)
        / IP(src="198.51.100.9", dst="198.51.100.10")
        / UDP(sport=50004, dport=3784) / g.bfd(my=19, your=20))
    # Echo: self-addressed to 3785, looped back by the peer.
    add(mac / IP(src="198.51.100.1", dst="198.51.100.1") / UDP(sport=50005, dport=3785)
        / (b"\x00" * 12))
    return out


def write(path) -> None:
    g.write_pcap(path, frames(), g.LINKTYPE_ETHERNET, nano=True)
