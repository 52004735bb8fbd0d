"""The engine listening for bfdd (--dplane, FRR 10.3+'s arrangement), message by message.

FRR 10.3 is not packaged here, so bfdd_standin.py plays bfdd: it adds one session towards a
real, stock FRR bfdd peer and records every message the engine sends back. Checked: the
STATE_CHANGEs (Init, then Up, with the peer's discriminator and timers), counters answered
with the request's id (zeros for an unknown lid), keepalive ECHO_REQUESTs with id 0, a
zero-length header closing the connection without killing the engine, and a new connection
served afterwards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lab import util
from lab.rig import frr, stress
from lab.rig.netns import Netns, nsenter, nsexec
from lab.rig.registry import Registry
from lab.topo import Device, Meta, Peer, SessionClass, Topology

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

LID = 0x11223344
PORT = 50700


@pytest.fixture(scope="module")
def exchange():
    build = REPO / "build"
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (build / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    topo = Topology(meta=Meta("listen", 24), peer=Peer("10.80.0.2"),
                    devices=(Device("engine", "engine", "10.80.0.1"),),
                    classes=(SessionClass("50ms", 50, 3, 1),), source="test")
    tag = "xb" + util.run_id_hex()
    rd = util.RunDir.create("engine-listen", root=REPO / "results" / "runs" / "tests")
    util.set_command_log(rd.logs / "commands.log")
    net = Netns.for_topology(tag, topo, build / "xdp_pass.bpf.o")
    reg = Registry.create(tag)
    peer = frr.Bfdd(f"{tag}-peer", net.peer, rd.logs / "frr-peer")
    eng = None
    try:
        net.build()
        reg.add_namespaces(list(net.created))
        peer.write_config([frr.PeerCfg("10.80.0.1", "10.80.0.2", 50, 3)])
        reg.add_frr(peer.inst)
        pid = peer.start()
        reg.add_pid(pid, f"-N {peer.inst}")
        stress.shield(pid, "peer bfdd")
        log = rd.logs / "engine.log"
        eng = util.spawn(nsenter(net.device_ns("engine"),
                                 [str(build / "xdp-bfd"), "--dplane", str(PORT), "--kernel-tx",
                                  "dut0", "--log-file", str(log)]))
        reg.add_pid(eng.pid, "xdp-bfd")
        util.wait_until(lambda: log.exists() and "dplane: listening on" in log.read_text(), 10,
                        "engine listening")
        cp = util.run(nsexec(net.device_ns("engine"),
                             ["env", f"PYTHONPATH={REPO}", "/usr/bin/python3",
                              str(REPO / "tests/lab/bfdd_standin.py"),
                              str(PORT), "10.80.0.1", "10.80.0.2", str(LID), "50000"]),
                      timeout=60)
        peer_id = [p for p in peer.peers() if p["peer"] == "10.80.0.1"][0]["id"]
        yield {"msgs": json.loads(cp.stdout), "log": log.read_text(), "peer_id": peer_id,
               "engine_alive": eng.poll() is None}
    finally:
        if eng is not None and eng.poll() is None:
            util.stop_pid(eng.pid, "xdp-bfd")
        peer.stop()
        net.teardown()
        reg.remove()


def _of(msgs: list[dict], mtype: int) -> list[dict]:
    return [m for m in msgs if m.get("type") == mtype]


def test_listen_log_line(exchange: dict) -> None:
    assert f"dplane: listening on 127.0.0.1:{PORT} (bfdd: ipv4c:127.0.0.1:{PORT})" in \
        exchange["log"]
    assert "dplane: bfdd connected" in exchange["log"]


def test_state_changes(exchange: dict) -> None:
    sc = [m for m in _of(exchange["msgs"]["first"], 4) if m["lid"] != 0]
    states = [m["state"] for m in sc]
    # Init then Up, or straight to Up when the peer's Init arrives first (RFC 5880 6.8.6:
    # Down + received Init -> Up). Down is bfdd's own view of a new session: never reported.
    assert states[0] in (2, 3) and states[-1] == 3 and states == sorted(states), sc
    for m in sc:
        assert (m["version"], m["id"], m["length"], m["pad"]) == (1, 0, 36, 0)
        assert m["lid"] == LID
        assert m["rid"] == exchange["peer_id"]
        assert m["mult"] == 3 and m["remote_flags"] == 0
    up = [m for m in sc if m["state"] == 3]
    # Once the peer leaves slow start it advertises its configured 50 ms: reported while Up.
    assert (up[-1]["desired_tx"], up[-1]["required_rx"]) == (50000, 50000)


def test_counters_answered_by_id(exchange: dict) -> None:
    msgs = exchange["msgs"]["first"]
    c = {m["id"]: m for m in _of(msgs, 6)}
    # Each reply follows two STATE_CHANGEs for lid 0, which bfdd drops: FRR 8.4.4 then
    # compacts its input buffer instead of resetting the connection after ~100 replies.
    for i, m in enumerate(msgs):
        if m.get("type") == 6:
            assert [(p["type"], p["lid"]) for p in msgs[i - 2:i]] == [(4, 0), (4, 0)]
    assert c[77]["lid"] == LID and c[77]["length"] == 80
    assert c[77]["counters"][1] > 0 and c[77]["counters"][3] > 0  # control in / out packets
    assert c[78]["counters"] == [0] * 8  # unknown lid: zeros, but an answer


def test_keepalive_echo(exchange: dict) -> None:
    echo = _of(exchange["msgs"]["first"], 0)
    assert echo, "no ECHO_REQUEST in the first seconds"
    assert all((m["id"], m["length"]) == (0, 24) for m in echo)


def test_malformed_closes_not_crashes(exchange: dict) -> None:
    assert exchange["msgs"]["after_malformed"][-1] == {"eof": True}
    assert "dplane: bad message from bfdd (version 1, length 0)" in exchange["log"]
    assert exchange["engine_alive"]
    second = _of(exchange["msgs"]["second"], 4)
    assert second and second[-1]["state"] == 3 and second[-1]["lid"] == LID + 1
