"""frames - Ethernet, IPv4, IPv6 and UDP headers around a payload, network byte order.

Checksums are computed here (RFC 1071 over the IPv4 header; RFC 768 / RFC 8200 8.1 over the
UDP pseudo-header), so a frame built here is what a kernel would have sent.
"""

from __future__ import annotations

import ipaddress
import struct

ETH_P_IPV4, ETH_P_IPV6 = 0x0800, 0x86DD
TPID_8021Q, TPID_8021AD = 0x8100, 0x88A8
IPPROTO_UDP = 17
TOS_CS6 = 0xC0  # DSCP CS6 (network control), what BFD implementations send
DF = 0x4000  # IPv4 flags/fragment field with Don't Fragment set


def inet_checksum(data: bytes) -> int:
    """The Internet checksum of DATA (RFC 1071): one's complement of the one's-complement sum of
    its 16-bit big-endian words, an odd length padded with a zero byte. Returns 0..0xFFFF; a
    UDP checksum of 0 goes on the wire as 0xFFFF (RFC 768), which udp() does."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def mac(text: str) -> bytes:
    """"02:00:00:00:00:01" -> 6 bytes."""
    out = bytes(int(x, 16) for x in text.split(":"))
    if len(out) != 6:
        raise ValueError(f"not a MAC address: {text!r}")
    return out


def ip_bytes(addr: str) -> bytes:
    """An IPv4 (4 bytes) or IPv6 (16 bytes) address in network order."""
    return ipaddress.ip_address(addr).packed


def udp(src: str, dst: str, sport: int, dport: int, payload: bytes,
        checksum: bool = True) -> bytes:
    """UDP header + PAYLOAD; the checksum over the IPv4 or IPv6 pseudo-header of SRC and DST
    (0 when CHECKSUM is False, allowed over IPv4 only; a computed 0 is sent as 0xFFFF)."""
    ulen = 8 + len(payload)
    csum = 0
    if checksum:
        s, d = ip_bytes(src), ip_bytes(dst)
        pseudo = s + d + (struct.pack("!BBH", 0, IPPROTO_UDP, ulen) if len(s) == 4
                          else struct.pack("!I3xB", ulen, IPPROTO_UDP))
        csum = inet_checksum(pseudo + struct.pack("!HHHH", sport, dport, ulen, 0) + payload) \
            or 0xFFFF
    return struct.pack("!HHHH", sport, dport, ulen, csum) + payload


def ipv4(src: str, dst: str, payload: bytes, *, ttl: int = 255, tos: int = TOS_CS6,
         ident: int = 0, frag: int = 0, proto: int = IPPROTO_UDP, options: bytes = b"") -> bytes:
    """IPv4 header (RFC 791; OPTIONS a multiple of 4 bytes) with its checksum, + PAYLOAD."""
    if len(options) % 4:
        raise ValueError("IPv4 options must fill whole 32-bit words")
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, tos, ihl * 4 + len(payload), ident, frag,
                      ttl, proto, 0, ip_bytes(src), ip_bytes(dst)) + options
    return hdr[:10] + struct.pack("!H", inet_checksum(hdr)) + hdr[12:] + payload


def ipv6(src: str, dst: str, payload: bytes, *, hlim: int = 255, tc: int = TOS_CS6,
         flow: int = 0, next_header: int = IPPROTO_UDP) -> bytes:
    """IPv6 header (RFC 8200 3) + PAYLOAD."""
    return struct.pack("!IHBB16s16s", (6 << 28) | (tc << 20) | flow, len(payload), next_header,
                       hlim, ip_bytes(src), ip_bytes(dst)) + payload


def ethernet(src_mac: str, dst_mac: str, ethertype: int, payload: bytes,
             vlans: tuple[tuple[int, int], ...] = ()) -> bytes:
    """Ethernet II frame; VLANS are (TPID, TCI) tags, outermost first."""
    hdr = mac(dst_mac) + mac(src_mac)
    for tpid, tci in vlans:
        hdr += struct.pack("!HH", tpid, tci)
    return hdr + struct.pack("!H", ethertype) + payload


def udp_frame(src_mac: str, dst_mac: str, src: str, dst: str, sport: int, dport: int,
              payload: bytes, *, ttl: int = 255, tos: int = TOS_CS6, ident: int = 0,
              frag: int = 0, udp_checksum: bool = True, ip_options: bytes = b"",
              vlans: tuple[tuple[int, int], ...] = ()) -> bytes:
    """Ethernet / IPv4 or IPv6 (by the family of SRC) / UDP / PAYLOAD. Over IPv6, TTL is the
    hop limit and TOS the traffic class; IDENT, FRAG and IP_OPTIONS are IPv4's."""
    seg = udp(src, dst, sport, dport, payload, udp_checksum)
    if ":" in src:
        return ethernet(src_mac, dst_mac, ETH_P_IPV6, ipv6(src, dst, seg, hlim=ttl, tc=tos),
                        vlans)
    return ethernet(src_mac, dst_mac, ETH_P_IPV4,
                    ipv4(src, dst, seg, ttl=ttl, tos=tos, ident=ident, frag=frag,
                         options=ip_options), vlans)
