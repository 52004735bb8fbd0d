"""`python3 -m lab topo check`: the shipped descriptions are sound, and every kind of conflict
is found and named, with what and where (lab.bare.check, lab.topo.conflicts)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from lab import topo
from lab.bare import check, plan

REPO = Path(__file__).resolve().parents[2]
BAREMETAL = REPO / "topologies" / "baremetal.toml"
SHIPPED = sorted((REPO / "topologies").glob("*.toml"))


def kinds_of(text: str) -> list[tuple[str, str]]:
    t = topo.parse(text, "t.toml", strict=False)
    return [(c.kind, c.message) for c in check.check(t)]


def edited(old: str, new: str) -> str:
    text = BAREMETAL.read_text()
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_topologies_are_sound(path: Path) -> None:
    assert check.check(topo.load(path)) == []


@pytest.mark.parametrize("old,new,kind,message", [
    ("prefix_len = 16", "prefix_len = 31", "limits", "t.toml: prefix_len 31 outside 8..30"),
    ("interval_ms = 50", "interval_ms = 5", "limits",
     "t.toml: class 50ms: interval_ms 5 outside bfdd's 10..60000"),
    ('first_address = "10.77.0.1"', 'first_address = "10.78.0.1"', "address-range",
     "t.toml: address 10.78.0.1 is not a host of 10.77.0.0/16 (32 addresses of the 32 from "
     "10.78.0.1)"),
    ('first_address = "10.77.0.1"', 'first_address = "10.77.255.240"', "address-range",
     "t.toml: address 10.77.255.255 is not a host of 10.77.0.0/16 (17 addresses of the 32 "
     "from 10.77.255.240)"),
    ('first_address = "10.77.0.1"', 'first_address = "10.77.1.17"', "address-overlap",
     "t.toml: the address ranges of the peer and devices overlap (32 addresses each)"),
    ('first_address = "10.77.0.1"', 'first_address = "10.77.0.x"', "address-range",
     "t.toml: Only decimal digits permitted in 'x' in '10.77.0.x'"),
    ('name = "50ms"', 'name = "10ms"', "name",
     "t.toml: duplicate class names ['10ms', '10ms', '300ms']"),
    ('engine_args = "--spread-pass"', 'engine_args = "--kernel-tx eth0"', "engine-args",
     "t.toml: device engine: engine_args sets --kernel-tx, which the lab sets itself"),
    ("[hosts.load1]", "[hosts.load]", "name",
     "t.toml: host load: named like an Ansible group (the roles are groups)"),
    ('role = "load"', 'role = "loader"', "host-role",
     "t.toml: host load1: role 'loader' not in ('dut', 'peer', 'load', 'capture')"),
    ('[hosts.cap1]\nrole = "capture"', '[hosts.cap1]\nrole = "load"', "host-missing",
     "t.toml: 2 hosts of role load; the testbed has exactly one"),
    ('device = "engine"', 'device = "bfdd"', "host-device",
     "t.toml: host dut1: no [[device]] named 'bfdd'"),
    ('ssh = "load.lab.example"', 'ssh = "peer.lab.example"', "host-duplicate",
     "t.toml: hosts peer1 and load1 share the ssh name peer.lab.example"),
    ("count = 16", "count = 0", "session-count", "t.toml: class 300ms: count must be >= 1"),
    ('dplane = "ipv4:127.0.0.1:50700"', 'dplane = "ipv4:127.0.0.1:3784"', "port",
     "t.toml: device engine: dplane port 3784 is a BFD port (3784, 3785, 4784, 6784)"),
    ('dplane = "ipv4:127.0.0.1:50700"', 'dplane = "ipv4:127.0.0.1:61234"', "port",
     "t.toml: device engine: dplane port 61234 is among the engine's source ports "
     "61000-65535"),
    ('dplane = "ipv4:127.0.0.1:50700"', 'dplane = "tcp:50700"', "port",
     "t.toml: device engine: dplane 'tcp:50700': expected ipv4:ADDR:PORT, ipv6:[ADDR]:PORT "
     "or unix:PATH"),
])
def test_each_conflict_is_named(old: str, new: str, kind: str, message: str) -> None:
    found = kinds_of(edited(old, new))
    assert found[0] == (kind, message), found
    if kind == "port":
        return  # a port is judged on the plan (lab.bare.check), not by the loader
    with pytest.raises(topo.TopologyError, match="^t.toml: "):
        topo.parse(edited(old, new), "t.toml")  # the loader refuses the description too


def test_every_conflict_is_listed_not_only_the_first() -> None:
    text = edited('role = "load"', 'role = "loader"').replace("prefix_len = 16",
                                                              "prefix_len = 31")
    assert [k for k, _ in kinds_of(text)] == ["limits", "address-range", "address-range",
                                              "host-role", "host-missing"]


def test_engine_session_limit() -> None:
    text = (edited('first_address = "10.77.1.1"', 'first_address = "10.77.64.1"')
            .replace("count = 16", "count = 8200"))
    assert kinds_of(text) == [("session-count", "t.toml: host dut1: 8216 sessions, the engine "
                               "holds at most 8192")]


def test_both_ends_must_agree() -> None:
    t = topo.load(BAREMETAL)
    plans = plan.plan_hosts(t)
    assert check.pair_sessions(plans, "t") == []
    dut = plans["dut1"]
    first = dut.peers[0]
    assert (first.peer, first.local, first.interval_ms) == ("10.77.1.1", "10.77.0.1", 10)
    # timers that differ at the two ends
    slow = dataclasses.replace(first, interval_ms=50)
    plans["dut1"] = dataclasses.replace(dut, peers=(slow,) + dut.peers[1:])
    assert check.pair_sessions(plans, "t") == [topo.Conflict(
        "session-mismatch", "t: session 10.77.1.1 (peer) <-> 10.77.0.1 (dut1): the peer has 10 ms "
        "x 3, dut1 has 50 ms x 3")]
    # a block the peer has and the dut lacks; the dut's own block towards an address not its
    stray = dataclasses.replace(first, local="10.77.9.9")
    plans["dut1"] = dataclasses.replace(dut, peers=(stray,) + dut.peers[1:])
    assert [c.message for c in check.pair_sessions(plans, "t")] == [
        "t: host dut1: peer 10.77.1.1 local-address 10.77.9.9: 10.77.9.9 is not an address of "
        "enp1s0",
        "t: peer peer1: peer 10.77.0.1 local-address 10.77.1.1 has no mirror block (peer "
        "10.77.1.1 local-address 10.77.0.1) on any dut host",
        "t: host dut1: peer 10.77.1.1 local-address 10.77.9.9 has no mirror block on the peer"]
    # one destination twice on one bfdd: FRR would keep the second only
    plans["dut1"] = dataclasses.replace(dut, peers=(first,) + dut.peers)
    assert [c.message for c in check.pair_sessions(plans, "t")] == [
        "t: host dut1: destination 10.77.1.1 is configured 1 time(s) over (FRR keys a peer by "
        "its destination)"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", "topo", "check", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_cli_ok_and_conflicts(tmp_path: Path) -> None:
    r = run_cli(str(BAREMETAL))
    assert (r.returncode, r.stdout) == (0, f"{BAREMETAL}: ok: 1 device(s) x 32 sessions = 32 on "
                                        "the peer; 4 hosts (dut1, peer1, load1, cap1)\n")
    bad = tmp_path / "bad.toml"
    bad.write_text(edited('dplane = "ipv4:127.0.0.1:50700"', 'dplane = "ipv4:127.0.0.1:3785"')
                   .replace('ssh = "load.lab.example"', 'ssh = "peer.lab.example"'))
    r = run_cli(str(bad))
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"conflict host-duplicate: {bad}: hosts peer1 and load1 share the ssh name "
        "peer.lab.example",
        f"conflict port: {bad}: device engine: dplane port 3785 is a BFD port (3784, 3785, "
        "4784, 6784)",
        f"{bad}: 2 conflict(s): host-duplicate 1, port 1"]
    bad.write_text("[topology]\nname = 1\n")
    r = run_cli(str(bad))
    assert (r.returncode, r.stdout) == (1, f"conflict syntax: {bad}: missing [peer]\n")
