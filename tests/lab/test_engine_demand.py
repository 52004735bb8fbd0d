"""Demand mode we ask for (RFC 5880 6.6, issue 8 item 7), live: the engine under the device's
bfdd with `--demand PEER --demand-poll-us 1500000`, build/bfdpeer as the peer asking for Demand
mode too (session list key `demand`; its Polls every 1 s, the default), both linking the same
engine/fsm.c. One IPv4 session at 300 ms x 3 (Detection Time 0.9 s). FRR 8.4.4 and BIRD 2
cannot ask for Demand mode, hence bfdpeer.

- Once Up, no periodic packets either way (6.8.7): on the wire only Poll Sequences and their
  Finals; every packet of ours carries D; our Polls begin 1.5 s apart (--demand-poll-us), each
  answered by the peer's Final; the peer's Polls (1 s) get our Finals.
- The peer killed (SIGKILL: no AdminDown, no packet at all): we go Down with diag 1 within one
  poll period plus one Detection Time (2.4 s) of its last packet (6.8.4).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from lab import topo as topo_mod
from lab import util
from enginelab import engine_lab
from test_engine_ends import DEV, PEER, UP, Wire, ours, theirs

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP and FRR daemons")

POLL_S = 1.5
DETECT_S = 0.9
TOPO = topo_mod.parse(f"""
[topology]
name = "demand"
prefix_len = 16
[peer]
first_address = "{PEER}"
kind = "bfdpeer"
[[device]]
name = "engine"
kind = "engine"
first_address = "{DEV}"
engine_args = "--demand-poll-us {int(POLL_S * 1e6)}"
[[class]]
name = "demand"
interval_ms = 300
detect_mult = 3
count = 1
demand = "both"
""", "test_engine_demand")


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "bfdpeer", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-demand") as lab:
        yield lab


def sess(lab) -> dict:
    return lab.engines["engine"].stats()["sessions"][0]


def test_demand_session_sends_only_polls_and_finals(lab) -> None:
    util.wait_until(lambda: (s := sess(lab))["state"] == "Up" and s["state_age_ms"] > 3000
                    or None, 15, "Up for 3 s")
    with Wire(lab, "demand") as w:
        time.sleep(7.0)
    s = sess(lab)
    mine, peer = ours(w.pkts), theirs(w.pkts)
    periodic = [p for p in mine + peer if not p["P"] and not p["F"]]
    starts = [p["t"] for i, p in enumerate(mine) if p["P"] and (i == 0 or not mine[i - 1]["P"])]
    answered = [min((q["t"] for q in peer if q["F"] and q["t"] >= t), default=None) for t in starts]
    peer_polls = [p for p in peer if p["P"]]
    our_finals = [p for p in mine if p["F"]]
    spacing = [b - a for a, b in zip(starts, starts[1:])]
    print(f"7 s in Demand mode: ours {len(mine)} ({len([p for p in mine if p['P']])} P, "
          f"{len(our_finals)} F), the peer's {len(peer)} ({len(peer_polls)} P); periodic "
          f"{len(periodic)}; our Polls begin {[round(x, 3) for x in spacing]} s apart, Final "
          f"after {[round((a - t) * 1e3, 2) for a, t in zip(answered, starts) if a]} ms; "
          f"engine: demand {s['demand']}, detect_time_us {s['detect_time_us']}")
    assert s["state"] == "Up" and s["demand"] and s["detect_time_us"] == 0, s
    assert not periodic, periodic[:4]
    assert all(p["state"] == UP and p["D"] for p in mine), [p for p in mine if not p["D"]][:2]
    assert len(starts) >= 4
    assert all(POLL_S - 0.01 <= x <= POLL_S + 0.1 for x in spacing), spacing
    assert all(a is not None and a - t < DETECT_S for a, t in zip(answered, starts))
    assert len(peer_polls) >= 5
    assert all(any(0 <= f["t"] - q["t"] < 0.1 for f in our_finals) for q in peer_polls)


def test_peer_killed_is_down_within_poll_plus_detection(lab) -> None:
    util.wait_until(lambda: sess(lab)["state"] == "Up" or None, 15, "Up")
    with Wire(lab, "demand-kill") as w:
        time.sleep(0.5)
        os.kill(lab.peer.pid, signal.SIGKILL)
        t_kill = time.time()
        util.wait_until(lambda: sess(lab)["state"] == "Down" or None, 6, "Down")
        s = sess(lab)
        down_at = time.time() - s["state_age_ms"] / 1e3
        time.sleep(0.5)
    last_peer = max(p["t"] for p in theirs(w.pkts))
    polls_after = [p["t"] for p in ours(w.pkts) if p["P"] and p["t"] > last_peer]
    print(f"peer killed: Down diag {s['local_diag']} {down_at - t_kill:.3f} s after the kill, "
          f"{down_at - last_peer:.3f} s after its last packet; our unanswered P at "
          f"{[round(t - last_peer, 3) for t in polls_after]} s")
    assert s["local_diag"] == 1, s
    assert down_at - last_peer <= POLL_S + DETECT_S + 0.1
    assert polls_after and abs(down_at - polls_after[0] - DETECT_S) < 0.1
