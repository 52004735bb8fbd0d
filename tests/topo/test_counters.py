"""The device's own counters around a bare-metal flood step (lab.bare.counters): `ethtool -S`
parsed from a recorded igb port (tests/topo/fixtures, each file says where it comes from),
the deltas `lab report` shows, the snapshot on this machine's loopback with the real tools
("no stats available": said, not a crash), and the report's line."""

from __future__ import annotations

import json
from pathlib import Path

from lab.bare import collect, counters
from lab.judge import render_ladder

FIX = Path(__file__).with_name("fixtures")


def snap(name: str, t_ns: int, rx_dropped: int, engine: dict | None) -> dict:
    return {"iface": "enp1s0", "t_ns": t_ns,
            "link": {"rx": {"packets": 1000 + rx_dropped, "dropped": rx_dropped,
                            "missed_errors": 0}},
            "nic": counters.parse_ethtool_s((FIX / name).read_text()),
            "udp_rcvbuf_errors": 7, "engine": engine}


def test_parse_recorded_igb() -> None:
    s = counters.parse_ethtool_s((FIX / "ethtool_S_igb.txt").read_text())
    assert len(s) == 66
    assert (s["rx_packets"], s["rx_fifo_errors"], s["rx_queue_0_drops"],
            s["rx_flow_control_xon"], s["rx_queue_1_alloc_failed"]) == (800275, 4300, 4300, 46, 0)
    assert not any(k.startswith("#") for k in s)


def test_deltas_of_two_igb_snapshots() -> None:
    eng0 = {"counters": {"rx_ctrl": 100, "tx_reply": 100, "pass_non_bfd": 5},
            "drops": {"bad_ttl": 1}, "sessions_up": 32}
    eng1 = {"counters": {"rx_ctrl": 600, "tx_reply": 600, "pass_non_bfd": 5},
            "drops": {"bad_ttl": 4}, "sessions_up": 32}
    d = counters.deltas(snap("ethtool_S_igb.txt", 0, 3, eng0),
                        snap("ethtool_S_igb_after.txt", 5_500_000_000, 10, eng1))
    assert d["counters_span_s"] == 5.5
    assert (d["link_rx_packets"], d["link_rx_dropped"], d["link_rx_missed"]) == (7, 7, 0)
    assert d["udp_rcvbuf_errors"] == 0
    assert d["nic"] == {"rx_fifo_errors": 1151, "rx_queue_0_drops": 1151}
    assert d["nic_drops"] == {"rx_fifo_errors": 1151, "rx_queue_0_drops": 1151}
    assert d["nic_xdp"] == {} and d["nic_counters"] == 66
    assert d["engine_counters"] == {"rx_ctrl": 500, "tx_reply": 500}
    assert d["engine_drops"] == {"bad_ttl": 3}
    # an engine that did not answer SIGUSR1 in time: said, not zero
    assert counters.deltas(snap("ethtool_S_igb.txt", 0, 0, eng0),
                           snap("ethtool_S_igb.txt", 1, 0, None))["engine_counters"] is None
    line = render_ladder.nic_line(d)
    assert line == ("link rx +7, rx dropped +7, missed +0; NIC drops rx_fifo_errors +1151, "
                    "rx_queue_0_drops +1151; XDP none moved (66 ethtool -S counters); "
                    "over 5.5 s (arm)")


def test_veth_xdp_counters_are_xdp() -> None:
    """veth names its XDP counters per queue (rx_queue_0_xdp_drops, ...; all 10 of its
    counters in lab.bare.counters): xdp_drops is both a drop and an XDP counter;
    peer_ifindex never moves."""
    nic0 = {"peer_ifindex": 9, "rx_queue_0_xdp_drops": 0, "rx_queue_0_xdp_tx": 10}
    nic1 = {"peer_ifindex": 9, "rx_queue_0_xdp_drops": 2, "rx_queue_0_xdp_tx": 30}
    a = {"t_ns": 0, "link": {}, "nic": nic0, "udp_rcvbuf_errors": None}
    b = dict(a, t_ns=10**9, nic=nic1)
    d = counters.deltas(a, b)
    assert d["nic_xdp"] == {"rx_queue_0_xdp_drops": 2, "rx_queue_0_xdp_tx": 20}
    assert d["nic_drops"] == {"rx_queue_0_xdp_drops": 2}
    assert (d["link_rx_dropped"], d["udp_rcvbuf_errors"]) == ("n/a", "n/a")


def test_snapshot_of_loopback_with_the_real_tools(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    assert counters.main(["lo", str(out)]) == 0
    s = json.loads(out.read_text())
    assert s["nic"] == {} and s["nic_error"] == "ethtool -S lo: no stats available"
    assert s["link"]["rx"]["packets"] >= 0 and "missed_errors" in s["link"]["rx"]
    assert isinstance(s["udp_rcvbuf_errors"], int) and "engine" not in s
    assert counters.main(["lo"]) == 3


def test_collect_puts_device_counters_into_the_flood_record(tmp_path: Path) -> None:
    class H:
        name, device = "dut1", "engine"
    d = tmp_path / "dut1"
    d.mkdir()
    for w, f, t in (("before", "ethtool_S_igb.txt", 0),
                    ("after", "ethtool_S_igb_after.txt", 10**9)):
        (d / f"counters-flood-D-{w}.json").write_text(json.dumps(snap(f, t, 0, None)))
    warnings: list[str] = []
    side = collect.device_counters(tmp_path, [H()], "flood-D", warnings)
    assert warnings == [] and side["engine"]["nic_drops"]["rx_queue_0_drops"] == 1151
    rec = collect.flood_record({"arm": "D", "target_pps": 50000, "devices": {
        "engine": {"seconds": 5, "offered_pps": 50000, "sent": 250000, "rc": 0}}}, "flood-D",
        side)
    dev = rec["devices"]["engine"]
    assert dev["offered_pps"] == 50000 and dev["link_rx_dropped"] == 0
    assert dev["nic"] == {"rx_fifo_errors": 1151, "rx_queue_0_drops": 1151}
    assert collect.device_counters(tmp_path, [H()], "flood-E", warnings) == {}
    assert warnings == ["dut1: no device counters around flood-E"]
