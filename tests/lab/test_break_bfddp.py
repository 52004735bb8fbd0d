"""Break tests of the engine, bfddp input and bfdd connections: malformed and split messages, ADD
validation, session ownership across connections, the session table's limits (root, namespaces,
XDP).

The lab each test builds, and the two kinds of tests (guards, fixed findings): breaklab.py.
"""

from __future__ import annotations

import os
import signal
import socket
import time

from breaklab import (
    ADD, COUNTERS, DELETE, DEV, ECHO_REPLY, HDR, IV, LID, PEER_DISC, PYTESTMARK, REQ_COUNTERS,
    STATE_CHANGE, TST, BreakLab, counters_req, lines, need, session_msg, up_session)
from lab.util import wait_until

pytestmark = PYTESTMARK


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
