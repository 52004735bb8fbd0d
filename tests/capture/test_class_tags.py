"""The lab's bfdcap tags (lab.judge.figures.Tags) on a capture built with lab.wire: every end of
topologies/classes.toml lands in its own class, IPv6 global, link-local and multihop (UDP 4784)
included, although all classes here share one set of timers."""

from __future__ import annotations

import pcapgen as g
from conftest import BFDCAP, ROOT

from lab import topo
from lab.judge import episodes, figures
from lab.judge.bfdcap import analyse
from lab.wire import bfd, frames

CLASSES = ROOT / "topologies" / "classes.toml"
T0 = 1_800_000_000_000_000_000
PACKETS = 6  # per end, 10 ms apart: 5 counted gaps each


def _capture(t: topo.Topology) -> list[tuple[int, bytes]]:
    """Both ends of every session of every device, Up at 10 ms x3, the device's end 1 ms
    after the peer's."""
    out = []
    disc = 1
    for d in t.devices:
        for s in t.sessions(d.name):
            port = 4784 if s.multihop else 3784
            ttl = 254 if s.multihop else 255
            for k in range(PACKETS):
                ts = T0 + k * 10_000_000
                for off, src, dst, my, your in ((0, s.peer_address, s.device_address, disc + 1,
                                                 disc),
                                                (1_000_000, s.device_address, s.peer_address,
                                                 disc, disc + 1)):
                    ctl = bfd.control("Up", my, your, tx_us=10_000, rx_us=10_000)
                    frame = frames.udp_frame("02:00:00:00:00:01", "02:00:00:00:00:02", src, dst,
                                             49152, port, ctl, ttl=ttl)
                    out.append((ts + off, frame))
            disc += 2
    return sorted(out)


def test_every_class_tagged_by_its_addresses(tmp_path) -> None:
    t = topo.load(CLASSES)
    g.write_pcap(tmp_path / "c.pcap", _capture(t))
    rep = analyse(tmp_path / "c.pcap", figures.Tags(t).all(), bfdcap=BFDCAP)
    assert rep["bfd_packets"] == 2 * t.sessions_per_device * 2 * PACKETS
    # Every end's tag: its device (or the peer facing it) and its class.
    want = {}
    for d in t.devices:
        for s in t.sessions(d.name):
            want[s.device_address] = f"{d.name}/{s.cls.name}"
            want[(s.peer_address, s.device_address)] = f"peer-{d.name}/{s.cls.name}"
    got = {}
    for sess in rep["sessions"]:
        for e in sess["ends"]:
            key = e["src"] if e["src"] in want else (e["src"], e["dst"])
            got[key] = e["tag"]
    assert got == want
    ports = {sess["key"]: sess["port"] for sess in rep["sessions"]}
    assert (ports["10.78.0.7-10.78.1.7:4784"], ports["[fe80::a4d:5]-[fe80::a4d:105]:3784"],
            ports["[fd00::a4e:9]-[fd00::a4e:109]:4784"]) == (4784, 3784, 4784)
    # One bfdcap class per device and class (same timers everywhere), 2 sessions each.
    assert [(c["tag"], c["ends"], c["sessions"], c["gap_ns"]["n"]) for c in rep["classes"]] == [
        (f"{who}{d.name}/{c.name}", 2, 2, 2 * (PACKETS - 1))
        for who in ("", "peer-") for d in t.devices for c in t.classes]
    figs = figures.figures(t, rep)
    for d in t.devices:
        classes = figs["duts"][d.name]["classes"]
        assert list(classes) == [c.name for c in t.classes]
        assert figs["duts"][d.name]["sessions_up_end"] == t.sessions_per_device
        keys = ("family", "multihop", "echo", "demand", "asymmetric", "peer")
        attrs = {n: {k: c[k] for k in keys} for n, c in classes.items()}
        assert attrs["v4-frr"] == {"family": "ipv4", "multihop": False, "echo": False,
                                   "demand": False, "asymmetric": False, "peer": "frr"}
        assert attrs["v6ll-bird"] == {"family": "ipv6-ll", "multihop": False, "echo": False,
                                      "demand": False, "asymmetric": False, "peer": "bird"}
        assert attrs["v6mh-frr"] == {"family": "ipv6", "multihop": True, "echo": False,
                                     "demand": False, "asymmetric": False, "peer": "frr"}
        assert attrs["v4mh-bird"]["multihop"] and attrs["v4mh-bird"]["family"] == "ipv4"
        assert classes["v6-frr"]["packets"] == 2 * PACKETS
        assert classes["v6-frr"]["gap_ms"]["max"] == 10.0
        peer = figs["peer"]["towards"][d.name]["classes"]
        assert list(peer) == [c.name for c in t.classes]
        assert peer["v6ll-frr"]["family"] == "ipv6-ll" and peer["v6ll-frr"]["packets"] == 12
    # The gap counter of rule (e) and the episodes find each end's class the same way.
    cls = episodes.class_of_ends(t, rep)
    assert cls[("[fe80::a4d:105]-[fe80::a4d:205]:3784", "fe80::a4d:205")] == "v6ll-frr"
    assert cls[("[fd00::a4e:113]-[fd00::a4e:213]:4784", "fd00::a4e:113")] == "v6mh-bird"


def test_tag_split() -> None:
    assert figures.Tags.split("engine/v6ll-frr") == ("engine", "v6ll-frr", False)
    assert figures.Tags.split("peer-bfdd/10ms") == ("bfdd", "10ms", True)
    assert figures.Tags.split("engine") is None
    assert figures.Tags.split("") is None
