"""Two recorded I210/igb hosts for the tuning checks, composed from tests/nic/fixtures.

AS_INSTALLED: an I210 the way the deployment guide found its testbed: ASPM L1 on the NIC
(recorded: lspci_i210_aspm_l1.txt) and its root port, the firmware owning ASPM (recorded
dmesg lines), flow control on and address-only UDP hashing (igb defaults), rx-usecs 3
(recorded), HWTSTAMP_FILTER_ALL left on the port (what libpcap leaves after a
`tcpdump -j adapter_unsynced`), every queue IRQ on CPU 0, deep C-states enabled, and this
repository's engine attached without --spread-pass.

TUNED: an I210 after the guide's changes: ASPM disabled on the NIC, whose root port cannot
do ASPM at all (recorded lspci pair, linux-pci), UDP/IPv4 hashed on ports (recorded,
intel-wired-lan), flow control off, rx-usecs 0, filter none, queues spread over CPUs,
C6/C8 disabled, the engine with --spread-pass; dmesg refused to a non-root reader
(the message recorded on this machine).

Each fixture file says where its output comes from; what is not a recording (sysfs values,
the engine's command line) is written here and labelled constructed.
"""

from __future__ import annotations

from lab.nic.host import Process
from lab.nic.parse import HwtstampConfig

from replay import ReplayHost, fixture

POLICY = "[default] performance powersave powersupersave \n"  # recorded on this machine
# Constructed: intel_idle's Alder Lake table (drivers/idle/intel_idle.c adl_cstates: C1E 2 us,
# C6 220 us, C8 280 us exit latency) as sysfs shows it; C1 (marked unusable there) and C10
# (exit latency not in the source read) are left out. POLL is cpuidle's state0 on x86.
ADL_STATES = [("POLL", 0), ("C1E", 2), ("C6", 220), ("C8", 280)]
ENGINE = "/usr/sbin/xdp-bfd"


def _cpuidle(disabled: set[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    files: dict[str, str] = {"/sys/devices/system/cpu/cpuidle/current_driver": "intel_idle\n"}
    dirs: dict[str, list[str]] = {
        "/sys/devices/system/cpu": ["cpu0", "cpu1", "cpu2", "cpu3", "cpuidle", "online"]}
    for cpu in range(4):
        base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
        dirs[base] = [f"state{i}" for i in range(len(ADL_STATES))]
        for i, (name, lat) in enumerate(ADL_STATES):
            files[f"{base}/state{i}/name"] = name + "\n"
            files[f"{base}/state{i}/latency"] = f"{lat}\n"
            files[f"{base}/state{i}/disable"] = "1\n" if name in disabled else "0\n"
    return files, dirs


def _irqs(first: int, cpus: list[int]) -> dict[str, str]:
    """Constructed affinity files of the four queue IRQs (and the misc one before them)."""
    files = {}
    for i, cpu in enumerate(cpus):
        files[f"/proc/irq/{first + 1 + i}/effective_affinity_list"] = f"{cpu}\n"
        files[f"/proc/irq/{first + 1 + i}/smp_affinity_list"] = "0-3\n"
    return files


def _tools(ifc: str, port: str, nic: str, ethtool: dict[str, str], lspci_port: str,
           lspci_nic: str) -> dict[tuple[str, ...], str]:
    """The recorded command -> fixture table of one host: ETHTOOL maps the option (or the
    flow type for -n) to its fixture."""
    out: dict[tuple[str, ...], str] = {}
    for opt, name in ethtool.items():
        argv = ("-n", ifc, "rx-flow-hash", opt) if opt in ("udp4", "udp6") else (opt, ifc)
        out[("ethtool", *argv)] = name
    out[("lspci", "-vvv", "-s", port)] = lspci_port
    out[("lspci", "-vvv", "-s", nic)] = lspci_nic
    return out


def as_installed() -> ReplayHost:
    ifc, nic, port = "enp5s0", "0000:05:00.0", "0000:00:1d.0"
    files, dirs = _cpuidle(disabled=set())
    files.update({"/sys/module/pcie_aspm/parameters/policy": POLICY,
                  "/proc/interrupts": fixture("interrupts_igb_i210.txt"),
                  **_irqs(122, [0, 0, 0, 0])})
    dirs.update({f"/sys/bus/pci/devices/{nic}/msi_irqs": ["122", "123", "124", "125", "126"],
                 f"/sys/class/net/{ifc}/queues": [f"{k}-{i}" for k in ("rx", "tx")
                                                  for i in range(4)]})
    return ReplayHost(
        "i210-as-installed",
        commands={
            **_tools(ifc, port, nic, {
                "-i": "ethtool_i_enp5s0.txt", "-a": "ethtool_a_igb_default.txt",
                "udp4": "ethtool_n_udp4_igb_default.txt",
                "udp6": "ethtool_n_udp6_igb_default.txt", "-c": "ethtool_c_rx_usecs_3.txt",
                "-T": "ethtool_T_i210.txt", "-l": "ethtool_l_i210.txt"},
                "lspci_rootport_aspm_l1.txt", "lspci_i210_aspm_l1.txt"),
            ("dmesg",): "dmesg_fadt_aspm.txt",
            (ENGINE, "--help"): "engine_help.txt",
        },
        files=files, dirs=dirs,
        links={f"/sys/class/net/{ifc}": f"/sys/devices/pci0000:00/{port}/{nic}/net/{ifc}",
               f"/sys/class/net/{ifc}/device": f"/sys/devices/pci0000:00/{port}/{nic}"},
        hwtstamp_config=HwtstampConfig(tx_type=1, rx_filter=1),
        # Constructed: the engine as the guide's engine.conf starts it (XDP_BFD_ARGS).
        processes=[Process(2301, [ENGINE, "--dplane", "50700", "--kernel-tx", ifc], True, ENGINE),
                   Process(2417, [ENGINE, "--kernel-tx", ifc], False, ENGINE)],
        node=("i210-as-installed", "recorded"),
    )


def tuned() -> ReplayHost:
    ifc, nic, port = "enp2s0", "0000:02:00.0", "0000:00:1c.4"
    files, dirs = _cpuidle(disabled={"C6", "C8"})
    # The constructed interrupt table, with this host's interface name and PCI id (02:00.0).
    table = fixture("interrupts_igb_i210.txt").replace("enp5s0", ifc)
    table = table.replace("26214", "10485")  # hwirq 2621440 + v -> 1048576 + v (id 0x0200)
    files.update({"/proc/interrupts": table, **_irqs(122, [0, 1, 2, 3])})
    dirs.update({f"/sys/bus/pci/devices/{nic}/msi_irqs": ["122", "123", "124", "125", "126"],
                 f"/sys/class/net/{ifc}/queues": [f"{k}-{i}" for k in ("rx", "tx")
                                                  for i in range(4)]})
    return ReplayHost(
        "i210-tuned",
        commands=_tools(ifc, port, nic, {
            "-i": "ethtool_i_i210.txt", "-a": "ethtool_a_off.txt",
            "udp4": "ethtool_n_udp4_i210_sdfn.txt", "udp6": "ethtool_n_udp6_sdfn.txt",
            "-c": "ethtool_c_rx_usecs_0.txt", "-T": "ethtool_T_i210.txt",
            "-l": "ethtool_l_i210.txt"}, "lspci_rootport_no_aspm.txt",
            "lspci_i210_aspm_disabled.txt"),
        failures={("dmesg",): (1, "dmesg: read kernel buffer failed: Operation not permitted")},
        files=files, dirs=dirs,
        links={f"/sys/class/net/{ifc}": f"/sys/devices/pci0000:00/{port}/{nic}/net/{ifc}",
               f"/sys/class/net/{ifc}/device": f"/sys/devices/pci0000:00/{port}/{nic}"},
        hwtstamp_config=HwtstampConfig(tx_type=0, rx_filter=0),
        processes=[Process(2301, [ENGINE, "--dplane", "50700", "--kernel-tx", ifc,
                                  "--spread-pass"], True, ENGINE)],
        node=("i210-tuned", "recorded"),
    )
