"""Break tests of the engine: bfddp input, sessions, packets, processes (root, namespaces, XDP).

Each test builds its own small lab (test_engine_break_lab.py): the engine listens for a scripted
bfdd (--dplane), a tester sends hand-built frames. Two kinds of tests:

- guards: behaviour that held when these tests were written and must keep holding;
- fixed findings: each reproduces a defect found while trying to break the engine (the comment
  above it says what it was); it failed until the fix and guards against its return. A new
  finding goes in as `@pytest.mark.xfail(strict=True, raises=AssertionError, reason=...)`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_engine_break_lab import (  # noqa: E402
    ADD, BUILD, COUNTERS, DELETE, ECHO_REPLY, HDR, REQ_COUNTERS, SF_MULTIHOP, STATE_CHANGE,
    BreakLab, bfd_bytes, counters_req, frame4, lines, session_msg, sh)
from lab.util import wait_until  # noqa: E402  (path set by test_engine_break_lab)

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces, XDP"),
    pytest.mark.skipif(not (BUILD / "xdp-bfd").exists() or not (BUILD / "xdp_pass.bpf.o").exists(),
                       reason="build/ missing (make)"),
]

DEV, TST = "10.90.0.1", "10.90.2.1"
LID, PEER_DISC = 0x0A, 0x0B
# 1 s x 3 on both sides: a Detection Time of 3 s, so a tester thread stalled for a second by
# someone else's real-time load on this shared machine does not bring a session down.
IV = 1000000
DETECT_S = 3.0


class Precondition(Exception):
    """The lab could not set the scene: a real failure, never an expected one (xfail raises=)."""


def need(cond: object, what: object) -> None:
    if not cond:
        raise Precondition(what)


def up_session(lab: BreakLab, eng, iv: int = IV, **add_kw):
    """A scripted bfdd with one session DEV -> TST (lid 0x0A, IV x 3 both ways), brought Up."""
    d = lab.dp()
    raw = lab.raw()
    t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=iv, rx=iv)
    d.add(**{"src": DEV, "dst": TST, "lid": LID, "tx": iv, "rx": iv, **add_kw})
    t.handshake()
    t.start()
    time.sleep(1.5)  # past the Poll Sequence that leaves slow start
    s = eng.sess(eng.stats(), LID)
    need(s and s["state"] == "Up" and s["fast_path"], s)
    return d, raw, t


# ---------------------------------------------------------------- guards: bfddp input

def test_bfddp_bad_header_closes_logs_and_counts() -> None:
    """Lengths 0..7 and above the maximum, versions 0, 2, 255: each closes the connection with
    a log line naming what was wrong, is counted in dplane.malformed, and the engine serves the
    next connection."""
    bad = [HDR.pack(1, 0, ADD, 0, n) for n in (*range(8), 1025, 8193, 65535)]
    bad += [HDR.pack(v, 0, ADD, 0, 140) + b"\0" * 132 for v in (0, 2, 255)]
    with BreakLab() as lab:
        eng = lab.engine()
        for i, msg in enumerate(bad):
            d = lab.dp()
            d.send(msg + b"\0" * 140)
            wait_until(lambda: d.eof or None, 3, f"connection closed after bad header {i}")
            d.close()
        st = eng.stats()
        assert st["dplane"]["malformed"] == len(bad)
        log = "\n".join(lines(eng))
        for n in (*range(8), 1025, 8193, 65535):
            assert f"bad message from bfdd (version 1, length {n}): length out of range" in log
        for v in (0, 2, 255):
            assert f"(version {v}, length 140): unsupported protocol version" in log
        d = lab.dp()
        d.sync()
        assert eng.alive()


def test_bfddp_short_bodies_close_and_unknown_types_are_skipped() -> None:
    """A body too short for its type (ADD, DELETE, counters request, echo reply) closes the
    connection with a log line; types the engine does not take (0, 4, 6, 7, 65535) are skipped
    by length and the next message is still answered."""
    with BreakLab() as lab:
        eng = lab.engine()
        for mtype, ln in ((ADD, 139), (DELETE, 8), (REQ_COUNTERS, 11), (ECHO_REPLY, 23)):
            d = lab.dp()
            d.send(HDR.pack(1, 0, mtype, 0, ln) + b"\1" * (ln - 8))
            wait_until(lambda: d.eof or None, 3, f"type {mtype} length {ln} closes")
            d.close()
            assert f"message type {mtype} has length {ln}, too short for its type" in eng.log()
        d = lab.dp()
        for mtype, ln in ((0, 8), (STATE_CHANGE, 35), (COUNTERS, 80), (7, 8), (0xffff, 12)):
            d.send(HDR.pack(1, 0, mtype, 0, ln) + b"\1" * (ln - 8))
        d.sync()
        assert not d.eof and eng.alive()


def test_bfddp_split_bytes_interleaved_and_counters_burst() -> None:
    """ADDs written one byte per segment, interleaved with whole ADDs, all arrive; 1,000
    counters requests in one write are all answered, each with its own id (bfdd waits for
    every one of them)."""
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        d.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(6):
            m = session_msg(src=DEV, dst=f"10.90.3.{i + 1}", lid=1000 + i)
            if i % 2 == 0:
                d.send_split(m)
            else:
                d.send(m)
        d.sync()
        assert sorted(s["lid"] for s in eng.stats()["sessions"]) == list(range(1000, 1006))
        n0 = len(d.of(COUNTERS))
        d.send(b"".join(counters_req(1000 + i % 7, i) for i in range(1, 1001)))
        wait_until(lambda: len(d.of(COUNTERS)) - n0 >= 1000 or None, 10, "1000 replies")
        assert sorted(m["id"] for m in d.of(COUNTERS)[n0:]) == list(range(1, 1001))


def test_max_sessions_rejections_are_logged_and_counted() -> None:
    """--max-sessions 16 and 20 ADDs: 16 run, 4 are rejected with a log line each and counted
    in bfdd_rejected; deleting frees the slots again (300 add/delete rounds leave nothing)."""
    with BreakLab() as lab:
        eng = lab.engine("--max-sessions", "16")
        d = lab.dp()
        for i in range(20):
            d.add(src=DEV, dst=f"10.90.3.{i + 1}", lid=100 + i)
        d.sync()
        st = eng.stats()
        assert st["sessions_configured"] == 16 and st["engine"]["bfdd_rejected"] == 4
        for lid in range(116, 120):
            assert f"rejecting session lid {lid}: all 16 slots in use (--max-sessions)" in eng.log()
        for i in range(16):
            d.delete(src=DEV, dst=f"10.90.3.{i + 1}", lid=100 + i)
        for r in range(300):
            for i in range(16):
                d.add(src=DEV, dst=f"10.90.3.{i + 1}", lid=5000 + (r % 5) * 100 + i)
            for i in range(16):
                d.delete(src=DEV, dst=f"10.90.3.{i + 1}", lid=5000 + (r % 5) * 100 + i)
        d.sync()
        for i in range(16):
            d.add(src=DEV, dst=f"10.90.3.{i + 1}", lid=9000 + i)
        d.sync()
        st = eng.stats()
        assert st["sessions_configured"] == 16 and st["engine"]["bfdd_rejected"] == 4


# ---------------------------------------------------------------- guards: packets

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


def test_sigkill_takes_the_xdp_link_and_program_with_it() -> None:
    """SIGKILL while a session is Up: no XDP program left on dut0, no xdp_bfd program of this
    engine left loaded, nothing more on the wire from the engine's address."""
    import json
    with BreakLab() as lab:
        eng = lab.engine()
        _, raw, _ = up_session(lab, eng)
        link = json.loads(sh("ip", "-n", lab.dev, "-j", "-d", "link", "show", "dut0").stdout)[0]
        prog_id = link["xdp"]["prog"]["id"]
        os.kill(eng.pid, signal.SIGKILL)
        eng.proc.wait(5)
        time.sleep(0.5)
        tq = time.monotonic()
        time.sleep(1.0)
        link = json.loads(sh("ip", "-n", lab.dev, "-j", "-d", "link", "show", "dut0").stdout)[0]
        assert "xdp" not in link
        progs = json.loads(sh("bpftool", "-j", "prog", "show").stdout)
        assert prog_id not in [p["id"] for p in progs]
        assert not raw.from_(DEV, tq)


# ---------------------------------------------------------------- fixed findings

# Fixed finding (critical): when a write to bfdd fails while a session is being handled
# (dplane_send -> conn_close -> on_disconnect -> session_destroy), the session in hand is freed
# under apply()/report() and freed again by its caller: the engine aborts with 'free(): double
# free detected in tcache 2' (ASan: heap-use-after-free in report(), engine.c:156). Here bfdd
# sends DELETEs and hangs up, as FRR with PR #22692 does on every shutdown.
def test_bfdd_hangs_up_after_deletes_engine_survives() -> None:
    with BreakLab(tst_addrs=tuple(f"10.90.2.{i}" for i in range(1, 11))) as lab:
        eng = lab.engine()
        d = lab.dp()
        for i in range(1, 11):
            d.add(src=DEV, dst=f"10.90.2.{i}", lid=100 + i)
        d.sync()
        os.kill(eng.pid, signal.SIGSTOP)  # fixes the order: all DELETEs read after the hang-up
        d.send(b"".join(session_msg(DELETE, src=DEV, dst=f"10.90.2.{i}", lid=100 + i)
                        for i in range(1, 11)))
        d.s.shutdown(socket.SHUT_RDWR)
        time.sleep(0.2)
        os.kill(eng.pid, signal.SIGCONT)
        time.sleep(1.0)
        assert eng.alive(), f"engine died: {eng.proc.poll()}; {eng.log()[-300:]}"


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


# Fixed finding (low-medium): an ADD creating a session with Desired Min TX 0 is rejected, but an
# update ADD setting it to 0 is taken silently (no log, not counted) and the engine then
# advertises Desired Min TX 0 on the wire, a reserved value (RFC 5880 4.1).
def test_update_to_desired_min_tx_0_is_not_advertised() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d, raw, _ = up_session(lab, eng)
        tq = time.monotonic()
        d.add(src=DEV, dst=TST, lid=LID, tx=0, rx=IV)
        time.sleep(2.5)
        assert all(p["tx"] != 0 for _, p in raw.from_(DEV, tq))


# Fixed finding (low-medium): an ADD for a known lid with other addresses is applied as a timer
# update and the new addresses are dropped without a word: bfdd believes the session runs
# 10.90.0.2 -> 10.90.2.2, the engine keeps 10.90.0.1 -> 10.90.2.1 (no log, not counted).
def test_same_lid_with_new_addresses_is_not_silently_kept() -> None:
    with BreakLab(dev_addrs=(DEV, "10.90.0.2"), tst_addrs=(TST, "10.90.2.2")) as lab:
        eng = lab.engine()
        d = lab.dp()
        d.add(src=DEV, dst=TST, lid=LID)
        d.sync()
        mark = len(eng.log())
        d.add(src="10.90.0.2", dst="10.90.2.2", lid=LID)
        d.sync(mid=65534)
        s = eng.sess(eng.stats(), LID)
        moved = (s["local"], s["peer"]) == ("10.90.0.2", "10.90.2.2")
        said = any(str(LID) in ln for ln in lines(eng, mark))
        assert moved or said, (s["local"], s["peer"], lines(eng, mark))


# Fixed finding (low): an ADD whose source and destination are the same local address is taken;
# the session's packets loop back through lo to the software path and it comes Up with itself
# (remote discriminator = its own), reported Up to bfdd.
def test_session_with_itself_is_rejected() -> None:
    with BreakLab() as lab:
        lab.engine()
        d = lab.dp()
        d.add(src=DEV, dst=DEV, lid=0x44)
        time.sleep(4.0)
        assert 3 not in [m["state"] for m in d.of(STATE_CHANGE, 0x44)]


# Fixed finding (low): the ifname of an ADD goes into the log verbatim ('no interface %s here'),
# control characters included, so a newline in it forges a whole log line.
def test_ifname_control_bytes_do_not_forge_log_lines() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        fake = b"x\n2026-01-01T00:00:00.000000Z xdp-bfd[1] info: FORGED\n"
        d.add(src=DEV, dst=TST, lid=0x91, ifname=fake.ljust(64, b"A"))
        d.sync()
        assert not any(ln.endswith("info: FORGED") for ln in eng.log().splitlines())


# Fixed finding (medium-low): a second bfdd connection that merely repeats an identical ADD takes
# the session over (on_session sets dplane_serial to the newest connection); when that connection
# closes the session is torn down (AdminDown on the wire) and the connection that created it is
# never told: its last report was Up.
def test_second_connection_does_not_take_over_a_session() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d1, _, _ = up_session(lab, eng)
        d2 = lab.dp()
        d2.add(src=DEV, dst=TST, lid=LID)
        d2.sync()
        d2.close()
        time.sleep(0.5)
        s = eng.sess(eng.stats(), LID)
        reports = [m["state"] for m in d1.of(STATE_CHANGE, LID)]
        assert (s is not None and s["state"] == "Up") or reports[-1] != 3, (s, reports)


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


# Fixed finding (medium): --dp-hold does not adopt a session whose ADD has no source address
# (bfdd's `peer X interface IF` without local-address: src all-zero, bfddp.md 4.2). tx_open()
# writes the resolved source into s->local_addr, so adopt_held()'s match on m->src (zeros) fails;
# the restarted bfdd's ADD creates a second session with the same addresses and a new
# discriminator, and the held one goes Down: the flap --dp-hold is there to avoid.
def test_dp_hold_adopts_a_session_without_source_address() -> None:
    import json
    with BreakLab() as lab:
        eng = lab.engine("--dp-hold", "30")
        idx = json.loads(sh("ip", "-n", lab.dev, "-j", "link", "show", "dut0").stdout)[0]["ifindex"]
        d, _, _ = up_session(lab, eng, src="0.0.0.0", ifindex=idx, ifname=b"dut0")
        d.sync()
        d.close()
        time.sleep(1.0)
        d2 = lab.dp()
        d2.add(src="0.0.0.0", dst=TST, lid=0x1A, ifindex=idx, ifname=b"dut0", tx=IV, rx=IV)
        d2.sync()
        time.sleep(1.0)
        st = eng.stats()
        assert [(s["lid"], s["local_disc"]) for s in st["sessions"]] == [(0x1A, LID)], \
            [(s["lid"], s["local_disc"], s["state"]) for s in st["sessions"]]
        assert "adopted again by bfdd" in eng.log()


# Fixed finding (low-medium): ADD values outside what bfdd can send are taken without a word
# (bfddp.md 4.2: timers 10 ms .. 60 s, Detect Mult 2..255): Desired Min TX 1 us is run as is (with
# a peer advertising Required Min RX 1 us the engine sends about 83,000 packets/s from userspace
# at 100 % of a CPU), and Detect Mult 0 is silently run as 3 while the log line says 'mult 0'.
# Neither is rejected, counted or logged as out of range.
def test_add_values_out_of_range_are_rejected_or_logged() -> None:
    with BreakLab(tst_addrs=(TST, "10.90.2.2")) as lab:
        eng = lab.engine()
        d = lab.dp()
        mark = len(eng.log())
        d.add(src=DEV, dst=TST, lid=0x71, tx=1, rx=1)
        d.add(src=DEV, dst="10.90.2.2", lid=0x72, mult=0)
        d.sync()
        st = eng.stats()
        said = [ln for ln in lines(eng, mark) if "range" in ln or "reject" in ln or "clamp" in ln]
        for lid in (0x71, 0x72):
            s = eng.sess(st, lid)
            assert s is None or any(str(lid) in ln for ln in said), (lid, lines(eng, mark))


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


# ---------------------------------------------------------------- findings: paths, ADD validation,
# socket retry, --dp-hold (all fixed)

# Fixed finding (medium; fixed in c94ff4b while these tests were being written): the ownership
# rule covered ADD only. A DELETE from a second bfdd connection for a session a live connection
# owns was carried out: AdminDown on the wire, the session removed, and the owner (still
# connected, its config unchanged) left with a session the engine no longer ran.
def test_delete_from_a_second_connection_does_not_remove_a_session() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d1, _, t = up_session(lab, eng)
        d2 = lab.dp()
        tq = time.monotonic()
        d2.delete(src=DEV, dst=TST, lid=LID)
        d2.sync()
        time.sleep(0.5)
        s = eng.sess(eng.stats(), LID)
        admin = [p for _, p in t.from_engine(tq) if p["state"] == 0]
        assert s is not None and s["state"] == "Up" and not admin, (s, len(admin))


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


# Fixed finding (low-medium): an ADD for a known lid that changes only the interface (same
# addresses) is applied as a timer update: the session stays bound to the old interface (socket,
# fast-path key) without a word, like the fixed 'same lid with new addresses' case.
def test_update_changing_only_the_interface_is_not_silently_kept() -> None:
    with BreakLab() as lab:
        lab.link("dut1", "tst1", "10.91.0.1/16", "10.91.2.1/16")
        eng = lab.engine()
        d = lab.dp()
        d.add(src=DEV, dst=TST, lid=LID, ifname=b"dut0")
        d.sync()
        need(eng.sess(eng.stats(), LID)["ifname"] == "dut0", eng.sess(eng.stats(), LID))
        mark = len(eng.log())
        d.add(src=DEV, dst=TST, lid=LID, ifname=b"dut1")
        d.sync(mid=65534)
        s = eng.sess(eng.stats(), LID)
        said = [ln for ln in lines(eng, mark) if str(LID) in ln or "dut1" in ln]
        assert s["ifname"] == "dut1" or said, (s["ifname"], lines(eng, mark))


# ---------------------------------------------------------------- guards (added)

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


def _sw_up(lab: BreakLab, eng, d, lid: int = LID, **add_kw):
    """A session DEV -> TST brought Up on the software path (engine without --kernel-tx)."""
    raw = lab.raw()
    t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV)
    d.add(**{"src": DEV, "dst": TST, "lid": lid, "tx": IV, "rx": IV, **add_kw})
    t.handshake()
    t.start()
    time.sleep(1.5)
    s = eng.sess(eng.stats(), lid)
    need(s and s["state"] == "Up" and not s["fast_path"], s)
    return raw, t


# Fixed finding (high): a session --dp-hold hands to a restarted bfdd keeps its discriminator but
# takes the new lid; the software path finds a session by Your Discriminator through the lid table
# (sessions_by_lid(your_disc), then local_disc == your_disc), so every packet of an adopted
# session on the software path is dropped as unknown_your_disc and the session goes Down (diag 1)
# one Detection Time after the adoption, with the peer sending all along: the flap --dp-hold is
# there to avoid.
def test_dp_hold_adopted_session_on_the_software_path_stays_up() -> None:
    with BreakLab() as lab:
        eng = lab.engine("--dp-hold", "30", kernel_tx=())
        d = lab.dp()
        _sw_up(lab, eng, d)
        d.close()
        time.sleep(0.5)
        d2 = lab.dp()
        d2.add(src=DEV, dst=TST, lid=0x1A, tx=IV, rx=IV)
        d2.sync()
        need("adopted again by bfdd" in eng.log(), lines(eng)[-5:])
        time.sleep(2 * DETECT_S)
        st = eng.stats()
        s = eng.sess(st, 0x1A)
        assert (s["state"], s["down_events"]) == ("Up", 0), \
            (s["state"], s["local_diag"], st["drops"]["unknown_your_disc"])


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
            raw.send(t.frame(bfd_bytes(**base), **({"ip_opts": b"\x94\x04\x00\x00"}
                                                    if i % 2 else {})))
            time.sleep(0.5)
        got = [(ts, p) for ts, p in t.from_engine(tq + 1.0) if not p["F"] and not p["P"]]
        s = eng.sess(eng.stats(), LID)
        need(s["state"] == "Up", s)
        # 5 s at no more than one packet per 0.75 s: at most 7 (one of slack)
        assert len(got) <= 8, (len(got), [round(b - a, 2) for (a, _), (b, _) in
                                          zip(got, got[1:])])


# Fixed finding (low): an ADD for a new lid with the addresses of a running session is taken (not
# rejected, not logged): two sessions share one fast-path address key, the second overwrites the
# first's entry, and deleting the second removes the key the first still needs. The first can no
# longer be found for a peer's packets with Your Discriminator 0 (a peer starting or restarting):
# it never comes Up again (unknown to the program: no_session).
def test_duplicate_addresses_do_not_orphan_the_first_session() -> None:
    with BreakLab() as lab:
        eng = lab.engine()
        d = lab.dp()
        raw = lab.raw()
        d.add(src=DEV, dst=TST, lid=0x21, tx=IV, rx=IV)
        d.add(src=DEV, dst=TST, lid=0x22, tx=IV, rx=IV)
        d.delete(src=DEV, dst=TST, lid=0x22)
        d.sync()
        t = lab.tester(raw, TST, DEV, my=PEER_DISC, tx=IV, rx=IV)
        try:
            t.handshake(timeout_s=4.0)
            up = True
        except TimeoutError:
            up = False
        st = eng.stats()
        assert up, (eng.sess(st, 0x21)["state"], {k: v for k, v in st["drops"].items() if v})


def test_dp_hold_adopts_fast_path_session_with_source_under_a_new_lid() -> None:
    """--dp-hold, fast path, explicit source: bfdd's connection closes, a new one ADDs the same
    addresses under a new lid; the session is adopted with its old discriminator, stays Up for
    two Detection Times with the peer sending, and the new connection is told Up."""
    with BreakLab() as lab:
        eng = lab.engine("--dp-hold", "30")
        d, raw, t = up_session(lab, eng)
        d.close()
        time.sleep(1.0)
        d2 = lab.dp()
        d2.add(src=DEV, dst=TST, lid=0x1A, tx=IV, rx=IV)
        d2.sync()
        time.sleep(2 * DETECT_S)
        st = eng.stats()
        s = eng.sess(st, 0x1A)
        assert [x["lid"] for x in st["sessions"]] == [0x1A], st["sessions"]
        assert (s["state"], s["local_disc"], s["down_events"]) == ("Up", LID, 0), s
        assert [m["state"] for m in d2.of(STATE_CHANGE, 0x1A)] == [3]


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


# Fixed finding (medium-high): --stats-dump wrote PATH.tmp and renamed it over PATH whatever PATH
# was: pointed at /dev/full it replaced the device node with a JSON file; a FIFO or /dev/stdout
# would be replaced the same way. A PATH that exists and is not a regular file is now written in
# place.
def test_stats_dump_into_a_fifo_keeps_the_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "stats.fifo"
    os.mkfifo(fifo)
    ns = f"xk{os.getpid():x}sd"
    sh("ip", "netns", "add", ns)
    got: list[bytes] = []
    try:
        eng = subprocess.Popen(["ip", "netns", "exec", ns, str(BUILD / "xdp-bfd"), "--dplane",
                                "50790", "--stats-dump", str(fifo)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
            reader.start()
            eng.send_signal(signal.SIGUSR1)
            reader.join(5)
        finally:
            eng.terminate()
            eng.wait(5)
    finally:
        sh("ip", "netns", "del", ns)
    assert stat.S_ISFIFO(fifo.stat().st_mode), "the FIFO was replaced"
    assert got and json.loads(got[0])["schema"] == "xdp-bfd-stats/1", got


# ---------------------------------------------------------------- fixed in the same stop

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
