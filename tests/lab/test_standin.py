"""lab.rig.standin (the bfdd stand-in of `lab scale`) against this test as the engine: a TCP
listener on 127.0.0.1 that reads the stand-in's DP_ADD_SESSIONs and answers DP_STATE_CHANGE Up
(../shared/docs/bfddp.md). No root, no namespaces.

- --window N: never more than N sessions added and not yet Up; the next ones only once some
  came Up; every session added in the end.
- An engine that does not read: the stand-in waits for its socket to become writable instead
  of spinning (it took 80 % of a CPU that way during a 65,536-session bring-up).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from lab.rig.standin import scale_sessions
from lab.wire import bfddp

REPO = Path(__file__).resolve().parents[2]
LID_OFFSET = bfddp.HDR.size + 4 + 16 + 16  # flags, local, peer, then the lid
STATE_UP = 3


def start(tmp_path: Path, n: int, window: int) -> tuple[subprocess.Popen, socket.socket, Path]:
    """The stand-in adding N sessions with --window WINDOW, connected to our listener (a small
    receive buffer, so that an engine not reading stops the stand-in's writes soon)."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # inherited by the accepted one
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    spec, out = tmp_path / "sessions.json", tmp_path / "status.json"
    spec.write_text(json.dumps({"sessions": scale_sessions(n, 300000)}))
    proc = subprocess.Popen(["/usr/bin/python3", "-m", "lab.rig.standin", "--port",
                             str(srv.getsockname()[1]), "--sessions", str(spec), "--out",
                             str(out), "--window", str(window), "--report-ms", "100"],
                            cwd=REPO)
    srv.settimeout(10)
    conn, _ = srv.accept()
    srv.close()
    return proc, conn, out


def stop(proc: subprocess.Popen, conn: socket.socket) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    finally:
        conn.close()


def read_adds(conn: socket.socket, buf: bytearray, quiet_s: float) -> list[int]:
    """The lids of the ADDs that arrive until QUIET_S passes without a byte."""
    lids = []
    while select.select([conn], [], [], quiet_s)[0]:
        data = conn.recv(1 << 16)
        if not data:
            break
        buf += data
        while len(buf) >= bfddp.SESSION_LEN:
            mtype, length = bfddp.HDR.unpack_from(buf, 0)[2], bfddp.HDR.unpack_from(buf, 0)[4]
            assert mtype == bfddp.ADD_SESSION and length == bfddp.SESSION_LEN, (mtype, length)
            lids.append(struct.unpack_from("!I", buf, LID_OFFSET)[0])
            del buf[:length]
    return lids


def state_up(lid: int) -> bytes:
    """DP_STATE_CHANGE, 36 bytes: the lid at 8, the state at 32 (what the stand-in reads)."""
    body = struct.pack("!I", lid) + bytes(20) + bytes([STATE_UP]) + bytes(3)
    return bfddp.header(bfddp.STATE_CHANGE, bfddp.HDR.size + len(body)) + body


def test_window_holds_at_most_n_sessions_not_yet_up(tmp_path: Path) -> None:
    proc, conn, _ = start(tmp_path, 40, 8)
    try:
        buf, added, rounds = bytearray(), [], []
        while len(added) < 40:
            new = read_adds(conn, buf, 0.5)
            assert new, f"no ADD after {len(added)} with every added session Up"
            rounds.append(len(new))
            added += new
            conn.sendall(b"".join(state_up(lid) for lid in new))
        assert rounds == [8] * 5  # each round fills the window, none goes past it
        assert added == [0x5CA1E000 + i for i in range(40)]
        assert read_adds(conn, buf, 0.5) == []
    finally:
        stop(proc, conn)


def cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_an_engine_that_does_not_read_costs_no_cpu(tmp_path: Path) -> None:
    # 60,000 ADDs (8.4 MB): more than the stand-in's send buffer (at most 4 MiB,
    # net.ipv4.tcp_wmem) and our receive buffer take
    proc, conn, out = start(tmp_path, 60000, 0)
    try:
        time.sleep(2.0)  # start-up, and the buffers fill
        before = cpu_s(proc.pid)
        time.sleep(2.0)
        used = cpu_s(proc.pid) - before
        # a spinning loop takes most of 2 s; waiting in select() takes next to none
        assert used < 0.2, f"{used:.2f} s of CPU in 2 s while the engine read nothing"
        status = json.loads(out.read_text())
        assert status["adds_sent"] < 60000, status["adds_sent"]  # it is waiting on us
    finally:
        stop(proc, conn)
