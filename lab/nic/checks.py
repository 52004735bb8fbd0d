"""checks - readings of one interface and its PCIe path, each beside the value the deployment
guide recommends and what it measured the setting to cost.

check(host, iface) -> Report. Each Finding carries the reading (text and value), a status,
the recommended value, the measured cost with its source, and the command it was read with.
Whatever the interface or tool cannot report becomes status "unsupported" with the tool's own
message; nothing here raises for a missing feature.

Statuses: ok (matches the recommendation), change (differs; the guide measured a cost),
optional (differs from a conditional recommendation: only where microseconds count, or no
figure of its own), unsupported (cannot be read here), n/a (does not apply: no PCI device,
no engine), info (a reading that recommends nothing by itself).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from ..util import LabError
from . import parse
from .host import Host
from .parse import ParseError

T = TypeVar("T")

SCHEMA = "tuning/1"
STATUSES = ("ok", "change", "optional", "unsupported", "n/a", "info")

# Where the figures come from (the repository cites the shared notes this way).
GUIDE = "../shared/seeds/000_c1ad47ac0700fbe3.txt"
SRC_FLOOD = f'deployment guide, "Under a flood" ({GUIDE})'
SRC_LATENCY = (f'deployment guide, "Reply latency" ({GUIDE}); '
               "../shared/docs/field-notes.md section 3")
SRC_IGB = "../shared/docs/field-notes.md section 3 (igb_ethtool.c)"

COST_FLOOD = ("165,028 down events in the hostile hour as installed, 4,148 with flow control "
              "off, UDP port hashing and --spread-pass together (Intel I210, 1,022 sessions, "
              "1.2M frames/s flood with stress-ng)")
COST_ASPM = ("wire reply p50/p99 118/250 us with ASPM L1, 33/122 us with ASPM off "
             "(Intel I210, 1,022 sessions)")
COST_COALESCE = ("with ASPM off, rx-usecs 0 took wire reply p50/p99 from 33/122 to 31/52 us, "
                 "for about half a watt; alone (ASPM still on) 122/237 us against 118/250")
COST_HWTSTAMP = ("HWTSTAMP_FILTER_ALL on an igb port costs a register read per packet: one "
                 "queue handles a sixth of the rate")
COST_CSTATES = ("C-states limited to C1E (with ASPM off and rx-usecs 0) gave p50/p99/p99.9 "
                "27/46/50 us against 31/52 us p50/p99 without: only the far tail, for 25 W")
COST_QUEUES = ("no figure of its own: port hashing (part of the 165,028 -> 4,148 down events "
               "result) only spreads a flood over queues that exist")
COST_AFFINITY = ("no figure of its own: the hashed queues of the 165,028 -> 4,148 down events "
                 "result only help when their interrupts land on different CPUs")


@dataclass
class Finding:
    """One line of the tuning report."""

    check: str  # stable id: flow_control, rx_flow_hash_udp4, pcie_aspm, ...
    subject: str  # what was read: the interface, a PCI function, "host"
    status: str  # one of STATUSES
    reading: str  # the reading in words ("unsupported" when it could not be read)
    recommended: str
    cost: str  # what the guide measured this setting to cost ("" for info lines)
    source: str  # where the figure comes from
    command: str  # how it was read
    value: Any = None  # the reading as data (JSON-able), None when unsupported
    error: str = ""  # the tool's message when unsupported

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "subject": self.subject, "status": self.status,
                "reading": self.reading, "value": self.value, "recommended": self.recommended,
                "cost": self.cost, "source": self.source, "command": self.command,
                "error": self.error}


@dataclass
class Report:
    """The tuning state of one interface on one host (schema tuning/1)."""

    iface: str
    netns: str | None
    host: str
    kernel: str
    pci_path: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def of(self, check: str) -> list[Finding]:
        return [f for f in self.findings if f.check == check]

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.findings) for s in STATUSES}

    def as_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "iface": self.iface, "netns": self.netns, "host": self.host,
                "kernel": self.kernel, "pci_path": self.pci_path,
                "findings": [f.as_dict() for f in self.findings], "counts": self.counts()}


def _failure(argv: list[str], message: str) -> str:
    """The command and the tool's words, without repeating a name the tool already gave."""
    cmd = shlex.join(argv)
    return message if message.startswith(cmd + ":") else f"{cmd}: {message}"


def _read_tool(host: Host, argv: list[str], reader: Callable[[str], T]) -> tuple[T | None, str]:
    """(reading, '') or (None, the tool's message) for one tool run through READER."""
    r = host.run(argv)
    if not r.ok:
        return None, _failure(argv, r.message)
    try:
        return reader(r.stdout), ""
    except ParseError as e:
        return None, f"{shlex.join(argv)}: {e}"


def _unsupported(check: str, subject: str, argv: list[str], error: str, recommended: str,
                 cost: str, source: str) -> Finding:
    return Finding(check, subject, "unsupported", "unsupported", recommended, cost, source,
                   shlex.join(argv), None, error)


def _on(v: bool) -> str:
    return "on" if v else "off"


# ------------------------------------------------------------------------- the checks

def driver(host: Host, iface: str) -> list[Finding]:
    argv = ["ethtool", "-i", iface]
    info, err = _read_tool(host, argv, parse.driver_info)
    if info is None:
        return [_unsupported("driver", iface, argv, err, "", "", "")]
    text = ", ".join(f"{k} {info[k]}" for k in ("driver", "version", "bus-info")
                     if info.get(k))
    return [Finding("driver", iface, "info", text, "", "", "", shlex.join(argv),
                    {k: info.get(k, "") for k in ("driver", "version", "bus-info")})]


def flow_control(host: Host, iface: str) -> list[Finding]:
    argv = ["ethtool", "-a", iface]
    rec = f"autoneg off, rx off, tx off (ethtool -A {iface} autoneg off rx off tx off)"
    p, err = _read_tool(host, argv, parse.pause)
    if p is None:
        return [_unsupported("flow_control", iface, argv, err, rec, COST_FLOOD, SRC_FLOOD)]
    text = f"autoneg {_on(p['autoneg'])}, rx {_on(p['rx'])}, tx {_on(p['tx'])}"
    if "rx_negotiated" in p:
        text += (f" (negotiated rx {_on(p['rx_negotiated'])}, "
                 f"tx {_on(p.get('tx_negotiated', False))})")
    status = "ok" if not (p["autoneg"] or p["rx"] or p["tx"]) else "change"
    return [Finding("flow_control", iface, status, text, rec, COST_FLOOD, SRC_FLOOD,
                    shlex.join(argv), p)]


def flow_hash(host: Host, iface: str, proto: str) -> list[Finding]:
    argv = ["ethtool", "-n", iface, "rx-flow-hash", proto]
    rec = (f"sdfn: both addresses and both ports "
           f"(ethtool -N {iface} rx-flow-hash {proto} sdfn)")
    check = f"rx_flow_hash_{proto}"
    fields, err = _read_tool(host, argv, parse.flow_hash)
    if fields is None:
        return [_unsupported(check, iface, argv, err, rec, COST_FLOOD, SRC_FLOOD)]
    letters = parse.flow_hash_letters(fields)
    text = f"{', '.join(fields)} ({letters})" if fields else "none"
    status = "ok" if all(f in fields for f in parse.PORT_FIELDS) else "change"
    return [Finding(check, iface, status, text, rec, COST_FLOOD, SRC_FLOOD, shlex.join(argv),
                    {"fields": fields, "letters": letters})]


def coalescing(host: Host, iface: str, driver_name: str) -> list[Finding]:
    argv = ["ethtool", "-c", iface]
    rec = ("rx-usecs 0 only where microseconds count (tune apply --rx-usecs-0); "
           "otherwise leave it")
    c, err = _read_tool(host, argv, parse.coalesce)
    if c is None:
        return [_unsupported("coalesce", iface, argv, err, rec, COST_COALESCE, SRC_LATENCY)]
    usecs, adaptive = c["rx-usecs"], c.get("adaptive-rx")
    text = f"rx-usecs {'n/a' if usecs is None else usecs}"
    text += f", adaptive-rx {'n/a' if adaptive is None else _on(bool(adaptive))}"
    if driver_name == "igb" and usecs in (1, 2, 3):
        text += " (igb: 1-3 are mode codes, 3 is dynamic conservative)"
    status = "ok" if usecs == 0 and not adaptive else "optional"
    return [Finding("coalesce", iface, status, text, rec, COST_COALESCE, SRC_LATENCY,
                    shlex.join(argv), {"rx-usecs": usecs, "adaptive-rx": adaptive})]


def timestamping(host: Host, iface: str) -> list[Finding]:
    out = []
    argv = ["ethtool", "-T", iface]
    rec_caps = ("on a capture host: hardware receive stamps, a PHC and filter 'all' "
                "(the lab then captures on the adapter's clock); nothing on other hosts")
    ts, err = _read_tool(host, argv, parse.timestamping)
    if ts is None:
        out.append(_unsupported("hwtstamp_caps", iface, argv, err, rec_caps, "", ""))
    else:
        phc = "none" if ts.phc_index is None else f"/dev/ptp{ts.phc_index}"
        text = (f"hardware receive {'yes' if ts.hardware_rx else 'no'}, PHC {phc}, "
                f"receive filters {', '.join(ts.rx_filters) or 'none'}")
        out.append(Finding("hwtstamp_caps", iface, "info", text, rec_caps, "", "",
                           shlex.join(argv),
                           {"capabilities": list(ts.capabilities), "phc_index": ts.phc_index,
                            "tx_modes": list(ts.tx_modes), "rx_filters": list(ts.rx_filters),
                            "hardware_rx": ts.hardware_rx, "stamps_all": ts.stamps_all}))
    rec = ("none (or a PTP-only filter) on the engine's port; 'all' only on a capture host, "
           "for the capture")
    cfg = host.hwtstamp(iface)
    cmd = f"SIOCGHWTSTAMP {iface}"
    if isinstance(cfg, str):
        out.append(Finding("hwtstamp_rx_filter", iface, "unsupported", "unsupported", rec,
                           COST_HWTSTAMP, SRC_FLOOD, cmd, None, cfg))
    else:
        d = cfg.as_dict()
        status = "change" if d["rx_filter"] == "all" else "ok"
        out.append(Finding("hwtstamp_rx_filter", iface, status,
                           f"rx filter {d['rx_filter']}, tx {d['tx_type']}", rec,
                           COST_HWTSTAMP, SRC_FLOOD, cmd, d))
    return out


def pci_functions(host: Host, iface: str) -> tuple[list[str], str]:
    """The PCI functions from the root port down to IFACE's device, and the resolved sysfs
    device path ('' for a virtual interface)."""
    dev = host.realpath(f"/sys/class/net/{iface}/device")
    return (parse.pci_path(dev), dev) if dev else ([], "")


def pcie_aspm(host: Host, iface: str, path: list[str], dev: str) -> tuple[list[Finding],
                                                                          list[dict[str, str]]]:
    rec_all = "ASPM Disabled on the NIC and its root port (setpci -s DEV CAP_EXP+10.w=0:3)"
    if not dev:
        return [Finding("pcie_aspm", iface, "n/a",
                        f"no PCI device: {iface} is virtual (no /sys/class/net/{iface}/device)",
                        rec_all, COST_ASPM, SRC_LATENCY,
                        f"readlink -e /sys/class/net/{iface}/device")], []
    if not path:
        return [Finding("pcie_aspm", iface, "n/a", f"{dev} is not on a PCI bus", rec_all,
                        COST_ASPM, SRC_LATENCY, f"readlink -e /sys/class/net/{iface}/device")], []
    findings, roles = [], []
    for i, addr in enumerate(path):
        role = "nic" if i == len(path) - 1 else "root port" if i == 0 else "switch port"
        argv = ["lspci", "-vvv", "-s", addr]
        rec = f"ASPM Disabled (setpci -s {addr} CAP_EXP+10.w=0:3)"
        link, err = _read_tool(host, argv, parse.lspci_link)
        roles.append({"address": addr, "role": role})
        subject = f"{role} {addr}"
        if link is None:
            findings.append(_unsupported("pcie_aspm", subject, argv, err, rec, COST_ASPM,
                                         SRC_LATENCY))
            continue
        value = {"address": addr, "role": role, "port_type": link.port_type,
                 "aspm_supported": link.aspm_supported, "aspm_enabled": link.aspm_enabled,
                 "aspm_control": link.aspm_control if link.aspm_enabled else None,
                 "description": link.description}
        if not link.is_express or not link.aspm_enabled:
            findings.append(Finding("pcie_aspm", subject, "n/a",
                                    f"{link.description}: not PCI Express (no LnkCtl)", rec,
                                    COST_ASPM, SRC_LATENCY, shlex.join(argv), value))
            continue
        status = "ok" if link.aspm_control == 0 else "change"
        text = (f"{link.port_type}: LnkCap ASPM {link.aspm_supported}, "
                f"LnkCtl ASPM {link.aspm_enabled}")
        findings.append(Finding("pcie_aspm", subject, status, text, rec, COST_ASPM,
                                SRC_LATENCY, shlex.join(argv), value))
    return findings, roles


def aspm_owner(host: Host) -> list[Finding]:
    rec = ("where the firmware owns ASPM, turn it off in the firmware setup or with setpci at "
           "every boot: kernel pcie_aspm= options change nothing")
    r = host.run(["dmesg"])
    policy_text = host.read("/sys/module/pcie_aspm/parameters/policy")
    try:
        policy = parse.aspm_policy(policy_text) if policy_text is not None else ""
    except ParseError:
        policy = ""
    value: dict[str, Any] = {"firmware_owned": None, "dmesg_line": "", "policy": policy}
    if not r.ok:
        return [Finding("aspm_owner", "host", "unsupported", "unsupported", rec, COST_ASPM,
                        SRC_LATENCY, "dmesg", value, _failure(["dmesg"], r.message))]
    line = parse.firmware_owns_aspm(r.stdout)
    # A wrapped ring buffer has lost the boot messages that would say so.
    first = next((ln for ln in r.stdout.splitlines() if ln.strip()), "")
    from_boot = bool(re.match(r"\[\s*0\.0+\]", first))
    value.update(firmware_owned=bool(line), dmesg_line=line, log_from_boot=from_boot)
    if line:
        text = f"firmware owns ASPM (dmesg: {line})"
    else:
        text = ("kernel manages ASPM: no 'FADT indicates ASPM is unsupported' line in dmesg"
                + ("" if from_boot else " (log wrapped: boot messages gone, cannot tell)"))
    if policy:
        text += f"; pcie_aspm policy {policy}"
    return [Finding("aspm_owner", "host", "info", text, rec, COST_ASPM, SRC_LATENCY,
                    "dmesg; cat /sys/module/pcie_aspm/parameters/policy", value)]


def queues(host: Host, iface: str) -> list[Finding]:
    argv = ["ethtool", "-l", iface]
    rec = "every hardware queue in use (ethtool -L IF combined MAX)"
    sysfs = host.listdir(f"/sys/class/net/{iface}/queues") or []
    rx_sysfs = [q for q in sysfs if q.startswith("rx-")]
    ch, err = _read_tool(host, argv, parse.channels)
    value: dict[str, Any] = {"sysfs_rx_queues": len(rx_sysfs), "channels": ch}
    if ch is None:
        return [Finding("rss_queues", iface, "info",
                        f"{len(rx_sysfs)} RX queue(s) in /sys/class/net/{iface}/queues; "
                        "channel counts unsupported", rec, COST_QUEUES, SRC_FLOOD,
                        f"{shlex.join(argv)}; ls /sys/class/net/{iface}/queues", value, err)]
    cur, mx = parse.queue_count(ch["current"]), parse.queue_count(ch["max"])
    na = (lambda v: "n/a" if v is None else v)
    text = (f"{cur} of {mx} RX queue(s) in use (combined {na(ch['current'].get('combined'))}, "
            f"rx {na(ch['current'].get('rx'))}); {len(rx_sysfs)} in sysfs")
    status = "optional" if mx > 1 and cur < mx else "ok"
    return [Finding("rss_queues", iface, status, text, rec, COST_QUEUES, SRC_FLOOD,
                    f"{shlex.join(argv)}; ls /sys/class/net/{iface}/queues", value)]


def irq_affinity(host: Host, iface: str, nic: str | None) -> list[Finding]:
    rec = "each queue's interrupt on its own CPU (irqbalance, or /proc/irq/N/smp_affinity_list)"
    cmd = "/proc/interrupts; /proc/irq/N/effective_affinity_list"
    text = host.read("/proc/interrupts")
    if text is None:
        return [Finding("irq_affinity", iface, "unsupported", "unsupported", rec, COST_AFFINITY,
                        SRC_FLOOD, cmd, None, "/proc/interrupts unreadable")]
    try:
        irqs = parse.interrupts(text)
    except ParseError as e:
        return [Finding("irq_affinity", iface, "unsupported", "unsupported", rec, COST_AFFINITY,
                        SRC_FLOOD, cmd, None, str(e))]
    dev_irqs = None
    if nic:
        names = host.listdir(f"/sys/bus/pci/devices/{nic}/msi_irqs")
        dev_irqs = {int(n) for n in names if n.isdigit()} if names else None
    mine = parse.queue_irqs(irqs, iface, dev_irqs)
    if not mine:
        return [Finding("irq_affinity", iface, "n/a",
                        f"no queue interrupts of {iface} in /proc/interrupts", rec,
                        COST_AFFINITY, SRC_FLOOD, cmd, [])]
    rows, effective = [], []
    for irq in mine:
        eff = host.read(f"/proc/irq/{irq.number}/effective_affinity_list")
        smp = host.read(f"/proc/irq/{irq.number}/smp_affinity_list")
        try:
            cpus = parse.cpulist(eff if eff is not None else smp or "")
        except ParseError:
            cpus = []
        effective.append(tuple(cpus))
        rows.append({"irq": irq.number, "name": ",".join(irq.actions), "cpus": cpus,
                     "smp_affinity_list": (smp or "").strip(),
                     "interrupts": sum(irq.counts)})
    text = "; ".join(f"{r['name']} (irq {r['irq']}) -> cpu {parse.cpulist_text(r['cpus'])}"
                     for r in rows)
    crowded = len(mine) > 1 and len(set(effective)) == 1 and len(effective[0]) == 1
    return [Finding("irq_affinity", iface, "change" if crowded else "ok", text, rec,
                    COST_AFFINITY, SRC_FLOOD, cmd, rows)]


SHALLOW_STATE = re.compile(r"^(POLL|C1E?)([-_].*)?$", re.IGNORECASE)
# C1E's exit latency on the testbed's table (intel_idle adl_cstates). A state that wakes at
# least as fast, whatever its name (a guest's "haltpoll idle" at 1 us), is not deep.
SHALLOW_EXIT_LATENCY_US = 2


def _deep(name: str, exit_latency_us: int) -> bool:
    """A state deeper than C1E: the guide's advice applies to it."""
    return not SHALLOW_STATE.match(name) and exit_latency_us > SHALLOW_EXIT_LATENCY_US


def cpu_idle(host: Host) -> list[Finding]:
    rec = ("leave them: deep C-states only stretch the far tail; where microseconds count, "
           "limit to C1E")
    cmd = "/sys/devices/system/cpu/cpu*/cpuidle/state*/{name,latency,disable}"
    base = "/sys/devices/system/cpu"
    cpus = sorted((int(c[3:]) for c in host.listdir(base) or [] if re.fullmatch(r"cpu\d+", c)))
    per_cpu: dict[int, list[parse.IdleState]] = {}
    for cpu in cpus:
        states = []
        for st in host.listdir(f"{base}/cpu{cpu}/cpuidle") or []:
            if not re.fullmatch(r"state\d+", st):
                continue
            d = f"{base}/cpu{cpu}/cpuidle/{st}"
            name, lat, dis = (host.read(f"{d}/{k}") for k in ("name", "latency", "disable"))
            if name is None or lat is None:
                continue
            states.append(parse.IdleState(name.strip(), int(lat.strip()),
                                          (dis or "0").strip() == "1"))
        if states:
            per_cpu[cpu] = states
    drv = (host.read(f"{base}/cpuidle/current_driver") or "").strip()
    if not per_cpu:
        return [Finding("cpu_idle", "host", "n/a",
                        f"no CPU idle states exposed (cpuidle driver: {drv or 'unknown'})", rec,
                        COST_CSTATES, SRC_LATENCY, cmd, {"driver": drv, "cpus": {}})]
    groups: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for cpu, states in per_cpu.items():
        enabled = tuple((s.name, s.exit_latency_us) for s in states if not s.disabled)
        groups.setdefault(enabled, []).append(cpu)
    parts, deep = [], False
    for enabled, cpu_list in groups.items():
        names = ", ".join(f"{n} ({lat} us)" for n, lat in enabled) or "none"
        parts.append(f"cpu {parse.cpulist_text(cpu_list)}: {names}")
        deep = deep or any(_deep(n, lat) for n, lat in enabled)
    value = {"driver": drv,
             "cpus": {str(c): [{"name": s.name, "exit_latency_us": s.exit_latency_us,
                                "disabled": s.disabled} for s in st]
                      for c, st in per_cpu.items()}}
    text = f"enabled states {'; '.join(parts)} (driver {drv or 'unknown'})"
    return [Finding("cpu_idle", "host", "optional" if deep else "ok", text, rec, COST_CSTATES,
                    SRC_LATENCY, cmd, value)]


def engine(host: Host, iface: str) -> list[Finding]:
    rec = "--spread-pass (the RX CPU then only runs the program; other traffic goes by flow)"
    cmd = "/proc/*/cmdline of xdp-bfd processes"
    procs = host.engines()
    mine = [p for p in procs if p.same_netns and iface in parse.engine_interfaces(p.argv)]
    if not mine:
        return [Finding("engine_spread_pass", iface, "n/a",
                        f"no xdp-bfd engine attached to {iface} here "
                        f"({len(procs)} xdp-bfd process(es) on the machine)", rec, COST_FLOOD,
                        SRC_FLOOD, cmd, [])]
    rows, lacking = [], []
    for p in mine:
        has = "--spread-pass" in p.argv
        rows.append({"pid": p.pid, "spread_pass": has, "argv": p.argv})
        if not has:
            lacking.append(p)
    text = "; ".join(f"pid {r['pid']} {'with' if r['spread_pass'] else 'without'} --spread-pass"
                     for r in rows)
    if lacking and lacking[0].exe:
        helptext = host.run([lacking[0].exe, "--help"])
        if "--spread-pass" not in helptext.stdout + helptext.stderr:
            text += f" (this engine build has no --spread-pass option: {lacking[0].exe} --help)"
    return [Finding("engine_spread_pass", iface, "change" if lacking else "ok", text, rec,
                    COST_FLOOD, SRC_FLOOD, cmd, rows)]


def check(host: Host, iface: str) -> Report:
    """Every reading for IFACE on HOST. Raises LabError only when IFACE does not exist."""
    if host.realpath(f"/sys/class/net/{iface}") is None:
        where = f" in namespace {host.netns}" if host.netns else ""
        raise LabError(f"no interface {iface!r}{where} (/sys/class/net/{iface})")
    rep = Report(iface, host.netns, *host.uname())
    drv = driver(host, iface)
    drv_name = drv[0].value["driver"] if drv[0].value else ""
    path, dev = pci_functions(host, iface)
    aspm, rep.pci_path = pcie_aspm(host, iface, path, dev)
    rep.findings = [*drv, *flow_control(host, iface), *flow_hash(host, iface, "udp4"),
                    *flow_hash(host, iface, "udp6"), *coalescing(host, iface, drv_name),
                    *timestamping(host, iface), *aspm, *aspm_owner(host), *queues(host, iface),
                    *irq_affinity(host, iface, path[-1] if path else None), *cpu_idle(host),
                    *engine(host, iface)]
    return rep
