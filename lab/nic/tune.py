"""tune - `python3 -m lab tune check|apply IFACE`: the NIC tuning report and its changes.

check IFACE [--json] [--netns NS]
    One line per setting of the interface and its PCIe path: the reading, the recommended
    value and what the deployment guide measured it to cost, with the source. --json prints
    the report as JSON (schema tuning/1, results/schema/tuning.json).
    Exit status: 0 nothing to change, 1 at least one recommended change, 3 error (no such
    interface or namespace).
apply IFACE [--dry-run] [--rx-usecs-0] [--netns NS]
    Makes the changes it can (flow control, UDP port hashing, ASPM; rx-usecs 0 only with
    --rx-usecs-0) and prints for each the command, its result, the exact undo command and
    the reading afterwards. --dry-run prints the commands without running them.
    Exit status: 0 every change made (or none needed), 1 at least one refused, 3 error.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from typing import Any

from . import apply as apply_mod
from .checks import Finding, Report, check
from .host import LocalHost

WIDTH = 100
LABELS = {
    "driver": "driver", "flow_control": "flow control", "rx_flow_hash_udp4": "UDP/IPv4 hashing",
    "rx_flow_hash_udp6": "UDP/IPv6 hashing", "coalesce": "interrupt coalescing",
    "hwtstamp_caps": "time stamping", "hwtstamp_rx_filter": "hw receive stamp filter",
    "pcie_aspm": "PCIe ASPM", "aspm_owner": "ASPM owner", "rss_queues": "RSS queues",
    "irq_affinity": "queue IRQ affinity", "cpu_idle": "CPU idle states",
    "engine_spread_pass": "engine --spread-pass",
}


def add_parser(sub: Any) -> None:
    """Add `tune check` and `tune apply` to the lab's sub-command parser SUB."""
    t = sub.add_parser("tune", help="the NIC and its PCIe path: report (check) or change "
                       "(apply) the settings the deployment guide measured")
    ts = t.add_subparsers(dest="tune_cmd", required=True)
    c = ts.add_parser("check", help="report every setting, the recommended value and its cost")
    c.add_argument("iface")
    c.add_argument("--json", action="store_true", help="the report as JSON (tuning/1)")
    c.add_argument("--netns", default=None, help="the interface's network namespace")
    a = ts.add_parser("apply", help="make the recommended changes; print how to undo each")
    a.add_argument("iface")
    a.add_argument("--dry-run", action="store_true", help="print the commands only")
    a.add_argument("--rx-usecs-0", action="store_true",
                   help="also turn interrupt throttling off (costs about half a watt)")
    a.add_argument("--netns", default=None, help="the interface's network namespace")


def run(args: argparse.Namespace) -> int:
    host = LocalHost(args.netns)
    report = check(host, args.iface)
    if args.tune_cmd == "check":
        print(json.dumps(report.as_dict(), indent=1) if args.json else format_report(report))
        return 1 if report.counts()["change"] else 0
    changes = apply_mod.execute(host, apply_mod.plan(report, rx_usecs_0=args.rx_usecs_0),
                                dry_run=args.dry_run)
    after = None if args.dry_run or not any(c.ran for c in changes) else check(host, args.iface)
    print(format_changes(report, changes, after))
    return 1 if any(c.failed for c in changes) else 0


def _title(report: Report, verb: str) -> str:
    where = f" in netns {report.netns}" if report.netns else ""
    return f"tune {verb} {report.iface}{where} (host {report.host}, kernel {report.kernel})"


def _wrap(head: str, text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=head,
                         subsequent_indent=" " * len(head)) or [head.rstrip()]


def format_finding(f: Finding) -> list[str]:
    head = f"[{f.status}] {LABELS.get(f.check, f.check)} ({f.subject}): "
    lines = _wrap(head, f.error if f.status == "unsupported" and f.error else f.reading)
    if f.recommended:
        lines += _wrap("    recommended: ", f.recommended)
    if f.cost:
        # The text names the source briefly; the JSON carries the full reference.
        lines += _wrap("    measured:    ", f"{f.cost} [{f.source.split(' (')[0]}]")
    lines += _wrap("    read with:   ", f.command)
    return lines


def format_report(report: Report) -> str:
    lines = [_title(report, "check")]
    for f in report.findings:
        lines += format_finding(f)
    n = report.counts()
    lines.append(f"{len(report.findings)} findings: "
                 + ", ".join(f"{v} {k}" for k, v in n.items()))
    return "\n".join(lines)


def format_changes(report: Report, changes: list[apply_mod.Change],
                   after: Report | None) -> str:
    lines = [_title(report, "apply")]
    if not changes:
        lines.append("nothing to change: every reading is as recommended, or cannot change")
    for c in changes:
        lines += _wrap(f"{LABELS.get(c.check, c.check)} ({c.subject}): ", c.result)
        if c.command:
            lines.append(f"    run:  {apply_mod.shell(c.command, report.netns)}")
        if c.undo:
            lines.append(f"    undo: {apply_mod.shell(c.undo, report.netns)}")
        if after is not None and c.ran:
            now = [f for f in after.findings if f.check == c.check and f.subject == c.subject]
            if now:
                lines.append(f"    now:  [{now[0].status}] {now[0].reading}")
    owner = report.of("aspm_owner")
    if (any(c.check == "pcie_aspm" and c.command for c in changes) and owner
            and (owner[0].value or {}).get("firmware_owned")):
        lines += _wrap("note: ", "the firmware owns ASPM on this host: setpci holds until the "
                       "next boot; repeat it at every boot, or turn ASPM off in the firmware "
                       "setup")
    undo = apply_mod.undo_script(changes, report.netns)
    if undo:
        lines.append("to undo, in this order:")
        lines += [f"    {u}" for u in undo]
    return "\n".join(lines)
