"""Hardware-timestamped capture (lab.nic.hwstamp): the real ioctls and a real capture on this
machine's veth, which has no hardware stamps, so the capture says so and stamps with the host
clock; and the enable/restore bookkeeping against igb's documented answers (no I210 here)."""

from __future__ import annotations

import errno
import json
import socket
import struct
import subprocess
import time

import pytest

from conftest import PY, ROOT, VethPair
from lab.nic import hwstamp
from lab.nic.parse import HwtstampConfig
from replay import ReplayHost

NONE_OFF = HwtstampConfig(tx_type=0, rx_filter=0)


def test_ioctls_on_veth_loopback_and_a_missing_device(veth: VethPair) -> None:
    for ifc, ns in (("va", veth.ns_a), ("lo", veth.ns_a)):
        with pytest.raises(OSError) as e:
            hwstamp.get_config(ifc, ns)
        assert e.value.errno == errno.EOPNOTSUPP
        with pytest.raises(OSError) as e:
            hwstamp.set_config(ifc, hwstamp.CAPTURE_CONFIG, ns)
        assert e.value.errno == errno.EOPNOTSUPP
    # va lives in the namespace only: from ours the lookup fails (the socket's netns counts).
    with pytest.raises(OSError) as e:
        hwstamp.get_config("va")
    assert e.value.errno == errno.ENODEV
    with pytest.raises(OSError) as e:
        hwstamp.get_config("x" * 16)
    assert e.value.errno == errno.EINVAL


def test_tcpdump_command() -> None:
    assert hwstamp.tcpdump_argv("enp5s0", "/r/wire.pcap", "adapter_unsynced", 256, 65536) == [
        "tcpdump", "-i", "enp5s0", "-j", "adapter_unsynced", "--time-stamp-precision=nano",
        "-s", "256", "-B", "65536", "-Z", "root", "-n", "-w", "/r/wire.pcap",
        "udp and (port 3784 or port 3785 or port 4784 or port 6784)"]


def test_lab_capture_command_is_unchanged_by_the_hook() -> None:
    # lab.capture.Capture.argv() is the hook HwCapture overrides; the wire capture's own
    # command (the run's, with its 32 MiB ring) must stay what it was before the hook existed.
    from pathlib import Path
    from lab.rig import capture
    run = capture.Capture("xb000000-wire", Path("c.pcap"), Path("c.log"),
                          buffer_kib=capture.RUN_BUFFER_KIB)
    assert run.argv() == [
        "ip", "netns", "exec", "xb000000-wire", "tcpdump", "-i", "any", "-y", "LINUX_SLL2",
        "-j", "host", "--time-stamp-precision=nano", "-B", "32768", "-Z", "root", "-n", "-w",
        "c.pcap", "inbound and udp and (port 3784 or port 3785 or port 4784)"]
    # a capture started while sessions run: the 2 MiB ring (docs/lab.md section 1, Capture)
    midrun = capture.Capture("xb000000-wire", Path("c.pcap"), Path("c.log")).argv()
    assert midrun[midrun.index("-B") + 1] == "2048"


def test_prepare_on_veth_falls_back_to_host_stamps_and_says_so(veth: VethPair) -> None:
    st = hwstamp.prepare("va", veth.ns_a)
    assert (st.clock, st.granted, st.previous) == ("host", None, None)
    assert st.warning == ("va has no hardware receive timestamps (ethtool -T: PHC none): "
                          "packets stamped with the host clock")
    assert hwstamp.restore(st).restored is None  # nothing was changed, nothing to restore


class Igb:
    """The answers igb gives an I210 (igb_ptp_set_timestamp_mode, igb_ptp_get_ts_config in
    drivers/net/ethernet/intel/igb/igb_ptp.c): any filter other than none becomes "all" on
    82580 and later; the config reads back as set. Records every call."""

    def __init__(self, current: HwtstampConfig, refuse: int = 0, unreadable: bool = False):
        self.current, self.refuse, self.unreadable = current, refuse, unreadable
        self.calls: list[tuple[str, HwtstampConfig | None]] = []

    def get(self, iface: str, netns: str | None) -> HwtstampConfig:
        self.calls.append(("get", None))
        if self.unreadable:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return self.current

    def put(self, iface: str, cfg: HwtstampConfig, netns: str | None) -> HwtstampConfig:
        self.calls.append(("set", cfg))
        if self.refuse:
            raise OSError(self.refuse, "refused")
        self.current = HwtstampConfig(cfg.tx_type, 0 if cfg.rx_filter == 0 else 1)
        return self.current


def i210() -> ReplayHost:
    return ReplayHost("i210", {("ethtool", "-T", "enp5s0"): "ethtool_T_i210.txt"})


def test_prepare_and_restore_on_an_i210() -> None:
    nic = Igb(NONE_OFF)
    st = hwstamp.prepare("enp5s0", None, host=i210(), get=nic.get, put=nic.put)
    assert (st.clock, st.warning, st.phc_index) == ("adapter_unsynced", "", 0)
    assert (st.previous, st.granted) == (NONE_OFF, HwtstampConfig(1, 1))
    hwstamp.restore(st, get=nic.get, put=nic.put)
    assert nic.calls == [("get", None), ("set", hwstamp.CAPTURE_CONFIG), ("set", NONE_OFF),
                         ("get", None)]
    assert (st.restored, nic.current, st.restore_error) == (NONE_OFF, NONE_OFF, "")
    assert st.as_dict()["restored"] == {"tx_type": "off", "rx_filter": "none", "flags": 0}
    hwstamp.restore(st, get=nic.get, put=nic.put)  # a second restore changes nothing
    assert len(nic.calls) == 4


def test_restore_puts_back_what_was_there_even_a_ptp_filter() -> None:
    ptp = HwtstampConfig(tx_type=1, rx_filter=12)  # what ptp4l asks for (ptpv2-event)
    nic = Igb(ptp)
    st = hwstamp.prepare("enp5s0", None, host=i210(), get=nic.get, put=nic.put)
    hwstamp.restore(st, get=nic.get, put=nic.put)
    assert nic.calls[2] == ("set", ptp)
    # igb answers a PTP filter with "all" (82580 and later): the restore records that truth.
    assert st.restored == HwtstampConfig(1, 1)


def test_refused_or_unreadable_filter() -> None:
    nic = Igb(NONE_OFF, refuse=errno.ERANGE)
    st = hwstamp.prepare("enp5s0", None, host=i210(), get=nic.get, put=nic.put)
    assert st.clock == "host"
    assert st.warning == ("enp5s0: SIOCSHWTSTAMP filter all refused (refused): packets "
                          "stamped with the host clock")
    nic = Igb(NONE_OFF, unreadable=True)
    st = hwstamp.prepare("enp5s0", None, host=i210(), get=nic.get, put=nic.put)
    assert st.clock == "adapter_unsynced"
    assert st.warning.startswith("previous filter unreadable (SIOCGHWTSTAMP: Operation not "
                                 "supported); restore sets filter none, tx off")
    nic.unreadable = False
    hwstamp.restore(st, get=nic.get, put=nic.put)
    assert nic.calls[-2] == ("set", NONE_OFF)


def _send(ns: str, dst: str, ports: list[int]) -> None:
    """UDP datagrams from inside NS (a Python one-liner run there), one per port in PORTS."""
    code = ("import socket,sys;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
            "[s.sendto(b'\\x20\\x40\\x03\\x18'+bytes(20),(sys.argv[1],int(p)))"
            " for p in sys.argv[2:]]")
    subprocess.run(["ip", "netns", "exec", ns, PY, "-c", code, dst, *map(str, ports)],
                   check=True, timeout=30)


def _pcap_records(path) -> tuple[int, list[int]]:
    data = path.read_bytes()
    magic = struct.unpack_from("<I", data, 0)[0]
    caplens, off = [], 24
    while off + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, off + 8)[0]
        caplens.append(caplen)
        off += 16 + caplen
    return magic, caplens


def test_capture_on_veth_with_host_stamps(veth: VethPair, tmp_path) -> None:
    pcap = tmp_path / "wire.pcap"
    cap = hwstamp.HwCapture(veth.ns_a, pcap, tmp_path / "wire.log", iface="va",
                            buffer_kib=4096)
    cap.start()
    try:
        # 10 BFD control, 5 echo, 5 multihop, 5 micro-BFD, 10 other: 25 in the filter.
        _send(veth.ns_b, "10.99.0.1", [3784] * 10 + [3785] * 5 + [4784] * 5 + [6784] * 5
              + [9999] * 10)
        # tcpdump hands over a ring block when it fills or after its 1 s timeout; a stop
        # sooner loses the last partly filled block, so the capture runs on past it.
        time.sleep(1.5)
    finally:
        stats = cap.stop()
    assert (stats["captured"], stats["dropped"]) == (25, 0)
    magic, caplens = _pcap_records(pcap)
    assert magic == 0xA1B23C4D  # nanosecond pcap
    assert len(caplens) == 25 and set(caplens) == {14 + 20 + 8 + 24}
    s = cap.summary()
    assert (s["clock"], s["precision"], s["snaplen_bytes"], s["filter"]) == (
        "host", "ns", 256, "udp and (port 3784 or port 3785 or port 4784 or port 6784)")
    assert s["warning"] == ("va has no hardware receive timestamps (ethtool -T: PHC none): "
                            "packets stamped with the host clock")
    assert s["nic_drops"] == {"rx_dropped": 0, "rx_missed_errors": 0, "rx_fifo_errors": 0,
                              "rx_over_errors": 0}
    assert s["command"][:5] == ["ip", "netns", "exec", veth.ns_a, "tcpdump"]
    assert s["command"][5:9] == ["-i", "va", "-j", "host"]
    json.dumps(s)  # what a run summary records must serialise


def test_capture_cli(veth: VethPair, tmp_path) -> None:
    pcap = tmp_path / "cap.pcap"
    proc = subprocess.Popen([PY, "-m", "lab.nic.hwstamp", "--netns", veth.ns_a, "capture",
                             "va", str(pcap), "--duration-s", "3"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "cap.pcap.log"
    for _ in range(200):  # until tcpdump listens (its log), at most 10 s
        if log.exists() and "listening on" in log.read_text():
            break
        time.sleep(0.05)
    _send(veth.ns_b, "10.99.0.1", [3784] * 7)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    summary = json.loads((tmp_path / "cap.pcap.summary.json").read_text())
    assert (summary["clock"], summary["tcpdump"]["captured"]) == ("host", 7)
    assert out.startswith(f"{pcap}: clock host (va has no hardware receive timestamps")
    g = subprocess.run([PY, "-m", "lab.nic.hwstamp", "--netns", veth.ns_a, "get", "va"],
                       cwd=ROOT, capture_output=True, text=True)
    assert (g.returncode, g.stderr.strip()) == (3, "hwstamp: va: Operation not supported")
    assert socket.if_nametoindex("lo") == 1  # our own namespace was never left
