"""bfd - BFD Control packets (RFC 5880 4.1) and their authentication sections (4.2-4.4).

Every field can be set, including wrong ones (version, length, a truncated packet is the
caller's slice): tests and floods need malformed packets as much as good ones.
"""

from __future__ import annotations

import struct

CONTROL_PORT, ECHO_PORT, MULTIHOP_PORT = 3784, 3785, 4784  # RFC 5881 4, RFC 5883 3
CONTROL_LEN = 24  # the mandatory section
STATE = {"AdminDown": 0, "Down": 1, "Init": 2, "Up": 3}  # RFC 5880 4.1 Sta
FLAG = {"P": 0x20, "F": 0x10, "C": 0x08, "A": 0x04, "D": 0x02, "M": 0x01}
AUTH_SIMPLE, AUTH_KEYED_MD5, AUTH_METICULOUS_MD5 = 1, 2, 3
AUTH_KEYED_SHA1, AUTH_METICULOUS_SHA1 = 4, 5
_CONTROL = struct.Struct("!BBBBIIIII")


def control(state: int | str = 3, my_disc: int = 1, your_disc: int = 0, *, diag: int = 0,
            flags: int | str = 0, mult: int = 3, tx_us: int = 300000, rx_us: int = 300000,
            echo_rx_us: int = 0, version: int = 1, length: int | None = None,
            auth: bytes = b"") -> bytes:
    """A Control packet: STATE (0-3 or a name of STATE), FLAGS (bits or letters "PF..."),
    intervals in microseconds. AUTH, when given, is appended and sets the A bit. LENGTH
    defaults to 24 + len(AUTH); give it to lie. Fields are masked to their widths."""
    st = STATE[state] if isinstance(state, str) else state
    fl = sum(FLAG[c] for c in flags) if isinstance(flags, str) else flags
    if auth:
        fl |= FLAG["A"]
    return _CONTROL.pack((version << 5) | (diag & 0x1F), ((st & 3) << 6) | (fl & 0x3F), mult,
                         CONTROL_LEN + len(auth) if length is None else length, my_disc,
                         your_disc, tx_us, rx_us, echo_rx_us) + auth


def decode_control(b: bytes) -> dict[str, int | bool]:
    """The mandatory section's fields of a Control packet of at least 24 bytes."""
    vd, sf, mult, length, my, your, tx, rx, erx = _CONTROL.unpack_from(b)
    return dict(version=vd >> 5, diag=vd & 0x1F, state=sf >> 6, P=bool(sf & 0x20),
                F=bool(sf & 0x10), mult=mult, length=length, my=my, your=your, tx=tx, rx=rx,
                echo_rx=erx)


def auth_simple(key_id: int, password: bytes) -> bytes:
    """RFC 5880 4.2: Simple Password (1 to 16 bytes)."""
    return struct.pack("!BBB", AUTH_SIMPLE, 3 + len(password), key_id) + password


def auth_digest(atype: int, key_id: int, seq: int, digest: bytes) -> bytes:
    """RFC 5880 4.3/4.4: keyed or meticulous MD5 (16-byte digest) or SHA1 (20 bytes)."""
    return struct.pack("!BBBBI", atype, 8 + len(digest), key_id, 0, seq) + digest


def echo(payload: bytes = b"\0" * CONTROL_LEN) -> bytes:
    """An Echo packet's payload (RFC 5880 6.4: its contents are the sender's own business)."""
    return bytes(payload)


ENGINE_ECHO_MAGIC = b"XBFE"


def engine_echo(my_disc: int, seq: int, tx_ns: int) -> bytes:
    """The payload of the engine's own Echo packets (bfd_shared.h, struct bfd_echo_payload):
    "XBFE", the session's My Discriminator, a sequence number, 4 zero bytes, the send time
    (CLOCK_MONOTONIC ns), network order."""
    return ENGINE_ECHO_MAGIC + struct.pack("!IIIQ", my_disc, seq, 0, tx_ns)
