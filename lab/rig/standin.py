"""standin - a bfdd stand-in that holds many sessions on an engine through the data-plane
protocol (../shared/docs/bfddp.md), for sizes FRR 8.4.4's bfdd cannot hold.

It connects to an engine listening with --dplane PORT (run it inside the engine's namespace:
the port is on its 127.0.0.1), sends one DP_ADD_SESSION per session in batches, answers the
engine's keepalive ECHO_REQUESTs like bfdd, and follows every DP_STATE_CHANGE: sessions Up now,
the time each first came Up, and down events (Up to anything else, per session). It writes that
as JSON to --out every --report-ms and at SIGTERM, then exits 0 (the engine then forgets the
sessions, as when bfdd goes away).

    python3 -m lab.rig.standin --port 50700 --sessions FILE --out status.json [--window N]

FILE: {"sessions": [{"lid", "local", "peer", "interval_us", "detect_mult", "passive"?}, ...]}.
Status: {"adds_sent", "added_at_ns", "sessions_up", "ever_up", "last_first_up_ns",
"down_events", "downs" (the last 1,000 down events, each [lid, time]), "last_down_ns" (each
session's latest down event, for those that had one), "state_changes", "eof"}; times
CLOCK_MONOTONIC ns, the engine's clock.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import selectors
import signal
import socket
import struct
import time
from pathlib import Path

from ..wire import bfddp

STATE_UP = 3
BATCH = 512  # sessions per write: the engine reads what bfdd sends, in any split


PER_SOURCE = 4096  # sessions per local address: under the engine's 4,536 source ports per address
NET = ipaddress.ip_network("10.96.0.0/12")  # the device's local addresses and the peers'


def scale_sessions(n: int, interval_us: int, *, passive: bool = False,
                   lid_base: int = 0x5CA1E000) -> list[dict]:
    """N IPv4 single-hop sessions on one link: local 10.96.0.(1 + i // 4096), peer 10.97.0.0 + i
    (all in 10.96.0.0/12)."""
    base = int(ipaddress.IPv4Address("10.97.0.0"))
    return [{"lid": lid_base + i, "local": f"10.96.0.{1 + i // PER_SOURCE}",
             "peer": str(ipaddress.IPv4Address(base + i)), "interval_us": interval_us,
             "detect_mult": 3, "passive": passive} for i in range(n)]


def local_addresses(n: int) -> list[str]:
    """The device's addresses for scale_sessions(N), with the prefix."""
    return [f"10.96.0.{1 + k}/{NET.prefixlen}" for k in range((n + PER_SOURCE - 1) // PER_SOURCE)]


def add_msg(s: dict) -> bytes:
    """DP_ADD_SESSION for one session entry (IPv4 or IPv6 by its addresses)."""
    local, peer = ipaddress.ip_address(s["local"]), ipaddress.ip_address(s["peer"])
    flags = (bfddp.SF_IPV6 if local.version == 6 else 0) | \
        (bfddp.SF_PASSIVE if s.get("passive") else 0)
    return bfddp.session(bfddp.ADD_SESSION, local.packed, peer.packed, s["lid"],
                         s["interval_us"], s["interval_us"], flags=flags,
                         detect_mult=s.get("detect_mult", 3))


class Standin:
    """One connection to the engine and what it has said about each session."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setblocking(False)
        self.rx = b""
        self.tx = b""
        self.state: dict[int, int] = {}
        self.first_up_ns: dict[int, int] = {}
        self.down_events = 0
        self.downs: list[tuple[int, int]] = []  # (lid, when) of each Up -> not Up
        self.last_down_ns: dict[int, int] = {}  # each session's latest Up -> not Up
        self.state_changes = 0
        self.adds_sent = 0
        self.added_at_ns = 0
        self.eof = False

    def queue(self, data: bytes) -> None:
        self.tx += data

    def flush(self) -> None:
        while self.tx:
            try:
                n = self.sock.send(self.tx)
            except BlockingIOError:
                return
            self.tx = self.tx[n:]

    def readable(self) -> None:
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not data:
            self.eof = True
            return
        self.rx += data
        off = 0
        while len(self.rx) - off >= bfddp.HDR.size:
            _, _, mtype, _, length = bfddp.HDR.unpack_from(self.rx, off)
            if length < bfddp.HDR.size or len(self.rx) - off < length:
                break
            self.message(mtype, self.rx[off:off + length])
            off += length
        self.rx = self.rx[off:]

    def message(self, mtype: int, msg: bytes) -> None:
        if mtype == bfddp.ECHO_REQUEST:  # answered like bfdd: its timestamp back, ours in us
            dp_us = struct.unpack_from("!Q", msg, 8)[0]
            self.queue(bfddp.echo(bfddp.ECHO_REPLY, dp_us, int(time.time() * 1e6)))
        elif mtype == bfddp.STATE_CHANGE and len(msg) >= 36:
            lid, state = struct.unpack_from("!I", msg, 8)[0], msg[32]
            was = self.state.get(lid)
            self.state_changes += 1
            if was == STATE_UP and state != STATE_UP:
                self.down_events += 1
                self.downs.append((lid, time.monotonic_ns()))
                self.last_down_ns[lid] = self.downs[-1][1]
            if state == STATE_UP and lid not in self.first_up_ns:
                self.first_up_ns[lid] = time.monotonic_ns()
            self.state[lid] = state

    def status(self) -> dict:
        return {"adds_sent": self.adds_sent, "added_at_ns": self.added_at_ns,
                "sessions_up": sum(1 for v in self.state.values() if v == STATE_UP),
                "ever_up": len(self.first_up_ns),
                "last_first_up_ns": max(self.first_up_ns.values(), default=0),
                "down_events": self.down_events, "downs": [list(d) for d in self.downs[-1000:]],
                "last_down_ns": list(self.last_down_ns.values()),
                "state_changes": self.state_changes,
                "eof": self.eof}


def write_json(path: Path, obj: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def serve(port: int, sessions: list[dict], out: Path, report_ms: int, window: int = 0) -> None:
    """Add SESSIONS, then follow the engine until SIGTERM (or the connection ends).

    WINDOW > 0: at most that many sessions added and not yet Up (ever) at a time, so bring-up
    is staggered as an operator's would be; 0 adds as fast as the engine reads. While the engine
    does not read, the stand-in sleeps until its socket is writable (it used to spin, taking a
    CPU the engine and the peer needed)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    st = Standin(port)
    sel = selectors.DefaultSelector()
    sel.register(st.sock, selectors.EVENT_READ)
    pending, next_add = sessions, 0
    next_report = 0.0
    while not stop and not st.eof:
        room = BATCH if not window else min(BATCH, window - (st.adds_sent - len(st.first_up_ns)))
        if next_add < len(pending) and room > 0 and len(st.tx) < BATCH * bfddp.SESSION_LEN:
            batch = pending[next_add:next_add + room]
            next_add += len(batch)
            st.queue(b"".join(add_msg(s) for s in batch))
            st.adds_sent += len(batch)
            if next_add == len(pending):
                st.added_at_ns = time.monotonic_ns()
        st.flush()
        sel.modify(st.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if st.tx else 0))
        wait_s = max(0.0, next_report - time.monotonic())
        for _, mask in sel.select(wait_s):
            if mask & selectors.EVENT_READ:
                st.readable()
        if time.monotonic() >= next_report:
            write_json(out, st.status())
            next_report = time.monotonic() + report_ms / 1000
    write_json(out, st.status())
    st.sock.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--sessions", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--report-ms", type=int, default=500)
    ap.add_argument("--window", type=int, default=0,
                    help="at most this many sessions added and not yet Up at a time (0: no limit)")
    a = ap.parse_args()
    if a.window < 0:
        ap.error("--window must be 0 or more")
    serve(a.port, json.loads(a.sessions.read_text())["sessions"], a.out, a.report_ms, a.window)


if __name__ == "__main__":
    main()
