"""--metrics-file: the Prometheus rendering of the engine's statistics, against real FRR 8.4.4.

12 sessions at 100 ms x3 between the engine device and a stock FRR peer. The file is parsed
with Debian's python3-prometheus-client (prometheus_client.parser), the parser Prometheus' own
Python client ships, and every number in it is checked against the JSON dump written from the
same snapshot (SIGUSR1 writes both; equal uptimes prove they are the same one): counters,
drops by reason, the engine's own counters, the sweep, the bfdd connection, and every session's
state, timers and packet counts by path. Then: the period refreshes the file with no signal, each
write replaces it by rename (a new inode, no temporary left), and a reader never sees half a
file.
"""

from __future__ import annotations

import os
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from lab import util
from lab.harness.lab import Lab
from lab.rig.engine import Engine
from lab.topo import Device, Meta, Peer, SessionClass, Topology
from enginelab import engine_lab

REPO = Path(__file__).resolve().parents[2]

parser = pytest.importorskip("prometheus_client.parser",
                             reason="python3-prometheus-client missing (make deps)")

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

SESSIONS = 12
PERIOD_MS = 1000
TOPO = Topology(meta=Meta("metrics", 16), peer=Peer("10.82.1.1"),
                devices=(Device("engine", "engine", "10.82.0.1"),),
                classes=(SessionClass("100ms", 100, 3, SESSIONS),), source="test")

# The engine's own counters: JSON key -> metric name (docs/engine.md lists both).
ENGINE_NAMES = {
    "events_rx": "events_rx_total", "events_expired": "events_expired_total",
    "events_expired_stale": "events_expired_stale_total",
    "events_quiet": "events_quiet_total", "events_stale": "events_stale_total",
    "events_tx_early": "events_tx_early_total",
    "tx_packets": "sent_packets_total", "tx_errors": "send_errors_total",
    "sw_rx": "software_received_packets_total", "bfdd_adds": "bfdd_adds_total",
    "bfdd_updates": "bfdd_updates_total", "bfdd_deletes": "bfdd_deletes_total",
    "bfdd_rejected": "bfdd_rejected_total", "state_changes_sent": "state_changes_sent_total",
    "echo_tx": "echo_sent_packets_total", "echo_tx_errors": "echo_send_errors_total",
    "echo_no_neigh": "echo_no_neighbour_total", "echo_failed": "echo_failed_total",
    "ticks": "ticks_total", "tick_sessions_visited": "tick_sessions_visited_total",
    "log_lines": "log_lines_total", "log_lines_dropped": "log_lines_dropped_total",
    "log_write_errors": "log_write_errors_total", "dumps": "dumps_total",
    "dumps_coalesced": "dumps_coalesced_total", "dumps_failed": "dumps_failed_total",
}
STATES = {"AdminDown": 0, "Down": 1, "Init": 2, "Up": 3}


class MetricsEngine(Engine):
    def argv(self) -> list[str]:
        return super().argv() + ["--metrics-file", str(self.prom_path()),
                                 "--metrics-interval-ms", str(PERIOD_MS)]

    def prom_path(self) -> Path:
        return self.stats_path.with_name("xdp-bfd.prom")


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-metrics", engine_cls=MetricsEngine) as lab:
        yield lab


def parse(text: str) -> dict[str, Any]:
    """Families by name, each {type, help, samples: [(name, labels, value)]}."""
    out = {}
    for fam in parser.text_string_to_metric_families(text):
        out[fam.name] = {"type": fam.type, "help": fam.documentation,
                         "samples": [(s.name, s.labels, s.value) for s in fam.samples]}
    return out


def one(fams: dict[str, Any], name: str, **labels: str) -> float:
    """The value of the one sample NAME with LABELS (among others); a counter's or a
    histogram's sample is looked up in its family."""
    base = next((name[:-len(s)] for s in ("_total", "_bucket", "_count", "_sum")
                 if name.endswith(s) and "xdp_bfd_" + name[:-len(s)] in fams), name)
    got = [v for n, lab, v in fams["xdp_bfd_" + base]["samples"]
           if n == "xdp_bfd_" + name and all(lab.get(k) == x for k, x in labels.items())]
    assert len(got) == 1, (name, labels, got)
    return got[0]


def micro(v: float) -> int:
    """Seconds as the exact integer microseconds the engine printed."""
    return int(Decimal(repr(v)) * 1_000_000)


def same_snapshot(eng: MetricsEngine) -> tuple[dict[str, Any], dict[str, Any], str]:
    """SIGUSR1; the JSON dump and the metrics file of that one snapshot."""
    prom = eng.prom_path()
    for _ in range(5):
        before = prom.stat().st_mtime_ns
        st = eng.stats()
        assert st is not None
        util.wait_until(lambda: prom.stat().st_mtime_ns != before or None, 3.0,
                        "the metrics file rewritten")
        text = prom.read_text()
        fams = parse(text)
        if Decimal(repr(one(fams, "uptime_seconds"))) == Decimal(repr(st["uptime_s"])):
            return st, fams, text
        # the period wrote in between: try again
    pytest.fail("no SIGUSR1 gave one snapshot to both files in 5 tries")


def test_every_number_matches_the_json_dump(lab: Lab) -> None:
    st, fams, text = same_snapshot(lab.engines["engine"])
    # Conventions: prefix, HELP and TYPE on every family, counters end in _total.
    assert all(n.startswith("xdp_bfd_") for n in fams)
    assert all(f["help"] for f in fams.values())
    for n, f in fams.items():
        for sample, _, _ in f["samples"]:
            assert sample.endswith("_total") == (f["type"] == "counter"), sample
    assert text.count("# TYPE ") == len(fams)
    assert st["sessions_configured"] == st["sessions_up"] == SESSIONS
    assert one(fams, "sessions_configured") == SESSIONS
    assert one(fams, "sessions_up") == SESSIONS
    assert one(fams, "kernel_tx") == 1
    assert one(fams, "xdp_mode_info", mode="native") == 1
    assert one(fams, "interface_info", interface="dut0", mode="native",
               ifindex=str(st["interfaces"][0]["ifindex"])) == 1
    # the XDP program's counters and the drops
    for name, v in st["counters"].items():
        assert one(fams, f"fastpath_{name}_total") == v, name
    assert st["counters"]["tx_reply"] > 0
    for reason, v in st["drops"].items():
        assert one(fams, "dropped_packets_total", reason=reason) == v, reason
    assert len(fams["xdp_bfd_dropped_packets"]["samples"]) == len(st["drops"])
    for key, name in ENGINE_NAMES.items():
        assert one(fams, f"engine_{name}") == st["engine"][key], key
    # the tick's time: nanoseconds in the JSON, seconds in the metric, equal to the digit
    assert Decimal(repr(one(fams, "engine_tick_seconds_total"))) * 10**9 == \
        st["engine"]["tick_ns"]
    assert st["engine"]["ticks"] > 0
    assert set(ENGINE_NAMES) | {"tick_ns"} == set(st["engine"])
    sw = st["sweep"]
    assert micro(one(fams, "sweep_period_seconds")) == sw["period_us"]
    assert one(fams, "sweep_runs_total") == sw["runs"]
    for k in ("last_scan", "max_scan"):
        assert Decimal(repr(one(fams, f"sweep_{k}_seconds"))) * 10**9 == sw[f"{k}_ns"]
    assert Decimal(repr(one(fams, "sweep_scan_seconds_total"))) * 10**9 == sw["total_scan_ns"]
    assert one(fams, "sweep_last_slots_visited") == sw["last_slots_visited"]
    assert one(fams, "sweep_max_slots_visited") == sw["max_slots_visited"]
    assert one(fams, "sweep_slots_visited_total") == sw["slots_visited"]
    # every session was written, so marked armed and read at least once
    assert sw["slots_visited"] >= SESSIONS
    # the loop's lateness: the JSON's per-bucket counts are the histogram's steps
    lp = st["loop"]
    assert lp["late_le_us"] == [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000,
                                100000, 200000, 500000, 1000000]
    assert len(lp["late_counts"]) == 17 and sum(lp["late_counts"]) == lp["wakeups"]
    assert lp["wakeups"] >= st["engine"]["ticks"] > 0  # every tick, and the transmit timer
    les = [f"{b / 1e6:.6f}" for b in lp["late_le_us"]] + ["+Inf"]
    for i, le in enumerate(les):
        assert one(fams, "loop_lateness_seconds_bucket", le=le) == sum(lp["late_counts"][:i + 1])
    assert one(fams, "loop_lateness_seconds_count") == lp["wakeups"]
    assert Decimal(repr(one(fams, "loop_lateness_seconds_sum"))) * 10**9 == lp["late_sum_ns"]
    assert Decimal(repr(one(fams, "loop_lateness_max_seconds"))) * 10**9 == lp["late_max_ns"]
    assert 0 < lp["late_max_ns"] * lp["wakeups"] >= lp["late_sum_ns"]
    # the log of wake-ups over 1 ms: every one (buckets above 1 ms) while the ring holds them
    over_1ms = sum(lp["late_counts"][7:])
    assert lp["late_over_1ms_logged"] == over_1ms
    assert len(lp["late_over_1ms"]) == min(over_1ms, 64)
    assert all(late > 1_000_000 and at <= st["uptime_s"] * 1e6 + 1000
               for at, late in lp["late_over_1ms"])
    # the bfdd connection
    dp = st["dplane"]
    assert one(fams, "dplane_connections") == dp["connections"] == 1
    assert one(fams, "dplane_received_messages_total") == dp["rx_msgs"]
    assert one(fams, "dplane_sent_messages_total") == dp["tx_msgs"]
    assert one(fams, "dplane_echo_requests_total") == dp["echo_sent"]
    assert one(fams, "dplane_echo_replies_total") == dp["echo_replies"]
    assert Decimal(repr(one(fams, "dplane_echo_rtt_seconds"))) * 10**6 == \
        Decimal(repr(dp["echo_rtt_us"]))


def test_every_session_matches_the_json_dump(lab: Lab) -> None:
    st, fams, _ = same_snapshot(lab.engines["engine"])
    assert len(st["sessions"]) == SESSIONS
    assert len(fams["xdp_bfd_session_info"]["samples"]) == SESSIONS
    for s in st["sessions"]:
        key = {"lid": str(s["lid"]), "local_discriminator": str(s["local_disc"]),
               "local": s["local"], "peer": s["peer"], "interface": s["ifname"]}
        assert one(fams, "session_info", **key, multihop="false",
                   source_port=str(s["local_port"]),
                   remote_discriminator=str(s["remote_disc"])) == 1
        assert one(fams, "session_up", **key) == (s["state"] == "Up") == 1
        assert one(fams, "session_state", **key) == STATES[s["state"]]
        assert one(fams, "session_remote_state", **key) == STATES[s["remote_state"]]
        assert one(fams, "session_local_diagnostic", **key) == s["local_diag"]
        assert one(fams, "session_remote_diagnostic", **key) == s["remote_diag"]
        assert Decimal(repr(one(fams, "session_state_age_seconds", **key))) * 1000 == \
            Decimal(repr(s["state_age_ms"]))
        for flag in ("fast_path", "rx_clocked", "poll_active"):
            assert one(fams, f"session_{flag}", **key) == s[flag], flag
        for prom, js in (("desired_min_tx", "desired_min_tx_us"),
                         ("required_min_rx", "required_min_rx_us"),
                         ("remote_desired_min_tx", "remote_desired_min_tx_us"),
                         ("remote_required_min_rx", "remote_min_rx_us"),
                         ("tx_interval", "tx_interval_us"),
                         ("detection_time", "detect_time_us")):
            name = f"session_{prom}_seconds"
            assert micro(one(fams, name, **key)) == s[js], name
        assert s["desired_min_tx_us"] == 100000
        assert one(fams, "session_detect_multiplier", **key) == s["detect_mult"] == 3
        assert one(fams, "session_remote_detect_multiplier", **key) == s["remote_detect_mult"]
        rx = {p: one(fams, "session_received_packets_total", **key, path=p)
              for p in ("xdp", "software")}
        tx = {p: one(fams, "session_sent_packets_total", **key, path=p)
              for p in ("xdp", "userspace")}
        assert (rx["xdp"], rx["software"]) == (s["xdp_rx_packets"], s["sw_rx_packets"])
        assert (tx["xdp"], tx["userspace"]) == (s["xdp_tx_packets"], s["user_tx_packets"])
        assert rx["xdp"] + rx["software"] == s["rx_packets"] > 0
        assert tx["xdp"] + tx["userspace"] == s["tx_packets"] > 0
        assert one(fams, "session_up_events_total", **key) == s["up_events"] >= 1
        assert one(fams, "session_down_events_total", **key) == s["down_events"]


def test_the_period_refreshes_the_file_by_rename(lab: Lab) -> None:
    eng = lab.engines["engine"]
    prom = eng.prom_path()
    seen: list[tuple[int, float]] = []  # (inode, uptime) per distinct write
    reads = 0
    t_end = time.monotonic() + 4 * PERIOD_MS / 1000 + 0.5
    while time.monotonic() < t_end:
        with open(prom) as f:  # whole or nothing: each read is a complete file
            ino, text = os.fstat(f.fileno()).st_ino, f.read()
        fams = parse(text)
        reads += 1
        assert text.endswith("\n") and "xdp_bfd_session_sent_packets" in fams
        up_s = one(fams, "uptime_seconds")
        if not seen or seen[-1][1] != up_s:
            seen.append((ino, up_s))
        time.sleep(0.01)
    assert reads > 100
    assert len(seen) >= 4, seen  # no SIGUSR1 sent: the period wrote them
    # the first may be the earlier test's SIGUSR1 write, off the period's beat
    gaps = [b[1] - a[1] for a, b in zip(seen[1:], seen[2:])]
    assert all(abs(g - PERIOD_MS / 1000) < 0.1 for g in gaps), gaps
    assert len({ino for ino, _ in seen}) == len(seen), "each write is a new file renamed over"
    assert not prom.with_name(prom.name + ".tmp").exists()
    assert "metrics:" not in eng.log_text()  # no write failed
