"""The peer's BFD Echo returned by the engine's XDP program (RFC 5880 6.4, RFC 5881 section 4;
bpf/kern/echo.h), live against FRR 8.4.4 with echo-mode at both ends: topologies/classes.toml's
echo classes (v4echo-frr, v6echo-frr: Control and echo every 50 ms), its engine
device. The engine's namespace does not forward (IPv4 or IPv6), so whatever comes back, XDP
returned.

- The engine advertises Required Min Echo RX 50 ms (bfdd's value, because bfdd asked for echo),
  and FRR, seeing it, sends echo: IPv4 self-addressed, IPv6 addressed to us.
- Over a window, FRR counts each echo it sent back in (echo-packet-input follows
  echo-packet-output), keeps every session Up, and the engine's tx_echo counter grew by what
  FRR sent. On the wire (scapy, the independent reader), every echo FRR sent came back once,
  byte for byte the same payload, addresses as RFC 5881 4 / FRR's IPv6 expect, TTL / hop
  limit 254.
- Echo dropped on the wire (tc on the bridge port the engine sends into; Control and our own
  echo untouched): FRR declares "echo function failed" (RFC 5880 diag 2) within its echo
  detection time and the engine's sessions go Down with diag 3 (neighbour signalled down),
  FRR's diag 2 as the remote one; lifted, they come back Up.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from lab import util
from lab.harness.lab import Lab
from lab.judge import bfdcap
from lab.rig import capture
from enginelab import echo_dropped, echo_topology, engine_lab

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

TOPO = echo_topology()
ECHO_MS = 50
WINDOW_S = 4.0


@pytest.fixture(scope="module")
def lab():
    assert TOPO.classes and all(c.echo_interval_ms == ECHO_MS for c in TOPO.classes)
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-echo") as lab:
        yield lab


def _by_peer(rows: list[dict]) -> dict[str, dict]:
    return {r["peer"]: r for r in rows}


def test_peer_echo_returned(lab: Lab):
    from scapy.all import IP, UDP, IPv6, rdpcap  # the independent reader

    peer, eng = lab.peer, lab.engines["engine"]
    assert peer is not None
    # FRR starts echo once Up; give every session a second of it first.
    time.sleep(1.0)
    views = peer.peers()
    assert len(views) == TOPO.sessions_per_device
    for v in views:
        assert v["status"] == "up", v
        assert v["remote-echo-receive-interval"] == ECHO_MS, v  # what the engine advertised
        assert v["echo-transmit-interval"] == ECHO_MS, v
    cap = capture.Capture(lab.netns.wire, lab.rd.path / "echo.pcap", lab.rd.logs / "cap.log")
    lab.registry.add_pid(cap.start(), "tcpdump")
    lab.extra.append(("tcpdump", cap.stop))
    c0, s0 = _by_peer(peer.counters()), eng.stats()
    time.sleep(WINDOW_S)
    c1, s1 = _by_peer(peer.counters()), eng.stats()
    cap.stop()
    assert s0 is not None and s1 is not None
    sent_total = 0
    for addr, after in c1.items():
        before = c0[addr]
        out = after["echo-packet-output"] - before["echo-packet-output"]
        back = after["echo-packet-input"] - before["echo-packet-input"]
        sent_total += out
        # FRR sends every max(its 50 ms, our 50 ms) = 50 ms: 80 in 4 s (its timer may slip)
        assert out >= 0.8 * WINDOW_S * 1000 / ECHO_MS, (addr, out)
        assert abs(out - back) <= 2, (addr, out, back)  # in flight at either read
        assert after["session-down"] == before["session-down"], addr
    returned = s1["counters"]["tx_echo"] - s0["counters"]["tx_echo"]
    slack = 2 * len(c1)  # in flight at either read
    assert sent_total - slack <= returned <= sent_total + slack, (sent_total, returned)
    assert s1["counters"]["echo_refused"] == s0["counters"]["echo_refused"]
    assert s1["counters"]["echo_ttl"] == s0["counters"]["echo_ttl"]

    # On the wire: each echo FRR sent (TTL 255) and its return (254), paired by payload.
    peer_addrs = {s.peer_address for s in TOPO.sessions("engine")}
    ours = {s.device_address for s in TOPO.sessions("engine")}
    sent, back_seen = Counter(), Counter()
    for p in rdpcap(str(cap.pcap)):
        ip = p[IP] if IP in p else p[IPv6] if IPv6 in p else None
        if ip is None or UDP not in p or p[UDP].dport != 3785:
            continue
        if ip.src == ip.dst and ip.src in ours:
            continue  # our own echo, forwarded back by FRR's host: test_engine_echo_own.py
        ttl = ip.ttl if IP in p else ip.hlim
        key = (bytes(p[UDP].payload), p[UDP].sport)
        v4 = IP in p
        if ttl == 255:  # FRR's: IPv4 self-addressed (RFC 5881 4), IPv6 to our address
            assert ip.src in peer_addrs, p.summary()
            assert (ip.dst == ip.src) if v4 else (ip.dst in ours), p.summary()
            sent[key] += 1
        else:  # returned: one hop used, as a forwarder would; back to FRR's address
            assert ttl == 254, p.summary()
            assert ip.dst in peer_addrs, p.summary()
            assert (ip.src == ip.dst) if v4 else (ip.src in ours), p.summary()
            back_seen[key] += 1
    assert sum(sent.values()) >= 0.8 * WINDOW_S * 1000 / ECHO_MS * len(c1)
    missing = sum((sent - back_seen).values())
    assert missing <= 2 * len(c1), (missing, sum(sent.values()))  # cut at the window's ends
    assert not (back_seen - sent) or sum((back_seen - sent).values()) <= 2 * len(c1)


def test_echo_loss_takes_peer_down(lab: Lab):
    """The peer's echo stops coming back (what we return, addressed to the peer, dropped on the
    wire; Control and our own echo untouched: enginelab.echo_dropped): FRR fails its echo (diag
    2) and tells us; lifted, every session is Up again. Each session fails, comes back Up
    through the handshake within milliseconds and fails again an echo detection time later, so
    the counters and the wire show it, not a poll of the state (which missed it once)."""
    peer, eng = lab.peer, lab.engines["engine"]
    assert peer is not None
    util.wait_until(lambda: all(x["status"] == "up" for x in peer.peers()) or None, 20,
                    "every session Up", poll_s=0.2)
    sessions = TOPO.sessions("engine")
    cap = capture.Capture(lab.netns.wire, lab.rd.path / "echo-loss.pcap",
                          lab.rd.logs / "cap-loss.log")
    lab.registry.add_pid(cap.start(), "tcpdump")
    lab.extra.append(("tcpdump (loss)", cap.stop))
    t0 = util.realtime_ns()
    s0, f0 = eng.stats(), _by_peer(peer.counters())
    with echo_dropped(lab, [s.peer_address for s in sessions]):
        time.sleep(1.0)
        s1, f1 = eng.stats(), _by_peer(peer.counters())
    t1 = util.realtime_ns()
    cap.stop()
    assert s0 is not None and s1 is not None
    a, b = _by_peer(s0["sessions"]), _by_peer(s1["sessions"])
    for s in sessions:
        assert b[s.peer_address]["down_events"] > a[s.peer_address]["down_events"], s
        assert f1[s.device_address]["session-down"] > f0[s.device_address]["session-down"], s
    assert s1["engine"]["echo_failed"] == s0["engine"]["echo_failed"]  # not our own echo's
    # Why, from the wire: FRR's Down with diag 2 (echo function failed) from every session.
    # Not from either side's state: each comes back Up within milliseconds, and FRR clears
    # its diagnostic when it does (a poll of it missed the failure).
    down2 = {p["src"] for p in bfdcap.packets(cap.pcap, t0, t1, bfdcap=REPO / "build" / "bfdcap")
             if p.get("state") == 1 and p.get("diag") == 2}
    assert down2 >= {s.peer_address for s in sessions}, down2
    print("the peer's echo dropped for 1 s: FRR counted " +
          ", ".join(str(f1[k]["session-down"] - f0[k]["session-down"]) for k in sorted(f1)) +
          " session-downs")
    util.wait_until(lambda: all(x["status"] == "up" for x in peer.peers()) or None, 20,
                    "every session Up again", poll_s=0.5)
