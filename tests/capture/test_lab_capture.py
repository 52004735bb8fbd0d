"""bfdcap against an independent reference (tshark fields + Python) on a real lab capture:
FRR bfdd on both ends, two 10 ms and two 50 ms sessions (v4 and v6), one bfdd stopped for 1 s.
Every figure must match to the nanosecond."""

from __future__ import annotations

import ipaddress
import json
import re
from decimal import Decimal

import labcap
import reference
from conftest import bfdcap_json, ms_to_ns

from lab.judge.bfdcap import analyse

INF = 2**63 - 1
TAGS = [("v4", "10.213.0.0/24"), ("v6", "fd13::/64")]


def tag_preds():
    preds = []
    for name, spec in TAGS:
        net = ipaddress.ip_network(spec)
        preds.append((name, lambda s, d, net=net: ipaddress.ip_address(s) in net))
    return preds


def test_capture_is_clean(lab_run):
    assert re.search(r"^0 packets dropped by kernel$", lab_run["tcpdump_log"], re.M), \
        lab_run["tcpdump_log"]


def test_ends_match_reference(lab_run):
    got = bfdcap_json(lab_run["pcap"])
    pkts = reference.tshark_packets(lab_run["pcap"])
    ref = reference.analyse(pkts, [("all", -INF - 1, INF)])
    assert got["bfd_packets"] == len(pkts)
    assert got["malformed"] == {}
    assert len(got["sessions"]) == 4
    assert {s["key"] for s in got["sessions"]} == set(ref["sessions"])
    for s in got["sessions"]:
        rs = ref["sessions"][s["key"]]
        assert len(s["episodes"]) == len(rs["episodes"]) == s["down_events"], s["key"]
        for ep, rep in zip(s["episodes"], rs["episodes"]):
            assert ep["start_ns"] == rep["start"]
            assert ep["src"] == rep["src"]
            assert ep["diag"] == rep["diag"]
            assert ms_to_ns(ep["last_gap_ms"]) == rep["gap"]
        assert len(s["ends"]) == 2
        for e in s["ends"]:
            re = ref["ends"][(s["key"], e["src"])]
            what = f"{s['key']} from {e['src']}"
            assert e["packets"] == re["packets"][0], what
            want = reference.summary(re["gaps"][0])
            assert e["gap_ns"] == want, what
            assert {k: ms_to_ns(v) if k != "n" else v for k, v in e["gap_ms"].items()} == want
            ratios = re["ratios"][0]
            assert e["max_over_budget"] == (Decimal(repr(max(r for r, _ in ratios)))
                                            if ratios else None), what
            assert e["gaps_over_budget"] == sum(1 for _, o in ratios if o), what
            assert e["transitions"] == re["transitions"], what
            assert e["down_events"] == re["down"][0], what
            assert ms_to_ns(e["not_up_ms"]) == re["not_up_ns"], what
            assert e["class"] == re["class_name"], what
            last = re["last"]
            peer = ref["ends"][(s["key"], e["dst"])]["last"]
            interval_us = max(last["tx_us"], peer["rx_us"])
            assert ms_to_ns(e["interval_ms"]) == interval_us * 1000
            assert ms_to_ns(e["budget_ms"]) == last["mult"] * interval_us * 1000
            assert e["last_state"] == reference.STATE_NAMES[last["state"]]
            assert e["my_disc"] == last["my_disc"]
            check_events(e, re, 0, (-INF - 1, INF))


def us_to_ns(v) -> int | None:
    return None if v is None else int(Decimal(v) * 1000)


def check_events(e: dict, re: dict, w: int, win) -> None:
    """Jitter, reply latency, detections, Polls and incarnations of one end against the
    reference."""
    what = e["src"]
    assert [e["jitter"][k] for k in ("checked", "early", "late")] == re["jitter"][w], what
    want = reference.summary(re["reply"][w])
    assert {k: us_to_ns(v) if k != "n" else v for k, v in e["reply_us"].items()} == want
    dets = [d for d in re["detections"] if win[0] <= d[0] < win[1]]
    assert [(d["ts_ns"], ms_to_ns(d["detect_ms"]), ms_to_ns(d["budget_ms"]))
            for d in e["detections"]] == dets, what
    assert e["detection"]["n"] == len(dets)
    assert e["detection"]["early"] == sum(1 for d in dets if d[1] < d[2])
    polls = [p for p in re["polls"] if win[0] <= p[0] < win[1]]
    open_poll = re["poll_open"] is not None and win[0] <= re["poll_open"] < win[1]
    assert e["polls"]["n"] == len(polls) + open_poll and e["polls"]["answered"] == len(polls)
    assert ms_to_ns(e["polls"]["max_wait_ms"]) == max((p[1] for p in polls), default=None)
    assert e["final_without_poll"] == re["final_without_poll"]
    assert [[i["my_disc"], i["first_ts_ns"], i["packets"]] for i in e["incarnations"]] == \
        re["incarnations"]


A_ADDRS = {a for a, _, _ in labcap.SESSIONS}
B_ADDRS = {b for _, b, _ in labcap.SESSIONS}


def test_sigstop_made_real_down_events(lab_run):
    """Every session was down during the 1 s stop, by detection time expired (diag 1), and
    came back Up. (10 ms bfdd sessions on this shared 2-CPU machine also flap by themselves now
    and then; those are real episodes too, and the reference tests count them alike.)"""
    got = bfdcap_json(lab_run["pcap"])
    t_stop, t_cont = lab_run["t_stop"], lab_run["t_cont"]
    for s in got["sessions"]:
        during = [ep for ep in s["episodes"] if ep["start_ns"] < t_cont
                  and (ep["end_ns"] is None or ep["end_ns"] > t_stop + 300_000_000)]
        assert len(during) == 1, (s["key"], s["episodes"])
        assert during[0]["diag"] == 1
        assert s["up_at_end"] is True


def test_bfdd_counters_agree(lab_run):
    """Each end's Up-to-not-Up transitions on the wire equal that bfdd's own session-down
    counter for the peer (show bfd peers counters). Episodes may be fewer: an end can leave Up
    twice within one episode while its peer is still coming back."""
    got = bfdcap_json(lab_run["pcap"])
    for role, mine in (("a", A_ADDRS), ("b", B_ADDRS)):
        by_peer = {str(ipaddress.ip_address(c["peer"])): c["session-down"]
                   for c in lab_run["counters"][role]}
        for s in got["sessions"]:
            end = next(e for e in s["ends"] if e["src"] in mine)
            downs = sum(1 for t in end["transitions"] if t["from"] == "Up")
            assert downs == by_peer[end["dst"]], (role, s["key"], by_peer)
            both = sum(1 for e in s["ends"] for t in e["transitions"] if t["from"] == "Up")
            assert s["down_events"] <= both


def test_classes_tags_and_phases_match_reference(lab_run):
    via_lab = analyse(lab_run["pcap"], tags=TAGS, phases=lab_run["phases"])
    got = bfdcap_json("--tag", "v4=10.213.0.0/24", "--tag", "v6=fd13::/64", "--phases",
                      lab_run["phases"], lab_run["pcap"])
    pkts = reference.tshark_packets(lab_run["pcap"])
    windows = [("all", -INF - 1, INF)] + [(p["name"], p["start_ns"], p["end_ns"])
                                          for p in lab_run["phase_list"]]
    ref = reference.analyse(pkts, windows, tag_preds())
    assert via_lab["classes"] == json.loads(json.dumps(got["classes"], default=float))
    tables = [got["classes"]] + [p["classes"] for p in got["phases"]]
    assert [p["name"] for p in got["phases"]] == ["steady", "cut", "after"]
    for w, table in enumerate(tables):
        want = reference.classes(ref, w)
        assert {(c["tag"], c["class"]) for c in table} == set(want), windows[w][0]
        for c in table:
            rc = want[(c["tag"], c["class"])]
            what = (windows[w][0], c["tag"], c["class"])
            for k in ("ends", "sessions", "packets", "gaps_over_budget", "down_events",
                      "session_down_events", "ends_up_at_end"):
                assert c[k] == rc[k], (what, k, c[k], rc[k])
            assert c["gap_ns"] == rc["gap_ns"], what
            assert c["max_over_budget"] == (None if rc["max_over_budget"] is None
                                            else Decimal(repr(rc["max_over_budget"]))), what
            iv, mult = rc["class"]
            assert ms_to_ns(c["budget_ms"]) == iv * mult * 1000
            assert [c["jitter"][k] for k in ("checked", "early", "late")] == rc["jitter"]
            assert {k: us_to_ns(v) if k != "n" else v for k, v in c["reply_us"].items()} \
                == rc["reply_us"], what
            assert c["detection"]["n"] == rc["detections"]
            assert ms_to_ns(c["detection"]["max_ms"]) == rc["detect_max"]
    # The classes the lab set up: 10 ms x3 and 50 ms x3 in both families.
    assert {(c["tag"], c["class"]) for c in got["classes"]} == {
        ("v4", "10ms x3"), ("v4", "50ms x3"), ("v6", "10ms x3"), ("v6", "50ms x3")}
    # Every session went down in the cut (more episodes are possible: 10 ms bfdd sessions on a
    # shared 2-CPU machine flap by themselves now and then; the reference counts those too).
    cut = got["phases"][1]["classes"]
    assert sum(c["down_events"] for c in cut) >= 4
    assert all(c["session_down_events"] >= c["sessions"] for c in cut)
    steady = got["phases"][0]["classes"]
    assert all(c["gap_ns"]["n"] > 0 for c in steady)


def test_from_to_window_matches_reference(lab_run):
    start = lab_run["t_stop"]
    end = lab_run["t_cont"] + 1_000_000_000
    got = bfdcap_json("--from", start, "--to", end, lab_run["pcap"])
    pkts = reference.tshark_packets(lab_run["pcap"])
    ref = reference.analyse([p for p in pkts if p["ts"] < end], [("w", start, end)])
    assert got["bfd_packets"] == sum(1 for p in pkts if start <= p["ts"] < end)
    for s in got["sessions"]:
        assert s["down_events"] == sum(1 for ep in ref["sessions"][s["key"]]["episodes"]
                                       if start <= ep["start"] < end)
        for e in s["ends"]:
            re = ref["ends"][(s["key"], e["src"])]
            assert e["gap_ns"] == reference.summary(re["gaps"][0])
            assert e["packets"] == re["packets"][0]
            assert ms_to_ns(e["not_up_ms"]) == re["not_up_ns"]
            assert e["transitions"] == re["transitions"]
            check_events(e, re, 0, (start, end))
