"""The engine against real FRR 8.4.4 bfdd at both ends, in namespaces, as root.

One engine device with 110 sessions at 300 ms x3 to a stock peer bfdd (conformance.md's
multi-session setup, scaled to what one peer here carries easily). In order:
- every session comes Up at both ends; the engine serves them from XDP in native mode;
- `show bfd peers counters` asks 110 counters in one command, twice: FRR 8.4.4 resets its
  data-plane connection after about 102 replies unless the engine works around it (bfddp bug #3);
- the peer stops for 1.5 s (SIGSTOP): the engine takes every session Down with diag 1 one
  Detection Time (900 ms) after the peer's last packet, tells bfdd, and all come back on SIGCONT;
- `shutdown` on one peer sends AdminDown (the peer sees diag 7), `no shutdown` brings it back;
- bfdd stops: the engine sees EOF, sends AdminDown everywhere; a new bfdd is found again;
- SIGTERM to the engine: AdminDown on every session, exit 0.
"""

from __future__ import annotations

import os
import re
import signal
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lab import util
from lab.harness.lab import Lab
from lab.rig.netns import DUT_IF
from lab.topo import Device, Meta, Peer, SessionClass, Topology
from enginelab import cfgs, engine_lab, restart_bfdd, stop_with_admin_down, up, wait_all_up

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

SESSIONS = 110  # more counters requests in one command than 8.4.4 survives unaided (102)
DETECT_S = 0.9  # 3 x 300 ms
DOWN_LINE = re.compile(r"^(\S+)Z xdp-bfd\[\d+\] info: session (\S+) -> (\S+) lid \d+: "
                       r"Up -> Down diag 1 \(RFC 5880 6\.8\.4\)")
TOPO = Topology(meta=Meta("engine-frr", 16), peer=Peer("10.79.1.1"),
                devices=(Device("engine", "engine", "10.79.0.1"),),
                classes=(SessionClass("300ms", 300, 3, SESSIONS),), source="test")


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-frr") as lab:
        yield lab


def test_all_up_on_the_fast_path(lab: Lab) -> None:
    st = lab.engines["engine"].stats()
    assert st is not None
    assert st["kernel_tx"] is True
    assert st["xdp_mode"] == "native"
    assert st["sessions_configured"] == SESSIONS
    assert st["sessions_up"] == SESSIONS
    assert all(s["fast_path"] and s["rx_clocked"] for s in st["sessions"])
    assert "kernel-tx: XDP attached to dut0 (native mode, link)" in lab.engines["engine"].log_text()
    assert "dplane: bfdd connected" in lab.engines["engine"].log_text()


# Issue 8 item 6: with the shared transmit clock's strict 75 % floor, 143 of 1,123 packets in
# this window once came from userspace (measured at 4d3e9ab): the backstop's jittered deadline
# beat the peer's packet to the clock half the time, and that packet then came under 75 % after
# ours, for cycles. The backstop now waits for the end of the peer's window (fsm_next_tx_ns()).
def test_steady_state_stays_in_xdp(lab: Lab) -> None:
    # Steady state: the replies come from XDP, next to none from userspace. The peer sends every
    # 225-300 ms (RFC 5880 6.8.7 jitter), so 3 s bring 10-13.3 packets per session.
    # Handshakes end with a few packets userspace must send (transition, Final): start the
    # window once every session has been Up for 2 s.
    st = util.wait_until(
        lambda: (x := lab.engines["engine"].stats()) and
        all(y["state_age_ms"] >= 2000 and not y["poll_active"] for y in x["sessions"]) and x,
        10, "every session Up for 2 s", poll_s=0.5)
    time.sleep(3.0)
    st2 = lab.engines["engine"].stats()
    assert st2 is not None
    replies = st2["counters"]["tx_reply"] - st["counters"]["tx_reply"]
    assert 10 * SESSIONS * 0.9 <= replies <= 13.4 * SESSIONS, replies
    # FRR's packets 75 % of an interval apart (1 in 26) can land microseconds under 75 % after
    # our last: not answered in XDP (RFC 5880 6.8.7), the engine told (BFD_EVF_TX_EARLY), and
    # ours sent by userspace at 75 %. Rare; anything more is a fault.
    user = st2["engine"]["tx_packets"] - st["engine"]["tx_packets"]
    events = st2["counters"]["event_posted"] - st["counters"]["event_posted"]
    assert user <= 0.03 * replies and events <= 0.03 * replies, (user, events, replies)


def test_counters_past_8_4_4_reset(lab: Lab) -> None:
    dut = lab.duts["engine"]
    for _ in range(2):
        rows = dut.counters(timeout=20)
        assert len(rows) == SESSIONS
        assert all(r["control-packet-input"] > 0 and r["control-packet-output"] > 0
                   for r in rows)
    assert "bfdd disconnected" not in lab.engines["engine"].log_text()
    # bfdd's view matches the engine's own counters for a session (within the seconds between).
    st = lab.engines["engine"].stats()
    assert st is not None
    mine = {s["peer"]: s for s in st["sessions"]}
    for r in rows[:5]:
        assert abs(r["control-packet-input"] - mine[r["peer"]]["rx_packets"]) < 50


def test_peer_stalls_then_recovers(lab: Lab) -> None:
    assert lab.peer is not None and lab.peer.pid is not None
    eng = lab.engines["engine"]
    before = len(DOWN_LINE.findall(eng.log_text()))
    t_stop = time.time()
    os.kill(lab.peer.pid, signal.SIGSTOP)
    try:
        util.wait_until(lambda: len([m for m in map(DOWN_LINE.match, eng.log_text().splitlines())
                                     if m]) - before >= SESSIONS or None,
                        5.0, "every session declared Down")
    finally:
        time.sleep(max(0.0, t_stop + 1.5 - time.time()))
        os.kill(lab.peer.pid, signal.SIGCONT)
    downs = [m for m in map(DOWN_LINE.match, eng.log_text().splitlines()) if m][before:]
    delays = [datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp() - t_stop
              for m in downs]
    # The peer's last packet left at most one interval (300 ms) before the stop; the engine may
    # be late by one sweep tick plus its loop's wake-up.
    assert len(downs) == SESSIONS
    assert min(delays) >= DETECT_S - 0.3 - 0.01, sorted(delays)[:5]
    assert max(delays) <= DETECT_S + 0.15, sorted(delays)[-5:]
    wait_all_up(lab)
    st = eng.stats()
    assert st is not None
    assert all(s["down_events"] >= 1 for s in st["sessions"])


def test_shutdown_sends_admin_down(lab: Lab) -> None:
    s = TOPO.sessions("engine")[0]
    dut, peer = lab.duts["engine"], lab.peer
    assert peer is not None
    head = f"peer {s.peer_address} local-address {s.device_address}"
    dut.vtysh("configure terminal", "bfd", head, "shutdown")

    def peer_sees() -> dict | None:
        for p in peer.peers():
            if p["peer"] == s.device_address and p["status"] == "down" and \
                    p["remote-diagnostic"] == "administratively down":
                return p
        return None

    # Right after the stall test the peer may still report an older Down; what matters is that
    # our AdminDown (diag 7) reaches it.
    util.wait_until(peer_sees, 5.0, "the peer sees the session AdminDown (diag 7)")
    st = lab.engines["engine"].stats()
    assert st is not None
    mine = [x for x in st["sessions"] if x["peer"] == s.peer_address][0]
    assert (mine["state"], mine["local_diag"]) == ("AdminDown", 7)
    dut.vtysh("configure terminal", "bfd", head, "no shutdown")
    wait_all_up(lab)


def test_deadman_stops_replies_of_a_stopped_engine(lab: Lab) -> None:
    """C13e: SIGSTOP the engine. The fast path answers on for --deadman-us (3 s), then falls
    silent so the peer learns the truth; after SIGCONT every session comes back."""
    peer, eng = lab.peer, lab.engines["engine"]
    assert peer is not None and eng.pid is not None
    t_stop = time.monotonic()
    os.kill(eng.pid, signal.SIGSTOP)
    try:
        time.sleep(2.5)
        assert up(peer) == SESSIONS, "the fast path kept every session Up within the bound"
        util.wait_until(lambda: up(peer) == 0 or None, 4.0, "the peer sees every session Down")
        t_down = time.monotonic() - t_stop
    finally:
        os.kill(eng.pid, signal.SIGCONT)
    # 3 s of dead-man bound, then the peer's 0.9 s Detection Time, give or take one interval
    assert 3.0 <= t_down <= 3.0 + DETECT_S + 0.6, t_down
    wait_all_up(lab)


def test_interface_deleted_and_recreated(lab: Lab) -> None:
    """C12a: the device's interface is deleted, then created again (new ifindex, no program).
    Sessions go Down with diag 5 (path down) at once, and come back on the fast path."""
    eng, dut = lab.engines["engine"], lab.duts["engine"]
    ns = lab.netns.device_ns("engine")
    util.run(["ip", "-n", ns, "link", "del", DUT_IF])
    util.wait_until(lambda: "kernel-tx: dut0 (ifindex" in eng.log_text() or None, 5,
                    "the engine notices the interface is gone")
    st = eng.stats()
    assert st is not None
    assert all(x["state"] == "Down" and x["local_diag"] == 5 and not x["fast_path"]
               for x in st["sessions"])
    assert up(dut) == 0, "bfdd was told"
    lab.netns.rewire("engine")  # the lab's own recipe: tx off, bridge, addresses, xdp_pass
    wait_all_up(lab, 40.0)
    st = eng.stats()
    assert st is not None
    assert st["xdp_mode"] == "native" and len(st["interfaces"]) == 1
    assert all(x["fast_path"] and x["rx_clocked"] for x in st["sessions"])
    assert eng.log_text().count("kernel-tx: XDP attached to dut0 (native mode, link)") == 2


def test_bfdd_restart(lab: Lab) -> None:
    dut, peer, eng = lab.duts["engine"], lab.peer, lab.engines["engine"]
    assert peer is not None
    dut.stop()
    util.wait_until(lambda: "bfdd disconnected (end of stream)" in eng.log_text(), 5.0,
                    "the engine sees bfdd go")

    def all_admin_down() -> bool | None:
        rows = peer.peers()
        return all(r["status"] == "down" and r["remote-diagnostic"] == "administratively down"
                   for r in rows) or None

    util.wait_until(all_admin_down, 5.0, "every session AdminDown at the peer")
    st = eng.stats()
    assert st is not None and st["sessions_configured"] == 0
    restart_bfdd(lab)
    util.wait_until(lambda: eng.log_text().count("dplane: bfdd connected") >= 2, 5.0,
                    "the engine finds the new bfdd")
    dut.add_peers(cfgs(TOPO, "device"))
    wait_all_up(lab)


def test_sigterm_sends_admin_down(lab: Lab) -> None:
    eng = stop_with_admin_down(lab, "engine")
    assert "stopped" in eng.log_text()
