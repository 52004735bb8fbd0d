#!/usr/bin/python3
"""A scripted bfdd for the data-plane protocol: connects to an engine listening with --dplane,
plays a scenario and prints what came back as JSON (one object on stdout).

Used by test_engine_listen.py inside the device namespace (ip netns exec), because FRR 10.3+,
whose bfdd connects to a listening data plane, is not packaged here. Layouts follow FRR's
bfddp_packet.h (version 1), by explicit offsets, big-endian.

    bfdd_standin.py PORT SRC DST LID INTERVAL_US
"""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import sys
import time

from lab.wire import bfddp
from lab.wire.bfddp import HDR

ADD, STATE_CHANGE, COUNTERS = bfddp.ADD_SESSION, bfddp.STATE_CHANGE, bfddp.SESSION_COUNTERS


def session_msg(mtype: int, src: str, dst: str, lid: int, interval_us: int) -> bytes:
    return bfddp.session(mtype, ipaddress.IPv4Address(src).packed,
                         ipaddress.IPv4Address(dst).packed, lid, interval_us, interval_us)


class Conn:
    def __init__(self, port: int) -> None:
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        self.seen: list[dict] = []

    def read_for(self, seconds: float, until=None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.s.settimeout(max(0.01, end - time.monotonic()))
            try:
                data = self.s.recv(65536)
            except socket.timeout:
                break
            if not data:
                self.seen.append({"eof": True})
                return
            self.buf += data
            while len(self.buf) >= 8:
                ver, _, mtype, mid, length = HDR.unpack_from(self.buf)
                if len(self.buf) < length:
                    break
                msg, self.buf = self.buf[:length], self.buf[length:]
                self.seen.append(self.decode(ver, mtype, mid, length, msg))
                if mtype == bfddp.ECHO_REQUEST:  # answer like bfdd does: id 0, our clock in us
                    dp_time = struct.unpack_from("!Q", msg, 8)[0]
                    self.s.sendall(bfddp.echo(bfddp.ECHO_REPLY, dp_time, int(time.time() * 1e6)))
            if until is not None and until(self.seen):
                return

    @staticmethod
    def decode(ver: int, mtype: int, mid: int, length: int, msg: bytes) -> dict:
        d = {"version": ver, "type": mtype, "id": mid, "length": length, "hex": msg.hex()}
        if mtype == STATE_CHANGE and length == 36:
            (d["lid"], d["rid"], d["remote_flags"], d["desired_tx"], d["required_rx"],
             d["required_echo_rx"], d["state"], d["diag"], d["mult"], d["pad"]) = \
                struct.unpack_from("!IIIIIIBBBB", msg, 8)
        elif mtype == COUNTERS and length == 80:
            d["lid"] = struct.unpack_from("!I", msg, 8)[0]
            d["counters"] = list(struct.unpack_from("!8Q", msg, 16))
        return d


def main() -> None:
    port, src, dst, lid, interval = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), \
        int(sys.argv[5])
    out: dict = {}
    c = Conn(int(port))
    c.s.sendall(session_msg(ADD, src, dst, lid, interval))
    c.read_for(15, until=lambda seen: any(m.get("type") == STATE_CHANGE and m.get("state") == 3
                                          for m in seen))
    c.read_for(1.0)  # let some traffic flow
    # counters: our session, then an unknown lid; each answered with the request's id
    c.s.sendall(bfddp.request_counters(lid, mid=77))
    c.s.sendall(bfddp.request_counters(0xDEADBEEF, mid=78))
    c.read_for(1.0, until=lambda seen: sum(m.get("type") == COUNTERS for m in seen) >= 2)
    out["first"] = list(c.seen)
    # a header with length 0: the engine must log, close, and live on
    c.s.sendall(bfddp.header(ADD, 0))
    c.read_for(2.0, until=lambda seen: seen and seen[-1].get("eof"))
    out["after_malformed"] = c.seen[len(out["first"]):]
    # a new connection is served (the engine forgot the session with the old connection)
    c2 = Conn(int(port))
    c2.s.sendall(session_msg(ADD, src, dst, lid + 1, interval))
    c2.read_for(15, until=lambda seen: any(m.get("type") == STATE_CHANGE and m.get("state") == 3
                                           for m in seen))
    out["second"] = c2.seen
    print(json.dumps(out))


if __name__ == "__main__":
    main()
