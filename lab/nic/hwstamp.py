"""hwstamp - hardware receive timestamps for a capture: check, enable, capture, restore.

A capture host stamps each packet on its NIC's own clock (a PTP hardware clock) when the
NIC can stamp every received packet: `ethtool -T` lists hardware-receive, hardware-raw-clock,
a PHC and the receive filter "all". Then prepare() asks the driver for HWTSTAMP_FILTER_ALL
(SIOCSHWTSTAMP, the same request libpcap makes for `tcpdump -j adapter_unsynced`, which never
puts the old value back), tcpdump captures with nanosecond stamps from the adapter, and
restore() sets the filter the port had before. Where the NIC has no hardware stamps (veth,
loopback, virtio) the capture says so and uses the host clock: never silently.

Why restore matters: on an igb port HWTSTAMP_FILTER_ALL costs a register read per packet,
and one queue handles a sixth of the rate (deployment guide, "Under a flood"). Fine on the
capture host for the capture; wrong left behind on a port that carries BFD.

API:
    st = prepare(iface, netns)      -> Stamping (clock "adapter_unsynced" or "host", warning)
    argv = tcpdump_argv(iface, pcap, st.clock, snaplen_bytes, buffer_kib)
    restore(st)                     -> puts the previous filter back, records the outcome
    HwCapture(ns, pcap, log, iface=...)  does all three around lab.capture.Capture
    python3 -m lab.nic.hwstamp {get,set,capture} ...   the same from a shell (capture host)
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..capture import Capture
from ..netns import nsexec
from ..util import LabError
from . import parse
from .host import Host, LocalHost
from .parse import HwtstampConfig, ParseError

SIOCSHWTSTAMP = 0x89B0  # linux/sockios.h
SIOCGHWTSTAMP = 0x89B1
CLONE_NEWNET = 0x40000000
IFNAMSIZ = 16
IFREQ_SIZE = 40  # struct ifreq on 64-bit Linux

TX_ON = parse.TX_TYPES.index("on")
FILTER_ALL = parse.RX_FILTERS.index("all")
# What libpcap requests for an adapter time stamp type (pcap-linux.c create_ring()).
CAPTURE_CONFIG = HwtstampConfig(tx_type=TX_ON, rx_filter=FILTER_ALL)

CLOCK_ADAPTER = "adapter_unsynced"  # the NIC's PHC, not steered to the system clock
CLOCK_HOST = "host"
# BFD control and echo (RFC 5881), multihop (RFC 5883), micro-BFD on LAG members (RFC 7130).
BFD_PORTS = (3784, 3785, 4784, 6784)
CAPTURE_FILTER = "udp and (" + " or ".join(f"port {p}" for p in BFD_PORTS) + ")"
SNAPLEN_BYTES = 256  # Ethernet + VLAN + IPv6 + UDP + BFD with the largest auth section < 160
NIC_DROP_COUNTERS = ("rx_dropped", "rx_missed_errors", "rx_fifo_errors", "rx_over_errors")


# ----------------------------------------------------------------- SIOC[GS]HWTSTAMP

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


# ------------------------------------------------------------------- the capture side

@dataclass
class Stamping:
    """Which clock stamps a capture on IFACE, and what was done to the NIC for it."""

    iface: str
    netns: str | None
    clock: str  # CLOCK_ADAPTER or CLOCK_HOST
    warning: str = ""  # why the host clock, or what could not be done; '' when all is well
    phc_index: int | None = None
    previous: HwtstampConfig | None = None  # the port's config before the capture
    granted: HwtstampConfig | None = None  # what the driver set for the capture
    restored: HwtstampConfig | None = None  # what it reads after restore()
    restore_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        cfg = (lambda c: None if c is None else c.as_dict())
        return {"iface": self.iface, "netns": self.netns, "clock": self.clock,
                "warning": self.warning, "phc_index": self.phc_index,
                "previous": cfg(self.previous), "granted": cfg(self.granted),
                "restored": cfg(self.restored), "restore_error": self.restore_error}


Getter = Callable[[str, str | None], HwtstampConfig]
Setter = Callable[[str, HwtstampConfig, str | None], HwtstampConfig]


def prepare(iface: str, netns: str | None = None, *, host: Host | None = None,
            get: Getter = get_config, put: Setter = set_config) -> Stamping:
    """Decide the capture clock for IFACE and, for the adapter's clock, enable
    HWTSTAMP_FILTER_ALL. Never raises for a NIC without hardware stamps: the Stamping then
    says "host" and why. GET/PUT are the ioctls (replaceable to replay a driver's answers)."""
    host = host or LocalHost(netns)
    r = host.run(["ethtool", "-T", iface])
    why = ""
    ts = None
    if not r.ok:
        why = f"ethtool -T {iface}: {r.message}"
    else:
        try:
            ts = parse.timestamping(r.stdout)
        except ParseError as e:
            why = f"ethtool -T {iface}: {e}"
    if ts is not None and not ts.hardware_rx:
        phc = "none" if ts.phc_index is None else ts.phc_index
        why = f"{iface} has no hardware receive timestamps (ethtool -T: PHC {phc})"
    elif ts is not None and not ts.stamps_all:
        why = (f"{iface} cannot stamp every packet in hardware (receive filters: "
               f"{', '.join(ts.rx_filters) or 'none'})")
    if why:
        return Stamping(iface, netns, CLOCK_HOST,
                        f"{why}: packets stamped with the host clock", None)
    assert ts is not None
    st = Stamping(iface, netns, CLOCK_HOST, "", ts.phc_index)
    try:
        st.previous = get(iface, netns)
    except OSError as e:
        st.warning = (f"previous filter unreadable (SIOCGHWTSTAMP: {e.strerror or e}); "
                      "restore sets filter none, tx off")
    try:
        st.granted = put(iface, CAPTURE_CONFIG, netns)
    except OSError as e:
        st.warning = (f"{iface}: SIOCSHWTSTAMP filter all refused ({e.strerror or e}): "
                      "packets stamped with the host clock")
        return st
    if st.granted.rx_filter != FILTER_ALL:
        st.warning = (f"{iface}: driver granted filter "
                      f"{parse.rx_filter_name(st.granted.rx_filter)}, not all: packets "
                      "stamped with the host clock")
        restore(st, put=put, get=get)
        return st
    st.clock = CLOCK_ADAPTER
    return st


def restore(st: Stamping, *, get: Getter = get_config, put: Setter = set_config) -> Stamping:
    """Put back the config the port had before prepare() (none/off when it was unreadable)
    and record what the driver reports afterwards. Idempotent; never raises."""
    if st.granted is None or st.restored is not None:
        return st
    try:
        put(st.iface, st.previous or HwtstampConfig(), st.netns)
        st.restored = get(st.iface, st.netns)
    except OSError as e:
        st.restore_error = f"SIOCSHWTSTAMP restore failed: {e.strerror or e}"
    return st


def tcpdump_argv(iface: str, pcap: Path | str, clock: str, snaplen_bytes: int = SNAPLEN_BYTES,
                 buffer_kib: int = 32768) -> list[str]:
    """The capture command: BFD's ports only, nanosecond stamps from CLOCK."""
    return ["tcpdump", "-i", iface, "-j", clock, "--time-stamp-precision=nano",
            "-s", str(snaplen_bytes), "-B", str(buffer_kib), "-Z", "root", "-n",
            "-w", str(pcap), CAPTURE_FILTER]


def nic_counters(host: Host, iface: str) -> dict[str, int]:
    """The interface's receive drop counters (sysfs statistics) that exist here."""
    out = {}
    for name in NIC_DROP_COUNTERS:
        v = host.read(f"/sys/class/net/{iface}/statistics/{name}")
        if v is not None and v.strip().isdigit():
            out[name] = int(v)
    return out


@dataclass
class HwCapture(Capture):
    """A capture of every BFD packet arriving on IFACE (a switch mirror port), stamped by the
    NIC when it can. NS '' captures in the caller's namespace. After stop(), summary() is
    what a run records: the clock, the warning, tcpdump's and the NIC's drop counts.

    tcpdump hands packets over a ring block at a time (when it fills, or after 1 s): stop()
    sooner than 1 s after the last packet of interest loses that last, partly filled block."""

    snaplen_bytes: int = SNAPLEN_BYTES
    stamping: Stamping | None = None
    nic_before: dict[str, int] = field(default_factory=dict)
    nic_drops: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.iface:
            raise LabError("HwCapture needs the capture interface (iface=...)")
        self._host = LocalHost(self.ns or None)

    def argv(self) -> list[str]:
        clock = self.stamping.clock if self.stamping else CLOCK_HOST
        cmd = tcpdump_argv(self.iface, self.pcap, clock, self.snaplen_bytes, self.buffer_kib)
        return nsexec(self.ns, cmd) if self.ns else cmd

    def start(self, timeout_s: float = 10.0) -> int:
        self.stamping = prepare(self.iface, self.ns or None, host=self._host)
        self.nic_before = nic_counters(self._host, self.iface)
        try:
            return super().start(timeout_s)
        except BaseException:
            restore(self.stamping)
            raise

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        stats = super().stop(timeout_s)
        st = self.stamping
        if st is not None:
            log = self.log.read_text(errors="replace")
            # libpcap falls back to host stamps with a warning when it cannot set the type.
            line = next((ln for ln in log.splitlines()
                         if "When trying to set timestamp type" in ln), "")
            if line and st.clock == CLOCK_ADAPTER:
                st.clock = CLOCK_HOST
                st.warning = f"tcpdump fell back to host stamps: {line.strip()}"
            restore(st)
        after = nic_counters(self._host, self.iface)
        self.nic_drops = {k: after[k] - self.nic_before[k] for k in after if k in self.nic_before}
        return stats

    def summary(self) -> dict[str, Any]:
        st = self.stamping
        return {"iface": self.iface, "clock": st.clock if st else CLOCK_HOST,
                "warning": st.warning if st else "capture not started",
                "precision": "ns", "snaplen_bytes": self.snaplen_bytes,
                "buffer_kib": self.buffer_kib, "filter": CAPTURE_FILTER,
                "tcpdump": self.stats, "nic_drops": self.nic_drops,
                "hwtstamp": st.as_dict() if st else None, "command": self.argv()}


# ------------------------------------------------------------------------------ shell

def _cli(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.nic.hwstamp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netns", default=None, help="the interface's network namespace")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("get", help="print the current config (SIOCGHWTSTAMP) as JSON")
    g.add_argument("iface")
    s = sub.add_parser("set", help="set the config (SIOCSHWTSTAMP); prints what was granted")
    s.add_argument("iface")
    s.add_argument("--rx-filter", choices=parse.RX_FILTERS, required=True)
    s.add_argument("--tx-type", choices=parse.TX_TYPES, default="off")
    c = sub.add_parser("capture", help="capture BFD on IFACE until SIGINT/SIGTERM or "
                       "--duration-s; writes PCAP, PCAP.log and the summary JSON")
    c.add_argument("iface")
    c.add_argument("pcap", type=Path)
    c.add_argument("--duration-s", type=float, default=0.0, help="0: until a signal")
    c.add_argument("--snaplen-bytes", type=int, default=SNAPLEN_BYTES)
    c.add_argument("--buffer-kib", type=int, default=32768)
    c.add_argument("--summary", type=Path, default=None, help="default PCAP.summary.json")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "get":
            print(json.dumps(get_config(a.iface, a.netns).as_dict()))
            return 0
        if a.cmd == "set":
            cfg = HwtstampConfig(parse.TX_TYPES.index(a.tx_type),
                                 parse.RX_FILTERS.index(a.rx_filter))
            print(json.dumps(set_config(a.iface, cfg, a.netns).as_dict()))
            return 0
        cap = HwCapture(a.netns or "", a.pcap, a.pcap.with_name(a.pcap.name + ".log"),
                        buffer_kib=a.buffer_kib, iface=a.iface, snaplen_bytes=a.snaplen_bytes)
        stop = {"now": False}
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.update(now=True))
        cap.start()
        deadline = time.monotonic() + a.duration_s if a.duration_s > 0 else None
        while not stop["now"] and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.1)  # wait for the signal or the end of the duration
        cap.stop()
        out = a.summary or a.pcap.with_name(a.pcap.name + ".summary.json")
        out.write_text(json.dumps(cap.summary(), indent=1) + "\n")
        st = cap.stamping
        print(f"{a.pcap}: clock {st.clock if st else CLOCK_HOST}"
              + (f" ({st.warning})" if st and st.warning else "")
              + f"; {cap.stats}; NIC drops {cap.nic_drops}")
        return 0
    except OSError as e:
        print(f"hwstamp: {a.iface}: {e.strerror or e}", file=sys.stderr)
        return 3
    except LabError as e:
        print(f"hwstamp: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(_cli())
