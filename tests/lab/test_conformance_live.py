"""Conformance cases that need a live session (../shared/docs/conformance.md; the map of every
check and case to its test: docs/conformance.md): frames injected from the tester namespace into
an engine driven by a scripted bfdd, with what comes back read on the wire and from bfdd's side.

The lab is breaklab's (root, namespaces, XDP; 1 s x 3 timers, a Detection Time of 3 s, so a
tester stalled by others' load on this shared machine does not bring a session down). These
tests judge order, state and values; the bound on "at once" is loose, half the 750 ms slow-start
floor, so a reply read within it cannot be a periodic packet. Slow-start gaps (C05) are judged to
75-100 % of 1 s with TS_TOL_S (breaklab) of timestamp noise; the tighter timing cases run at
200 ms in test_engine_jitter.py.
"""

from __future__ import annotations

import time

from breaklab import (
    DETECT_S, DEV, IV, LID, PEER_DISC, PYTESTMARK, SF_IPV6, SF_MULTIHOP, SF_SHUTDOWN,
    STATE_CHANGE, TS_TOL_S, TST, BreakLab, bfd_bytes, need, periodic_gaps, sh, up_session)

pytestmark = PYTESTMARK

DOWN, INIT, UP, ADMIN_DOWN = 1, 2, 3, 0
P, F = 0x20, 0x10
RESTARTED_DISC = 0x0C
AT_ONCE_S = 0.375  # half the slow-start floor: a packet seen within it answers ours


def _first(t, since: float, pred=lambda p: True, timeout_s: float = 2.0):
    """The engine's first packet to the tester after SINCE that PRED accepts: (time, fields)."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        got = [(ts, p) for ts, p in t.from_engine(since) if pred(p)]
        if got:
            return got[0]
        time.sleep(0.02)
    return None


def _changes(d, since_n: int = 0) -> list[tuple[int, int]]:
    """(state, diagnostic) of each BFD_STATE_CHANGE for our session, from the SINCE_N-th on."""
    return [(m["state"], m["diag"]) for m in d.of(STATE_CHANGE, LID)][since_n:]


def _wait_changes(d, since_n: int, want: int, timeout_s: float = 3.0) -> list[tuple[int, int]]:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and len(_changes(d, since_n)) < want:
        time.sleep(0.02)
    return _changes(d, since_n)


def _gaps_at_1s(pkts: list, at_least: int, what: str) -> None:
    """Our periodic packets at 1 s (slow start, RFC 5880 6.8.3, or IV): 0.75-1 s apart (6.8.7),
    at least AT_LEAST gaps of them."""
    gaps = [g for g, _, _ in periodic_gaps(pkts)]
    ms = [round(g * 1e3, 1) for g in gaps]
    assert len(gaps) >= at_least, (what, ms)
    assert all(0.75 - TS_TOL_S <= g <= 1.0 + TS_TOL_S for g in gaps), (what, ms)
    print(f"{what} (ms): {ms}")


def test_r09_trailing_bytes_and_r12_diag31_keep_the_session_up() -> None:
    """R09 (Length 24 inside a 28-byte payload) and R12 (diag 31) are accepted: with only such
    packets for longer than the Detection Time the session stays Up, no Down is counted, and
    the peer's diagnostic 31 is taken (RFC 5880 4.1, 6.8.6)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        base = dict(state=UP, my=PEER_DISC, your=LID, tx=IV, rx=IV, mult=3)
        for row, kw in (("R09", dict(extra=b"\xde\xad\xbe\xef")), ("R12", dict(diag=31))):
            s0 = eng.sess(eng.stats(), LID)
            end = time.monotonic() + DETECT_S + 1.5
            while time.monotonic() < end:
                raw.send(t.frame(bfd_bytes(**{**base, **kw})))
                time.sleep(0.5)
            s1 = eng.sess(eng.stats(), LID)
            assert s1["state"] == "Up", (row, s1)
            assert s1["down_events"] == s0["down_events"], (row, s1)
            assert s1["remote_diag"] == (31 if row == "R12" else 0), (row, s1)
        assert DOWN not in [st for st, _ in _changes(d)]


def test_discarded_packets_never_refresh_detection() -> None:
    """Section 2, check (4) for every discard row at once: after the last valid packet the
    tester sends only R01-R08 and R11 packets, round-robin every 100 ms (each row at least twice
    a Detection Time). S1 still goes Down with diag 1, reported to bfdd, about one Detection
    Time after the last valid packet (RFC 5880 6.8.4, 6.8.6)."""
    rows = [dict(version=0), dict(version=2), dict(length=23), dict(length=30),
            dict(flags=0x04, length=25, extra=b"\x01"), dict(mult=0), dict(flags=0x01),
            dict(your=0x5EED0002), dict(your=0), dict(state=INIT, your=0), dict(flags=P | F)]
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        base = dict(state=UP, my=PEER_DISC, your=LID, tx=IV, rx=IV, mult=3)
        raw.send(t.frame(bfd_bytes(**base)))
        t_last = time.monotonic()
        n0 = len(_changes(d))
        i = 0
        while time.monotonic() < t_last + DETECT_S + 1.5:
            raw.send(t.frame(bfd_bytes(**{**base, **rows[i % len(rows)], "flags":
                                          rows[i % len(rows)].get("flags", 0) | P})))
            i += 1
            time.sleep(0.1)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        assert _changes(d, n0)[:1] == [(DOWN, 0)], _changes(d, n0)
        finals = [p for ts, p in t.from_engine(t_last + 0.05) if p["F"]]
        assert not finals, finals


def test_c01d_poll_while_down_gets_init_final_then_c01b_up_final() -> None:
    """C01d: a Down session gets [Down P1 my=0B your=0]: the engine answers at once with
    [Init F1 your=0B]. C01b: then [Up P1 my=0B your=0A]: the Final carries Up, the state 6.8.6
    moves to before the Poll step (RFC 5880 6.5, 6.8.6, 6.8.7)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV)
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync()
        time.sleep(0.3)
        t0 = time.monotonic()
        t.send(state=DOWN, your=0, flags=P)
        got = _first(t, t0, lambda p: p["F"])
        assert got, "no Final to the Poll of a Down peer"
        ts, p = got
        assert (p["state"], p["your"], p["P"]) == (INIT, PEER_DISC, False), p
        assert ts - t0 < AT_ONCE_S, f"Final {ts - t0:.3f} s after the Poll"
        t1 = time.monotonic()
        t.send(state=UP, your=LID, flags=P)
        got = _first(t, t1, lambda p: p["F"])
        assert got, "no Final to the Poll of an Up peer while Init"
        ts, p = got
        assert (p["state"], p["your"], p["P"]) == (UP, PEER_DISC, False), p
        assert ts - t1 < AT_ONCE_S, f"Final {ts - t1:.3f} s after the Poll"
        assert [st for st, _ in _wait_changes(d, 0, 2)][:2] == [INIT, UP], _changes(d)
        assert eng.sess(eng.stats(), LID)["state"] == "Up"


def test_c06b_restarted_peer_takes_the_session_down_and_up_again() -> None:
    """C06b: the Up peer restarts (source port 50001, My Discriminator 0x0C, Your Discriminator
    0, Down): accepted, found by addresses; Down with diag 3 on that packet, reported; the next
    packet is [Down diag 3 your=0C]; the handshake with 0x0C brings S1 Up again (RFC 5880 6.3,
    6.8.6; RFC 5881 4)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        n0 = len(_changes(d))
        t2 = lab.tester(raw, TST, DEV, my=RESTARTED_DISC, tx=IV, rx=IV, sport=50001)
        t0 = time.monotonic()
        t2.send(state=DOWN, your=0)
        got = _first(t2, t0)
        assert got, "nothing from the engine after the restarted peer's Down"
        assert (got[1]["state"], got[1]["diag"], got[1]["your"]) == (DOWN, 3, RESTARTED_DISC), \
            got[1]
        assert _wait_changes(d, n0, 1)[:1] == [(DOWN, 0)], _changes(d, n0)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"], s["remote_disc"]) == ("Down", 3, RESTARTED_DISC), s
        t2.handshake()
        t2.start()
        up = _wait_changes(d, n0, 3, timeout_s=2 * DETECT_S)
        assert [st for st, _ in up][-1:] == [UP], up
        time.sleep(0.5)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["remote_disc"]) == ("Up", RESTARTED_DISC), s
        assert all(p["your"] == RESTARTED_DISC for _, p in t2.from_engine(time.monotonic() - 0.4))


def test_c10a_received_admin_down_takes_us_down_with_diag_3() -> None:
    """C10a: [AdminDown diag 7] x3 @1000 on an Up session: Down with diag 3 on the first, the next
    packet [Down diag 3 your=0B], bfdd told state Down with remote diagnostic 7; Down, never Init,
    while AdminDown keeps arriving; after a Detection Time of silence Your Discriminator 0
    (RFC 5880 6.8.1, 6.8.6 with errata 5205, 6.8.16)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        n0 = len(_changes(d))
        t0 = time.monotonic()
        for i in range(3):
            t.send(state=ADMIN_DOWN, diag=7)
            if i == 0:
                got = _first(t, t0, timeout_s=1.0)
                assert got, "nothing from the engine after the peer's AdminDown"
                assert (got[1]["state"], got[1]["diag"], got[1]["your"]) == \
                    (DOWN, 3, PEER_DISC), got[1]
            time.sleep(1.0)
        assert _changes(d, n0) == [(DOWN, 7)], _changes(d, n0)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"], s["remote_diag"]) == ("Down", 3, 7), s
        assert {p["state"] for _, p in t.from_engine(t0)} == {DOWN}
        time.sleep(DETECT_S + 1.2)
        last = t.from_engine(time.monotonic() - 1.1)
        need(last, "a slow-start packet in the last 1.1 s")
        # diag stays 3: the reason for the last state change (6.8.1); docs/conformance.md
        assert (last[-1][1]["state"], last[-1][1]["your"], last[-1][1]["diag"]) == (DOWN, 0, 3), \
            last[-1][1]


def test_c13a_peer_down_costs_a_handshake_not_a_timeout() -> None:
    """C13a: [Down diag 1 my=0B your=0A] on an Up session: Down with diag 3 on it; the second
    Down 300 ms later: Init; the peer's Up then brings the session Up, all reported to bfdd in
    that order (RFC 5880 6.8.6)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        n0 = len(_changes(d))
        t0 = time.monotonic()
        t.send(state=DOWN, diag=1)
        got = _first(t, t0, timeout_s=1.0)
        assert got and (got[1]["state"], got[1]["diag"]) == (DOWN, 3), got
        time.sleep(0.3)
        t1 = time.monotonic()
        t.send(state=DOWN, diag=1)
        got = _first(t, t1, timeout_s=1.0)
        assert got and (got[1]["state"], got[1]["your"]) == (INIT, PEER_DISC), got
        t.send(state=UP)
        ch = _wait_changes(d, n0, 3)
        assert [st for st, _ in ch] == [DOWN, INIT, UP], ch
        assert ch[0] == (DOWN, 1), ch  # the remote diagnostic the peer sent
        assert time.monotonic() - t0 < DETECT_S, "recovery took a Detection Time"


def test_c12b_link_down_then_up_recovers_without_action() -> None:
    """C12b: `ip link set dut0 down` for 2 s (more than the 900 ms Detection Time), then up: S1
    goes Down (diag 5 if the engine learns of it, else 1), reported to bfdd, and is Up again with
    no manual action (RFC 5880 6.8.1, 6.8.4; RFC 5881 3)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng, iv=300000)
        n0 = len(_changes(d))
        sh("ip", "-n", lab.dev, "link", "set", "dut0", "down")
        time.sleep(2.0)
        sh("ip", "-n", lab.dev, "link", "set", "dut0", "up")
        down = _wait_changes(d, n0, 1)
        assert down[:1] and down[0][0] == DOWN, down
        s = eng.sess(eng.stats(), LID)
        assert s["down_events"] >= 1 and s["local_diag"] in (1, 5), s
        end = time.monotonic() + 10.0
        while time.monotonic() < end and _changes(d, n0)[-1:] != [(UP, 0)]:
            time.sleep(0.1)
        assert [st for st, _ in _changes(d, n0)][-1:] == [UP], _changes(d, n0)


def test_c14a_shutdown_no_shutdown_then_silence_expires_on_time() -> None:
    """C14a: ADD(flags=SESSION_SHUTDOWN) (detection stops), ADD(flags=0), the handshake to Up,
    then the tester goes silent: Down with diag 1 about one Detection Time after its last packet,
    reported to bfdd, and the program's bpf_timer_start failure counter still 0."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV, flags=SF_SHUTDOWN)
        d.sync(mid=1000)
        got = _first(t, time.monotonic() - 0.5, lambda p: p["state"] == ADMIN_DOWN)
        assert got and got[1]["diag"] == 7, got
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync(mid=1001)
        n0 = len(_changes(d))
        t.handshake()
        t.start()
        end = time.monotonic() + DETECT_S
        while time.monotonic() < end and _changes(d, n0)[-1:] != [(UP, 0)]:
            time.sleep(0.05)  # Init, then Up
        ch = _changes(d, n0)
        need(ch and ch[-1][0] == UP, ch)
        time.sleep(1.5)
        t.stop()
        t_last = time.monotonic()  # its last packet left at most one interval before
        n1 = len(_changes(d))
        ch = _wait_changes(d, n1, 1, timeout_s=2 * DETECT_S)
        t_down = time.monotonic()
        assert ch[:1] == [(DOWN, 0)], ch
        assert DETECT_S - IV / 1e6 - 0.1 <= t_down - t_last <= DETECT_S + 1.0, t_down - t_last
        st = eng.stats()
        s = eng.sess(st, LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        assert st["counters"]["timer_errors"] == 0, st["counters"]


def test_c14e_sessions_before_up_are_keyed_by_addresses() -> None:
    """C14e: two sessions in P0-Down at once, to two tester addresses. A Down with Your
    Discriminator 0 from the second address moves only the second session to Init; the first
    stays Down and keeps sending Your Discriminator 0 (RFC 5880 6.3; RFC 5881 4)."""
    tst2 = "10.90.2.2"
    with BreakLab(tst_addrs=(TST, tst2)) as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        t2 = lab.tester(raw, tst2, DEV, my=0x15, tx=IV, rx=IV)
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
        d.add(src=DEV, dst=tst2, lid=0x14, tx=IV, rx=IV)
        d.sync()
        t0 = time.monotonic()
        t2.send(state=DOWN, your=0)
        got = _first(t2, t0, lambda p: p["state"] == INIT)
        assert got and got[1]["your"] == 0x15 and got[1]["my"] == 0x14, got
        time.sleep(1.2)
        st = eng.stats()
        s1, s2 = eng.sess(st, LID), eng.sess(st, 0x14)
        assert (s1["state"], s1["remote_disc"]) == ("Down", 0), s1
        assert (s2["state"], s2["remote_disc"]) == ("Init", 0x15), s2
        first = [p for _, p in raw.from_(DEV, t0) if p["dst"] == TST]
        assert first and all(p["your"] == 0 and p["state"] == DOWN for p in first), first


def test_c04_required_min_rx_0_stops_periodic_packets() -> None:
    """C04: the peer polls with Required Min RX 0, then keeps sending it for 5 s: exactly one
    packet from us in that time, the Final, and we stay Up (detection runs on its packets). Its
    next Poll with rx 1 s gets a Final at once and periodic packets again (RFC 5880 6.8.7,
    6.8.18)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        t0 = time.monotonic()
        t.send(flags=P, rx=0)
        end = t0 + 5.0
        while time.monotonic() < end:
            time.sleep(0.5)
            t.send(rx=0)
        got = t.from_engine(t0)
        assert [p["F"] for _, p in got] == [True], [(round(ts - t0, 3), p) for ts, p in got]
        assert eng.sess(eng.stats(), LID)["state"] == "Up"
        t1 = time.monotonic()
        t.send(flags=P)
        fin = _first(t, t1, lambda p: p["F"])
        assert fin and fin[0] - t1 < AT_ONCE_S, fin
        t.start()
        time.sleep(3.5)
        periodic = [p for _, p in t.from_engine(t1) if not p["F"]]
        assert len(periodic) >= 3 and all(p["state"] == UP for p in periodic), periodic


def test_c02a_longer_interval_waits_for_the_final() -> None:
    """C02a: while Up at 1 s, ADD(min_tx=2000000); the tester withholds F for 3 s. Our packets
    carry P and tx=2000000 from the change on, the 1 s interval stays in force until the F (no
    gap above 1 s plus slack), then P0 at the 2 s interval: 2 to 4 packets in the next 6 s
    (RFC 5880 6.5, 6.8.3; a 2 s value is accepted, no 1 s ceiling). C02b: then back to 1 s: P
    (tx=1000000) within the 2 s interval, on every packet until the tester's F, none after, and
    gaps 0.75-1 s."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        d.add(src=DEV, dst=TST, lid=LID, tx=2000000, rx=IV)
        d.sync()
        t0 = time.monotonic()
        while time.monotonic() < t0 + 3.0:
            t.send()  # Up, never F
            time.sleep(0.5)
        during = [(ts, p) for ts, p in t.from_engine(t0 + 0.05) if not p["F"]]
        assert len(during) >= 2, during
        assert all(p["P"] and p["tx"] == 2000000 for _, p in during), during
        gaps = [b[0] - a[0] for a, b in zip(during, during[1:])]
        assert max(gaps) <= 1.15, gaps  # the old 1 s interval until the Final
        t1 = time.monotonic()
        t.send(flags=F)
        end = t1 + 6.0
        while time.monotonic() < end:
            time.sleep(0.5)
            t.send()
        after = [p for _, p in t.from_engine(t1 + 0.05) if not p["F"]]
        assert all(not p["P"] and p["tx"] == 2000000 for p in after), after
        assert 2 <= len(after) <= 4, len(after)
        assert eng.sess(eng.stats(), LID)["state"] == "Up"
        # C02b: back to 1 s: a Poll Sequence again, its P no later than the 2 s interval in
        # force allows (the shorter interval may apply at once: not asserted); P until the F,
        # then P0 at 1 s: gaps 0.75-1 s.
        t2 = time.monotonic()
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
        d.sync()
        end = t2 + 3.5
        while time.monotonic() < end:  # Up, every 0.5 s, no F yet: 1.2 s past our first P
            t.send()
            time.sleep(0.5)
            first = next(((ts, p) for ts, p in t.from_engine(t2) if p["P"]), None)
            if first:
                end = min(end, first[0] + 1.2)
        assert first and first[1]["tx"] == IV and first[0] - t2 <= 2.0 + TS_TOL_S, first
        # and never sooner than the new interval allows after our previous packet (6.8.7)
        prev = [ts for ts, p in t.from_engine(t2 - 2.5) if ts < first[0] and not p["F"]]
        assert prev and first[0] - prev[-1] >= 0.75 * IV / 1e6 - TS_TOL_S, \
            (prev[-1:], first)
        print(f"C02b: our first P {1e3 * (first[0] - t2):.1f} ms after the change, "
              f"{1e3 * (first[0] - prev[-1]):.1f} ms after our previous packet")
        polls = [p for _, p in t.from_engine(first[0]) if not p["F"]]
        assert polls and all(p["P"] and p["tx"] == IV for p in polls), polls
        t3 = time.monotonic()
        t.send(flags=F)
        end = t3 + 3.5
        while time.monotonic() < end:
            time.sleep(0.5)
            t.send()
        after = t.from_engine(t3 + 0.05)
        assert after and not any(p["P"] for _, p in after), after
        _gaps_at_1s(after, 2, "C02b: gaps at 1 s after the Final")
        assert eng.sess(eng.stats(), LID)["state"] == "Up"


def test_c10b_shutdown_sends_admin_down_at_the_slow_rate() -> None:
    """C10b: ADD(flags=SESSION_SHUTDOWN) on an Up session: [AdminDown diag 7] at once and then at
    the slow rate for longer than a Detection Time (4 s: 4 to 6 packets), every one of them
    AdminDown diag 7; detection stops: no Down reported although the tester is silent
    (RFC 5880 6.8.16)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        n0 = len(_changes(d))
        t0 = time.monotonic()
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV, flags=SF_SHUTDOWN)
        time.sleep(4.0)
        got = [p for _, p in t.from_engine(t0)]
        assert all((p["state"], p["diag"]) == (ADMIN_DOWN, 7) for p in got), got
        assert 4 <= len(got) <= 6, len(got)
        assert [st for st, _ in _changes(d, n0)] in ([], [ADMIN_DOWN]), _changes(d, n0)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("AdminDown", 7), s


def test_c05_slow_start_while_not_up() -> None:
    """C05: ADD(min_tx=50000, min_rx=50000) with a silent tester: every packet Down with
    tx >= 1 s, 0.75-1 s apart (3 to 6 of them in 3.5 s); Init too advertises tx >= 1 s; at Up
    tx=50000 with P; after the tester goes silent, Down with diag 1, tx >= 1 s and gaps
    0.75-1 s again (RFC 5880 6.8.3, 6.8.7)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV)
        d.add(src=DEV, dst=TST, lid=LID, tx=50000, rx=50000)
        d.sync()
        t0 = time.monotonic()
        time.sleep(3.5)
        down = t.from_engine(t0)
        assert 3 <= len(down) <= 6, len(down)
        assert all(p["state"] == DOWN and p["tx"] >= 1000000 for _, p in down), down
        _gaps_at_1s(down, 2, "C05: slow-start gaps while Down")
        t1 = time.monotonic()
        t.handshake()
        t.start()
        time.sleep(1.5)
        seen = [p for _, p in t.from_engine(t1)]
        inits = [p for p in seen if p["state"] == INIT]
        ups = [p for p in seen if p["state"] == UP and not p["F"]]
        assert all(p["tx"] >= 1000000 for p in inits), inits
        assert ups and ups[0]["tx"] == 50000 and ups[0]["P"], ups[:2]
        t.stop()
        t2 = time.monotonic()
        time.sleep(DETECT_S + 2.5)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        late = t.from_engine(t2 + DETECT_S + 0.3)
        assert late and all(p["state"] == DOWN and p["tx"] >= 1000000 for _, p in late), late
        _gaps_at_1s(late, 1, "C05: slow-start gaps Down again")


def test_c01c_our_poll_stays_open_and_their_poll_gets_a_plain_final() -> None:
    """C01c: while Up, ADD(min_rx=500000) opens our Poll Sequence; the tester withholds F and
    polls itself: it gets [F1 P0] at once; our periodic packets keep P until its F, none after;
    no packet ever carries P and F together (RFC 5880 6.5)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        t0 = time.monotonic()
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=500000)
        d.sync()
        first = _first(t, t0, lambda p: p["P"])
        assert first and first[1]["rx"] == 500000, first
        t1 = time.monotonic()
        t.send(flags=P)
        fin = _first(t, t1, lambda p: p["F"])
        assert fin and not fin[1]["P"] and fin[0] - t1 < AT_ONCE_S, fin
        end = time.monotonic() + 2.5
        while time.monotonic() < end:
            t.send()
            time.sleep(0.5)
        mid = [p for _, p in t.from_engine(fin[0] + 0.01) if not p["F"]]
        assert mid and all(p["P"] for p in mid), mid
        t2 = time.monotonic()
        t.send(flags=F)
        end = t2 + 3.0
        while time.monotonic() < end:
            time.sleep(0.5)
            t.send()
        after = [p for _, p in t.from_engine(t2 + 0.05)]
        assert after and not any(p["P"] for p in after), after
        assert not any(p["P"] and p["F"] for _, p in t.from_engine(t0))
        assert eng.sess(eng.stats(), LID)["state"] == "Up"


def test_c02c_smaller_required_min_rx_waits_for_the_final_for_detection() -> None:
    """C02c: Up at 1 s, the tester advertising tx=100000 (it still sends every 0.5 s). ADD
    (min_rx=300000): the tester withholds F, sends for 1 s more, then stops. Detection keeps the
    old Required Min RX until the Poll Sequence ends: Down (diag 1) about 3 s after its last
    packet (3 x max(1 s, 100 ms)), not 0.9 s (RFC 5880 6.8.3)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            t.send(tx=100000)
            time.sleep(0.5)
        n0 = len(_changes(d))
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=300000)
        d.sync()
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            t.send(tx=100000)  # Up, never F
            time.sleep(0.5)
        t.send(tx=100000)
        t_last = time.monotonic()
        ch = _wait_changes(d, n0, 1, timeout_s=2 * DETECT_S)
        t_down = time.monotonic()
        assert ch[:1] == [(DOWN, 0)], ch
        assert t_down - t_last >= DETECT_S - 0.5, f"Down {t_down - t_last:.2f} s after the last"
        assert eng.sess(eng.stats(), LID)["local_diag"] == 1


LL_DEV, LL_TST = "fe80::1", "fe80::2"


def test_c07a_hop_type_and_c07c_interface_choose_the_session() -> None:
    """C07 setup, all Up at 1 s x 3: S1 (lid 10) single hop and S2 (lid 20) multihop between the
    same addresses; S4 (lid 40) fe80::1 <-> fe80::2 on dut0 and S5 (lid 50) the same pair on a
    second link, dut1 (to tst1). C07a: [Down my=0D your=0] to 3784 takes only S1 Down (diag 3,
    the next packet says your=0D); S2 stays Up. C07c: [Down my=0F your=0] arriving on dut1 takes
    only S5 Down; S4 stays Up; S4's packets come out of dut0 only and S5's out of dut1 only
    (RFC 5880 6.3, 6.8.6; RFC 5881 3, 4; RFC 5883 5)."""
    with BreakLab() as lab:
        lab.link("dut1", "tst1", f"{LL_DEV}/64", f"{LL_TST}/64", xdp_pass=True)
        sh("ip", "-n", lab.dev, "addr", "add", f"{LL_DEV}/64", "dev", "dut0", "nodad")
        sh("ip", "-n", lab.tst, "addr", "add", f"{LL_TST}/64", "dev", "tst0", "nodad")
        eng = lab.engine()  # --kernel-tx dut0; dut1 is attached when S5 names it
        d = lab.dp()
        raw0, raw1 = lab.raw(), lab.raw(iface="tst1")
        link1 = dict(smac=lab.mac(lab.tst, "tst1"), dmac=lab.mac(lab.dev, "dut1"))
        ll = dict(src=LL_DEV, dst=LL_TST, flags=SF_IPV6)
        sessions = {  # lid: (its tester, the rest of its ADD); tester discriminator lid + 1
            10: (lab.tester(raw0, TST, DEV, my=11, tx=IV, rx=IV), dict(src=DEV, dst=TST)),
            20: (lab.tester(raw0, TST, DEV, my=21, tx=IV, rx=IV, dport=4784),
                 dict(src=DEV, dst=TST, flags=SF_MULTIHOP, ttl=254)),
            40: (lab.tester(raw0, LL_TST, LL_DEV, my=41, tx=IV, rx=IV),
                 dict(ll, ifindex=lab.ifindex(lab.dev, "dut0"), ifname=b"dut0")),
            50: (lab.tester(raw1, LL_TST, LL_DEV, my=51, tx=IV, rx=IV, **link1),
                 dict(ll, ifindex=lab.ifindex(lab.dev, "dut1"), ifname=b"dut1")),
        }
        for lid, (_, kw) in sessions.items():
            d.add(lid=lid, tx=IV, rx=IV, **kw)
        d.sync()
        t0 = time.monotonic()
        for t, _ in sessions.values():
            t.handshake()
            t.start()
        time.sleep(1.5)  # past the Poll Sequences that leave slow start
        st = eng.stats()
        up = {lid: eng.sess(st, lid) for lid in sessions}
        need(all(s and s["state"] == "Up" and s["fast_path"] for s in up.values()), up)
        n0 = {lid: len(d.of(STATE_CHANGE, lid)) for lid in sessions}

        for lid, my, raw, kw in ((10, 0x0D, raw0, {}), (50, 0x0F, raw1, link1)):
            sessions[lid][0].stop()
            t = sessions[lid][0]
            tq = time.monotonic()
            lab.tester(raw, t.saddr, t.daddr, my=my, **kw).send(state=DOWN, your=0)
            got = _first(t, tq)
            assert got and (got[1]["state"], got[1]["diag"], got[1]["your"]) == (DOWN, 3, my), \
                (lid, got)
        time.sleep(1.5)  # S2 and S4 keep being served, their testers keep talking
        st = eng.stats()
        s = {lid: eng.sess(st, lid) for lid in sessions}
        assert (s[10]["state"], s[10]["local_diag"], s[10]["remote_disc"]) == ("Down", 3, 0x0D)
        assert (s[50]["state"], s[50]["local_diag"], s[50]["remote_disc"]) == ("Down", 3, 0x0F)
        for lid, peer in ((20, 21), (40, 41)):
            assert (s[lid]["state"], s[lid]["remote_disc"], s[lid]["down_events"]) == \
                ("Up", peer, 0), s[lid]
            assert len(d.of(STATE_CHANGE, lid)) == n0[lid], d.of(STATE_CHANGE, lid)
        for lid in (10, 50):
            assert [m["state"] for m in d.of(STATE_CHANGE, lid)[n0[lid]:]] == [DOWN], lid
        assert (s[40]["ifname"], s[50]["ifname"], s[20]["multihop"]) == ("dut0", "dut1", True)
        # which link each link-local session's packets left by: what each tester link received
        on0 = {p["my"] for _, p in raw0.from_(LL_DEV, t0)}
        on1 = {p["my"] for _, p in raw1.from_(LL_DEV, t0)}
        assert (on0, on1) == ({40}, {50}), (on0, on1)
        # the single-hop and multihop sessions' packets went to their own ports
        ports = {(p["my"], p["dport"]) for _, p in raw0.from_(DEV, t0)}
        assert ports == {(10, 3784), (20, 4784)}, ports
