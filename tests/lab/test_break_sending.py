"""Break tests of the engine, sending: sockets and source addresses that come and go, ICMP errors,
Demand mode, a silent peer (root, namespaces, XDP).

The lab each test builds, and the two kinds of tests (guards, fixed findings): breaklab.py.
"""

from __future__ import annotations

import time

from breaklab import (
    DETECT_S, DEV, IV, LID, PEER_DISC, PYTESTMARK, STATE_CHANGE, TST, BreakLab, need, sh,
    up_session)
from lab.util import wait_until

pytestmark = PYTESTMARK


# Fixed finding (medium): each session's UDP socket is connect()ed, so an ICMP port unreachable
# from the peer's host (its BFD daemon not running yet, restarting) is returned by the next
# send(), which then sends nothing (ECONNREFUSED, counted in tx_errors): every other packet is
# lost, slow-start gaps of about 2 s instead of 0.75-1 s (RFC 5880 6.8.7); an AdminDown or state-
# change packet can be the one lost.
def test_icmp_port_unreachable_does_not_eat_packets() -> None:
    with BreakLab(sink=False) as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        d.add(src=DEV, dst=TST, lid=LID)
        tq = time.monotonic()
        time.sleep(6.0)
        ts = [t for t, _ in raw.from_(DEV, tq)]
        st = eng.stats()
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        assert st["engine"]["tx_errors"] == 0 and gaps and max(gaps) <= 1.05, (gaps, st["engine"])


# Fixed finding (medium): without --kernel-tx (everything on the software path), a session whose
# local address is configured after its ADD never gets a socket: tx_open() fails once
# (EADDRNOTAVAIL, 'no socket to send from') and is never retried, because engine_iface_changed()
# returns at once when the fast path is off. The session sends nothing, ever (tx_errors grows),
# and cannot come Up. With --kernel-tx the same case recovers ('back on the fast path').
def test_software_path_session_gets_a_socket_once_its_address_appears() -> None:
    with BreakLab() as lab:
        lab.engine(kernel_tx=())
        d = lab.dp()
        raw = lab.raw()
        d.add(src="10.90.0.7", dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync()
        time.sleep(0.5)
        sh("ip", "-n", lab.dev, "addr", "add", "10.90.0.7/16", "dev", "dut0")
        tq = time.monotonic()
        time.sleep(3.0)  # slow start: at least one packet a second
        assert raw.from_("10.90.0.7", tq), "the engine sent nothing from the new address"


# Fixed finding (low-medium): a peer in Demand mode (D bit) while both ends are Up still gets
# periodic packets, every interval, from userspace: RFC 5880 6.8.7 says the local system MUST
# cease periodic transmission then (only Polls and Finals). docs/engine.md says the D bit 'moves
# the session to userspace clocking', which is the violation.
def test_peer_in_demand_mode_gets_no_periodic_packets() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        _, raw, t = up_session(lab, eng, iv=300000)
        t.send(flags=0x20 | 0x02)  # Poll with D: the peer asks for Demand mode
        plain = t.send
        t.send = lambda **kw: plain(**{**kw, "flags": kw.get("flags", 0) | 0x02})
        time.sleep(0.5)  # the Poll's Final
        tq = time.monotonic()
        time.sleep(2.0)
        periodic = [p for _, p in t.from_engine(tq) if not p["F"] and not p["P"]]
        assert not periodic, f"{len(periodic)} periodic packets in 2 s"


def test_demand_peer_going_silent_is_detected_and_its_poll_finalled() -> None:
    """A peer in Demand mode (D bit) while Up still sends to us (we never ask for Demand), so
    its silence is still a failure (RFC 5880 6.8.4): Down with diag 1 within two Detection
    Times. Before that, its Poll with D gets a Final (6.8.7)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        plain = t.send
        t.send = lambda **kw: plain(**{**kw, "flags": kw.get("flags", 0) | 0x02})
        time.sleep(1.5)
        tq = time.monotonic()
        t.send(flags=0x20 | 0x02)
        time.sleep(0.5)
        assert any(p["F"] for _, p in t.from_engine(tq)), "no Final to the Poll in Demand mode"
        need(eng.sess(eng.stats(), LID)["state"] == "Up", "Up in Demand mode")
        t.stop()
        time.sleep(2 * DETECT_S)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        assert [m["state"] for m in d.of(STATE_CHANGE, LID)][-1] == 1


def test_fast_path_session_sends_once_its_address_appears() -> None:
    """With --kernel-tx, a session added before its source address exists sends within about a
    second of the address being added (socket retried at once on the address event)."""
    with BreakLab() as lab:
        lab.engine()
        d = lab.dp()
        raw = lab.raw()
        d.add(src="10.90.0.7", dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync()
        time.sleep(0.5)
        ta = time.monotonic()
        sh("ip", "-n", lab.dev, "addr", "add", "10.90.0.7/16", "dev", "dut0")
        wait_until(lambda: raw.from_("10.90.0.7", ta) or None, 2.5, "first packet")
        first = raw.from_("10.90.0.7", ta)[0][0]
        assert first - ta <= 1.5, first - ta


# Fixed finding (medium-low): a session without a source address (the route picks it) whose picked
# address goes away keeps its socket bound to the gone address: every send fails (tx_errors) and
# the socket is never reopened, though the route now picks another address. Sessions with a
# missing source are retried each second (docs/engine.md, 'Sending sockets'); this one is not.
def test_route_picked_source_follows_renumbering() -> None:
    with BreakLab() as lab:
        eng = lab.engine(kernel_tx=())
        d = lab.dp()
        raw = lab.raw()
        d.add(src="0.0.0.0", dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync()
        time.sleep(1.5)
        need(raw.from_(DEV), "sending from the route's source")
        # without promotion, deleting the primary address takes its secondaries with it
        sh("ip", "netns", "exec", lab.dev, "sysctl", "-qw",
           "net.ipv4.conf.dut0.promote_secondaries=1")
        sh("ip", "-n", lab.dev, "addr", "add", "10.90.0.9/16", "dev", "dut0")
        sh("ip", "-n", lab.dev, "addr", "del", f"{DEV}/16", "dev", "dut0")
        ta = time.monotonic()
        time.sleep(4.0)
        st = eng.stats()
        assert raw.from_("10.90.0.9", ta), (eng.sess(st, LID)["local"], st["engine"]["tx_errors"])


def test_source_address_removed_and_re_added_sending_resumes() -> None:
    """An explicit source address removed for 2 s and added again: the engine sends from it
    again within about a second of its return."""
    with BreakLab() as lab:
        lab.engine(kernel_tx=())
        d = lab.dp()
        raw = lab.raw()
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync()
        time.sleep(1.5)
        need(raw.from_(DEV), "sending")
        sh("ip", "-n", lab.dev, "addr", "del", f"{DEV}/16", "dev", "dut0")
        time.sleep(2.0)
        ta = time.monotonic()
        sh("ip", "-n", lab.dev, "addr", "add", f"{DEV}/16", "dev", "dut0")
        wait_until(lambda: raw.from_(DEV, ta) or None, 3.0, "sending again")
        assert raw.from_(DEV, ta)[0][0] - ta <= 1.5


def test_session_without_source_sends_once_its_route_appears() -> None:
    """A session without source address towards a peer with no route yet (no socket) starts
    sending, from the address the route picks, within about a second of the route being added,
    and comes Up with the peer (the fast-path index follows the picked source)."""
    peer = "10.99.0.1"
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        d.add(src="0.0.0.0", dst=peer, lid=LID, tx=IV, rx=IV)
        d.sync()
        time.sleep(0.5)
        ta = time.monotonic()
        sh("ip", "-n", lab.dev, "route", "add", "10.99.0.0/16", "via", TST)
        wait_until(lambda: [p for _, p in raw.from_(DEV, ta) if p["dst"] == peer] or None, 3.0,
                   "first packet to the peer")
        first = [t for t, p in raw.from_(DEV, ta) if p["dst"] == peer][0]
        assert first - ta <= 2.2, first - ta  # socket within 1 s, then the next slow-start slot
        t = lab.tester(raw, peer, DEV, my=PEER_DISC, tx=IV, rx=IV)
        t.handshake()
        t.start()
        time.sleep(1.5)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local"]) == ("Up", DEV), s


def test_peer_leaving_demand_mode_gets_periodic_packets_again() -> None:
    """A peer that sets D while Up and clears it again: no periodic packets while D is set
    (RFC 5880 6.8.7), periodic packets again at the negotiated rate once it is cleared."""
    with BreakLab() as lab:
        eng = lab.engine()
        _, raw, t = up_session(lab, eng, iv=300000)
        plain = t.send
        demand = [True]
        t.send = lambda **kw: plain(**{**kw, "flags": kw.get("flags", 0) |
                                       (0x02 if demand[0] else 0)})
        time.sleep(1.0)
        tq = time.monotonic()
        time.sleep(1.5)
        assert not [p for _, p in t.from_engine(tq) if not p["F"] and not p["P"]]
        demand[0] = False
        time.sleep(0.5)
        tr = time.monotonic()
        time.sleep(1.5)
        got = [p for _, p in t.from_engine(tr) if not p["F"] and not p["P"]]
        s = eng.sess(eng.stats(), LID)
        assert s["state"] == "Up" and 4 <= len(got) <= 7, (s["state"], len(got))


# Fixed finding (medium), from a make-test ladder run (20261130T005315Z, L1): the peer, frozen
# 101.7 ms by recorded host steal, sent nothing on a 50 ms x3 session for 149.2 ms; the engine,
# clocked by the peer's packets, sent nothing either; the peer woke, the engine's reply went out
# 0.8 ms before the peer's Detection Time ran out, and the peer declared the engine Down anyway.
# Our transmission must not depend on reception (RFC 5880 6.8.7): the sweep now reports a quiet
# peer (BFD_EV_QUIET) after 1.5 of our intervals and userspace sends until the peer speaks.
def test_engine_keeps_sending_while_the_peer_is_silent() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        _, raw, t = up_session(lab, eng)
        t.stop()
        tq = time.monotonic()
        # at most 2.8 s since the peer's last packet: under the 3 s Detection Time, still Up
        time.sleep(1.8)
        sent = [p for _, p in t.from_engine(tq)]
        s = eng.sess(eng.stats(), LID)
        need(s["state"] == "Up", s)
        assert len(sent) >= 1, f"{len(sent)} packets in 1.8 s of peer silence at a 1 s interval"
