"""Break tests of the engine, which path serves a session: packets the program discards or passes
up, sessions fed through the stack, VLANs, ring-buffer events, moves between the fast and the
software path (root, namespaces, XDP).

The lab each test builds, and the two kinds of tests (guards, fixed findings): breaklab.py.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from breaklab import (
    DETECT_S, DEV, IV, LID, PEER_DISC, PYTESTMARK, SF_MULTIHOP, STATE_CHANGE, TST, BreakLab,
    bfd_bytes, frame4, lines, need, sh, up_session)

pytestmark = PYTESTMARK


DISCARDS = [  # (name, bfd_bytes overrides, frame overrides, reason)
    ("version 0", dict(version=0), {}, "bad_version"),
    ("version 2", dict(version=2), {}, "bad_version"),
    ("Length 23", dict(length=23), {}, "bad_length"),
    ("Length 30 in 24", dict(length=30), {}, "length_gt_payload"),
    ("Detect Mult 0", dict(mult=0), {}, "zero_mult"),
    ("M bit", dict(flags=0x01), {}, "multipoint"),
    ("My Discriminator 0", dict(my=0), {}, "zero_my_disc"),
    ("unknown Your Discriminator, P", dict(your=0x5EED0002, flags=0x20), {}, "unknown_your_disc"),
    ("Your Discriminator 0, Up, P", dict(your=0, flags=0x20), {}, "zero_your_disc"),
    ("Your Discriminator 0, Init", dict(your=0, state=2), {}, "zero_your_disc"),
    ("Poll and Final", dict(flags=0x30), {}, "poll_and_final"),
    ("A bit, Length 26", dict(flags=0x24, length=26, extra=b"\1\2"), {}, "auth_mismatch"),
    ("TTL 254, P", dict(flags=0x20), dict(ttl=254), "ttl"),
    ("multihop port, single-hop session", dict(flags=0x20), dict(dport=4784), "demux_mismatch"),
]


def test_discards_counted_by_reason_and_never_answered() -> None:
    """RFC 5880 6.8.6 / 5881 5 violations on a live Up session, 20 of each: each counted under
    its reason, none accepted, no Final for the ones with P, the session untouched."""
    with BreakLab() as lab:
        eng = lab.engine()
        _, raw, t = up_session(lab, eng)
        base = dict(state=3, my=PEER_DISC, your=LID, tx=IV, rx=IV, mult=3)
        for name, kw, fkw, reason in DISCARDS:
            st0 = eng.stats()
            s0 = eng.sess(st0, LID)
            tq = time.monotonic()
            for _ in range(20):
                raw.send(t.frame(bfd_bytes(**{**base, **kw}), **fkw))
                time.sleep(0.01)
            time.sleep(0.2)
            st1 = eng.stats()
            s1 = eng.sess(st1, LID)
            assert st1["drops"][reason] - st0["drops"][reason] == 20, name
            others = {k: v - st0["drops"][k] for k, v in st1["drops"].items()
                      if k != reason and v != st0["drops"][k]}
            assert not others, (name, others)
            assert not any(p["F"] for _, p in t.from_engine(tq)), name
            assert (s1["state"], s1["down_events"], s1["remote_diag"]) == \
                (s0["state"], s0["down_events"], s0["remote_diag"]), name


# Fixed finding (high): a fast-path session brought Up by packets the XDP program passes to the
# stack (here IPv4 with a Router Alert option; also IPv4 fragments) is run by the software path
# (engine_rx_packet never checks fast_path). Once Up it is never declared Down: the sweep skips a
# slot whose last_rx_ns (0) equals reported_rx_ns (0), sw_detect skips fast-path sessions. Still
# Up and reported Up 5 s after the peer's last packet (Detection Time 0.9 s); the engine also
# sends nothing while Up (rx_clocked).
def test_session_up_through_the_stack_is_still_detected() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV, ip_opts=b"\x94\x04\x00\x00")
        d.add(src=DEV, dst=TST, lid=LID, tx=IV, rx=IV)
        t.handshake()
        t.start()
        time.sleep(2.0)
        s = eng.sess(eng.stats(), LID)
        need(s["state"] == "Up" and s["sw_rx_packets"] > 0 and s["xdp_rx_packets"] == 0, s)
        t.stop()
        time.sleep(2 * DETECT_S)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        assert [m["state"] for m in d.of(STATE_CHANGE, LID)][-1] == 1


# Fixed finding (high, realistic form of the one above): a multihop session sourced from a
# loopback address (the usual multihop deployment); the engine attaches XDP to lo in generic mode
# (iface_of_addr) and marks the session fast path, but the peer's packets arrive on dut1, which
# has no program. The session comes Up on the software path and is then never declared Down and
# never transmits: Up 5 s after the peer went silent.
def test_multihop_loopback_source_foreign_ingress_is_detected() -> None:
    with BreakLab() as lab:
        lab.link("dut1", "tst1", "10.91.0.1/16", "10.91.2.1/16")
        sh("ip", "-n", lab.dev, "addr", "add", "10.255.0.1/32", "dev", "lo")
        sh("ip", "-n", lab.tst, "route", "add", "10.255.0.1/32", "via", "10.91.0.1")
        eng = lab.engine()  # --kernel-tx dut0 only
        d = lab.dp()
        raw1 = lab.raw(iface="tst1")
        t = lab.tester(raw1, "10.91.2.1", "10.255.0.1", my=PEER_DISC,
                       smac=lab.mac(lab.tst, "tst1"), dmac=lab.mac(lab.dev, "dut1"),
                       tx=IV, rx=IV, dport=4784, ttl=253)
        d.add(src="10.255.0.1", dst="10.91.2.1", lid=LID, flags=SF_MULTIHOP, ttl=250, tx=IV,
              rx=IV)
        t.handshake()
        t.start()
        time.sleep(2.0)
        need(eng.sess(eng.stats(), LID)["state"] == "Up", "multihop session Up")
        t.stop()
        tq = time.monotonic()
        time.sleep(2 * DETECT_S)
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        assert t.from_engine(tq), "the engine sent nothing after the peer went silent"


# The VLAN is not part of the demux when the tag travels out of band (rx-vlan-offload on a NIC;
# here the wire's bridge untags and its veth, with tx-vlan-offload, hands the tag over in skb
# metadata): the program cannot read it without a device-bound VLAN kfunc, so frames tagged for
# another VLAN look untagged and would keep an untagged session Up. The engine warns when it
# attaches; with the offload off the tag arrives in the frame, the program leaves it to the
# stack, which has no dut0.100 and drops it (docs/engine.md).
def test_vlan_tagged_frames_do_not_keep_an_untagged_session_up() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        assert any("dut0 has rx-vlan-offload on" in ln for ln in lines(eng, 0)), eng.log()
        sh("ip", "netns", "exec", lab.wire, "ethtool", "-K", "to-dev", "txvlan", "off")
        _, raw, t = up_session(lab, eng)
        t.stop()
        base = dict(state=3, my=PEER_DISC, your=LID, tx=IV, rx=IV, mult=3)
        end = time.monotonic() + 2 * DETECT_S
        while time.monotonic() < end:
            raw.send(t.frame(bfd_bytes(**base), vlans=((0x8100, 100),)))
            time.sleep(0.3)  # more often than the 1 s the session expects
        s = eng.sess(eng.stats(), LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), s
        assert eng.stats()["counters"]["pass_non_bfd"] >= 15  # the tagged frames, left alone


# Fixed finding (low): with --pass-unowned a packet for an unknown Your Discriminator is counted
# by the program, handed to the stack, read by the software path's socket and counted again:
# drops.unknown_your_disc grows by 2 per packet (docs/engine.md: drops are the fast path's and the
# software path's together).
def test_pass_unowned_counts_each_packet_once() -> None:
    with BreakLab() as lab:
        eng = lab.engine("--pass-unowned")
        _, raw, t = up_session(lab, eng)
        st0 = eng.stats()
        for _ in range(10):
            raw.send(t.frame(bfd_bytes(state=3, my=PEER_DISC, your=0x5EED0002)))
            time.sleep(0.02)
        time.sleep(0.3)
        st1 = eng.stats()
        assert st1["counters"]["pass_unowned"] - st0["counters"]["pass_unowned"] == 10
        assert st1["drops"]["unknown_your_disc"] - st0["drops"]["unknown_your_disc"] == 10


# Fixed finding (high): an expiry the sweep cannot post because the ring buffer is full is lost
# for good: sweep_one() records reported_rx_ns and sets the expired hold before
# bpf_ringbuf_reserve(), so when the reserve fails (event_lost) no later sweep posts it again. The
# program then answers nothing for the session (expired hold), while the engine keeps it Up and
# bfdd is never told: Up 8 s after the peer's last packet (Detection Time 0.9 s). Here the ring
# fills while the engine is stopped for 1.5 s, as a loop starved by real-time load is; 6,000
# changing packets in about 20 ms fill it.
def test_expiry_lost_to_a_full_ring_buffer_is_still_acted_on() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng, iv=300000)
        t.stop()
        os.kill(eng.pid, signal.SIGSTOP)
        try:
            frames = [t.frame(bfd_bytes(state=3, my=PEER_DISC, your=LID, tx=300000,
                                        rx=300000, diag=i + 1)) for i in range(2)]
            for i in range(6000):  # each differs from the last: each is posted
                raw.send(frames[i % 2])
            time.sleep(1.5)  # the session's Detection Time (0.9 s) passes with the ring full
        finally:
            os.kill(eng.pid, signal.SIGCONT)
        time.sleep(4.0)
        st = eng.stats()
        need(st["counters"]["event_lost"] > 0, st["counters"])
        s = eng.sess(st, LID)
        assert (s["state"], s["local_diag"]) == ("Down", 1), (s, st["counters"])
        assert [m["state"] for m in d.of(STATE_CHANGE, LID)][-1] == 1


# Fixed findings (low-medium): a ring-buffer event was applied to whatever session held its slot
# when the engine read it. bfdd replaces session A by B (DELETE A, ADD B: same slot) while the
# engine is busy; A's peer's Down (Your Discriminator 0, still matched by the program) was read
# after the ADD and taken as B's: B went Init with A's peer's discriminator (0xAAAA) and reported
# it to bfdd. First with B under a new lid; then (fixed in c94ff4b, when events named the slot's
# My Discriminator) with bfdd reusing A's lid for B, which only the session's incarnation tells
# apart.
@pytest.mark.parametrize("lid_b", [0xB1, 0xA1], ids=["new_lid", "same_lid"])
def test_event_for_a_replaced_session_is_not_applied_to_its_successor(lid_b: int) -> None:
    with BreakLab(tst_addrs=(TST, "10.90.2.2")) as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        d.add(src=DEV, dst=TST, lid=0xA1)
        d.sync()
        os.kill(eng.pid, signal.SIGSTOP)
        try:
            d.delete(src=DEV, dst=TST, lid=0xA1)
            d.add(src=DEV, dst="10.90.2.2", lid=lid_b)
            time.sleep(0.1)  # the messages are in the socket before the packet is in the ring
            raw.send(frame4(lab.tst_mac, lab.dev_mac, TST, DEV, bfd_bytes(state=1, my=0xAAAA)))
            time.sleep(0.1)
        finally:
            os.kill(eng.pid, signal.SIGCONT)
        time.sleep(0.5)
        st = eng.stats()
        s = eng.sess(st, lid_b)
        need(s["peer"] == "10.90.2.2", s)
        assert (s["state"], s["remote_disc"]) == ("Down", 0), (s, st["engine"])


# Fixed finding (high): a session moved to the software path by a few frames the program passes up
# (IPv4 options) never comes back when the peer returns to plain frames identical to the ones the
# program saw before: the program posts only packets that differ from the last it recorded, so no
# event moves the session back; it answers them in place, but the software path's detection (last
# arrival it saw) declares the session Down while the peer is sending.
def test_session_returns_to_the_fast_path_on_unchanged_packets() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        ra = dict(state=3, my=PEER_DISC, your=LID, tx=IV, rx=IV, mult=3)
        for _ in range(3):
            raw.send(t.frame(bfd_bytes(**ra), ip_opts=b"\x94\x04\x00\x00"))
            time.sleep(0.3)
        s = eng.sess(eng.stats(), LID)
        need(s["state"] == "Up" and not s["fast_path"], s)
        n0 = len(d.of(STATE_CHANGE, LID))
        end = time.monotonic() + 2 * DETECT_S
        while time.monotonic() < end:
            raw.send(t.frame(bfd_bytes(**ra)))
            time.sleep(0.3)
        s = eng.sess(eng.stats(), LID)
        downs = [m for m in d.of(STATE_CHANGE, LID)[n0:] if m["state"] != 3]
        assert s["state"] == "Up" and s["down_events"] == 0 and not downs, (s, downs)


# Fixed finding (medium): a session moved to the software path (frames with IPv4 options reach it
# through the stack) is clocked by userspace, yet the program still answers the peer's plain
# frames in place (its published state is Up): with a peer whose frames alternate, the engine
# sends about twice the negotiated rate (RFC 5880 6.8.7: never more often than the interval
# allows, 75 % of it at the least).
def test_alternating_paths_do_not_double_the_transmit_rate() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.stop()
        base = dict(state=3, my=PEER_DISC, your=LID, tx=IV, rx=IV, mult=3)
        tq = time.monotonic()
        for i in range(12):  # one frame each 0.5 s: each kind once a second
            opts = {"ip_opts": b"\x94\x04\x00\x00"} if i % 2 else {}
            raw.send(t.frame(bfd_bytes(**base), **opts))
            time.sleep(0.5)
        got = [(ts, p) for ts, p in t.from_engine(tq + 1.0) if not p["F"] and not p["P"]]
        s = eng.sess(eng.stats(), LID)
        need(s["state"] == "Up", s)
        # 5 s at no more than one packet per 0.75 s: at most 7 (one of slack)
        assert len(got) <= 8, (len(got), [round(b - a, 2) for (a, _), (b, _) in
                                          zip(got, got[1:])])


# Fixed finding (high): any interface or address event in the namespace (here an unrelated address
# added) runs engine_iface_changed(), which puts every software-path session back on the fast path
# by its address (place_session), also one move_session() put there because its packets arrive
# through the stack. The program has not seen that session's packets for longer than the Detection
# Time, so the sweep expires it at once: Down (diag 1) while the peer keeps sending.
def test_address_event_does_not_pull_a_stack_fed_session_onto_the_fast_path() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, t = up_session(lab, eng)
        t.frame_kw["ip_opts"] = b"\x94\x04\x00\x00"  # from now on through the stack
        time.sleep(DETECT_S + 1.0)
        s = eng.sess(eng.stats(), LID)
        need(s["state"] == "Up" and not s["fast_path"] and s["down_events"] == 0, s)
        n0 = len(d.of(STATE_CHANGE, LID))
        sh("ip", "-n", lab.dev, "addr", "add", "10.90.0.50/16", "dev", "dut0")
        time.sleep(2.0)
        s = eng.sess(eng.stats(), LID)
        reports = [m["state"] for m in d.of(STATE_CHANGE, LID)[n0:]]
        assert s["down_events"] == 0 and 1 not in reports, \
            (s["state"], s["local_diag"], s["down_events"], reports)
