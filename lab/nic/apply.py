"""apply - the recommended changes `tune apply` can make, each with the command that undoes it.

plan(report) is pure: from the readings of checks.check() it builds, per finding, the command
to run and the exact command that restores the value read (the previous value is always the
one just read). execute() runs them through the host; a refusal is recorded, never fatal.

What it changes: flow control off (ethtool -A), UDP port hashing for IPv4 and IPv6
(ethtool -N rx-flow-hash udp4|udp6 sdfn), rx-usecs 0 only when asked (ethtool -C; it costs
power), ASPM off on the NIC and every port above it (setpci CAP_EXP+10.w=0:3: the low two
bits of Link Control are ASPM Control). What it leaves to people, with the command to use:
the time stamp filter (it belongs to whoever set it), the engine's --spread-pass, IRQ
affinity, queue counts and C-states.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from .checks import Finding, Report
from .host import Host


@dataclass
class Change:
    """One recommended change: what runs, how to undo it, and what happened."""

    check: str
    subject: str
    command: list[str]  # [] when tune apply runs nothing for this finding
    undo: list[str] | None  # None when there is nothing to undo, or no way to express it
    result: str  # "done", "dry run", "failed: ...", "skipped: ...", "manual: ..."
    ran: bool = False

    @property
    def failed(self) -> bool:
        return self.result.startswith("failed")


def _skip(f: Finding, why: str) -> Change:
    return Change(f.check, f.subject, [], None, f"skipped: {why}")


def _flow_control(f: Finding, iface: str) -> Change:
    p = f.value
    on = (lambda v: "on" if v else "off")
    return Change(f.check, f.subject,
                  ["ethtool", "-A", iface, "autoneg", "off", "rx", "off", "tx", "off"],
                  ["ethtool", "-A", iface, "autoneg", on(p["autoneg"]), "rx", on(p["rx"]),
                   "tx", on(p["tx"])], "")


def _flow_hash(f: Finding, iface: str) -> Change:
    proto = f.check.rsplit("_", 1)[1]
    prev = f.value["letters"]
    undo = ["ethtool", "-N", iface, "rx-flow-hash", proto, prev] if prev else None
    return Change(f.check, f.subject, ["ethtool", "-N", iface, "rx-flow-hash", proto, "sdfn"],
                  undo, "")


def _coalesce(f: Finding, iface: str) -> Change:
    prev, adaptive = f.value["rx-usecs"], f.value["adaptive-rx"]
    cmd, undo = ["ethtool", "-C", iface], ["ethtool", "-C", iface]
    if adaptive:
        cmd += ["adaptive-rx", "off"]
        undo += ["adaptive-rx", "on"]
    return Change(f.check, f.subject, cmd + ["rx-usecs", "0"], undo + ["rx-usecs", str(prev)],
                  "")


def _aspm(f: Finding) -> Change:
    addr, control = f.value["address"], f.value["aspm_control"]
    return Change(f.check, f.subject, ["setpci", "-s", addr, "CAP_EXP+10.w=0:3"],
                  ["setpci", "-s", addr, f"CAP_EXP+10.w={control:x}:3"], "")


MANUAL = {
    "hwtstamp_rx_filter": "the filter belongs to whoever set it (ptp4l, a capture tool); to "
                          "clear it: python3 -m lab.nic.hwstamp{ns} set {iface} --rx-filter none",
    "engine_spread_pass": "restart the engine with --spread-pass added to its arguments",
    "irq_affinity": "give each queue IRQ its own CPU (irqbalance, or echo CPU > "
                    "/proc/irq/N/smp_affinity_list)",
    "rss_queues": "ethtool -L {iface} combined <maximum>",
    "cpu_idle": "limit to C1E only where microseconds count (25 W on the testbed)",
}


def plan(report: Report, *, rx_usecs_0: bool = False) -> list[Change]:
    """The changes for REPORT's findings, in the order to run them. ASPM is cleared on the
    NIC first and then upward, and undone the other way round, as the kernel orders it
    (pcie_config_aspm_link: disable downstream first)."""
    iface = report.iface
    ns = f" --netns {report.netns}" if report.netns else ""
    out: list[Change] = []
    aspm: list[Change] = []
    for f in report.findings:
        if f.status == "unsupported" and f.check in ("flow_control", "rx_flow_hash_udp4",
                                                     "rx_flow_hash_udp6", "coalesce",
                                                     "pcie_aspm"):
            out.append(_skip(f, f"cannot read it here ({f.error})"))
        elif f.status in ("ok", "n/a", "info", "unsupported"):
            continue
        elif f.check == "flow_control":
            out.append(_flow_control(f, iface))
        elif f.check.startswith("rx_flow_hash_"):
            out.append(_flow_hash(f, iface))
        elif f.check == "coalesce":
            out.append(_coalesce(f, iface) if rx_usecs_0 else
                       _skip(f, "rx-usecs 0 costs power: pass --rx-usecs-0 to set it"))
        elif f.check == "pcie_aspm":
            aspm.append(_aspm(f))
        elif f.check in MANUAL:
            out.append(Change(f.check, f.subject, [], None,
                              "manual: " + MANUAL[f.check].format(iface=iface, ns=ns)))
    # report.findings list the path from the root port down: clear the NIC first.
    return out + aspm[::-1]


def execute(host: Host, changes: list[Change], *, dry_run: bool = False) -> list[Change]:
    """Run every planned command (none with DRY_RUN); record each outcome in place."""
    for c in changes:
        if not c.command:
            continue
        if dry_run:
            c.result = "dry run: not run"
            continue
        r = host.run(c.command)
        c.ran = True
        c.result = "done" if r.ok else f"failed: {r.message}"
        if not r.ok:
            c.undo = None  # nothing changed, nothing to undo
    return changes


def shell(argv: list[str], netns: str | None) -> str:
    """ARGV as one would type it (inside NETNS when there is one)."""
    return shlex.join(["ip", "netns", "exec", netns, *argv] if netns else argv)


def undo_script(changes: list[Change], netns: str | None) -> list[str]:
    """The undo commands of the changes made, in the order to run them (reverse)."""
    return [shell(c.undo, netns) for c in reversed(changes)
            if c.undo and (c.ran or c.result.startswith("dry run"))]
