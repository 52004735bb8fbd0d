"""bfdcap on generated captures with hand-computed expectations: file formats, link types,
exact nearest-rank percentiles, budgets, down episodes, Demand, windows, bad input."""

from __future__ import annotations

import json
import math
import random
import subprocess
from fractions import Fraction

import pcapgen as g
import pytest
from conftest import BFDCAP, bfdcap_json, ms_to_ns

from lab.judge.bfdcap import analyse

T0 = 1_700_000_000_000_000_000
A4, B4 = "192.0.2.1", "192.0.2.2"
A6, B6 = "2001:db8::1", "2001:db8::2"


def packets_json(path) -> list[dict]:
    out = subprocess.run([str(BFDCAP), "--packets", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(x) for x in out.splitlines()]


# --- formats and link types ---------------------------------------------------------------

ENCAPS = {
    "ether": (g.LINKTYPE_ETHERNET, lambda l3, v6: g.ether(l3, v6=v6)),
    "dot1q": (g.LINKTYPE_ETHERNET, lambda l3, v6: g.ether(l3, (100,), v6=v6)),
    "qinq": (g.LINKTYPE_ETHERNET, lambda l3, v6: g.ether(l3, (10, 20), v6=v6)),
    "sll": (g.LINKTYPE_LINUX_SLL, lambda l3, v6: g.sll(l3, v6=v6)),
    "sll2": (g.LINKTYPE_LINUX_SLL2, lambda l3, v6: g.sll2(l3, v6=v6)),
    "raw": (g.LINKTYPE_RAW, lambda l3, v6: l3),
}


@pytest.mark.parametrize("encap", sorted(ENCAPS))
@pytest.mark.parametrize("family", [4, 6])
@pytest.mark.parametrize("fmt", ["pcap-ns", "pcap-us", "pcapng-ns", "pcapng-us"])
def test_formats_and_link_types_decode_alike(tmp_path, encap, family, fmt, bfdcap):
    src, dst = (A4, B4) if family == 4 else (A6, B6)
    linktype, wrap = ENCAPS[encap]
    ts = T0 + 123_456_789
    l3 = g.ip_udp(src, dst, g.bfd(state="Init", diag=3, flags="PC", mult=5, my=0xDEADBEEF,
                                  your=7, tx_us=50000, rx_us=60000, echo_us=70000),
                  sport=50001, dport=4784, ttl=254)
    frame = wrap(l3, family == 6)
    path = tmp_path / "x.cap"
    if fmt.startswith("pcapng"):
        g.write_pcapng(path, [(linktype, 9 if fmt.endswith("ns") else 6)], [(0, ts, frame)])
    else:
        g.write_pcap(path, [(ts, frame)], linktype, nano=fmt.endswith("ns"))
    (p,) = packets_json(path)
    assert p == {
        "ts_ns": ts if fmt.endswith("ns") else ts // 1000 * 1000,
        "src": src, "dst": dst, "sport": 50001, "dport": 4784, "ttl": 254, "version": 1,
        "diag": 3, "state": 2, "poll": True, "final": False, "cpi": True, "auth": False,
        "demand": False, "multipoint": False, "detect_mult": 5, "length": 24,
        "my_disc": 0xDEADBEEF, "your_disc": 7, "desired_min_tx_us": 50000,
        "required_min_rx_us": 60000, "required_min_echo_rx_us": 70000}


# --- a scripted two-end session ------------------------------------------------------------

def session(events, family=4):
    """events: [(t_us, 'a'|'b', bfd kwargs)] -> frames (Ethernet), a = A4, b = B4."""
    src = {"a": A4, "b": B4} if family == 4 else {"a": A6, "b": B6}
    frames = []
    for t_us, who, kw in sorted(events, key=lambda e: e[0]):
        kw = dict(kw)
        kw.setdefault("my", 1 if who == "a" else 2)
        kw.setdefault("your", 2 if who == "a" else 1)
        l3 = g.ip_udp(src[who], src["b" if who == "a" else "a"], g.bfd(**kw))
        frames.append((T0 + t_us * 1000, g.ether(l3, v6=family == 6)))
    return frames


def test_nearest_rank_percentiles_are_exact(tmp_path):
    """1000 distinct gaps: p99.9 is rank 999 (ceil(99.9/100*1000), not 1000 as in floating
    point), p99 rank 990, p90 rank 900, p50 rank 500."""
    rng = random.Random(7)
    gaps_us = [9000 + i for i in range(1000)]
    rng.shuffle(gaps_us)
    ev, t = [], 0
    ev.append((0, "b", {"state": "Up"}))
    for gap in [0] + gaps_us:
        t += gap
        ev.append((t + 1, "a", {"state": "Up"}))
    g.write_pcap(tmp_path / "p.pcap", session(ev))
    got = bfdcap_json(tmp_path / "p.pcap")
    end = next(e for e in got["sessions"][0]["ends"] if e["src"] == A4)
    s = sorted(x * 1000 for x in gaps_us)
    assert end["gap_ns"] == {"n": 1000, "p50": s[499], "p90": s[899], "p99": s[989],
                             "p99_9": s[998], "max": s[999]}
    assert math.ceil(Fraction("99.9") / 100 * 1000) == 999
    assert ms_to_ns(end["gap_ms"]["p99_9"]) == s[998]


@pytest.mark.parametrize("n", [1, 2, 7, 99, 100, 101])
def test_percentile_ranks_small_n(tmp_path, n):
    ev = [(0, "b", {"state": "Up"})]
    t = 0
    gaps = [10_000 + 37 * i for i in range(n)]
    for gap in [0] + gaps:
        t += gap
        ev.append((t + 1, "a", {"state": "Up"}))
    g.write_pcap(tmp_path / "p.pcap", session(ev))
    end = next(e for e in bfdcap_json(tmp_path / "p.pcap")["sessions"][0]["ends"]
               if e["src"] == A4)
    s = sorted(x * 1000 for x in gaps)
    rank = {p: math.ceil(Fraction(p) * n / 100) for p in ("50", "90", "99", "99.9")}
    assert end["gap_ns"] == {"n": n, "p50": s[rank["50"] - 1], "p90": s[rank["90"] - 1],
                             "p99": s[rank["99"] - 1], "p99_9": s[rank["99.9"] - 1],
                             "max": s[-1]}


def flap_events():
    """A and B Up at 10 ms x3; B misses A for 40 ms and says Down (diag 1) at 100 ms; A goes
    Down (diag 3), then Init/Up; both Up again at 130 ms. B's budget: 3 x 10 ms = 30 ms."""
    ev = []
    for t in range(0, 60_001, 10_000):  # A: 0..60 ms Up
        ev.append((t, "a", {"state": "Up"}))
    for t in range(5_000, 95_001, 10_000):  # B: 5..95 ms Up
        ev.append((t, "b", {"state": "Up"}))
    ev += [
        (100_000, "b", {"state": "Down", "diag": 1, "your": 0, "tx_us": 1_000_000}),
        (105_000, "a", {"state": "Down", "diag": 3, "tx_us": 1_000_000}),
        (110_000, "b", {"state": "Init", "diag": 1, "tx_us": 1_000_000}),
        (115_000, "a", {"state": "Up", "diag": 0}),
        (120_000, "b", {"state": "Up", "diag": 0}),
        (125_000, "a", {"state": "Up"}),
        (130_000, "b", {"state": "Up"}),
        (135_000, "a", {"state": "Up"}),
    ]
    return ev


def test_down_episode_budget_and_not_up(tmp_path):
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    got = bfdcap_json(tmp_path / "f.pcap")
    (s,) = got["sessions"]
    assert s["key"] == f"{A4}-{B4}:3784" and s["port"] == 3784
    assert s["down_events"] == 1
    assert s["episodes"] == [{"start_ns": T0 + 100_000_000, "end_ns": T0 + 120_000_000,
                              "src": B4, "diag": 1, "last_gap_ms": 5}]
    a, b = s["ends"]
    assert (a["src"], b["src"]) == (A4, B4)
    assert a["down_events"] == 0 and b["down_events"] == 1
    # A: Up gaps 0..60 (6 x 10 ms), then 60 -> 105 is not Up at both ends; 115->125->135 Up.
    assert a["gap_ns"]["n"] == 8 and a["gap_ns"]["max"] == 10_000_000
    assert a["packets"] == 11 and b["packets"] == 14
    # B's counted gaps: 9 x 10 ms (5..95) and 120 -> 130.
    assert b["gap_ns"] == {"n": 10, "p50": 10_000_000, "p90": 10_000_000, "p99": 10_000_000,
                           "p99_9": 10_000_000, "max": 10_000_000}
    assert a["transitions"] == [
        {"ts_ns": T0 + 105_000_000, "from": "Up", "to": "Down", "diag": 3},
        {"ts_ns": T0 + 115_000_000, "from": "Down", "to": "Up", "diag": 0}]
    assert b["transitions"] == [
        {"ts_ns": T0 + 100_000_000, "from": "Up", "to": "Down", "diag": 1},
        {"ts_ns": T0 + 110_000_000, "from": "Down", "to": "Init", "diag": 1},
        {"ts_ns": T0 + 120_000_000, "from": "Init", "to": "Up", "diag": 0}]
    assert ms_to_ns(a["not_up_ms"]) == 10_000_000  # 105 -> 115
    assert ms_to_ns(b["not_up_ms"]) == 20_000_000  # 100 -> 120
    assert a["class"] == b["class"] == "10ms x3"
    assert ms_to_ns(a["budget_ms"]) == 30_000_000
    assert float(a["max_over_budget"]) == 10_000_000 / 30_000_000
    assert a["last_state"] == "Up" and b["last_state"] == "Up"
    (c,) = got["classes"]
    assert c["ends"] == 2 and c["sessions"] == 1 and c["down_events"] == 1
    assert c["session_down_events"] == 1 and c["ends_up_at_end"] == 2
    assert c["gap_ns"]["n"] == 18


def test_gap_over_budget_uses_budget_when_gap_began(tmp_path):
    """A stalls 50 ms (budget 30 ms). B goes Down meanwhile advertising 1 s: the gap is judged
    against the 30 ms in force when it began, not B's later values."""
    ev = [(0, "b", {"state": "Up"}), (0, "a", {"state": "Up"}), (10_000, "a", {"state": "Up"}),
          (12_000, "b", {"state": "Up"}),
          (42_000, "b", {"state": "Down", "diag": 1, "your": 0, "tx_us": 1_000_000,
                         "rx_us": 1_000_000}),
          (60_000, "a", {"state": "Up"})]
    g.write_pcap(tmp_path / "s.pcap", session(ev))
    a = bfdcap_json(tmp_path / "s.pcap")["sessions"][0]["ends"][0]
    assert a["gap_ns"]["n"] == 2 and a["gap_ns"]["max"] == 50_000_000
    assert a["gaps_over_budget"] == 1
    assert float(a["max_over_budget"]) == 50_000_000 / 30_000_000
    assert ms_to_ns(a["budget_ms"]) == 3_000_000_000  # now: B asks for 1 s


def test_demand_mode_gaps_not_counted(tmp_path):
    ev = [(0, "a", {"state": "Up"}), (0, "b", {"state": "Up", "flags": "D"}),
          (500_000, "a", {"state": "Up"}), (900_000, "a", {"state": "Up"})]
    g.write_pcap(tmp_path / "d.pcap", session(ev))
    a = bfdcap_json(tmp_path / "d.pcap")["sessions"][0]["ends"][0]
    assert a["gap_ns"]["n"] == 0 and a["max_over_budget"] is None


def test_gap_needs_reverse_direction(tmp_path):
    ev = [(0, "a", {"state": "Up"}), (10_000, "a", {"state": "Up"}),
          (15_000, "b", {"state": "Up"}), (20_000, "a", {"state": "Up"})]
    g.write_pcap(tmp_path / "r.pcap", session(ev))
    a = bfdcap_json(tmp_path / "r.pcap")["sessions"][0]["ends"][0]
    assert a["gap_ns"]["n"] == 1 and a["gap_ns"]["max"] == 10_000_000


def test_windows_phases_and_tags(tmp_path):
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    phases = [{"name": "early", "start_ns": T0, "end_ns": T0 + 100_000_000},
              {"name": "late", "start_ns": T0 + 100_000_000, "end_ns": T0 + 200_000_000,
               "note": ["ignored", {"x": 1}]}]
    (tmp_path / "ph.json").write_text(json.dumps(phases))
    got = analyse(tmp_path / "f.pcap", tags=[("left", f"{A4}/32"), ("right", "192.0.2.0/24")],
                  phases=tmp_path / "ph.json", bfdcap=BFDCAP)
    assert [(c["tag"], c["class"]) for c in got["classes"]] == [("left", "10ms x3"),
                                                                ("right", "10ms x3")]
    early, late = (p["classes"] for p in got["phases"])
    assert [c["down_events"] for c in early] == [0, 0]
    assert [c["down_events"] for c in late] == [0, 1]
    assert [c["session_down_events"] for c in late] == [1, 1]
    # A's gap 60 -> 105 is not counted; its early gaps end at 10..60 ms: 6.
    assert early[0]["gap_ns"]["n"] == 6 and late[0]["gap_ns"]["n"] == 2
    assert early[1]["ends_up_at_end"] == 1 and late[1]["ends_up_at_end"] == 1
    # --from/--to: the window [100 ms, 120 ms) holds the start of the episode.
    w = bfdcap_json("--from", T0 + 100_000_000, "--to", T0 + 120_000_000, tmp_path / "f.pcap")
    assert w["bfd_packets"] == 4 and w["sessions"][0]["down_events"] == 1
    # The tag with a destination prefix.
    got = bfdcap_json("--tag", f"ab={A4}>{B4}", tmp_path / "f.pcap")
    assert [e["tag"] for e in got["sessions"][0]["ends"]] == ["ab", ""]
    # Two rules of one name are one tag: both ends pooled into one class entry.
    got = bfdcap_json("--tag", f"one={A4}/32", "--tag", f"two={B4}/32", "--tag", f"one={B4}/32",
                      tmp_path / "f.pcap")
    assert [(c["tag"], c["ends"]) for c in got["classes"]] == [("one", 1), ("two", 1)]
    got = bfdcap_json("--tag", f"one={A4}/32", "--tag", f"one={B4}/32", tmp_path / "f.pcap")
    assert [(c["tag"], c["ends"], c["sessions"]) for c in got["classes"]] == [("one", 2, 1)]
    assert [t["name"] for t in got["tags"]] == ["one", "one"]


# --- bad input ------------------------------------------------------------------------------

def test_malformed_counted_by_reason(tmp_path):
    good = g.ip_udp(A4, B4, g.bfd())
    frames = [
        g.ether(good)[:30],  # cut inside IP
        g.ether(g.ip_udp(A4, B4, g.bfd()[:20])),  # UDP payload too short
        g.ether(g.ip_udp(A4, B4, g.bfd(version=2))),
        g.ether(g.ip_udp(A4, B4, g.bfd(length=20))),
        g.ether(g.ip_udp(A4, B4, g.bfd(length=40))),
        g.ether(g.ip_udp(A4, B4, g.bfd(mult=0))),
        g.ether(g.ip_udp(A4, B4, g.bfd(flags="M"))),
        g.ether(g.ip_udp(A4, B4, g.bfd(my=0))),
        g.ether(g.ip_udp(A4, B4, g.bfd(state="Up", your=0))),
        g.ether(g.ip_udp(A4, B4, g.bfd(flags="PF"))),
        g.ether(good),
        g.ether(g.ip_udp(A4, B4, b"x" * 30, dport=53)),  # not BFD: ignored
    ]
    g.write_pcap(tmp_path / "m.pcap", [(T0 + i, f) for i, f in enumerate(frames)])
    got = bfdcap_json(tmp_path / "m.pcap")
    assert got["frames"] == 12 and got["bfd_packets"] == 1
    assert got["malformed"] == {"truncated": 1, "short_payload": 1, "bad_version": 1,
                                "bad_length": 1, "length_gt_payload": 1, "zero_mult": 1,
                                "multipoint": 1, "zero_my_disc": 1, "zero_your_disc": 1,
                                "poll_and_final": 1}
    lines = packets_json(tmp_path / "m.pcap")
    assert lines[0] == {"ts_ns": T0, "malformed": "truncated"}
    assert lines[5]["detect_mult"] == 0 and "malformed" not in lines[5]
    assert len(lines) == 11


def _set16(b: bytes, off: int, v: int) -> bytes:
    return b[:off] + v.to_bytes(2, "big") + b[off + 2:]


def test_checksums_reported_like_tshark(tmp_path):
    """IPv4 header and UDP checksums (RFC 791, 768; RFC 8200 8.1: zero over IPv6 is invalid),
    the engine's discard names, as counts and on --packets lines; the packets stay tracked.
    tshark's own checksum verdicts on the same file are the reference."""
    v4, v6 = g.ip_udp(A4, B4, g.bfd()), g.ip_udp(A6, B6, g.bfd(my=3, your=4))
    odd = g.ip_udp(A4, B4, g.bfd() + b"\x5a")  # odd payload: the last byte padded
    frames = [
        (g.ether(v4), None),
        (g.ether(_set16(v4, 26, v4[26] << 8 ^ 0x0100 | v4[27])), "bad_udp_checksum"),
        (g.ether(_set16(v4, 26, 0)), None),  # IPv4: no checksum
        (g.ether(_set16(v4, 10, int.from_bytes(v4[10:12], "big") ^ 1)), "bad_ip_checksum"),
        (g.ether(odd), None),
        (g.ether(odd[:-1] + b"\x5b"), "bad_udp_checksum"),
        (g.ether(v6, v6=True), None),
        (g.ether(_set16(v6, 46, 0), v6=True), "zero_udp_checksum_ipv6"),
        (g.ether(_set16(v6, 46, int.from_bytes(v6[46:48], "big") ^ 0x10), v6=True),
         "bad_udp_checksum"),
        (g.ether(_set16(g.ip_udp(A4, B4, b"e" * 8, sport=3785, dport=3785), 26, 1)),
         "bad_udp_checksum"),  # echo
    ]
    g.write_pcap(tmp_path / "c.pcap", [(T0 + i * 1000, f) for i, (f, _) in enumerate(frames)])
    lines = packets_json(tmp_path / "c.pcap")
    assert [ln.get("checksum") for ln in lines] == [want for _, want in frames]
    got = bfdcap_json(tmp_path / "c.pcap")
    assert got["checksums"] == {"bad_ip_checksum": 1, "bad_udp_checksum": 4,
                                "zero_udp_checksum_ipv6": 1}
    assert got["malformed"] == {} and got["bfd_packets"] == 9
    out = subprocess.run(["tshark", "-r", str(tmp_path / "c.pcap"), "-o",
                          "udp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE", "-T",
                          "fields", "-e", "ip.checksum.status", "-e", "udp.checksum.status"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    # tshark: 0 bad, 1 good, 2 unverified; it skips UDP when the IP header is bad
    bad = ["0" in ln.split("\t") for ln in out]
    assert bad == [want is not None and want != "zero_udp_checksum_ipv6" for _, want in frames]


def test_truncated_file_reports_what_it_read(tmp_path):
    ev = [(t, "a", {"state": "Up"}) for t in range(0, 50_000, 10_000)]
    g.write_pcap(tmp_path / "t.pcap", session(ev))
    data = (tmp_path / "t.pcap").read_bytes()
    (tmp_path / "cut.pcap").write_bytes(data[:-10])
    got = bfdcap_json(tmp_path / "cut.pcap")
    assert got["bfd_packets"] == 4 and got["malformed"] == {"read_error": 1}
    assert got["read_error"]


@pytest.mark.parametrize("args", [["--tag", "x"], ["--tag", "x=300.1.1.1"], ["--from", "1.5"],
                                  ["--to", "abc"], ["--bogus"], []])
def test_bad_command_line(tmp_path, args):
    r = subprocess.run([str(BFDCAP), *args] + (["/dev/null"] if args else []),
                       capture_output=True, text=True)
    assert r.returncode == 2, r


def test_not_a_capture(tmp_path):
    (tmp_path / "x").write_text("hello")
    r = subprocess.run([str(BFDCAP), str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 1 and "bfdcap:" in r.stderr
    with pytest.raises(RuntimeError, match="bfdcap"):
        analyse(tmp_path / "x", bfdcap=BFDCAP)


def test_phase_names_are_read_as_json_strings(tmp_path):
    """The lab's phases.json comes from json.dumps: non-ASCII names arrive as \\u escapes and must
    come out as the same text, and a name given twice counts as its last."""
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    (tmp_path / "ph.json").write_text(json.dumps([
        {"name": "L1 \u00e9 \"q\"", "start_ns": T0, "end_ns": T0 + 1}]))
    (tmp_path / "twice.json").write_text(
        '[{"name": "first", "name": "second", "start_ns": 1, "end_ns": 2}]')
    assert [p["name"] for p in bfdcap_json("--phases", tmp_path / "ph.json",
                                           tmp_path / "f.pcap")["phases"]] == ['L1 \u00e9 "q"']
    assert [p["name"] for p in bfdcap_json("--phases", tmp_path / "twice.json",
                                           tmp_path / "f.pcap")["phases"]] == ["second"]


def test_bad_phases_file(tmp_path):
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    for text in ["{}", '[{"name": "x", "start_ns": 1.5, "end_ns": 2}]', '[{"name": "x"}]',
                 '[{"name": "x", "start_ns": 5, "end_ns": 2}]', "[", '[{"name": "x",']:
        (tmp_path / "ph.json").write_text(text)
        r = subprocess.run([str(BFDCAP), "--phases", str(tmp_path / "ph.json"),
                            str(tmp_path / "f.pcap")], capture_output=True, text=True)
        assert r.returncode == 1 and "phases" in r.stderr, (text, r)


# --- readers: pcapng interfaces, resolutions, sections, gzip, stdin, libpcap ------------------

def one(src=A4, dst=B4, my=1, v6=False):
    return g.ip_udp(src, dst, g.bfd(my=my, your=9))


def test_pcapng_interfaces_resolutions_sections(tmp_path):
    """Two sections (little- then big-endian); per interface its own link type, if_tsresol
    (10^-9, 10^-6, 10^-3, 2^-30, 2^-10, default) and if_tsoffset; SPB and obsolete blocks."""
    ts = T0 + 987_654_321
    itfs1 = [(g.LINKTYPE_ETHERNET, 9), (g.LINKTYPE_LINUX_SLL2, 6), (g.LINKTYPE_RAW, 3),
             (g.LINKTYPE_LINUX_SLL, 0x80 | 30), (g.LINKTYPE_ETHERNET, None),
             (g.LINKTYPE_ETHERNET, 9, -1_000_000)]
    enc = [g.ether, g.sll2, lambda x: x, g.sll, g.ether, g.ether]
    pk1 = [(i, ts + i, enc[i](one(my=i + 1))) for i in range(len(itfs1))]
    itfs2 = [(g.LINKTYPE_RAW, 0x80 | 10)]
    pk2 = [(0, ts + 100, one(my=100)), (0, ts + 200, one(my=101), "opb"),
           (0, ts + 300, one(my=102), "spb")]
    data = g.pcapng_section(itfs1, pk1) + g.pcapng_section(itfs2, pk2, big_endian=True)
    (tmp_path / "n.pcapng").write_bytes(data)
    got = packets_json(tmp_path / "n.pcapng")
    want = []
    for (i, t, _), itf in zip(pk1, itfs1):
        res = 6 if itf[1] is None else itf[1]
        off = itf[2] if len(itf) > 2 else 0
        want.append(g.units_ns(g.ts_units(t, res, off), res, off))
    want.append(g.units_ns(g.ts_units(ts + 100, 0x80 | 10), 0x80 | 10))
    want.append(g.units_ns(g.ts_units(ts + 200, 0x80 | 10), 0x80 | 10))
    assert [p["ts_ns"] for p in got[:8]] == want
    assert [p["my_disc"] for p in got[:8]] == [1, 2, 3, 4, 5, 6, 100, 101]
    assert want[0] == ts and want[1] == (ts + 1) // 1000 * 1000 and want[5] == ts + 5
    assert got[8] == {"ts_ns": want[-1], "malformed": "no_timestamp"}
    rep = bfdcap_json(tmp_path / "n.pcapng")
    assert rep["bfd_packets"] == 8 and rep["malformed"] == {"no_timestamp": 1}


def test_hardware_timestamps_small_epoch(tmp_path):
    """tcpdump -j adapter_unsynced writes the NIC's own clock (often seconds since boot)."""
    ev = [(t, "a", {"state": "Up"}) for t in range(0, 50_000, 10_000)]
    frames = [(12_345_678_901_234 + i * 10_000_001, f) for i, (_, f) in
              enumerate(session(ev))]
    g.write_pcap(tmp_path / "hw.pcap", frames)
    got = packets_json(tmp_path / "hw.pcap")
    assert [p["ts_ns"] for p in got] == [t for t, _ in frames]
    rep = bfdcap_json(tmp_path / "hw.pcap")
    assert rep["first_ts_ns"] == 12_345_678_901_234


def test_gzip_and_stdin(tmp_path):
    import gzip

    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    plain = (tmp_path / "f.pcap").read_bytes()
    (tmp_path / "f.pcap.gz").write_bytes(gzip.compress(plain))
    want = packets_json(tmp_path / "f.pcap")
    assert packets_json(tmp_path / "f.pcap.gz") == want
    for data in (plain, gzip.compress(plain)):
        out = subprocess.run([str(BFDCAP), "--packets", "-"], input=data, capture_output=True,
                             check=True).stdout
        assert [json.loads(x) for x in out.splitlines()] == want
    rep = json.loads(subprocess.run([str(BFDCAP), "--json", "-"], input=gzip.compress(plain),
                                    capture_output=True, check=True).stdout)
    assert rep["sessions"][0]["down_events"] == 1 and rep["file"] == "-"


@pytest.mark.parametrize("fmt", ["pcap-ns", "pcap-us", "pcapng", "pcapng-be"])
def test_readers_agree_with_libpcap(tmp_path, fmt):
    frames = session(flap_events())
    path = tmp_path / "x"
    if fmt.startswith("pcapng"):
        path.write_bytes(g.pcapng_section([(g.LINKTYPE_ETHERNET, 9)],
                                          [(0, t, f) for t, f in frames],
                                          big_endian=fmt.endswith("be")))
    else:
        g.write_pcap(path, frames, nano=fmt.endswith("ns"))
    ours = subprocess.run([str(BFDCAP), "--packets", str(path)], capture_output=True,
                          text=True, check=True).stdout
    theirs = subprocess.run([str(BFDCAP), "--reader", "libpcap", "--packets", str(path)],
                            capture_output=True, text=True, check=True).stdout
    assert ours == theirs and len(ours.splitlines()) == len(frames)


def test_damaged_pcapng_is_an_error_not_a_crash(tmp_path):
    data = g.pcapng_section([(g.LINKTYPE_ETHERNET, 9)],
                            [(0, T0 + i, g.ether(one())) for i in range(3)])
    for cut in (len(data) - 5, 40, 30):
        (tmp_path / "c.pcapng").write_bytes(data[:cut])
        r = subprocess.run([str(BFDCAP), "--json", str(tmp_path / "c.pcapng")],
                           capture_output=True, text=True)
        assert r.returncode in (0, 1), r
        if r.returncode == 0:
            assert json.loads(r.stdout)["read_error"]
    bad = bytearray(data)
    bad[-4] ^= 0xFF  # trailer length no longer matches
    (tmp_path / "t.pcapng").write_bytes(bytes(bad))
    rep = bfdcap_json(tmp_path / "t.pcapng")
    assert rep["bfd_packets"] == 2 and "trailer" in rep["read_error"]


# --- detection, jitter, reply latency, Poll/Final, incarnations, CSV, 6784, echo -------------

def test_detection_time_and_budget(tmp_path):
    """A goes silent at 40 ms (last packet Up); B declares at 72 ms: 32 ms against A's 30 ms
    budget (3 x 10 ms). A, stalled, then wakes to B's Down packets: not a detection."""
    ev = [(t, "a", {"state": "Up"}) for t in range(0, 40_001, 10_000)]
    ev += [(t, "b", {"state": "Up"}) for t in range(5_000, 65_001, 10_000)]
    ev += [(72_000, "b", {"state": "Down", "diag": 1, "your": 0, "tx_us": 1_000_000}),
           (900_000, "a", {"state": "Down", "diag": 1, "tx_us": 1_000_000})]
    g.write_pcap(tmp_path / "d.pcap", session(ev))
    got = bfdcap_json(tmp_path / "d.pcap")
    a, b = got["sessions"][0]["ends"]
    assert b["detections"] == [{"ts_ns": T0 + 72_000_000, "detect_ms": 32,
                                "budget_ms": 30}]
    assert b["detection"] == {"n": 1, "early": 0, "min_ms": 32, "max_ms": 32,
                              "max_overshoot_ms": 2}
    assert a["detections"] == [] and a["detection"]["n"] == 0
    (c,) = got["classes"]
    assert c["detection"]["n"] == 1 and ms_to_ns(c["detection"]["max_overshoot_ms"]) == 2 * 10**6


def test_jitter_conformance(tmp_path):
    """Interval 10 ms: 7.5..10 ms conform; 7.4 early, 10.1 late; with Detect Mult 1 the
    upper bound is 9 ms. Gaps touching a Poll or Final packet are not judged."""
    gaps_us = [8000, 7500, 7400, 10_000, 10_100, 9000]
    ev, t = [(0, "b", {"state": "Up"})], 0
    ev.append((1, "a", {"state": "Up"}))
    for gp in gaps_us:
        t += gp
        ev.append((t + 1, "a", {"state": "Up"}))
    ev.append((t + 1 + 3000, "a", {"state": "Up", "flags": "F"}))  # Final: off the timer
    g.write_pcap(tmp_path / "j.pcap", session(ev))
    a = bfdcap_json(tmp_path / "j.pcap")["sessions"][0]["ends"][0]
    assert a["jitter"] == {"checked": 6, "early": 1, "late": 1}
    ev1 = [(e[0], e[1], dict(e[2], mult=1)) if e[1] == "a" else e for e in ev]
    g.write_pcap(tmp_path / "j1.pcap", session(ev1))
    a = bfdcap_json(tmp_path / "j1.pcap")["sessions"][0]["ends"][0]
    assert a["jitter"] == {"checked": 6, "early": 1, "late": 2}  # 10.0 and 10.1 over 9.0


def test_reply_latency(tmp_path):
    """B answers each A packet after 30 us, once 2.5 ms late (beyond the 2 ms window)."""
    ev = []
    for i in range(10):
        t = i * 10_000
        ev.append((t, "a", {"state": "Up"}))
        ev.append((t + (2_500 if i == 4 else 30), "b", {"state": "Up"}))
    g.write_pcap(tmp_path / "r.pcap", session(ev))
    a, b = bfdcap_json(tmp_path / "r.pcap")["sessions"][0]["ends"]
    assert b["reply_us"] == {"n": 9, "p50": 30, "p90": 30, "p99": 30, "p99_9": 30, "max": 30}
    assert a["reply_us"]["n"] == 0  # A's packets come 7.5 ms or more after B's


def test_poll_final_pairs(tmp_path):
    """A polls at 20 ms (again at 30 ms: same sequence); B's Final at 34 ms closes it after
    14 ms. B's Final at 60 ms answers no Poll. A's second Poll at 70 ms is never answered."""
    ev = [(t, "a", {"state": "Up", "flags": "P" if t in (20_000, 30_000, 70_000) else ""})
          for t in range(0, 80_001, 10_000)]
    ev += [(t, "b", {"state": "Up", "flags": "F" if t in (34_000, 60_000) else ""})
           for t in (4_000, 14_000, 24_000, 34_000, 44_000, 54_000, 60_000)]
    g.write_pcap(tmp_path / "p.pcap", session(ev))
    got = bfdcap_json(tmp_path / "p.pcap")
    a, b = got["sessions"][0]["ends"]
    assert a["polls"] == {"n": 2, "answered": 1, "max_wait_ms": 14}
    assert a["final_without_poll"] == 1
    assert b["polls"] == {"n": 0, "answered": 0, "max_wait_ms": None}
    assert got["classes"][0]["polls"] == {"n": 2, "answered": 1, "max_wait_ms": 14}


def test_incarnations_follow_discriminator_changes(tmp_path):
    """B restarts at 50 ms with a new My Discriminator: one session, two incarnations."""
    ev = [(t, "a", {"state": "Up"}) for t in range(0, 100_001, 10_000)]
    ev += [(t, "b", {"state": "Up"}) for t in range(5_000, 45_001, 10_000)]
    ev += [(55_000, "b", {"state": "Down", "my": 77, "your": 0, "tx_us": 1_000_000}),
           (75_000, "b", {"state": "Up", "my": 77}), (85_000, "b", {"state": "Up", "my": 77})]
    g.write_pcap(tmp_path / "i.pcap", session(ev))
    got = bfdcap_json(tmp_path / "i.pcap")
    assert len(got["sessions"]) == 1
    b = got["sessions"][0]["ends"][1]
    assert b["incarnations"] == [{"my_disc": 2, "first_ts_ns": T0 + 5_000_000, "packets": 5},
                                 {"my_disc": 77, "first_ts_ns": T0 + 55_000_000, "packets": 3}]
    assert b["my_disc"] == 77 and got["classes"][0]["restarts"] == 1


def test_csv_gaps(tmp_path):
    g.write_pcap(tmp_path / "f.pcap", session(flap_events()))
    subprocess.run([str(BFDCAP), "--csv-gaps", str(tmp_path / "g.csv"), "--tag",
                    "x,y=192.0.2.1", str(tmp_path / "f.pcap")], check=True,
                   capture_output=True)
    lines = (tmp_path / "g.csv").read_text().splitlines()
    assert lines[0] == "ts_ns,session,src,dst,tag,gap_ns,budget_ns"
    assert lines[1] == f'{T0 + 10_000_000},{A4}-{B4}:3784,{A4},{B4},"x,y",10000000,30000000'
    assert len(lines) == 1 + 18
    rep = bfdcap_json(tmp_path / "f.pcap")
    assert sum(e["gap_ns"]["n"] for e in rep["sessions"][0]["ends"]) == 18


def test_micro_bfd_and_echo(tmp_path):
    """UDP 6784 (RFC 7130) sessions are tracked like 3784; echo on 3785 is counted."""
    frames = []
    for i in range(5):
        for who, (s, d) in (("a", (A4, B4)), ("b", (B4, A4))):
            frames.append((T0 + i * 10_000_000 + (who == "b"),
                           g.ether(g.ip_udp(s, d, g.bfd(my=1 if who == "a" else 2,
                                                        your=2 if who == "a" else 1),
                                            dport=6784))))
        frames.append((T0 + i * 10_000_000 + 5, g.ether(g.ip_udp(A4, A4, b"\0" * 8,
                                                                 sport=50000, dport=3785))))
    g.write_pcap(tmp_path / "m.pcap", frames)
    got = bfdcap_json(tmp_path / "m.pcap")
    assert got["echo_packets"] == 5 and got["bfd_packets"] == 10
    (s,) = got["sessions"]
    assert s["port"] == 6784 and s["key"] == f"{A4}-{B4}:6784"
    assert [e["gap_ns"]["n"] for e in s["ends"]] == [4, 4]


@pytest.mark.parametrize("gaps_ns", [
    [-1000, 4_500_000_000, 6_000_000_000, 100],  # 8-byte gaps on both sides of the 4-byte ones
    [-5, -3, 7],
    [2**32 - 1, 2**32, 2**32 + 1, 0, 1],
    [10_000_000] * 70 + [-1, 5_000_000_000],  # radix-sorted part plus both outliers
])
def test_gap_storage_extremes(tmp_path, gaps_ns):
    """Gaps are kept in 4 bytes when in [0, 2^32) ns, else aside: percentiles must not care.
    Negative gaps come from a capture whose timestamps go backwards (counted in ts_backwards)."""
    t = T0 + 10**12
    frames = [(T0, g.ether(g.ip_udp(B4, A4, g.bfd(state="Up", my=2, your=1))))]
    frames.append((t, g.ether(g.ip_udp(A4, B4, g.bfd(state="Up")))))
    for gap in gaps_ns:
        t += gap
        frames.append((t, g.ether(g.ip_udp(A4, B4, g.bfd(state="Up")))))
    g.write_pcap(tmp_path / "x.pcap", frames)
    got = bfdcap_json(tmp_path / "x.pcap")
    a = next(e for e in got["sessions"][0]["ends"] if e["src"] == A4)
    s = sorted(gaps_ns)
    n = len(s)
    rank = {p: math.ceil(Fraction(p) * n / 100) for p in ("50", "90", "99", "99.9")}
    assert a["gap_ns"] == {"n": n, "p50": s[rank["50"] - 1], "p90": s[rank["90"] - 1],
                           "p99": s[rank["99"] - 1], "p99_9": s[rank["99.9"] - 1],
                           "max": s[-1]}
    assert got["ts_backwards"] == sum(1 for x in gaps_ns if x < 0)
    assert got["classes"][0]["gap_ns"] == a["gap_ns"]
