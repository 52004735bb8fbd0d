"""The engine's transmission timing against a scripted peer (RFC 5880 6.8.7), on the wire.

The rule: every periodic packet leaves 75-100 % of the interval after the session's previous
non-Final packet (75-90 % with Detect Mult 1), jittered whatever the peer does, and never sooner,
counting what the fast path and userspace send together; only a Final is exempt.

The tester (test_engine_break_lab.Tester) sends at a fixed rate, without jitter, and answers a
Poll with a Final within its 5 ms tick: both faults of issue 8, violation 1 showed against it.
Timestamps are the tester's receive thread's (time.monotonic() in Python), good to a few ms, so
the session runs at 200 ms and the bounds allow TOL_S of timestamp noise.
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

from breaklab import BUILD, BreakLab

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces, XDP"),
    pytest.mark.skipif(not (BUILD / "xdp-bfd").exists() or not (BUILD / "xdp_pass.bpf.o").exists(),
                       reason="build/ missing (make)"),
]

DEV, TST = "10.90.0.1", "10.90.2.1"
LID, PEER_DISC = 0x0A, 0x0B
IV = 200000  # us, both ways, x3
IV_S = IV / 1e6
TOL_S = 0.003


def _non_final_gaps(pkts: list[tuple[float, dict]]) -> list[tuple[float, dict, dict]]:
    """(gap s, previous, packet) between consecutive packets without F (RFC 5880 6.8.7)."""
    nf = [(t, p) for t, p in pkts if not p["F"]]
    return [(b - a, pa, pb) for (a, pa), (b, pb) in zip(nf, nf[1:])]


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
        assert after[0][0] - tp >= 0.75 * IV_S - TOL_S, \
            f"next non-Final {1e3 * (after[0][0] - tp):.2f} ms after our Poll"
        # and nothing early anywhere since Up (the interval is 200 ms from Up on)
        early = [(round(g * 1e3, 2), a["state"], b["state"]) for g, a, b in
                 _non_final_gaps(pkts[polls[0]:]) if g < 0.75 * IV_S - TOL_S]
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
        gaps = [g for g, a, b in _non_final_gaps(pkts) if not (a["P"] or b["P"])]
        assert len(gaps) >= 30, len(gaps)
        # 75-100 % of 200 ms, uniform: a standard deviation of 14.4 ms; the peer's own timing
        # (its 5 ms tick) alone gives a few ms
        sd = statistics.pstdev(gaps)
        assert min(gaps) >= 0.75 * IV_S - TOL_S, sorted(round(g * 1e3, 1) for g in gaps)[:5]
        assert max(gaps) <= IV_S + TOL_S, sorted(round(g * 1e3, 1) for g in gaps)[-5:]
        assert sd >= 0.04 * IV_S, f"gaps' standard deviation {sd * 1e3:.2f} ms: not jittered"
