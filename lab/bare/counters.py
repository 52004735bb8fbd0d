"""counters - the device under test's own counters around a flood step on bare metal, where
the namespace lab reads them from outside (lab.harness.floods) and a testbed cannot.

    python3 -m lab.bare.counters IFACE OUT.json [--engine-pid-file F | --engine-unit U]
                                 [--engine-stats F]

run on a dut host just before and just after each flood step (ladder.yml, tasks/step.yml),
writes one snapshot:

    {"iface", "t_ns": CLOCK_REALTIME,
     "link": `ip -s -s -j link show IFACE` stats64 rx/tx (packets, dropped, errors, missed, ...),
     "nic": `ethtool -S IFACE` as {name: int}, or {} with "nic_error" (the driver's refusal),
     "udp_rcvbuf_errors": UdpRcvbufErrors of the host's /proc/net/snmp,
     "engine": the engine's stats dump on SIGUSR1 ({counters, drops, sessions_up}), or None
               when it did not answer; absent on a stock device}

deltas() turns two snapshots into what `lab report` shows beside the flood's wire figures:
the link's rx drops, UdpRcvbufErrors, the engine's counters and drops that moved, every
`ethtool -S` counter that moved, and among them the driver's drop and XDP counters.
What a veth gives (kernel 6.18, measured in the rehearsal): 10 counters, peer_ifindex and
per queue rx_queue_0_xdp_packets/_bytes/_drops/_xdp_redirect/_xdp_drops/_xdp_tx/_xdp_tx_errors
and tx_queue_0_xdp_xmit/_errors, the XDP ones moving only under a native XDP program; an igb
port its MAC's and each queue's counters (tests/topo/fixtures/ethtool_S_igb.txt).
Exit status: 0 written (what could not be read is said inside), 3 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

STATS_TIMEOUT_S = 3.0
# ethtool -S names that count frames the NIC or its driver dropped (igb, ixgbe, veth, virtio)
DROP_WORDS = ("drop", "missed", "no_buffer", "fifo", "over_errors", "alloc_failed")
_STAT = re.compile(r"^\s+([^:]+):\s+(-?\d+)\s*$")


def parse_ethtool_s(text: str) -> dict[str, int]:
    """`ethtool -S IF` ("NIC statistics:" then "     name: value" lines) as {name: value};
    names keep their brackets and dots (igb: rx_queue_0_drops; mlx5: rx0_xdp_drop)."""
    out = {}
    for line in text.splitlines():
        m = _STAT.match(line)
        if m:
            out[m.group(1).strip()] = int(m.group(2))
    return out


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 1, str(e)
    return r.returncode, (r.stdout if r.returncode == 0 else (r.stderr or r.stdout).strip())


def _udp_rcvbuf_errors() -> int | None:
    try:
        rows = [ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines()
                if ln.startswith("Udp:")]
        return int(rows[1][rows[0].index("RcvbufErrors")])
    except (OSError, ValueError, IndexError):
        return None


def _engine_pid(args: argparse.Namespace) -> int | None:
    if args.engine_pid_file:
        try:
            return int(Path(args.engine_pid_file).read_text().strip())
        except (OSError, ValueError):
            return None
    if args.engine_unit:
        rc, out = _run(["systemctl", "show", "-p", "MainPID", "--value", args.engine_unit])
        return int(out) if rc == 0 and out.strip().isdigit() and int(out) else None
    return None


def _engine(pid: int | None, stats: Path) -> dict[str, Any] | None:
    """SIGUSR1 to the engine and its fresh stats dump (lab.util.signal_for_json)."""
    from ..util import signal_for_json  # the lab's one implementation of that exchange
    if pid is None:
        return None
    try:
        st = signal_for_json(pid, stats, STATS_TIMEOUT_S, "engine stats")
    except OSError:
        return None
    if st is None:
        return None
    return {"counters": st.get("counters") or {}, "drops": st.get("drops") or {},
            "sessions_up": st.get("sessions_up")}


def snapshot(iface: str, engine_pid: int | None = None, engine_stats: Path | None = None
             ) -> dict[str, Any]:
    snap: dict[str, Any] = {"iface": iface, "t_ns": time.time_ns()}
    rc, out = _run(["ip", "-s", "-s", "-j", "link", "show", iface])
    try:
        st = json.loads(out)[0]["stats64"] if rc == 0 else None
    except (ValueError, IndexError, KeyError):
        st = None
    snap["link"] = st if st is not None else {"error": out}
    rc, out = _run(["ethtool", "-S", iface])
    snap["nic"] = parse_ethtool_s(out) if rc == 0 else {}
    if rc != 0:
        snap["nic_error"] = f"ethtool -S {iface}: {out}"
    snap["udp_rcvbuf_errors"] = _udp_rcvbuf_errors()
    if engine_stats is not None:
        snap["engine"] = _engine(engine_pid, engine_stats)
    return snap


def _moved(a: dict[str, Any], b: dict[str, Any]) -> dict[str, int]:
    return {k: int(b[k]) - int(a.get(k, 0)) for k in b
            if isinstance(b[k], int) and int(b[k]) != int(a.get(k, 0))}


def deltas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What moved between two snapshots of one device, in the shape of a namespace flood
    record's device fields (lab.harness.floods) plus "nic": every `ethtool -S` counter that
    moved, "nic_drops" and "nic_xdp" the drop and XDP ones among them, "nic_counters" how many
    the driver gives (a veth: 1, peer_ifindex), "seconds" between the snapshots."""
    la, lb = (before.get("link") or {}).get("rx", {}), (after.get("link") or {}).get("rx", {})
    d: dict[str, Any] = {
        "counters_span_s": round((after["t_ns"] - before["t_ns"]) / 1e9, 3),
        "link_rx_packets": lb.get("packets", 0) - la.get("packets", 0) if lb else "n/a",
        "link_rx_dropped": lb.get("dropped", 0) - la.get("dropped", 0) if lb else "n/a",
        "link_rx_missed": lb.get("missed_errors", 0) - la.get("missed_errors", 0)
        if lb else "n/a",
        "udp_rcvbuf_errors": (after["udp_rcvbuf_errors"] - before["udp_rcvbuf_errors"]
                              if None not in (before.get("udp_rcvbuf_errors"),
                                              after.get("udp_rcvbuf_errors")) else "n/a"),
    }
    nic = _moved(before.get("nic") or {}, after.get("nic") or {})
    d["nic"] = nic
    d["nic_counters"] = len(after.get("nic") or {})
    d["nic_drops"] = {k: v for k, v in nic.items() if any(w in k for w in DROP_WORDS)}
    d["nic_xdp"] = {k: v for k, v in nic.items() if "xdp" in k}
    if after.get("nic_error"):
        d["nic_error"] = after["nic_error"]
    if "engine" in before or "engine" in after:
        eb, ea = before.get("engine"), after.get("engine")
        if eb and ea:
            d["engine_counters"] = _moved(eb["counters"], ea["counters"])
            d["engine_drops"] = _moved(eb["drops"], ea["drops"])
            d["engine_sessions_up_after"] = ea.get("sessions_up")
        else:
            d["engine_counters"] = None  # the engine did not answer SIGUSR1 in time
    return d


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.bare.counters",
                                 description="one snapshot of a device's own counters")
    ap.add_argument("iface")
    ap.add_argument("out", type=Path)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--engine-pid-file", help="the engine's PID file (namespace hosts)")
    g.add_argument("--engine-unit", help="the engine's systemd unit (its MainPID)")
    ap.add_argument("--engine-stats", type=Path, help="the engine's --stats-dump file")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 3 if e.code else 0
    snap = snapshot(args.iface, _engine_pid(args), args.engine_stats)
    tmp = args.out.with_name(args.out.name + f".{os.getpid()}")
    tmp.write_text(json.dumps(snap, indent=1) + "\n")
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
