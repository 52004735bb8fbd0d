"""ioctl - the driver's hardware time stamping config (SIOCGHWTSTAMP / SIOCSHWTSTAMP,
linux/net_tstamp.h), read or set in any namespace. Used by the host checks (read-only) and by
the hardware-stamped capture (set, then restore)."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
from contextlib import contextmanager
from typing import Iterator

from ..util import LabError
from . import parse
from .parse import HwtstampConfig

SIOCSHWTSTAMP = 0x89B0  # linux/sockios.h
SIOCGHWTSTAMP = 0x89B1
CLONE_NEWNET = 0x40000000
IFNAMSIZ = 16
IFREQ_SIZE = 40  # struct ifreq on 64-bit Linux


@contextmanager
def _socket_in(netns: str | None) -> Iterator[socket.socket]:
    """A datagram socket in NETNS (None: ours). The ioctls look the interface up in the
    socket's namespace, so only the socket needs to be made there (setns, then back)."""
    if netns is None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    else:
        libc = ctypes.CDLL(None, use_errno=True)
        own = os.open("/proc/self/ns/net", os.O_RDONLY)
        try:
            target = os.open(f"/run/netns/{netns}", os.O_RDONLY)
        except OSError:
            os.close(own)
            raise
        try:
            if libc.setns(target, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns {netns}: {os.strerror(e)}")
            try:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            finally:
                if libc.setns(own, CLONE_NEWNET) != 0:  # stranded in NETNS: stop here
                    raise LabError(f"setns back from {netns} failed: "
                                   f"{os.strerror(ctypes.get_errno())}")
        finally:
            os.close(target)
            os.close(own)
    try:
        yield s
    finally:
        s.close()


def _hwtstamp_ioctl(iface: str, request: int, cfg: HwtstampConfig,
                    netns: str | None) -> HwtstampConfig:
    name = iface.encode()
    if not name or len(name) >= IFNAMSIZ:
        raise OSError(errno.EINVAL, f"bad interface name {iface!r}")
    buf = (ctypes.c_char * parse.HWTSTAMP_CONFIG.size).from_buffer_copy(cfg.pack())
    ifr = struct.pack("16sP", name, ctypes.addressof(buf)).ljust(IFREQ_SIZE, b"\0")
    with _socket_in(netns) as s:
        fcntl.ioctl(s.fileno(), request, ifr)
    return HwtstampConfig.unpack(bytes(buf))


def get_config(iface: str, netns: str | None = None) -> HwtstampConfig:
    """The driver's current time stamping config for IFACE (SIOCGHWTSTAMP, read-only).
    Raises OSError: EOPNOTSUPP when the driver has none (veth, lo), ENODEV for no device."""
    return _hwtstamp_ioctl(iface, SIOCGHWTSTAMP, HwtstampConfig(), netns)


def set_config(iface: str, cfg: HwtstampConfig, netns: str | None = None) -> HwtstampConfig:
    """Ask the driver for CFG (SIOCSHWTSTAMP, needs CAP_NET_ADMIN); returns what it granted,
    which may stamp more than asked (igb on 82580 and later answers any PTP filter with
    "all"). Raises OSError (EOPNOTSUPP, ERANGE for a filter the NIC cannot do, EPERM)."""
    return _hwtstamp_ioctl(iface, SIOCSHWTSTAMP, cfg, netns)
