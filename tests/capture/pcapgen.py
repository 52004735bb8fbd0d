"""Small capture writers and BFD packet builders for tests (independent of bfdcap's code).

Layers below BFD come from scapy; the BFD Control packet is packed by hand from RFC 5880 4.1.
"""

from __future__ import annotations

import struct

from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

STATE = {"AdminDown": 0, "Down": 1, "Init": 2, "Up": 3}
FLAG = {"P": 0x20, "F": 0x10, "C": 0x08, "A": 0x04, "D": 0x02, "M": 0x01}


def bfd(state="Up", diag=0, flags="", mult=3, my=1, your=2, tx_us=10000, rx_us=10000,
        echo_us=0, version=1, length=None, auth: bytes = b"") -> bytes:
    f = sum(FLAG[c] for c in flags)
    if auth:
        f |= FLAG["A"]
    body_len = 24 + len(auth)
    return struct.pack("!BBBBIIIII", version << 5 | diag, STATE[state] << 6 | f, mult,
                       body_len if length is None else length, my, your, tx_us, rx_us,
                       echo_us) + auth


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


def _block(btype: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    n = len(body) + 12
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def _opt(code: int, val: bytes) -> bytes:
    return struct.pack("<HH", code, len(val)) + val + b"\x00" * (-len(val) % 4)


def write_pcapng(path, interfaces, packets) -> None:
    """interfaces: [(linktype, tsresol_byte)], e.g. 9 for ns, 6 for us (pcapng if_tsresol).
    packets: [(interface_id, ts_ns, bytes)]; ts written in that interface's unit."""
    out = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    for lt, res in interfaces:
        out += _block(1, struct.pack("<HHI", lt, 0, 262144) + _opt(9, bytes([res]))
                      + _opt(0, b""))
    for ifid, ts, data in packets:
        res = interfaces[ifid][1]
        units = ts * 2 ** (res & 0x7F) // 10**9 if res & 0x80 else ts // 10 ** (9 - res)
        out += _block(6, struct.pack("<IIIII", ifid, units >> 32, units & 0xFFFFFFFF,
                                     len(data), len(data)) + data)
    with open(path, "wb") as f:
        f.write(out)
