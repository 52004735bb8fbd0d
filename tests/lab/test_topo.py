"""Fast tests of the topology loader and of the pure parts of the lab (no root needed)."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest

from lab import topo, topo_checks
from lab.harness import bringup
from lab.judge import figures, verdict
from lab.rig import bird, capture, neigh, stress
from lab.rig.bfdpeer import interfaces as bfdpeer_interfaces, session_list

REPO = Path(__file__).resolve().parents[2]

DEMO = REPO / "topologies" / "demo.toml"


def test_demo_topology_sessions_and_addresses() -> None:
    t = topo.load(DEMO)
    assert [d.name for d in t.devices] == ["engine", "bfdd"]
    assert [(c.name, c.interval_ms, c.detect_mult, c.count) for c in t.classes] == [
        ("10ms", 10, 3, 8), ("50ms", 50, 3, 8), ("300ms", 300, 3, 16)]
    assert t.sessions_per_device == 32
    assert t.peer_addresses() == [f"10.77.1.{i}" for i in range(1, 33)]
    assert t.device_addresses("engine") == [f"10.77.0.{i}" for i in range(1, 33)]
    assert t.device_addresses("bfdd") == [f"10.77.2.{i}" for i in range(1, 33)]
    for dev in ("engine", "bfdd"):
        ss = t.sessions(dev)
        assert len(ss) == 32
        assert [s.cls.name for s in ss].count("10ms") == 8
        assert [s.cls.name for s in ss].count("300ms") == 16
        # FRR 8.4.4 keys peers by destination only: no destination may repeat on either side
        assert len({s.peer_address for s in ss}) == 32
        assert len({s.device_address for s in ss}) == 32
    e = t.sessions("engine")
    first, last = e[0], e[31]
    assert (first.peer_address, first.device_address, first.cls.name) == (
        "10.77.1.1", "10.77.0.1", "10ms")
    assert (last.peer_address, last.device_address, last.cls.name) == (
        "10.77.1.32", "10.77.0.32", "300ms")


def test_peer_holds_one_session_per_device_address() -> None:
    t = topo.load(DEMO)
    cfgs = [c for d in t.devices for c in bringup.peer_cfgs(t, d.name, "peer")]
    assert len(cfgs) == 64
    assert len({c.peer for c in cfgs}) == 64  # every destination distinct on the peer
    dev = bringup.peer_cfgs(t, "bfdd", "device")
    assert dev[0].lines() == ["peer 10.77.1.1 local-address 10.77.2.1", "receive-interval 10",
                              "transmit-interval 10", "detect-multiplier 3"]


def test_tags_cover_each_class_exactly() -> None:
    t = topo.load(DEMO)
    rules = figures.Tags(t).all()
    assert [r for r in rules if r[0] == "engine/10ms"] == [
        ("engine/10ms", "10.77.0.1/32"), ("engine/10ms", "10.77.0.2/31"),
        ("engine/10ms", "10.77.0.4/30"), ("engine/10ms", "10.77.0.8/32")]
    assert [r for r in rules if r[0] == "peer-bfdd/50ms"][0] == (
        "peer-bfdd/50ms", "10.77.1.9/32>10.77.2.0/27")
    assert len({r[0] for r in rules}) == 12  # 2 devices x 3 classes, own and peer's ends

    def tag_of(src: str, dst: str) -> str:  # bfdcap's rule: first match wins
        for name, spec in rules:
            s, _, d = spec.partition(">")
            if ipaddress.ip_address(src) in ipaddress.ip_network(s) and (
                    not d or ipaddress.ip_address(dst) in ipaddress.ip_network(d)):
                return name
        return ""

    for d in t.devices:
        for s in t.sessions(d.name):
            assert tag_of(s.device_address, s.peer_address) == f"{d.name}/{s.cls.name}"
            assert tag_of(s.peer_address, s.device_address) == f"peer-{d.name}/{s.cls.name}"


def test_select_devices() -> None:
    t = topo.load(DEMO).select(["bfdd"])
    assert [d.name for d in t.devices] == ["bfdd"]
    with pytest.raises(topo.TopologyError, match="no device named 'nope'"):
        topo.load(DEMO).select(["nope"])


@pytest.mark.parametrize("old,new,msg", [
    ("interval_ms = 10", "intreval_ms = 10", r"unknown key\(s\) intreval_ms"),
    ('kind = "bfdd"', 'knid = "bfdd"', r"unknown key\(s\) knid"),
    ("prefix_len = 16", "prefix_length = 16", r"\[topology\]: unknown key"),
    ("[peer]", "[peers]", r"unknown table\(s\) peers"),
    ("count = 16", "", r"missing key\(s\) count"),
    ("count = 16", 'count = "16"', "count must be int"),
    ('kind = "bfdd"', 'kind = "bird"', "kind 'bird'"),
    ('first_address = "10.77.2.1"', 'first_address = "10.77.1.20"', "overlap"),
    ('first_address = "10.77.2.1"', 'first_address = "10.78.2.1"', "not a host of"),
    ("interval_ms = 300", "interval_ms = 5", "outside bfdd's 10..60000"),
])
def test_bad_topology_fails_at_load(old: str, new: str, msg: str) -> None:
    text = DEMO.read_text()
    assert old in text
    with pytest.raises(topo.TopologyError, match=msg):
        topo.parse(text.replace(old, new, 1), "bad.toml")


def test_stress_metrics_and_load_argv() -> None:
    text = ("stress-ng: info:  [7155] dispatching hogs: 2 cpu\n"
            "stress-ng: metrc: [7155] stressor       bogo ops real time  usr time  sys time"
            "   bogo ops/s     bogo ops/s\n"
            "stress-ng: metrc: [7155]                           (secs)    (secs)    (secs)"
            "   (real time) (usr+sys time)\n"
            "stress-ng: metrc: [7155] cpu                8963      5.00      9.01      0.01"
            "      1791.76         993.78\n")
    assert stress.parse_metrics(text) == {"cpu": 8963}
    assert stress.L4.argv(30, ncpu=2) == ["stress-ng", "--cpu", "2", "--sched", "fifo",
                                          "--sched-prio", "50", "--timeout", "30s",
                                          "--metrics-brief"]


def test_tcpdump_stats() -> None:
    text = ("tcpdump: listening on any\n26269 packets captured\n26791 packets received by "
            "filter\n0 packets dropped by kernel\n")
    assert capture.parse_tcpdump_stats(text) == {"captured": 26269, "received": 26791,
                                                 "dropped": 0}


def _cls(tag: str, interval: float, n_up: int, mob: float, sdown: int) -> dict:
    gap = {"n": 10, "p50": interval * 0.9, "p90": interval, "p99": interval, "p99_9": interval,
           "max": interval * mob * 3}
    return {"tag": tag, "class": f"{interval:g}ms x3", "interval_ms": interval, "detect_mult": 3,
            "budget_ms": interval * 3, "ends": n_up, "sessions": n_up, "packets": 100,
            "gap_ms": gap, "max_over_budget": mob, "gaps_over_budget": 0, "down_events": 0,
            "session_down_events": sdown, "ends_up_at_end": n_up}


def test_report_figures_and_verdict() -> None:
    t = topo.load(DEMO)
    classes = [_cls("engine/10ms", 10.0, 8, 0.4, 0), _cls("engine/50ms", 50.0, 8, 0.3, 0),
               _cls("engine/300ms", 300.0, 16, 0.35, 0),
               _cls("bfdd/10ms", 10.0, 8, 0.8, 40), _cls("bfdd/300ms", 300.0, 15, 1.2, 7),
               _cls("peer-engine/10ms", 10.0, 8, 0.5, 0),
               _cls("peer-bfdd/10ms", 10.0, 8, 0.6, 40)]
    f = figures.figures(t, {"classes": classes, "phases": [
        {"name": "L4", "start_ns": 1, "end_ns": 2, "classes": classes}]})
    eng, bfd = f["duts"]["engine"], f["duts"]["bfdd"]
    assert (eng["sessions"], eng["sessions_up_end"], eng["down_events"]) == (32, 32, 0)
    assert (bfd["sessions_up_end"], bfd["down_events"]) == (23, 47)
    assert set(eng["classes"]) == {"10ms", "50ms", "300ms"}
    assert {k: eng["classes"]["50ms"][k] for k in ("family", "multihop", "peer", "asymmetric")} \
        == {"family": "ipv4", "multihop": False, "peer": "frr", "asymmetric": False}
    assert eng["classes"]["10ms"]["gap_ms"]["p99"] == 10.0
    assert f["peer"]["max_over_budget"] == 0.6
    assert f["phases"][0]["duts"]["bfdd"]["down_events"] == 47
    kinds = verdict.kinds({"duts": f["duts"]})
    ph = f["phases"][0]
    assert verdict.step_result(ph["duts"], kinds, [])["verdict"] == "PASS"
    ph["duts"]["engine"]["down_events"] = 2
    r = verdict.step_result(ph["duts"], kinds, [])
    assert r["verdict"] == "FAIL" and r["failures"] == [
        "engine: 2 counted down events"]  # no rule applied: all count
    assert verdict.step_result(ph["duts"], kinds, ["why"])["verdict"] == "VOID"
    assert verdict.end_failures({"duts": f["duts"]}) == []
    f["duts"]["engine"]["sessions_up_end"] = 31
    assert verdict.end_failures({"duts": f["duts"]}) == ["engine: 31/32 sessions Up at the end"]


def test_engine_args_reach_the_engine_argv() -> None:
    t = topo.load(REPO / "topologies" / "spread.toml")
    assert [(d.name, d.kind, d.engine_argv) for d in t.devices] == [
        ("engine", "engine", []), ("spread", "engine", ["--spread-pass"]), ("bfdd", "bfdd", [])]
    assert t.device_addresses("spread")[-1] == "10.77.3.32"
    assert len(t.peer_addresses()) == 32  # one peer address per session index, all devices


@pytest.mark.parametrize("dev, msg", [
    ('name = "bfdd"\nkind = "bfdd"\nfirst_address = "10.77.2.1"\nengine_args = "--spread-pass"',
     'device bfdd: engine_args is for kind "engine" only'),
    ('name = "e"\nkind = "engine"\nfirst_address = "10.77.2.1"\nengine_args = "--kernel-tx x"',
     "device e: engine_args sets --kernel-tx, which the lab sets itself"),
    ('name = "e"\nkind = "engine"\nfirst_address = "10.77.2.1"\nengine_args = "spread"',
     "device e: engine_args must start with an option, got 'spread'"),
    ('name = "e"\nkind = "engine"\nfirst_address = "10.77.2.1"\nengine_args = "--x \'y"',
     "device e: engine_args: No closing quotation"),
])
def test_engine_args_refused(dev: str, msg: str) -> None:
    text = ('[topology]\nname = "t"\nprefix_len = 16\n[peer]\nfirst_address = "10.77.1.1"\n'
            f'[[device]]\n{dev}\n'
            '[[class]]\nname = "10ms"\ninterval_ms = 10\ndetect_mult = 3\ncount = 2\n')
    with pytest.raises(topo.TopologyError) as e:
        topo.parse(text, "t.toml")
    assert str(e.value) == f"t.toml: {msg}"


def test_peer_kind_and_bfdpeer_session_list() -> None:
    t = topo.load(DEMO)
    assert t.peer.kind == "frr"  # the default when [peer] names none
    fast = t.with_peer_kind("bfdpeer")
    assert fast.peer.kind == "bfdpeer" and fast.devices == t.devices
    with pytest.raises(topo.TopologyError, match="'bird' not in"):
        t.with_peer_kind("bird")
    text = DEMO.read_text().replace('first_address = "10.77.1.1"',
                                    'first_address = "10.77.1.1"\nkind = "bfdpeer"', 1)
    assert topo.parse(text, "t.toml").peer.kind == "bfdpeer"
    with pytest.raises(topo.TopologyError, match=r"\[peer\] kind 'bfd' not in"):
        topo.parse(text.replace('kind = "bfdpeer"', 'kind = "bfd"'), "t.toml")
    # the peer's side of every device's sessions, in the topology's order
    doc = session_list(t)["sessions"]
    assert len(doc) == 64
    assert doc[0] == {"local": "10.77.1.1", "peer": "10.77.0.1", "interval_ms": 10,
                      "detect_mult": 3}
    assert doc[32] == {"local": "10.77.1.1", "peer": "10.77.2.1", "interval_ms": 10,
                       "detect_mult": 3}
    assert doc[63] == {"local": "10.77.1.32", "peer": "10.77.2.32", "interval_ms": 300,
                       "detect_mult": 3}


def test_neigh_limits_wanted_per_entry_count() -> None:
    w = neigh.wanted(4160)  # the 1,024-session mesh: 2 devices x 1,024 x 2 ends + 64
    assert w["ipv4/neigh/default/gc_thresh1"] == 4160
    assert w["ipv4/neigh/default/gc_thresh2"] == 8320
    assert w["ipv6/neigh/default/gc_thresh3"] == 16640
    assert len(w) == 6


CLASSES = REPO / "topologies" / "classes.toml"


def test_classes_topology_addresses_per_family_and_hop() -> None:
    t = topo.load(CLASSES)
    assert t.router == topo.Router("10.77.3.254", "10.78.0.0/16")
    assert t.peer_kinds == ["frr", "bird"]
    ss = {s.cls.name: s for s in reversed(t.sessions("engine"))}  # each class's first session
    assert [(ss[n].peer_address, ss[n].device_address, ss[n].device_prefix_len) for n in
            ("v4-frr", "v6-frr", "v6ll-frr", "v4mh-frr", "v6mh-frr")] == [
        ("10.77.1.1", "10.77.0.1", 16), ("fd00::a4d:103", "fd00::a4d:3", 112),
        ("fe80::a4d:105", "fe80::a4d:5", 64), ("10.78.1.7", "10.78.0.7", 32),
        ("fd00::a4e:109", "fd00::a4e:9", 128)]
    assert ss["v4-bird"].cls.peer == "bird" and ss["v4-bird"].cls.budget_ms == 300
    assert ss["v6ll-frr"].cls.label == "ipv6-ll 1hop frr"
    # the device's bfdd sees every session; FRR at the far end only its own, with its interface
    dev = bringup.peer_cfgs(t, "engine", "device")
    assert len(dev) == 40 and bringup.needs_zebra(dev)
    assert dev[4].lines() == ["peer fe80::a4d:105 local-address fe80::a4d:5 interface dut0",
                              "receive-interval 50", "transmit-interval 50",
                              "detect-multiplier 3"]
    assert dev[6].head == "peer 10.78.1.7 multihop local-address 10.78.0.7"
    assert dev[16].lines()[-2:] == ["detect-multiplier 3", "minimum-ttl 63"]  # BIRD multihop
    assert len(dev[6].lines()) == 4  # bfdd's default 254
    far = bringup.peer_cfgs(t, "engine", "peer")
    assert [c.peer for c in far] == [s.device_address for s in t.sessions("engine")
                                     if s.cls.peer == "frr"]
    # echo (both ends): echo-mode and FRR 8.4.4's intervals, the interface named (IPv4 echo)
    assert far[13].lines() == ["peer fd00::a4d:18 local-address fd00::a4d:118 interface peer0",
                               "receive-interval 50", "transmit-interval 50",
                               "detect-multiplier 3", "echo-mode", "echo transmit-interval 50",
                               "echo receive-interval 50"]
    assert dev[20].head == "peer 10.77.1.21 local-address 10.77.0.21 interface dut0"
    # per end: passive and shut in the bfdd of that end only; Demand is the engine's option
    assert (dev[28].lines()[-1], far[16].lines()[-1]) == ("passive-mode", "detect-multiplier 3")
    assert (dev[30].lines()[-1], far[18].lines()[-1]) == ("detect-multiplier 3", "passive-mode")
    assert (dev[34].lines()[-1], far[20].lines()[-1]) == ("shutdown", "detect-multiplier 3")
    assert (dev[38].lines()[-1], far[22].lines()[-1]) == ("detect-multiplier 3", "shutdown")
    assert topo_checks.engine_demand_args(t, "engine") == [
        "--demand", "10.77.1.25,10.77.1.26,10.77.1.27,10.77.1.28"]
    assert [c.report_on("bfdd")["demand"] for c in t.classes if c.demand] == [False, False]
    assert (t.up_per_device, t.sessions_per_device) == (34, 40)
    assert ss["v4echo-frr"].cls.report["echo"] and not ss["v4-frr"].cls.report["echo"]
    neighbors, single, multi = bringup.bird_neighbors(t.select(["engine"]))
    assert [n.line() for n in neighbors[4:7]] == [
        'neighbor fe80::a4d:f dev "peer0" local fe80::a4d:10f;',
        'neighbor fe80::a4d:10 dev "peer0" local fe80::a4d:110;',
        "neighbor 10.78.0.17 local 10.78.1.17 multihop yes;"]
    assert single == multi == bird.Timers(100, 3)


def test_asymmetric_class_timers() -> None:
    c = topo.SessionClass("a", 50, 3, 1, peer_interval_ms=300, peer_detect_mult=5)
    assert c.peer_timers == (300, 5)
    assert c.budget_ms == 1500  # the peer's mult x max(our RX, its TX): RFC 5880 6.8.4


@pytest.mark.parametrize("old,new,msg", [
    ('family = "ipv6"', 'family = "inet6"', "family 'inet6' not in"),
    ('peer = "bird"', 'peer = "gobgp"', "peer 'gobgp' not in"),
    ("multihop = true", 'multihop = "yes"', "multihop must be bool"),
    ('family = "ipv6-ll"', 'family = "ipv6-ll"\nmultihop = true', "link-local address cannot be "
     "multihop"),
    ('multihop_prefix = "10.78.0.0/16"', 'multihop_prefix = "10.78.0.0/24"', "must be a /16"),
    ('multihop_prefix = "10.78.0.0/16"', 'multihop_prefix = "10.77.0.0/16"', "overlaps"),
    ('address = "10.77.3.254"', 'address = "10.77.1.1"', "must be a free host"),
    ('address = "10.77.3.254"', 'address = "10.77.3"', r"\[router\]"),
    ('name = "v4mh-bird"\npeer = "bird"', 'name = "v4mh-bird"\npeer = "bird"\n'
     "peer_interval_ms = 300", "BIRD multihop classes have different peer timers"),
    ('name = "v4-frr"', 'name = "v4-frr"\npeer_interval_ms = 5', "peer_interval_ms 5 outside"),
    ('name = "v4-frr"', 'name = "v4-frr"\nmin_ttl = 63', "min_ttl is for multihop classes"),
    ("min_ttl = 63", "min_ttl = 255", "min_ttl 255 outside bfdd's 1..254"),
    ('name = "v4-bird"', 'name = "v4-bird"\necho = true', "echo is single-hop FRR only"),
    ('name = "v4mh-frr"', 'name = "v4mh-frr"\necho = true', "echo is single-hop FRR only"),
    ("echo_interval_ms = 50", "echo_interval_ms = 5", "echo_interval_ms 10..60000"),
])
def test_bad_classes_fail_at_load(old: str, new: str, msg: str) -> None:
    text = CLASSES.read_text()
    assert old in text
    with pytest.raises(topo.TopologyError, match=msg):
        topo.parse(text.replace(old, new, 1), "bad.toml")


def test_multihop_needs_a_router() -> None:
    text = CLASSES.read_text()
    start = text.index("[router]")
    text = text[:start] + text[text.index("[[device]]"):]
    with pytest.raises(topo.TopologyError, match="multihop needs a \\[router\\] table"):
        topo.parse(text, "bad.toml")


ENGINES = REPO / "topologies" / "engines.toml"


def test_engine_peer_topology() -> None:
    """Two engines facing each other (issue 8 item 9): the peer's namespace "epeer" holds every
    peer address, with xdp_pass on its wire port (its engine sends XDP_TX frames); its bfdd gets
    the sessions of every device, FRR's none; the report says peer "engine"."""
    from lab.rig.netns import Netns

    t = topo.load(ENGINES)
    assert t.peer_kinds == ["engine"]
    ends = {e.role: e for e in Netns.for_topology("xb000000", t, Path("x.o")).ends}
    assert ends["epeer"].xdp_pass and not ends["peer"].addrs
    assert len(ends["epeer"].addrs) == t.sessions_per_device
    blocks = [c for d in t.devices for c in bringup.peer_cfgs(t, d.name, "peer", "engine")]
    assert len(blocks) == 2 * t.sessions_per_device
    assert bringup.peer_cfgs(t, "engine", "peer") == []
    asym = [b for b in blocks if b.peer == "10.77.0.9"]
    assert [(b.interval_ms, b.detect_mult) for b in asym] == [(50, 3)]
    assert {c.report["peer"] for c in t.classes} == {"engine"}


def test_engine_peer_is_single_hop() -> None:
    text = CLASSES.read_text().replace('name = "v4mh-frr"', 'name = "v4mh-frr"\npeer = "engine"')
    with pytest.raises(topo.TopologyError, match="an engine peer is single hop only"):
        topo.parse(text, "bad.toml")


ENDS_TOPO = """
[topology]
name = "ends"
prefix_len = 16
[peer]
first_address = "10.77.1.1"
kind = "{runner}"
[[device]]
name = "engine"
kind = "engine"
first_address = "10.77.0.1"
[[class]]
name = "plain"
interval_ms = 300
detect_mult = 3
count = 1
[[class]]
name = "ends"
interval_ms = 300
detect_mult = 3
count = 2
passive = "device"
admin_down = "peer"
demand = "{demand}"
"""


def test_class_ends_render_at_each_end() -> None:
    """Per-end options (lab.topo_checks): passive / shutdown in the FRR blocks of their end,
    demand as the engine's --demand PEER list and as bfdpeer's keys, and in the report."""
    t = topo.parse(ENDS_TOPO.format(runner="bfdpeer", demand="both"))
    ends = t.classes[1]
    assert (ends.report["demand"], t.classes[0].report["demand"]) == (True, False)
    dev = bringup.peer_cfgs(t, "engine", "device")
    assert [c.lines()[4:] for c in dev] == [[], ["passive-mode"], ["passive-mode"]]
    peer = bringup.peer_cfgs(t, "engine", "peer")
    assert [c.lines()[4:] for c in peer] == [[], ["shutdown"], ["shutdown"]]
    assert topo_checks.engine_demand_args(t, "engine") == ["--demand", "10.77.1.2,10.77.1.3"]
    rows = session_list(t)["sessions"]
    assert [{k: r.get(k) for k in ("passive", "admin_down", "demand")} for r in rows] == [
        {"passive": None, "admin_down": None, "demand": None},
        {"passive": None, "admin_down": True, "demand": True},
        {"passive": None, "admin_down": True, "demand": True}]
    assert topo_checks.engine_demand_args(
        topo.parse(ENDS_TOPO.format(runner="frr", demand="")), "engine") == []


@pytest.mark.parametrize("runner,demand,admin,why", [
    ("frr", "peer", "peer", "demand at the peer needs [peer] kind \"bfdpeer\""),
    ("bfdpeer", "sideways", "peer", "demand 'sideways' not in"),
    ("bfdpeer", "", "both", "admin_down \"both\""),
])
def test_class_ends_refused(runner: str, demand: str, admin: str, why: str) -> None:
    text = ENDS_TOPO.format(runner=runner, demand=demand).replace(
        'admin_down = "peer"', f'admin_down = "{admin}"')
    with pytest.raises(topo.TopologyError, match=re.escape(why)):
        topo.parse(text)


def test_echo_refused_against_bfdpeer() -> None:
    text = ENDS_TOPO.format(runner="bfdpeer", demand="").replace(
        'name = "plain"', 'name = "plain"\necho = true')
    with pytest.raises(topo.TopologyError, match="bfdpeer has no Echo function"):
        topo.parse(text)
    assert topo.parse(text.replace('kind = "bfdpeer"', 'kind = "frr"')).classes[0].echo


MESH = REPO / "topologies" / "mesh-1024.toml"


def test_mesh_carries_every_class_bfdpeer_serves() -> None:
    """The reference mesh (issue 10 item 2): the issue's totals per rate, and every family,
    hop, asymmetric, Demand, Passive and shut class among them, all served by bfdpeer."""
    t = topo.load(MESH)
    assert t.peer.kind == "bfdpeer" and [d.kind for d in t.devices] == ["engine", "bfdd"]
    per_rate: dict[int, int] = {}
    for c in t.classes:
        per_rate[c.interval_ms] = per_rate.get(c.interval_ms, 0) + c.count
    assert per_rate == {10: 40, 50: 24, 300: 960}
    assert (t.sessions_per_device, t.up_per_device) == (1024, 1016)
    fast = {(c.family, c.multihop) for c in t.classes if c.interval_ms == 10}
    assert fast == {("ipv4", False), ("ipv6", False), ("ipv6-ll", False), ("ipv4", True),
                    ("ipv6", True)}
    assert {c.interval_ms for c in t.classes if c.asymmetric} == {10, 50, 300}
    assert {(c.demand, c.passive, c.admin_down) for c in t.classes} >= {
        ("device", "", ""), ("peer", "", ""), ("both", "", ""), ("", "device", ""),
        ("", "peer", ""), ("", "", "device"), ("", "", "peer")}
    assert not any(c.echo for c in t.classes) and {c.peer for c in t.classes} == {"frr"}
    rows = session_list(t)["sessions"]
    assert len(rows) == 2048 and sum(bool(r.get("multihop")) for r in rows) == 2 * 140
    # multihop reaches bfdpeer through the router's link: XDP there too
    assert bfdpeer_interfaces(t, "peer0", "rtr0") == ("peer0", "rtr0")
    assert bfdpeer_interfaces(topo.load(DEMO), "peer0", "rtr0") == ("peer0",)


def test_ends_topology_loads_with_demand_at_either_end() -> None:
    t = topo.load(REPO / "topologies" / "ends.toml")
    assert [(c.name, c.report["demand"]) for c in t.classes][:4] == [
        ("demand-both", True), ("demand-dev", True), ("demand-peer", True),
        ("passive-dev", False)]
    assert topo_checks.engine_demand_args(t, "engine") == [
        "--demand", "10.77.1.1,10.77.1.2,10.77.1.3,10.77.1.4"]
    assert sum(bool(r.get("demand")) for r in session_list(t)["sessions"]) == 4
