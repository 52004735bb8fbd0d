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


CLASSES = REPO / "topologies" / "baremetal-classes.toml"


def test_bird_multihop_needs_a_min_ttl_its_packets_meet() -> None:
    """BIRD 2 sends multihop packets with TTL 64; through the router they arrive with 63, so a
    BIRD multihop class left at bfdd's minimum-ttl 254 would drop every packet."""
    text = CLASSES.read_text()
    old = 'min_ttl = 63                     # BIRD sends multihop with TTL 64\nfamily = "ipv6"'
    assert old in text
    found = kinds_of(text.replace(old, 'family = "ipv6"', 1))
    assert found == [("session-class", "t.toml: class v6mh-bird: min_ttl 254 drops every "
                      "packet: the bird peer sends TTL 64, 1 router hop(s) leave 63 (set "
                      "min_ttl <= 63)")]
    # an FRR multihop class at minimum-ttl 254 is met: 255 less one hop
    assert not kinds_of(text.replace('name = "v4mh-frr"', 'name = "v4mh-frr"\nmin_ttl = 254'))


def test_class_addresses_checked_per_family() -> None:
    """Each end's address of every session is an address of its class's family: checked on
    what the sessions write (a link-local class must give fe80::/10 addresses)."""
    t = topo.load(CLASSES)
    assert check.class_conflicts(t) == []
    ll = next(c for c in t.classes if c.family == "ipv6-ll")
    wrong = dataclasses.replace(t, classes=tuple(
        dataclasses.replace(c, family="ipv6") if c is ll else c for c in t.classes))
    # slot_address writes fd00:: for "ipv6": sound; swapping the writer is what the check sees
    assert check.class_conflicts(wrong) == []
    orig = topo.slot_address
    try:
        topo.slot_address = lambda fam, v4, mh="": orig("ipv6" if fam == "ipv6-ll" else fam,
                                                        v4, mh)
        found = check.class_conflicts(t)
    finally:
        topo.slot_address = orig
    assert found[0] == topo.Conflict(
        "session-class", f"{CLASSES}: class v6ll-frr: peer address fd00::a4d:105 is not an "
        "ipv6-ll address")
    assert {c.kind for c in found} == {"session-class"}


def test_classes_plan_pairs_every_session() -> None:
    """Both ends of all 40 sessions pair: FRR's 20 on the peer host, BIRD's 20 in its
    namespace, each dut's mirror blocks; link-local blocks name the host's interface."""
    plans = plan.plan_hosts(topo.load(CLASSES))
    peer = plans["peer1"]
    assert (len(peer.peers), len(peer.bird.peers)) == (20, 20)
    assert check.pair_sessions(plans) == []
    ll = [b for b in plans["dut1"].peers if b.peer.startswith("fe80::")]
    assert [b.head for b in ll[:1]] == [
        "peer fe80::a4d:105 local-address fe80::a4d:5 interface enp1s0"]
    mh = [b for b in plans["dut1"].peers if b.multihop]
    assert [(b.peer, b.minimum_ttl) for b in mh] == [
        ("10.78.1.7", 0), ("10.78.1.8", 0), ("fd00::a4e:109", 0), ("fd00::a4e:10a", 0),
        ("10.78.1.17", 63), ("10.78.1.18", 63), ("fd00::a4e:113", 63), ("fd00::a4e:114", 63)]
    assert plans["dut1"].zebra and peer.zebra
    # drop BIRD's side of one session: named
    broken = dict(plans, peer1=dataclasses.replace(peer, bird=dataclasses.replace(
        peer.bird, neighbors=peer.bird.neighbors[1:])))
    assert check.pair_sessions(broken) == [topo.Conflict(
        "session-mismatch", ": host dut1: peer 10.77.1.11 local-address 10.77.0.11 has no "
        "mirror block on the peer")]
