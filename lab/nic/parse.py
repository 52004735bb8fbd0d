"""parse - pure readers of the tools `tune check` runs: text in, reading out, no I/O.

Every function takes what a tool printed on stdout and returns plain values; text that is not
the tool's format raises ParseError (the caller reports the line as unsupported, never
crashes). Formats follow ethtool 6.1 (netlink) and its ioctl predecessors, pciutils 3.x
`lspci -vvv`, and the kernel's /proc and sysfs files.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass


class ParseError(ValueError):
    """The text is not the output the reader expects; the message says what was missing."""


# ---------------------------------------------------------------- ethtool -a (pause)

def pause(text: str) -> dict[str, bool]:
    """`ethtool -a IF`: {'autoneg', 'rx', 'tx'} and, when printed (netlink ethtool with a
    link partner), {'rx_negotiated', 'tx_negotiated'}. Values are True for "on"."""
    keys = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx",
            "rx negotiated": "rx_negotiated", "tx negotiated": "tx_negotiated"}
    out: dict[str, bool] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        key = keys.get(name.strip().lower())
        if sep and key and value.strip() in ("on", "off"):
            out[key] = value.strip() == "on"
    if not {"autoneg", "rx", "tx"} <= out.keys():
        raise ParseError("no Autonegotiate/RX/TX lines in `ethtool -a` output")
    return out


# ------------------------------------------------------- ethtool -n IF rx-flow-hash X

# ethtool's unparse_rxfhashopts() names, and the letters `ethtool -N ... rx-flow-hash` takes.
FLOW_HASH_LETTERS = {
    "L2DA": "m", "VLAN tag": "v", "L3 proto": "t", "IP SA": "s", "IP DA": "d",
    "L4 bytes 0 & 1 [TCP/UDP src port]": "f", "L4 bytes 2 & 3 [TCP/UDP dst port]": "n",
}
PORT_FIELDS = ("L4 bytes 0 & 1 [TCP/UDP src port]", "L4 bytes 2 & 3 [TCP/UDP dst port]")


def flow_hash(text: str) -> list[str]:
    """`ethtool -n IF rx-flow-hash udp4|udp6`: the hashed fields in ethtool's words, in the
    order printed ([] for "None"). A flow type set to discard raises ParseError."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if "flows use these fields for computing Hash flow key" in line:
            fields = []
            for f in lines[i + 1:]:
                if f == "None":
                    return []
                if f not in FLOW_HASH_LETTERS:
                    raise ParseError(f"unknown hash field {f!r}")
                fields.append(f)
            return fields
        if "All matching flows discarded on RX" in line:
            raise ParseError("flow type set to discard")
    raise ParseError("no 'use these fields for computing Hash flow key' line")


def flow_hash_letters(fields: list[str]) -> str:
    """The `ethtool -N ... rx-flow-hash TYPE LETTERS` argument that selects FIELDS."""
    return "".join(FLOW_HASH_LETTERS[f] for f in fields)


# ------------------------------------------------------------- ethtool -c (coalesce)

def coalesce(text: str) -> dict[str, int | bool | None]:
    """`ethtool -c IF`: every "name: value" pair, names as printed (rx-usecs, tx-frames, ...),
    ints where numeric, None for "n/a"; 'adaptive-rx'/'adaptive-tx' True/False/None."""
    out: dict[str, int | bool | None] = {}
    for line in text.splitlines():
        m = re.match(r"\s*Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", line)
        if m:
            for key, v in zip(("adaptive-rx", "adaptive-tx"), m.groups()):
                out[key] = None if v == "n/a" else v == "on"
            continue
        m = re.match(r"\s*([a-z][a-z0-9-]*):\s*(\S+)\s*$", line)
        if m:
            v = m.group(2)
            out[m.group(1)] = None if v == "n/a" else int(v) if v.isdigit() else None
    if "rx-usecs" not in out:
        raise ParseError("no rx-usecs line in `ethtool -c` output")
    return out


# ------------------------------------------------------- ethtool -T (time stamping)

@dataclass(frozen=True)
class TsInfo:
    """`ethtool -T IF`: what the interface can stamp, and with which clock."""

    capabilities: tuple[str, ...]  # hardware-receive, software-receive, hardware-raw-clock, ...
    phc_index: int | None  # the PTP hardware clock, /dev/ptpN; None: no PHC
    tx_modes: tuple[str, ...]  # off, on, onestep-sync, ...
    rx_filters: tuple[str, ...]  # none, all, ptpv2-event, ...

    @property
    def hardware_rx(self) -> bool:
        """Receive stamps from the NIC's own clock: a PHC and raw hardware receive stamps."""
        caps = set(self.capabilities)
        return ({"hardware-receive", "hardware-raw-clock"} <= caps
                and self.phc_index is not None)

    @property
    def stamps_all(self) -> bool:
        """The NIC can stamp every received packet (filter "all"), as a capture box needs."""
        return self.hardware_rx and "all" in self.rx_filters


def timestamping(text: str) -> TsInfo:
    """`ethtool -T IF` in either layout: bare names (ethtool >= 5.x) or names followed by
    the kernel's constant in parentheses (older ethtool)."""
    sections: dict[str, list[str]] = {}
    current = ""
    phc: int | None = None
    seen_phc = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = re.match(r"PTP Hardware Clock:\s*(\S+)", line)
        if m:
            seen_phc = True
            phc = None if m.group(1) == "none" else int(m.group(1))
            current = ""
            continue
        head, sep, rest = line.partition(":")
        if sep and head in ("Capabilities", "Hardware Transmit Timestamp Modes",
                            "Hardware Receive Filter Modes"):
            current = head
            sections[current] = []
            if rest.strip() and rest.strip() != "none":
                sections[current].append(rest.split()[0])
            continue
        if raw[:1] in (" ", "\t") and current:
            sections[current].append(line.split()[0])
        elif sep:
            current = ""  # another heading (newer ethtool adds provider lines)
    if "Capabilities" not in sections or not seen_phc:
        raise ParseError("no Capabilities / PTP Hardware Clock lines in `ethtool -T` output")
    return TsInfo(tuple(sections["Capabilities"]), phc,
                  tuple(sections.get("Hardware Transmit Timestamp Modes", [])),
                  tuple(sections.get("Hardware Receive Filter Modes", [])))


# ------------------------------------------------------------- ethtool -l (channels)

def channels(text: str) -> dict[str, dict[str, int | None]]:
    """`ethtool -l IF`: {'max': {...}, 'current': {...}} with keys rx, tx, other, combined;
    None where ethtool prints n/a."""
    out: dict[str, dict[str, int | None]] = {}
    part = ""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("Pre-set maximums"):
            part = "max"
            out[part] = {}
        elif s.startswith("Current hardware settings"):
            part = "current"
            out[part] = {}
        elif part:
            m = re.match(r"(RX|TX|Other|Combined):\s*(\S+)", s)
            if m:
                v = m.group(2)
                out[part][m.group(1).lower()] = int(v) if v.isdigit() else None
    if set(out) != {"max", "current"}:
        raise ParseError("no Pre-set maximums / Current hardware settings in `ethtool -l`")
    return out


def queue_count(ch: dict[str, int | None]) -> int:
    """Receive queues of one `channels()` part: combined channels plus dedicated RX ones."""
    return (ch.get("combined") or 0) + (ch.get("rx") or 0)


# ------------------------------------------------------------------ ethtool -i (driver)

def driver_info(text: str) -> dict[str, str]:
    """`ethtool -i IF`: every "key: value" line (driver, version, bus-info, ...)."""
    out = {}
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if sep:
            out[k.strip()] = v.strip()
    if "driver" not in out:
        raise ParseError("no driver line in `ethtool -i` output")
    return out


# ------------------------------------------------------------------- lspci -vvv -s DEV

@dataclass(frozen=True)
class PcieLink:
    """The PCI Express capability of one function, from `lspci -vvv -s DEV`."""

    address: str  # as lspci printed it (bus:dev.fn, or with domain)
    description: str  # "Ethernet controller: Intel Corporation I210 ..."
    port_type: str  # "Endpoint", "Root Port (Slot+)", ...; "" when not PCI Express
    aspm_supported: str  # LnkCap: "L0s L1", "L1", "not supported"; "" without the line
    aspm_enabled: str  # LnkCtl: "Disabled", "L1 Enabled", "L0s L1 Enabled"; ""
    driver: str = ""  # "Kernel driver in use"

    @property
    def is_express(self) -> bool:
        return bool(self.port_type)

    @property
    def aspm_control(self) -> int:
        """The LnkCtl ASPM Control field (bits 1:0: 0 off, 1 L0s, 2 L1, 3 both) that the
        LnkCtl line stands for; what `setpci CAP_EXP+10.w=VALUE:3` writes back."""
        e = self.aspm_enabled
        if e == "Disabled":
            return 0
        return (1 if "L0s" in e else 0) | (2 if "L1" in e else 0)


def lspci_link(text: str) -> PcieLink:
    """One device's `lspci -vvv -s DEV` block. A block without readable capabilities (not
    root: "Capabilities: <access denied>") raises ParseError."""
    lines = text.splitlines()
    head = next((ln for ln in lines if ln and not ln[0].isspace()), "")
    m = re.match(r"(\S+)\s+(.*)", head)
    if not m:
        raise ParseError("no device line in `lspci -vvv` output")
    if "<access denied>" in text:
        raise ParseError("lspci: Capabilities: <access denied> (needs root)")
    port_type = aspm_sup = aspm_en = driver = ""
    for ln in lines:
        s = ln.strip()
        c = re.match(r"Capabilities: \[[0-9a-f]+\] Express \(v\d\) (.*?), MSI", s)
        if c:
            port_type = c.group(1)
        c = re.match(r"LnkCap:\s.*?ASPM ([^,]+)", s)
        if c:
            aspm_sup = c.group(1).strip()
        c = re.match(r"LnkCtl:\s+ASPM ([^;]+);", s)
        if c:
            aspm_en = c.group(1).strip()
        if s.startswith("Kernel driver in use:"):
            driver = s.partition(":")[2].strip()
    return PcieLink(m.group(1), m.group(2), port_type, aspm_sup, aspm_en, driver)


PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def pci_path(device_path: str) -> list[str]:
    """The PCI functions from the root complex down to the device, from the resolved
    /sys/class/net/IF/device path: '/sys/devices/pci0000:00/0000:00:1c.4/0000:02:00.0' ->
    ['0000:00:1c.4', '0000:02:00.0']. [] for a path with no PCI function (virtual)."""
    return [p for p in device_path.split("/") if PCI_ADDRESS.match(p)]


def firmware_owns_aspm(dmesg: str) -> str:
    """The kernel log line saying the OS does not control ASPM ('' when there is none):
    then the kernel's pcie_aspm= options change nothing and only the firmware setup or
    setpci does (deployment guide, "Reply latency")."""
    for marker in ("FADT indicates ASPM is unsupported",  # the guide's line: preferred
                   "ACPI FADT declares the system doesn't support PCIe ASPM"):
        for line in dmesg.splitlines():
            if marker in line:
                return line.strip()
    return ""


def aspm_policy(text: str) -> str:
    """/sys/module/pcie_aspm/parameters/policy: the bracketed, selected policy."""
    m = re.search(r"\[(\S+)\]", text)
    if not m:
        raise ParseError(f"no [selected] policy in {text.strip()!r}")
    return m.group(1)


# -------------------------------------------------------------------- /proc/interrupts

@dataclass(frozen=True)
class Irq:
    number: int
    counts: tuple[int, ...]  # per CPU, in the header's order
    chip: str  # "IR-PCI-MSI", "PCI-MSIX-0000:00:03.0", ...
    actions: tuple[str, ...]  # handler names: "eth0-TxRx-0", ...


def interrupts(text: str) -> list[Irq]:
    """/proc/interrupts: the numbered lines (NMI, LOC and other per-CPU rows are skipped)."""
    lines = text.splitlines()
    if not lines or not lines[0].split() or not lines[0].split()[0].startswith("CPU"):
        raise ParseError("no CPU header line in /proc/interrupts")
    ncpu = len(lines[0].split())
    out = []
    for line in lines[1:]:
        m = re.match(r"\s*(\d+):\s+(.*)", line)
        if not m:
            continue
        tokens = m.group(2).split()
        counts = tokens[:ncpu]
        if len(counts) < ncpu or not all(c.isdigit() for c in counts):
            continue
        rest = tokens[ncpu:]
        # After the chip come the hw IRQ and trigger ("524288-edge", "2-fasteoi"; older
        # kernels fold the trigger into the chip: "PCI-MSI-edge"), then the handlers.
        start = next((i + 1 for i, t in enumerate(rest)
                      if re.search(r"(edge|level|fasteoi)$", t)), 1)
        actions = tuple(a.strip() for a in " ".join(rest[start:]).split(",") if a.strip())
        out.append(Irq(int(m.group(1)), tuple(int(c) for c in counts),
                       rest[0] if rest else "", actions))
    return out


def queue_irqs(irqs: list[Irq], iface: str, device_irqs: set[int] | None = None) -> list[Irq]:
    """The interrupts of IFACE's queues: handlers named IFACE-<kind>-N as igb, ixgbe, i40e
    and ice name them ("eth0-TxRx-0", "i40e-eth0-TxRx-0"), plus the device's own MSI
    vectors (DEVICE_IRQS, from sysfs msi_irqs) other than its misc vector named IFACE."""
    pat = re.compile(rf"(^|-){re.escape(iface)}-\S*\d+$")
    out = []
    for irq in irqs:
        named = any(pat.search(a) for a in irq.actions)
        own = device_irqs is not None and irq.number in device_irqs and irq.actions != (iface,)
        if named or own:
            out.append(irq)
    return out


def cpulist(text: str) -> list[int]:
    """A kernel CPU list ("0-3,8,10-11") as CPU numbers."""
    out: list[int] = []
    s = text.strip()
    if not s:
        return out
    for part in s.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ParseError(f"not a CPU list: {text.strip()!r}")
        out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return out


def cpulist_text(cpus: list[int]) -> str:
    """The kernel's compact form of CPUS: [0, 1, 2, 5] -> "0-2,5"."""
    runs: list[list[int]] = []
    for c in sorted(set(cpus)):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


# ------------------------------------------------------------------------------ cpuidle

@dataclass(frozen=True)
class IdleState:
    name: str  # "POLL", "C1", "C1E", "C6", ...
    exit_latency_us: int  # stateN/latency
    disabled: bool  # stateN/disable


# ----------------------------------------------------------------- /proc/PID/cmdline

def cmdline(raw: bytes) -> list[str]:
    """/proc/PID/cmdline (NUL-separated) as an argument list."""
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def engine_interfaces(argv: list[str]) -> list[str]:
    """The interfaces an xdp-bfd command line attaches to (--kernel-tx IF / --kernel-tx=IF)."""
    out = []
    for i, a in enumerate(argv):
        if a == "--kernel-tx" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith("--kernel-tx="):
            out.append(a.partition("=")[2])
    return out


# ------------------------------------------------- SIOCGHWTSTAMP (struct hwtstamp_config)

HWTSTAMP_CONFIG = struct.Struct("=iii")  # flags, tx_type, rx_filter (linux/net_tstamp.h)

# enum hwtstamp_tx_types and enum hwtstamp_rx_filters (linux/net_tstamp.h), by value,
# named as `ethtool -T` names them.
TX_TYPES = ("off", "on", "onestep-sync", "onestep-p2p")
RX_FILTERS = ("none", "all", "some", "ptpv1-l4-event", "ptpv1-l4-sync", "ptpv1-l4-delay-req",
              "ptpv2-l4-event", "ptpv2-l4-sync", "ptpv2-l4-delay-req", "ptpv2-l2-event",
              "ptpv2-l2-sync", "ptpv2-l2-delay-req", "ptpv2-event", "ptpv2-sync",
              "ptpv2-delay-req", "ntp-all")


def rx_filter_name(value: int) -> str:
    return RX_FILTERS[value] if 0 <= value < len(RX_FILTERS) else f"unknown-{value}"


def tx_type_name(value: int) -> str:
    return TX_TYPES[value] if 0 <= value < len(TX_TYPES) else f"unknown-{value}"


@dataclass(frozen=True)
class HwtstampConfig:
    """struct hwtstamp_config: the driver's current time stamping policy for one interface."""

    tx_type: int = 0  # HWTSTAMP_TX_OFF
    rx_filter: int = 0  # HWTSTAMP_FILTER_NONE
    flags: int = 0

    def pack(self) -> bytes:
        return HWTSTAMP_CONFIG.pack(self.flags, self.tx_type, self.rx_filter)

    @classmethod
    def unpack(cls, raw: bytes) -> "HwtstampConfig":
        if len(raw) != HWTSTAMP_CONFIG.size:
            raise ParseError(f"hwtstamp_config is {HWTSTAMP_CONFIG.size} bytes, got {len(raw)}")
        flags, tx_type, rx_filter = HWTSTAMP_CONFIG.unpack(raw)
        return cls(tx_type, rx_filter, flags)

    def as_dict(self) -> dict[str, object]:
        return {"tx_type": tx_type_name(self.tx_type), "rx_filter": rx_filter_name(self.rx_filter),
                "flags": self.flags}
