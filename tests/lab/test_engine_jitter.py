"""The engine's transmission timing against a scripted peer (RFC 5880 6.8.7), on the wire.

The rule: every periodic packet leaves 75-100 % of the interval after the session's previous
non-Final packet (75-90 % with Detect Mult 1), jittered whatever the peer does, and never sooner,
counting what the fast path and userspace send together; only a Final is exempt.

The tester (breaklab.Tester) sends at a fixed rate, without jitter, and answers a Poll with a
Final within its 5 ms tick: both faults of issue 8, violation 1 showed against it. Timestamps are
the tester's receive thread's (time.monotonic() in Python), good to a few ms, so the session runs
at 200 ms and the bounds allow TS_TOL_S (breaklab) of timestamp noise.

The conformance cases these hold (../shared/docs/conformance.md; the map: docs/conformance.md):
C13b (a peer at a fixed rate), then, on the same Up session, C01a (the peer's Poll with a larger
Required Min RX), C03a (larger still), C03b and C03c (a smaller one honoured at once; a peer
slowed to one packet a second does not clock us).
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

from breaklab import BUILD, TS_TOL_S, BreakLab, periodic_gaps

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces, XDP"),
    pytest.mark.skipif(not (BUILD / "xdp-bfd").exists() or not (BUILD / "xdp_pass.bpf.o").exists(),
                       reason="build/ missing (make)"),
]

DEV, TST = "10.90.0.1", "10.90.2.1"
LID, PEER_DISC = 0x0A, 0x0B
IV = 200000  # us, both ways, x3
IV_S = IV / 1e6
P = 0x20
FINAL_S = 0.005  # C01a: the Final within 5 ms of the Poll (the program answers in microseconds)


def _up(lab: BreakLab):
    eng = lab.engine()
    d = lab.dp()
    raw = lab.raw()
    t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV)
    t0 = time.monotonic()
    d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
    t.handshake()
    t.start()
    return eng, t, t0


def _peer_polls(t, **fields: int) -> float:
    """The tester takes FIELDS (rx, tx: us) from now on and polls with them at once (RFC 5880
    6.5); returns the time just before its Poll left."""
    for k, v in fields.items():
        setattr(t, k, v)  # the tester's loop sends them too from now on
    t0 = time.monotonic()
    t.send(flags=P)
    return t0


def _after_peer_poll(t, t0: float, t_end: float, old_s: float, new_s: float) -> dict:
    """What the engine sent between the peer's Poll at T0 and T_END, judged: exactly one Final,
    within FINAL_S of the Poll (RFC 5880 6.5: at once, off the schedule), no Poll of ours, and
    every periodic packet after it on the new interval NEW_S: gaps 75-100 % of it (6.8.7).
    The gap across the change (our last periodic packet before the Poll to the first after) lies
    between 75 % of the shorter interval and the longer one: no extra packet for the Poll, none
    withheld beyond the new interval. Returns the figures."""
    before = [(ts, p) for ts, p in t.from_engine(t0 - 2 * max(old_s, new_s))
              if ts < t0 and not p["F"]]
    pkts = [(ts, p) for ts, p in t.from_engine(t0) if ts < t_end]
    finals = [ts for ts, p in pkts if p["F"]]
    assert len(finals) == 1, [(round(1e3 * (ts - t0), 2), p) for ts, p in pkts if p["F"]]
    fin_s = finals[0] - t0
    assert fin_s <= FINAL_S + TS_TOL_S, f"Final {1e3 * fin_s:.2f} ms after the Poll"
    assert not any(p["P"] for _, p in pkts), "a Poll of ours: the peer's Poll needs only a Final"
    periodic = [(ts, p) for ts, p in pkts if not p["F"]]
    assert before and periodic, (before[-1:], periodic[:1])
    across = periodic[0][0] - before[-1][0]
    assert 0.75 * min(old_s, new_s) - TS_TOL_S <= across <= max(old_s, new_s) + TS_TOL_S, \
        f"{1e3 * across:.1f} ms across the change"
    gaps = [g for g, _, _ in periodic_gaps(periodic)]
    want = int((t_end - t0) / new_s) - 2  # the first after the Final may take a whole interval
    assert len(gaps) >= want, (len(gaps), want)
    ms = sorted(round(g * 1e3, 1) for g in gaps)
    assert 0.75 * new_s - TS_TOL_S <= min(gaps) and max(gaps) <= new_s + TS_TOL_S, ms
    return dict(final_ms=round(1e3 * fin_s, 2), across_ms=round(1e3 * across, 1),
                gaps=len(gaps), gap_ms=(ms[0], ms[-1]),
                first_ms=round(1e3 * (periodic[0][0] - t0), 1))


# Fixed finding (issue 8, violation 1): coming Up, the engine sends a Poll (leaving slow start)
# from userspace; the peer's Final came back within milliseconds and the fast path, whose own
# last reply was long ago, answered it at once: a periodic packet 20-100 us after the Poll. Both
# now claim one transmit clock per session (bfd_session_tx), a Final claiming nothing.
def test_no_periodic_packet_right_after_our_poll() -> None:
    with BreakLab() as lab:
        eng, t, t0 = _up(lab)
        time.sleep(2.0)
        pkts = t.from_engine(t0)
        s = eng.sess(eng.stats(), LID)
        assert s and s["state"] == "Up", s
        polls = [i for i, (_, p) in enumerate(pkts) if p["P"] and p["state"] == 3]
        assert polls, "the engine sent no Poll on coming Up"
        tp = pkts[polls[0]][0]
        after = [(ts, p) for ts, p in pkts[polls[0] + 1:] if not p["F"]]
        assert after, "no packet after the Poll"
        assert after[0][0] - tp >= 0.75 * IV_S - TS_TOL_S, \
            f"next non-Final {1e3 * (after[0][0] - tp):.2f} ms after our Poll"
        # and nothing early anywhere since Up (the interval is 200 ms from Up on)
        early = [(round(g * 1e3, 2), a["state"], b["state"]) for g, a, b in
                 periodic_gaps(pkts[polls[0]:]) if g < 0.75 * IV_S - TS_TOL_S]
        assert not early, early


# Fixed finding (issue 8, violation 1): against a peer sending at a fixed rate, the fast path
# answered each of its packets, so the engine's packets carried the peer's timing: no jitter.
# The program now judges a peer whose 32 gaps while Up spread less than 1/8 of its interval
# steady and hands the session to userspace's jittered timer (BPF_PROG_TEST_RUN: test_jitter).
def test_fixed_rate_peer_gets_jittered_packets() -> None:
    with BreakLab() as lab:
        eng, t, _ = _up(lab)
        time.sleep(1.5 + 34 * IV_S)  # the Poll Sequence, then 32 peer gaps to judge it by
        tq = time.monotonic()
        time.sleep(40 * IV_S)
        pkts = t.from_engine(tq)
        s = eng.sess(eng.stats(), LID)
        assert s and s["state"] == "Up", s
        gaps = [g for g, a, b in periodic_gaps(pkts) if not (a["P"] or b["P"])]
        assert len(gaps) >= 30, len(gaps)
        # 75-100 % of 200 ms, uniform: a standard deviation of 14.4 ms; the peer's own timing
        # (its 5 ms tick) alone gives a few ms
        sd = statistics.pstdev(gaps)
        assert min(gaps) >= 0.75 * IV_S - TS_TOL_S, sorted(round(g * 1e3, 1) for g in gaps)[:5]
        assert max(gaps) <= IV_S + TS_TOL_S, sorted(round(g * 1e3, 1) for g in gaps)[-5:]
        assert sd >= 0.04 * IV_S, f"gaps' standard deviation {sd * 1e3:.2f} ms: not jittered"
        print(f"C13b: {len(gaps)} gaps {1e3 * min(gaps):.1f}-{1e3 * max(gaps):.1f} ms, "
              f"sd {1e3 * sd:.2f} ms")
        # C01a: the peer polls with Required Min RX 600 ms: one Final at once, then 450..600 ms.
        t1 = _peer_polls(t, rx=600000)
        time.sleep(4.0)
        t2 = _peer_polls(t, rx=1000000)
        print("C01a:", _after_peer_poll(t, t1, t2, IV_S, 0.6))
        # C03a: 1 s now: gaps 750..1000 ms.
        time.sleep(5.0)
        # C03b: back to 200 ms, honoured at once (the next packet within 200 ms of the Poll);
        # C03c: the peer slows to one packet a second (tx 1 s): ours stay at 150..200 ms, not
        # one per packet of its, and the session stays Up (our Detection Time 3 x 1 s).
        t3 = _peer_polls(t, rx=IV, tx=1000000)
        print("C03a:", _after_peer_poll(t, t2, t3, 0.6, 1.0))
        time.sleep(0.5)
        s0 = eng.sess(eng.stats(), LID)
        time.sleep(2.5)
        t4 = time.monotonic()
        s = eng.sess(eng.stats(), LID)
        c03 = _after_peer_poll(t, t3, t4, 1.0, IV_S)
        print("C03b, C03c:", c03, "peer packets in 2.5 s:", s["rx_packets"] - s0["rx_packets"])
        assert c03["first_ms"] <= 1e3 * (IV_S + TS_TOL_S), c03
        assert s["rx_packets"] - s0["rx_packets"] <= 4, "the peer did not slow to one a second"
        assert (s["state"], s["down_events"], s["detect_time_us"]) == ("Up", 0, 3000000), s
