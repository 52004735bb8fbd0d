"""build/bfdpeer, the fast BFD peer (docs/bfdpeer.md), against the engine and stock FRR 8.4.4
bfdd, in namespaces, as root. Behaviour only (states, diagnostics, counts, exact packets): how
well it keeps time is measured by lab runs (docs/bfdpeer.md, "Validation"), not here.

Against the engine (16 sessions at 300 ms x3, bfdd --dplaneaddr + xdp-bfd):
- every session comes Up at both ends from Down (RFC 5880 6.8.6), arrivals come through the
  XDP ring with nothing dropped, unmatched or lost to a full ring;
- Poll/Final both ways: the engine's Poll on entering Up got our Final, ours got its Final
  (no session still polling), timers negotiated to 300 ms (6.8.2, 6.8.7);
- SIGTERM: AdminDown (diag 7) on every session: bfdd sees them Down with that remote
  diagnostic, bfdpeer exits 0 with a last stats dump saying admin-down everywhere.
Against stock bfdd (IPv4 and IPv6, single hop and multihop, 300 ms x3):
- all four Up; bfdd stops for 1.5 s (SIGSTOP): bfdpeer declares each Down with diag 1
  (6.8.4), one detection each, and all come back Up on SIGCONT.
Bad input: a broken session list is a clear error and exit 2, never a crash.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab import util
from lab.harness.lab import Lab
from lab.rig import frr, neigh, stress
from lab.rig.bfdpeer import BfdPeer
from lab.rig.netns import DUT_IF, PEER_IF, End, Netns
from lab.rig.registry import Registry
from lab.topo import Device, Meta, Peer, SessionClass, Topology
from enginelab import engine_lab, up

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"
BFDPEER = BUILD / "bfdpeer"

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

SESSIONS = 16
TOPO = Topology(meta=Meta("bfdpeer-engine", 16), peer=Peer("10.81.1.1"),
                devices=(Device("engine", "engine", "10.81.0.1"),),
                classes=(SessionClass("300ms", 300, 3, SESSIONS),), source="test")


def need_build() -> None:
    for n in ("xdp-bfd", "bfdpeer", "xdp_pass.bpf.o"):
        if not (BUILD / n).exists():
            pytest.skip(f"build/{n} missing (make)")


@pytest.fixture(scope="module")
def lab():
    need_build()
    with engine_lab(TOPO, "bfdpeer-engine", peer_kind="bfdpeer") as lab:
        yield lab


def peer_stats(lab: Lab) -> dict:
    assert isinstance(lab.peer, BfdPeer)
    st = lab.peer.stats()
    assert st is not None
    return st


def test_all_up_through_the_ring(lab: Lab) -> None:
    st = peer_stats(lab)
    assert st["sessions_configured"] == SESSIONS
    assert st["sessions_up"] == SESSIONS
    assert [s["status"] for s in st["sessions"]] == ["up"] * SESSIONS
    assert st["rx_dropped"] == {}
    assert st["rx_no_session"] == 0 and st["rx_bad_ttl"] == 0
    assert st["xdp"]["ring_full"] == 0 and st["xdp"]["bad_checksum"] == 0
    assert st["xdp"]["malformed"] == 0
    assert st["xdp"]["rx"] == st["rx_packets"] > 0
    assert st["tx_errors"] == 0
    # every session went Up once, from Down, and never down again
    assert [(s["up_events"], s["down_events"]) for s in st["sessions"]] == [(1, 0)] * SESSIONS
    eng = lab.engines["engine"].stats()
    assert eng is not None and eng["sessions_up"] == SESSIONS


def test_poll_final_both_ways_and_timers(lab: Lab) -> None:
    st = peer_stats(lab)
    # The engine leaves slow start (1 s) with a Poll (RFC 5880 6.8.3): we answered each.
    assert st["tx_finals"] >= SESSIONS
    for s in st["sessions"]:
        assert s["poll_active"] is False  # our own Poll got its Final
        assert s["remote_desired_min_tx_us"] == 300_000
        assert s["remote_required_min_rx_us"] == 300_000
        assert s["tx_interval_us"] == 300_000
        assert s["remote_detect_mult"] == 3
        assert s["your_disc"] != 0


def test_sigterm_sends_admin_down(lab: Lab) -> None:
    assert isinstance(lab.peer, BfdPeer)
    dut = lab.duts["engine"]
    assert lab.peer.stop() == 0
    last = json.loads((lab.peer.dir / "bfdpeer-stats.json").read_text())  # moved from tmpfs
    assert [s["status"] for s in last["sessions"]] == ["admin-down"] * SESSIONS
    assert [s["diag"] for s in last["sessions"]] == [7] * SESSIONS

    def all_admin_down() -> list[dict] | None:
        rows = dut.peers()
        done = [r for r in rows if r.get("status") == "down"
                and r.get("remote-diagnostic") == "administratively down"]
        return rows if len(done) == SESSIONS else None

    util.wait_until(all_admin_down, 10, "bfdd sees AdminDown from every session", poll_s=0.2)


# --- against stock bfdd: both families, both hop types ------------------------------------

@dataclass(frozen=True)
class Block:
    """A bfdd peer block with the multihop keyword (frr.PeerCfg has none)."""

    peer: str
    local: str
    multihop: bool

    def lines(self) -> list[str]:
        return [f"peer {self.peer}{' multihop' if self.multihop else ''} local-address "
                f"{self.local}", "receive-interval 300", "transmit-interval 300",
                "detect-multiplier 3"]


PAIRS = [("10.82.0.1", "10.82.0.2"), ("10.82.0.3", "10.82.0.4"),
         ("fd82::1", "fd82::2"), ("fd82::3", "fd82::4")]  # (bfdpeer, bfdd)
MULTIHOP = [False, True, False, True]


@pytest.fixture(scope="module")
def stock():
    need_build()
    tag = "xb" + util.run_id_hex()
    rd = util.RunDir.create("bfdpeer-stock", root=REPO / "results" / "runs" / "tests")
    util.set_command_log(rd.logs / "commands.log")
    plen = {4: 24, 6: 64}
    ends = [End("peer", PEER_IF, tuple(f"{a}/{plen[6 if ':' in a else 4]}" for a, _ in PAIRS)),
            End("dev", DUT_IF, tuple(f"{b}/{plen[6 if ':' in b else 4]}" for _, b in PAIRS))]
    lab = Lab(TOPO, rd, tag, Netns(tag, ends, BUILD / "xdp_pass.bpf.o"), Registry.create(tag))
    try:
        lab.netns.build()
        lab.registry.add_namespaces(list(lab.netns.created))
        sessions = [{"local": a, "peer": b, "interval_ms": 300, "detect_mult": 3,
                     "multihop": mh} for (a, b), mh in zip(PAIRS, MULTIHOP)]
        fast = BfdPeer(BFDPEER, lab.netns.ns("peer"), PEER_IF, rd.logs)
        rd.logs.mkdir(parents=True, exist_ok=True)
        fast.sessions_path.write_text(json.dumps({"sessions": sessions}))
        lab.peer = fast  # type: ignore[assignment]
        pid = fast.start()
        lab.registry.add_pid(pid, "bfdpeer")
        stress.shield(pid, "bfdpeer")
        dev = frr.Bfdd(f"{tag}-dev", lab.netns.ns("dev"), rd.logs / "frr-dev")
        dev.write_config([Block(a, b, mh) for (a, b), mh in zip(PAIRS, MULTIHOP)])  # type: ignore
        lab.duts["dev"] = dev
        lab.registry.add_frr(dev.inst)
        lab.registry.add_pid(dev.start(), f"-N {dev.inst}")
        n = len(PAIRS)
        util.wait_until(lambda: up(fast) == n and up(dev) == n or None,  # type: ignore[arg-type]
                        30, "all four sessions Up at both ends", poll_s=0.5)
        yield lab
    finally:
        problems = lab.teardown()
        assert not problems, problems


def test_both_families_both_hop_types(stock: Lab) -> None:
    st = stock.peer.stats()  # type: ignore[union-attr]
    assert st is not None
    rows = {s["peer"]: s for s in st["sessions"]}
    assert sorted(rows) == sorted(b for _, b in PAIRS)
    assert [rows[b]["multihop"] for _, b in PAIRS] == MULTIHOP
    assert all(r["status"] == "up" for r in rows.values())
    assert st["rx_dropped"] == {} and st["rx_no_session"] == 0


def test_detection_then_bring_up_again(stock: Lab) -> None:
    dev = stock.duts["dev"]
    assert dev.pid is not None
    os.kill(dev.pid, signal.SIGSTOP)
    try:
        time.sleep(1.5)  # the silence to detect: longer than 3 x 300 ms, then a margin
        st = stock.peer.stats()  # type: ignore[union-attr]
    finally:
        os.kill(dev.pid, signal.SIGCONT)
    assert st is not None
    assert [(s["status"], s["diag"]) for s in st["sessions"]] == [("down", 1)] * len(PAIRS)
    assert st["detections"] == len(PAIRS)
    util.wait_until(lambda: up(stock.peer) == len(PAIRS) or None,  # type: ignore[arg-type]
                    20, "all four sessions Up again", poll_s=0.5)
    st = stock.peer.stats()  # type: ignore[union-attr]
    assert [(s["up_events"], s["down_events"]) for s in st["sessions"]] == [(2, 1)] * len(PAIRS)


# --- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("doc,phrase", [
    ("not json", "sessions.json:1:"),
    ('{"sessions": []}', "at least one"),
    ('{"sessions": [{"local": "10.0.0.1"}]}', "\"local\" and \"peer\""),
    ('{"sessions": [{"local": "10.0.0.1", "peer": "fd00::1"}]}', "local's family"),
    ('{"sessions": [{"local": "10.0.0.1", "peer": "10.0.0.2", "detect_mult": 0}]}',
     "detect_mult must be an integer in 1..255"),
    ('{"sessions": [{"local": "10.0.0.1", "peer": "10.0.0.2", "colour": 1}]}',
     "unknown key \"colour\""),
    ('{"sessions": [{"local": "10.0.0.1", "peer": "10.0.0.2"},'
     ' {"local": "10.0.0.1", "peer": "10.0.0.2"}]}', "same addresses and hop type"),
])
def test_bad_session_list(tmp_path: Path, doc: str, phrase: str) -> None:
    if not BFDPEER.exists():
        pytest.skip("build/bfdpeer missing (make)")
    f = tmp_path / "sessions.json"
    f.write_text(doc)
    cp = subprocess.run([str(BFDPEER), "--interface", "lo", "--sessions", str(f)],
                        capture_output=True, text=True, timeout=10)
    assert cp.returncode == 2
    assert phrase in cp.stderr


# --- neighbour-table limits (lab.rig.neigh) ---------------------------------------------------

def test_neigh_limits_raised_then_restored() -> None:
    before = {k: neigh._read(k) for k in neigh.KEYS}
    want = max(before.values()) + 1000  # above whatever is set now, so every limit moves
    r = neigh.raise_for(want)
    try:
        assert sorted(r.changed) == sorted(neigh.KEYS)
        assert neigh._read("ipv4/neigh/default/gc_thresh1") == want
        assert neigh._read("ipv6/neigh/default/gc_thresh3") == 4 * want
    finally:
        assert r.restore() == []
    assert {k: neigh._read(k) for k in neigh.KEYS} == before
