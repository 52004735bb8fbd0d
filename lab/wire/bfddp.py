"""bfddp - FRR bfdd's distributed data-plane protocol, version 1 (../shared/docs/bfddp.md,
engine/bfddp.h): an 8-byte header (version, zero, type, id, length) then the body, big-endian.
"""

from __future__ import annotations

import struct

VERSION = 1
HDR = struct.Struct("!BBHHH")  # version, zero, type, id, length (header included)
(ECHO_REQUEST, ECHO_REPLY, ADD_SESSION, DELETE_SESSION, STATE_CHANGE, REQUEST_COUNTERS,
 SESSION_COUNTERS) = range(7)
SF_MULTIHOP, SF_DEMAND, SF_CBIT, SF_ECHO, SF_IPV6, SF_PASSIVE, SF_SHUTDOWN = (
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40)
_SESSION = struct.Struct("!I16s16sIIIIIIBBHI64s")
SESSION_LEN = HDR.size + _SESSION.size  # 140


def header(mtype: int, length: int, mid: int = 0, version: int = VERSION) -> bytes:
    """The header alone (LENGTH counts the header); any field may be wrong on purpose."""
    return HDR.pack(version, 0, mtype, mid, length)


def addr16(addr: bytes) -> bytes:
    """An address field: IPv4 in bytes 0-3, IPv6 in all 16."""
    return addr.ljust(16, b"\0")


def session(mtype: int = ADD_SESSION, src: bytes = b"", dst: bytes = b"", lid: int = 1,
            min_tx_us: int = 300000, min_rx_us: int = 300000, *, flags: int = 0,
            min_echo_tx_us: int = 50000, min_echo_rx_us: int = 50000, hold_time: int = 0,
            ttl: int = 255, detect_mult: int = 3, ifindex: int = 0, ifname: bytes = b"",
            mid: int = 0) -> bytes:
    """DP_ADD_SESSION / DP_DELETE_SESSION (140 bytes). SRC and DST as packed addresses
    (ipaddress's .packed), intervals in microseconds, IFNAME NUL-padded to 64 bytes."""
    body = _SESSION.pack(flags, addr16(src), addr16(dst), lid, min_tx_us, min_rx_us,
                         min_echo_tx_us, min_echo_rx_us, hold_time, ttl, detect_mult, 0,
                         ifindex, ifname)
    return header(mtype, HDR.size + len(body), mid) + body


def echo(mtype: int, bfdd_us: int, dp_us: int = 0, mid: int = 0) -> bytes:
    """ECHO_REQUEST / ECHO_REPLY (24 bytes): bfdd's and the data plane's timestamps in us."""
    return header(mtype, HDR.size + 16, mid) + struct.pack("!QQ", bfdd_us, dp_us)


def request_counters(lid: int, mid: int = 0) -> bytes:
    """REQUEST_COUNTERS (12 bytes) for session LID."""
    return header(REQUEST_COUNTERS, HDR.size + 4, mid) + struct.pack("!I", lid)
