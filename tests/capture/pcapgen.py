"""Small capture writers and BFD packet builders for tests (independent of bfdcap's code).

Layers below BFD come from scapy; the BFD Control packet from lab.wire (RFC 5880 4.1).
"""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6

from lab.wire import bfd as wbfd

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

STATE = wbfd.STATE
FLAG = wbfd.FLAG


def bfd(state="Up", diag=0, flags="", mult=3, my=1, your=2, tx_us=10000, rx_us=10000,
        echo_us=0, version=1, length=None, auth: bytes = b"") -> bytes:
    """A BFD Control packet (lab.wire.bfd.control) with this module's defaults (10 ms, Up)."""
    return wbfd.control(state, my, your, diag=diag, flags=flags, mult=mult, tx_us=tx_us,
                        rx_us=rx_us, echo_rx_us=echo_us, version=version, length=length,
                        auth=auth)


def ip_udp(src: str, dst: str, payload: bytes, sport=49152, dport=3784, ttl=255) -> bytes:
    ip = IPv6(src=src, dst=dst, hlim=ttl) if ":" in src else IP(src=src, dst=dst, ttl=ttl)
    return bytes(ip / UDP(sport=sport, dport=dport) / payload)


def ether(l3: bytes, vlans=(), v6=False) -> bytes:
    """Ethernet frame around an IP packet, with 802.1Q tags (QinQ: outer first, 0x88a8)."""
    etype = 0x86DD if v6 else 0x0800
    hdr = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
    tpids = [0x88A8] * (len(vlans) - 1) + [0x8100] if vlans else []
    for tpid, vid in zip(tpids, vlans):
        hdr += struct.pack("!HH", tpid, vid)
    return hdr + struct.pack("!H", etype) + l3


def sll(l3: bytes, v6=False) -> bytes:
    return struct.pack("!HHH8sH", 0, 1, 6, b"\x02\x00\x00\x00\x00\x01\x00\x00",
                       0x86DD if v6 else 0x0800) + l3


def sll2(l3: bytes, v6=False, ifindex=3) -> bytes:
    return struct.pack("!HHIHBB8s", 0x86DD if v6 else 0x0800, 0, ifindex, 1, 0, 6,
                       b"\x02\x00\x00\x00\x00\x01\x00\x00") + l3


def write_pcap(path, frames, linktype=LINKTYPE_ETHERNET, nano=True, snaplen=262144) -> None:
    """frames: [(ts_ns, bytes) or (ts_ns, bytes, orig_len)]."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0,
                            snaplen, linktype))
        for fr in frames:
            ts, data = fr[0], fr[1]
            orig = fr[2] if len(fr) > 2 else len(data)
            sub = ts % 10**9 if nano else (ts % 10**9) // 1000
            f.write(struct.pack("<IIII", ts // 10**9, sub, len(data), orig) + data)


def _block(btype: int, body: bytes, e: str = "<") -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack(e + "II", btype, n) + body + struct.pack(e + "I", n)


def _opt(code: int, val: bytes, e: str = "<") -> bytes:
    return struct.pack(e + "HH", code, len(val)) + val + b"\x00" * (-len(val) % 4)


def ts_units(ts_ns: int, tsresol: int, tsoffset_s: int = 0) -> int:
    """ns since the epoch to an interface's timestamp units (pcapng if_tsresol)."""
    t = ts_ns - tsoffset_s * 10**9
    if tsresol & 0x80:
        return t * 2 ** (tsresol & 0x7F) // 10**9
    exp = tsresol
    return t * 10 ** (exp - 9) if exp >= 9 else t // 10 ** (9 - exp)


def units_ns(units: int, tsresol: int, tsoffset_s: int = 0) -> int:
    """What a reader must turn the units back into (truncating toward zero)."""
    if tsresol & 0x80:
        ns = units * 10**9 // 2 ** (tsresol & 0x7F)
    elif tsresol <= 9:
        ns = units * 10 ** (9 - tsresol)
    else:
        ns = units // 10 ** (tsresol - 9)
    return ns + tsoffset_s * 10**9


def pcapng_section(interfaces, packets, big_endian=False, extra_blocks=True) -> bytes:
    """One section. interfaces: [(linktype, tsresol) or (linktype, tsresol, tsoffset_s)];
    tsresol None leaves the option out (default: microseconds).
    packets: [(interface_id, ts_ns, bytes)], or (..., "spb") for a Simple Packet Block,
    or (..., "opb") for the obsolete Packet Block."""
    e = ">" if big_endian else "<"
    out = _block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1)
                 + _opt(4, b"bfdcap tests", e) + _opt(0, b"", e), e)
    for itf in interfaces:
        lt, res = itf[0], itf[1]
        off = itf[2] if len(itf) > 2 else 0
        opts = _opt(2, b"eth0", e)
        if res is not None:
            opts += _opt(9, bytes([res]), e)
        if off:
            opts += _opt(14, struct.pack(e + "q", off), e)
        out += _block(1, struct.pack(e + "HHI", lt, 0, 262144) + opts + _opt(0, b"", e), e)
    if extra_blocks:  # name resolution and statistics blocks are skipped by readers
        out += _block(4, struct.pack(e + "HH", 0, 0), e)
    for p in packets:
        ifid, ts, data = p[0], p[1], p[2]
        kind = p[3] if len(p) > 3 else "epb"
        itf = interfaces[ifid]
        res = 6 if itf[1] is None else itf[1]
        units = ts_units(ts, res, itf[2] if len(itf) > 2 else 0)
        if kind == "spb":
            out += _block(3, struct.pack(e + "I", len(data)) + data, e)
        elif kind == "opb":
            out += _block(2, struct.pack(e + "HHIIII", ifid, 0, units >> 32,
                                         units & 0xFFFFFFFF, len(data), len(data)) + data, e)
        else:
            out += _block(6, struct.pack(e + "IIIII", ifid, units >> 32, units & 0xFFFFFFFF,
                                         len(data), len(data)) + data
                          + _opt(1, b"comment", e) + _opt(0, b"", e), e)
    return out


def write_pcapng(path, interfaces, packets, big_endian=False) -> None:
    """interfaces: [(linktype, tsresol_byte[, tsoffset_s])], e.g. 9 for ns, 6 for us.
    packets: [(interface_id, ts_ns, bytes)]; ts written in that interface's unit."""
    with open(path, "wb") as f:
        f.write(pcapng_section(interfaces, packets, big_endian))
