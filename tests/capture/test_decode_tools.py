"""Packet-by-packet decode checks: bfdcap --packets against what tcpdump -v and tshark -V print
for the same files (tcpdump's own BFD test captures, a generated capture holding every kind of
packet, and a real lab capture). Expected values come from the tools at test time."""

from __future__ import annotations

import json
import subprocess

import pytest
import tools
import zoo
from conftest import BFDCAP, PCAPS, bfdcap_json

SHARED = sorted(PCAPS.glob("*.pcap"))
CTRL_KEYS = ["ts_ns", "src", "dst", "sport", "dport", "ttl", "version", "diag", "state", "poll",
             "final", "cpi", "auth", "demand", "multipoint", "detect_mult", "length", "my_disc",
             "your_disc", "desired_min_tx_us", "required_min_rx_us",
             "required_min_echo_rx_us"]
AUTH_KEYS = ["auth_type", "auth_key_id"]


def packets(path) -> list[dict]:
    out = subprocess.run([str(BFDCAP), "--packets", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return [json.loads(x) for x in out.splitlines()]


def check_against_tshark(path) -> int:
    ours = packets(path)
    theirs = [t for t in tools.tshark_v(path) if t.get("dport") or t.get("sport")]
    assert len(ours) == len(theirs)
    n = 0
    for o, t in zip(ours, theirs):
        if o.get("echo"):
            assert not t["bfd"] and 3785 in (t["sport"], t["dport"]), (o, t)
            assert (o["src"], o["dst"], o["ts_ns"]) == (t["src"], t["dst"], t["ts_ns"])
            continue
        assert t["bfd"], t
        want = {k: v for k, v in t.items() if k != "bfd"}
        keys = CTRL_KEYS + (AUTH_KEYS + (["auth_seq"] if "auth_seq" in t else [])
                            if o["auth"] else [])
        assert list(o) == keys, o  # the exact key list of the issue, in order
        assert o == want, (o, t)
        n += 1
    return n


def check_against_tcpdump(path) -> int:
    ours = packets(path)
    theirs = tools.tcpdump_v(path)
    assert len(ours) == len(theirs)
    n = 0
    for o, t in zip(ours, theirs):
        assert o["ts_ns"] == t["ts_ns"]
        if o.get("echo") or o["sport"] == 49152:  # tcpdump 4.99.3 prints BCM-LI-SHIM there
            continue
        assert t["bfd"], t
        for k, v in t.items():
            if k in ("bfd", "udp_payload_len"):
                continue
            if k.endswith("_ms"):
                assert o[k[:-3] + "_us"] // 1000 == v, (k, o, t)
            else:
                assert o[k] == v, (k, o, t)
        assert ("auth_type" in o) == ("auth_type" in t)
        n += 1
    return n


@pytest.mark.parametrize("pcap", SHARED, ids=lambda p: p.name)
def test_shared_captures_match_tshark(pcap):
    assert check_against_tshark(pcap) > 0


@pytest.mark.parametrize("pcap", SHARED, ids=lambda p: p.name)
def test_shared_captures_match_tcpdump(pcap):
    assert check_against_tcpdump(pcap) > 0


@pytest.mark.skipif(not PCAPS.is_dir(), reason="the shared captures (../shared/data/pcaps) are "
                    "not beside this clone")
def test_shared_captures_sessions():
    """Flows and counts as tcpdump shows them (README of the captures)."""
    got = bfdcap_json(PCAPS / "bfd-multihop.pcap")
    assert got["bfd_packets"] == 40 and got["malformed"] == {}
    flows = sorted((s["port"], e["sport"], e["packets"]) for s in got["sessions"]
                   for e in s["ends"])
    assert flows == [(3784, 60409, 16), (4784, 51993, 12), (4784, 62545, 12)]
    for name, n, atype in (("simple", 15, 1), ("md5", 31, 2), ("sha1", 25, 5)):
        path = PCAPS / f"bfd-raw-auth-{name}.pcap"
        got = bfdcap_json(path)
        assert got["bfd_packets"] == n and got["malformed"] == {}
        (s,) = got["sessions"]
        (e,) = s["ends"]
        assert (e["sport"], e["packets"], e["class"]) == (1024, n, "never-up")
        assert {p["auth_type"] for p in packets(path)} == {atype}


def test_zoo_matches_tshark(tmp_path):
    zoo.write(tmp_path / "zoo.pcap")
    assert check_against_tshark(tmp_path / "zoo.pcap") == len(zoo.frames()) - 1


def test_zoo_matches_tcpdump(tmp_path):
    zoo.write(tmp_path / "zoo.pcap")
    assert check_against_tcpdump(tmp_path / "zoo.pcap") == len(zoo.frames()) - 1


def test_lab_capture_matches_tshark(lab_run):
    assert check_against_tshark(lab_run["pcap"]) > 1000


def test_lab_capture_matches_tcpdump(lab_run):
    check_against_tcpdump(lab_run["pcap"])


def libpcap_agrees(path) -> None:
    ours = subprocess.run([str(BFDCAP), "--packets", str(path)], capture_output=True,
                          text=True, check=True).stdout
    theirs = subprocess.run([str(BFDCAP), "--reader", "libpcap", "--packets", str(path)],
                            capture_output=True, text=True, check=True).stdout
    assert ours == theirs


@pytest.mark.parametrize("pcap", SHARED, ids=lambda p: p.name)
def test_shared_captures_reader_matches_libpcap(pcap):
    libpcap_agrees(pcap)


def test_lab_capture_reader_matches_libpcap(lab_run):
    libpcap_agrees(lab_run["pcap"])
