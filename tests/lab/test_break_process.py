"""Break tests of the engine, the process: SIGKILL and what it leaves, --dp-hold handing sessions
to a restarted bfdd, --stats-dump targets (root, namespaces, XDP).

The lab each test builds, and the two kinds of tests (guards, fixed findings): breaklab.py.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path

from breaklab import (
    BUILD, DETECT_S, DEV, IV, LID, PYTESTMARK, STATE_CHANGE, TST, BreakLab, lines, need, sh, sw_up,
    up_session)

pytestmark = PYTESTMARK


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
        sw_up(lab, eng, d)
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
