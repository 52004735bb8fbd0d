"""The engine's own BFD Echo (RFC 5880 6.4, 6.8.5, 6.8.9; RFC 5881 section 4; engine/echo.c,
bpf/kern/echo_own.h), live against FRR 8.4.4 with echo-mode at both ends: topologies/classes.toml's
echo classes (v4echo-frr, v6echo-frr: Control and echo every 50 ms, Detect Mult 3), its engine
device. The peer namespace forwards IPv4 and IPv6 (lab/rig/netns.py turns forwarding on for an
echo class), which is what sends our self-addressed echo back.

- bfdd asks for echo (50 ms) and FRR advertises Required Min Echo RX 50 ms: the engine sends
  echo at max(50, 50) ms, each self-addressed (source = destination = its address), UDP from
  the session's port to 3785, TTL / hop limit 255, to FRR's MAC; it comes back (254) and the
  XDP program counts it (echo_own_rx) and drops it. Gaps between one session's echo packets:
  never under the peer's 50 ms, at most 100 % of it plus scheduling slack.
- Our echo dropped on the wire (tc on the bridge port the engine sends into, matching only
  UDP 3785 to the engine's own addresses; Control and FRR's echo untouched): every session goes
  Down at the engine with diag 2 (Echo Function Failed) one echo detection time (3 x 50 ms)
  after the last echo came back, FRR counts it Down with remote diagnostic "echo function
  failed"; the handshake brings it Up within milliseconds and it fails again (no hold-down in
  RFC 5880); lifted, every session stays Up.
- The engine's neighbour table flushed: echo goes on, no session goes down.
- FRR set to advertise Required Min Echo RX 0: our echo stops (C11c) and starts again at 50 ms.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict

import pytest

from lab import util
from lab.harness.lab import Lab
from lab.rig import capture
from lab.rig.netns import DUT_IF
from lab.util import run
from enginelab import echo_dropped, echo_topology, engine_lab

REPO = __import__("pathlib").Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

TOPO = echo_topology()
ECHO_MS = 50
MULT = 3
WINDOW_S = 3.0
SLACK_MS = 5.0  # the engine's timer wake-up and the capture's stamping, both on a busy VM


@pytest.fixture(scope="module")
def lab():
    assert TOPO.classes and all(c.echo_interval_ms == ECHO_MS and c.detect_mult == MULT
                                for c in TOPO.classes)
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-echo-own") as lab:
        yield lab


def _sessions(stats: dict) -> dict[str, dict]:
    return {s["peer"]: s for s in stats["sessions"]}


def _capture(lab: Lab, name: str) -> capture.Capture:
    cap = capture.Capture(lab.netns.wire, lab.rd.path / name, lab.rd.logs / f"{name}.log")
    lab.registry.add_pid(cap.start(), "tcpdump")
    lab.extra.append(("tcpdump", cap.stop))
    return cap


def _packets(cap: capture.Capture):
    """(time s, family, src, dst, ttl, sport, dport, udp payload) of each captured datagram."""
    from scapy.all import IP, UDP, IPv6, rdpcap  # the independent reader

    out = []
    for p in rdpcap(str(cap.pcap)):
        ip = p[IP] if IP in p else p[IPv6] if IPv6 in p else None
        if ip is None or UDP not in p:
            continue
        out.append((float(p.time), 4 if IP in p else 6, ip.src, ip.dst,
                    ip.ttl if IP in p else ip.hlim, p[UDP].sport, p[UDP].dport,
                    bytes(p[UDP].payload)))
    return out


def test_own_echo_sent_and_returned(lab: Lab):
    peer, eng = lab.peer, lab.engines["engine"]
    assert peer is not None
    time.sleep(1.0)  # echo starts once Up and FRR's Required Min Echo RX is known
    ours = {s.device_address for s in TOPO.sessions("engine")}
    cap = _capture(lab, "echo-own.pcap")
    s0 = eng.stats()
    time.sleep(WINDOW_S)
    s1 = eng.stats()
    cap.stop()
    assert s0 is not None and s1 is not None
    a, b = _sessions(s0), _sessions(s1)
    assert len(b) == TOPO.sessions_per_device
    sent = back = 0
    for p, x in b.items():
        assert x["state"] == "Up" and x["down_events"] == a[p]["down_events"], x
        assert x["echo_interval_us"] == ECHO_MS * 1000, x  # max(bfdd's 50 ms, FRR's 50 ms)
        tx = x["echo_tx_packets"] - a[p]["echo_tx_packets"]
        rx = x["echo_rx_packets"] - a[p]["echo_rx_packets"]
        # 75-100 % jitter, floored at the peer's 50 ms: exactly every 50 ms here
        assert WINDOW_S * 1000 / ECHO_MS * 0.9 <= tx <= WINDOW_S * 1000 / ECHO_MS + 2, (p, tx)
        assert tx - 2 <= rx <= tx + 2, (p, tx, rx)  # in flight at either read
        sent += tx
        back += rx
    c0, c1 = s0["counters"], s1["counters"]
    assert c1["echo_own_rx"] - c0["echo_own_rx"] == back
    assert s1["engine"]["echo_tx"] - s0["engine"]["echo_tx"] == sent
    assert s1["engine"]["echo_tx_errors"] == 0 and s1["engine"]["echo_failed"] == 0
    print(f"our echo in {WINDOW_S:.0f} s: {sent} sent, {back} back "
          f"({len(b)} sessions, {ECHO_MS} ms)")

    # On the wire: ours leave at 255, self-addressed, to 3785; each comes back once at 254.
    port_of = {x["local"]: x["local_port"] for x in b.values()}
    out_t: dict[str, list[float]] = defaultdict(list)
    out_pl, back_pl = set(), set()
    for t, fam, src, dst, ttl, sport, dport, pl in _packets(cap):
        if dport != 3785 or dst not in ours or not pl.startswith(b"XBFE"):
            continue  # FRR's own IPv6 echo is addressed to us too
        assert src == dst, (src, dst)  # self-addressed, IPv4 and IPv6 (RFC 5881 4)
        assert sport == port_of[src], (src, sport)
        assert len(pl) == 24, pl
        if ttl == 255:
            out_t[src].append(t)
            out_pl.add(pl)
        else:
            assert ttl == 254, ttl  # one forwarding hop
            back_pl.add(pl)
    assert set(out_t) == ours
    missing = out_pl - back_pl
    assert len(missing) <= 2 * len(ours), (len(missing), len(out_pl))  # cut at the ends
    gaps_ms = [1000 * (y - x) for ts in out_t.values() for x, y in zip(ts, ts[1:])]
    print(f"gaps between our echo packets: {min(gaps_ms):.2f}-{max(gaps_ms):.2f} ms "
          f"({len(gaps_ms)})")
    assert min(gaps_ms) >= ECHO_MS - 0.5, min(gaps_ms)  # never under the peer's value
    assert max(gaps_ms) <= ECHO_MS + SLACK_MS * 4, max(gaps_ms)


def _peer_erx(lab: Lab, value: str) -> None:
    """Set FRR's `echo receive-interval` (what it advertises as Required Min Echo RX) to VALUE
    ("disabled": 0) on every session."""
    from enginelab import cfgs

    assert lab.peer is not None
    for c in cfgs(lab.topo, "peer"):
        lab.peer.vtysh("configure terminal", "bfd", c.head, f"echo receive-interval {value}",
                       "end")


def test_peer_erx_zero_stops_our_echo(lab: Lab):
    """C11c: FRR advertises Required Min Echo RX 0 (`echo receive-interval disabled`): our echo
    stops with that packet (RFC 5880 6.8.9 MUST NOT), the sessions stay Up; back to 50 ms, it
    starts again."""
    eng = lab.engines["engine"]
    ours = {s.device_address for s in TOPO.sessions("engine")}
    cap = _capture(lab, "echo-own-erx0.pcap")
    try:
        _peer_erx(lab, "disabled")
        t_off = time.time()
        util.wait_until(lambda: all(x["echo_interval_us"] == 0
                                    for x in eng.stats()["sessions"]) or None, 3,
                        "our echo stopped on every session", poll_s=0.05)
        s0 = eng.stats()
        time.sleep(1.0)
        s1 = eng.stats()
    finally:
        _peer_erx(lab, str(ECHO_MS))
    cap.stop()
    a, b = _sessions(s0), _sessions(s1)
    for p, x in b.items():
        assert x["state"] == "Up" and x["echo_tx_packets"] == a[p]["echo_tx_packets"], x
    # On the wire: none of ours later than 0.2 s after FRR's change was applied
    # (vtysh returns once bfdd has it; its next Control packet carries it).
    late = [t for t, fam, src, dst, ttl, sport, dport, pl in _packets(cap)
            if dport == 3785 and src in ours and dst in ours and pl.startswith(b"XBFE")
            and ttl == 255 and t > t_off + 0.2]
    assert not late, [round(t - t_off, 3) for t in late]
    util.wait_until(lambda: all(x["echo_interval_us"] == ECHO_MS * 1000
                                for x in eng.stats()["sessions"]) or None, 3,
                    "our echo running again at 50 ms", poll_s=0.05)


def test_neighbour_flushed_echo_goes_on(lab: Lab):
    """The engine's neighbour table flushed: echo goes on (a refresh that finds no entry keeps
    the MAC it had and asks the kernel to resolve it, NTF_USE; the engine's own Control sends
    usually resolve it first: then no look fails), no session goes down, the entries are back.
    The look that fails is tests/unit/test_echo.c's, in a namespace nothing else resolves."""
    eng = lab.engines["engine"]
    ns = lab.netns.device_ns("engine")
    s0 = eng.stats()
    run(["ip", "-n", ns, "neigh", "flush", "dev", DUT_IF])
    time.sleep(1.5)
    s1 = eng.stats()
    looks = s1["engine"]["echo_no_neigh"] - s0["engine"]["echo_no_neigh"]
    table = run(["ip", "-n", ns, "neigh", "show", "dev", DUT_IF]).stdout
    print(f"neighbour table flushed: {looks} looks found no MAC, then:\n{table}")
    assert s1["engine"]["echo_failed"] == s0["engine"]["echo_failed"]
    a, b = _sessions(s0), _sessions(s1)
    for p, x in b.items():
        assert x["state"] == "Up" and x["down_events"] == a[p]["down_events"], x
        assert x["echo_rx_packets"] - a[p]["echo_rx_packets"] >= 1.5 * 1000 / ECHO_MS * 0.8, x
        assert p in table, (p, table)  # resolved again


def test_own_echo_lost_takes_session_down_diag2(lab: Lab):
    """Only our echo is dropped (UDP 3785 to the engine's addresses, where the engine sends it
    into the wire: u32 + mirred to the wire namespace's lo), so Control and FRR's echo go on."""
    peer, eng = lab.peer, lab.engines["engine"]
    assert peer is not None
    util.wait_until(lambda: all(x["status"] == "up" for x in peer.peers()) or None, 20,
                    "every session Up", poll_s=0.2)
    sessions = TOPO.sessions("engine")
    n = len(sessions)
    cap = _capture(lab, "echo-own-loss.pcap")
    s0 = eng.stats()
    f0 = {c["peer"]: c for c in peer.counters()}
    with echo_dropped(lab, [s.device_address for s in sessions]):
        # Each session fails its echo, tells FRR (Down, diag 2), comes Up again through the
        # handshake within milliseconds and fails again an echo detection time later: a poll
        # of either side's state rarely sees it Down, their counters and diagnostics do.
        time.sleep(1.0)
        s1 = eng.stats()
        f1 = {c["peer"]: c for c in peer.counters()}
        rows = peer.peers()
    time.sleep(0.3)
    cap.stop()
    assert s0 is not None and s1 is not None
    a, b = _sessions(s0), _sessions(s1)
    for p, x in b.items():
        assert x["local_diag"] == 2 and x["down_events"] > a[p]["down_events"], x
    assert s1["engine"]["echo_failed"] - s0["engine"]["echo_failed"] >= n
    for r in rows:  # FRR: Down each time, and what we said: echo function failed (diag 2)
        assert r["remote-diagnostic"] == "echo function failed", r
        assert f1[r["peer"]]["session-down"] > f0[r["peer"]]["session-down"], r
    fails = s1["engine"]["echo_failed"] - s0["engine"]["echo_failed"]
    print(f"our echo dropped for 1 s: {fails} Downs with diag 2 over {n} sessions; FRR "
          f"counted " + ", ".join(str(f1[r['peer']]['session-down'] -
                                      f0[r['peer']]['session-down']) for r in rows))

    # Detection on the wire: from the last echo back to our first Control packet with diag 2.
    ours = {s.device_address for s in sessions}
    last_back: dict[str, float] = {}
    down_at: dict[str, float] = {}
    for t, fam, src, dst, ttl, sport, dport, pl in _packets(cap):
        if dport == 3785 and dst in ours and ttl == 254 and pl.startswith(b"XBFE") \
                and dst not in down_at:
            last_back[dst] = t
        elif dport == 3784 and src in ours and src not in down_at and len(pl) >= 24 \
                and pl[0] & 0x1f == 2 and pl[1] >> 6 == 1:
            down_at[src] = t
    assert set(down_at) == ours, down_at
    detect_ms = {a: 1000 * (down_at[a] - last_back[a]) for a in ours}
    print("echo detection (last echo back -> our Down diag 2 on the wire): " +
          ", ".join(f"{a} {v:.1f} ms" for a, v in sorted(detect_ms.items())))
    for a, v in detect_ms.items():
        # Detect Mult x 50 ms after the last one back, plus the engine's wake-up
        assert MULT * ECHO_MS - 1 <= v <= MULT * ECHO_MS + ECHO_MS, (a, v)
    util.wait_until(lambda: all(x["status"] == "up" for x in peer.peers()) or None, 20,
                    "every session Up again", poll_s=0.5)
    time.sleep(0.5)
    st = eng.stats()
    assert st is not None and all(x["state"] == "Up" for x in st["sessions"])
