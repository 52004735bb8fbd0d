"""The pure readers of lab.nic.parse on recorded outputs (tests/nic/fixtures, each saying where
it comes from) and on this machine's own tools: exact values, and a clear error for text that
is not the tool's format."""

from __future__ import annotations

import os
import subprocess

import pytest

from lab.nic import parse
from lab.nic.parse import HwtstampConfig, ParseError
from replay import FIXTURES, fixture, source_lines


def test_every_fixture_says_where_it_comes_from() -> None:
    for path in sorted(FIXTURES.glob("*.txt")):
        src = " ".join(source_lines(path.name))
        assert src.startswith("#fixture: recorded") or src.startswith("#fixture: constructed"), \
            path.name
        if "recorded" in src.split()[1]:
            # a public address, or this project's own machine
            assert "https://" in src or "this project's lab machine" in src, path.name


def test_lspci_i210_with_aspm_l1() -> None:
    link = parse.lspci_link(fixture("lspci_i210_aspm_l1.txt"))
    assert (link.address, link.port_type, link.aspm_supported, link.aspm_enabled) == (
        "05:00.0", "Endpoint", "L0s L1", "L1 Enabled")
    assert link.aspm_control == 2
    assert link.description == ("Ethernet controller: Intel Corporation I210 Gigabit Network "
                                "Connection (rev 03)")
    assert link.driver == ""  # FreeBSD's lspci prints no driver line


def test_lspci_i210_with_aspm_disabled_and_its_root_port() -> None:
    nic = parse.lspci_link(fixture("lspci_i210_aspm_disabled.txt"))
    assert (nic.address, nic.port_type, nic.aspm_supported, nic.aspm_enabled, nic.driver) == (
        "02:00.0", "Endpoint", "L0s L1", "Disabled", "igb")
    assert nic.aspm_control == 0
    port = parse.lspci_link(fixture("lspci_rootport_no_aspm.txt"))
    assert (port.address, port.port_type, port.aspm_supported, port.aspm_enabled,
            port.driver) == ("00:1c.4", "Root Port (Slot+)", "not supported", "Disabled",
                             "pcieport")
    assert port.aspm_control == 0
    l1 = parse.lspci_link(fixture("lspci_rootport_aspm_l1.txt"))
    assert (l1.port_type, l1.aspm_enabled, l1.aspm_control) == (
        "Root Port (Slot+)", "L1 Enabled", 2)


def test_lspci_aspm_control_codes() -> None:
    def ctl(enabled: str) -> int:
        return parse.PcieLink("x", "y", "Endpoint", "L0s L1", enabled).aspm_control
    assert [ctl(e) for e in ("Disabled", "L0s Enabled", "L1 Enabled", "L0s L1 Enabled")] == [
        0, 1, 2, 3]


def test_lspci_without_root_is_refused_not_misread() -> None:
    # Real: this machine's lspci run as nobody prints "Capabilities: <access denied>".
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                          "lspci", "-vvv", "-s", "00:03.0"], capture_output=True, text=True,
                         check=True).stdout
    assert "<access denied>" in out
    with pytest.raises(ParseError, match="access denied"):
        parse.lspci_link(out)
    with pytest.raises(ParseError, match="no device line"):
        parse.lspci_link("")


def test_lspci_of_this_machines_virtio_nic_is_not_express() -> None:
    link = parse.lspci_link(subprocess.run(["lspci", "-vvv", "-s", "00:03.0"],
                                           capture_output=True, text=True, check=True).stdout)
    assert link.description == ("Ethernet controller: Red Hat, Inc. Virtio 1.0 network device "
                                "(rev 01)")
    assert not link.is_express and link.aspm_enabled == ""


def test_dmesg_firmware_owned_aspm() -> None:
    assert parse.firmware_owns_aspm(fixture("dmesg_fadt_aspm.txt")) == (
        "[    0.354349] acpi PNP0A08:00: FADT indicates ASPM is unsupported, using BIOS "
        "configuration")
    assert parse.firmware_owns_aspm(
        "[    0.1] ACPI FADT declares the system doesn't support PCIe ASPM, so disable it\n") == (
        "[    0.1] ACPI FADT declares the system doesn't support PCIe ASPM, so disable it")
    # This machine's kernel log (Firecracker guest): the OS owns ASPM.
    here = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    assert parse.firmware_owns_aspm(here) == ""


def test_aspm_policy() -> None:
    with open("/sys/module/pcie_aspm/parameters/policy") as f:
        assert parse.aspm_policy(f.read()) == "default"
    with pytest.raises(ParseError):
        parse.aspm_policy("default performance")


def test_flow_hash_fields_and_letters() -> None:
    sdfn = parse.flow_hash(fixture("ethtool_n_udp4_i210_sdfn.txt"))
    assert sdfn == ["IP SA", "IP DA", "L4 bytes 0 & 1 [TCP/UDP src port]",
                    "L4 bytes 2 & 3 [TCP/UDP dst port]"]
    assert parse.flow_hash_letters(sdfn) == "sdfn"
    default = parse.flow_hash(fixture("ethtool_n_udp6_igb_default.txt"))
    assert default == ["IP SA", "IP DA"] and parse.flow_hash_letters(default) == "sd"
    assert parse.flow_hash(fixture("ethtool_n_udp4_virtio_none.txt")) == []
    with pytest.raises(ParseError, match="discard"):
        parse.flow_hash("UDP over IPV4 flows - All matching flows discarded on RX\n")
    with pytest.raises(ParseError, match="unknown hash field"):
        parse.flow_hash("UDP over IPV4 flows use these fields for computing Hash flow key:\nX\n")
    with pytest.raises(ParseError):
        parse.flow_hash("Cannot get RX network flow hashing options: Operation not supported\n")


def test_pause() -> None:
    assert parse.pause(fixture("ethtool_a_igb_default.txt")) == {
        "autoneg": True, "rx": True, "tx": True, "rx_negotiated": True, "tx_negotiated": True}
    assert parse.pause(fixture("ethtool_a_off.txt")) == {
        "autoneg": False, "rx": False, "tx": False}
    with pytest.raises(ParseError):
        parse.pause("Pause parameters for x:\n")


def test_coalesce() -> None:
    c = parse.coalesce(fixture("ethtool_c_rx_usecs_3.txt"))
    assert (c["rx-usecs"], c["tx-usecs"], c["adaptive-rx"], c["adaptive-tx"]) == (3, 3, None, None)
    assert c["rx-frames"] is None and c["stats-block-usecs"] is None
    assert "CQE mode RX" not in c and "cqe" not in " ".join(c)
    assert parse.coalesce(fixture("ethtool_c_rx_usecs_0.txt"))["rx-usecs"] == 0
    # This machine's virtio_net: "Adaptive RX: off  TX: n/a", rx-usecs 0.
    live = parse.coalesce(subprocess.run(["ethtool", "-c", "eth0"], capture_output=True,
                                         text=True, check=True).stdout)
    assert (live["adaptive-rx"], live["adaptive-tx"], live["rx-frames"]) == (False, None, 1)


def test_timestamping_i210_and_veth() -> None:
    ts = parse.timestamping(fixture("ethtool_T_i210.txt"))
    assert ts.capabilities == ("hardware-transmit", "software-transmit", "hardware-receive",
                               "software-receive", "software-system-clock", "hardware-raw-clock")
    assert (ts.phc_index, ts.tx_modes, ts.rx_filters) == (0, ("off", "on"), ("none", "all"))
    assert ts.hardware_rx and ts.stamps_all
    lo = parse.timestamping(subprocess.run(["ethtool", "-T", "lo"], capture_output=True,
                                           text=True, check=True).stdout)
    assert lo.capabilities == ("software-transmit", "software-receive", "software-system-clock")
    assert (lo.phc_index, lo.tx_modes, lo.rx_filters) == (None, (), ())
    assert not lo.hardware_rx and not lo.stamps_all


def test_timestamping_older_layout_with_constants() -> None:
    # ethtool before 5.x printed the kernel constant beside each name (layout as in
    # https://github.com/the-tcpdump-group/libpcap/issues/459, an I350 on igb).
    text = ("Time stamping parameters for enp5s0f1:\nCapabilities:\n"
            "\thardware-transmit     (SOF_TIMESTAMPING_TX_HARDWARE)\n"
            "\thardware-receive      (SOF_TIMESTAMPING_RX_HARDWARE)\n"
            "\thardware-raw-clock    (SOF_TIMESTAMPING_RAW_HARDWARE)\n"
            "PTP Hardware Clock: 1\nHardware Transmit Timestamp Modes:\n"
            "\toff                   (HWTSTAMP_TX_OFF)\n"
            "Hardware Receive Filter Modes:\n\tnone                  (HWTSTAMP_FILTER_NONE)\n"
            "\tall                   (HWTSTAMP_FILTER_ALL)\n")
    ts = parse.timestamping(text)
    assert ts.capabilities == ("hardware-transmit", "hardware-receive", "hardware-raw-clock")
    assert (ts.phc_index, ts.rx_filters, ts.stamps_all) == (1, ("none", "all"), True)
    with pytest.raises(ParseError):
        parse.timestamping("Time stamping parameters for x:\n")


def test_channels() -> None:
    ch = parse.channels(fixture("ethtool_l_i210.txt"))
    assert ch == {"max": {"rx": None, "tx": None, "other": 1, "combined": 4},
                  "current": {"rx": None, "tx": None, "other": 1, "combined": 4}}
    assert parse.queue_count(ch["current"]) == 4
    with pytest.raises(ParseError):
        parse.channels("netlink error: Operation not supported\n")


def test_driver_info() -> None:
    info = parse.driver_info(fixture("ethtool_i_i210.txt"))
    assert (info["driver"], info["version"], info["bus-info"], info["firmware-version"]) == (
        "igb", "5.4.0-k", "0000:02:00.0", "3.16, 0x800004ad")


def test_interrupts_and_queue_irqs() -> None:
    irqs = parse.interrupts(fixture("interrupts_igb_i210.txt"))
    assert [i.number for i in irqs] == [0, 122, 123, 124, 125, 126]
    assert irqs[2] == parse.Irq(123, (8812345, 0, 0, 0), "IR-PCI-MSI", ("enp5s0-TxRx-0",))
    assert irqs[0].actions == ("timer",)
    assert [i.number for i in parse.queue_irqs(irqs, "enp5s0")] == [123, 124, 125, 126]
    # The misc vector is named after the interface itself: never a queue.
    assert [i.number for i in parse.queue_irqs(irqs, "enp5s0", {122, 123})] == [
        123, 124, 125, 126]
    assert parse.queue_irqs(irqs, "enp5s") == []
    # Old kernels fold the trigger into the chip name; several handlers share a line.
    old = parse.interrupts("   CPU0 CPU1\n 45: 3 4 PCI-MSI-edge eth0-TxRx-0\n"
                           " 16: 0 0 IO-APIC 16-fasteoi uhci_hcd:usb5, ahci[0000:02:00.0]\n")
    assert old[0].actions == ("eth0-TxRx-0",) and old[0].chip == "PCI-MSI-edge"
    assert old[1].actions == ("uhci_hcd:usb5", "ahci[0000:02:00.0]")
    here = parse.interrupts(open("/proc/interrupts").read())
    assert here and all(len(i.counts) == os.cpu_count() for i in here)


def test_cpulists() -> None:
    assert parse.cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse.cpulist_text([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert parse.cpulist("") == [] and parse.cpulist_text([]) == ""
    with pytest.raises(ParseError):
        parse.cpulist("0-x")


def test_pci_path() -> None:
    assert parse.pci_path("/sys/devices/pci0000:00/0000:00:1c.4/0000:02:00.0") == [
        "0000:00:1c.4", "0000:02:00.0"]
    # This machine's eth0: virtio under a root-bus function, no root port above it.
    assert parse.pci_path(os.path.realpath("/sys/class/net/eth0/device")) == ["0000:00:03.0"]
    assert parse.pci_path("/sys/devices/virtual/net/lo") == []


def test_engine_command_lines() -> None:
    # The guide's engine.conf: XDP_BFD_ARGS="--dplane 50700 --kernel-tx eth0"
    argv = parse.cmdline(b"/usr/sbin/xdp-bfd\0--dplane\x0050700\0--kernel-tx\0eth0\0"
                         b"--kernel-tx=eth1\0")
    assert argv == ["/usr/sbin/xdp-bfd", "--dplane", "50700", "--kernel-tx", "eth0",
                    "--kernel-tx=eth1"]
    assert parse.engine_interfaces(argv) == ["eth0", "eth1"]
    assert parse.engine_interfaces(["xdp-bfd", "--kernel-tx"]) == []


def test_hwtstamp_config_struct() -> None:
    cfg = HwtstampConfig(tx_type=1, rx_filter=1)
    raw = cfg.pack()
    assert raw == b"\0\0\0\0\x01\0\0\0\x01\0\0\0"  # flags, tx_type, rx_filter (little-endian)
    assert HwtstampConfig.unpack(raw) == cfg
    assert cfg.as_dict() == {"tx_type": "on", "rx_filter": "all", "flags": 0}
    assert HwtstampConfig(0, 12).as_dict()["rx_filter"] == "ptpv2-event"
    assert parse.rx_filter_name(99) == "unknown-99"
    with pytest.raises(ParseError):
        HwtstampConfig.unpack(b"\0" * 8)
