"""Independent reference for bfdcap's figures: tshark fields plus plain Python.

Written from the definitions in docs/bfdcap.md (ladder.md section 5), without looking at the C
code's structure: one dict per end, per-window lists, exact integer ns, nearest-rank
percentiles with Fraction. Used only by tests.
"""

from __future__ import annotations

import ipaddress
import math
import subprocess
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

FIELDS = [
    "frame.time_epoch", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "udp.srcport",
    "udp.dstport", "bfd.sta", "bfd.diag", "bfd.flags.d", "bfd.flags.p", "bfd.flags.f",
    "bfd.detect_time_multiplier",
    "bfd.my_discriminator", "bfd.desired_min_tx_interval", "bfd.required_min_rx_interval",
]
UP = 3
STATE_NAMES = {0: "AdminDown", 1: "Down", 2: "Init", 3: "Up"}


def tshark_packets(pcap) -> list[dict]:
    """Every BFD Control packet of the capture, in capture order, from tshark's fields."""
    cmd = ["tshark", "-r", str(pcap), "-n", "-Y",
           "bfd && (udp.dstport == 3784 || udp.dstport == 4784 || udp.dstport == 6784)",
           "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    pkts = []
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        src = v["ip.src"] or v["ipv6.src"]
        dst = v["ip.dst"] or v["ipv6.dst"]
        pkts.append({
            "ts": int(Decimal(v["frame.time_epoch"]) * 10**9),
            "src": src, "dst": dst,
            "sport": int(v["udp.srcport"]), "port": int(v["udp.dstport"]),
            "state": int(v["bfd.sta"], 16), "diag": int(v["bfd.diag"], 16),
            "demand": v["bfd.flags.d"] in ("1", "True"),
            "poll": v["bfd.flags.p"] in ("1", "True"),
            "final": v["bfd.flags.f"] in ("1", "True"),
            "mult": int(v["bfd.detect_time_multiplier"]),
            "my_disc": int(v["bfd.my_discriminator"], 16),
            "tx_us": int(v["bfd.desired_min_tx_interval"]),
            "rx_us": int(v["bfd.required_min_rx_interval"]),
        })
    return pkts


def nearest_rank(sorted_vals: list[int], p: str):
    """Value at 1-based rank ceil(p/100 * n); None for no values."""
    n = len(sorted_vals)
    if n == 0:
        return None
    rank = math.ceil(Fraction(p) * n / 100)
    return sorted_vals[min(max(rank, 1), n) - 1]


def summary(gaps: list[int]) -> dict:
    g = sorted(gaps)
    return {"n": len(g), "p50": nearest_rank(g, "50"), "p90": nearest_rank(g, "90"),
            "p99": nearest_rank(g, "99"), "p99_9": nearest_rank(g, "99.9"),
            "max": g[-1] if g else None}


def session_key(src: str, dst: str, port: int) -> tuple:
    a, b = sorted([ipaddress.ip_address(src), ipaddress.ip_address(dst)], key=lambda x: x.packed)
    if a.version == 6:
        return (f"[{a}]-[{b}]:{port}", str(a), str(b))
    return (f"{a}-{b}:{port}", str(a), str(b))


def new_end(src: str, dst: str) -> dict:
    return {
        "src": src, "dst": dst, "last": None, "ever_up": False, "class": None,
        "transitions": [], "not_up_ns": 0, "not_up_since": None,
        "gaps": defaultdict(list), "ratios": defaultdict(list), "packets": defaultdict(int),
        "down": defaultdict(int), "state_at_end": {}, "tag": "",
        "jitter": defaultdict(lambda: [0, 0, 0]), "reply": defaultdict(list),
        "pending": None, "detections": [], "poll_open": None, "polls": [],
        "final_without_poll": 0, "incarnations": [], "budget": 0, "interval": 0}


def analyse(pkts: list[dict], windows: list[tuple[str, int, int]], tags=()) -> dict:
    """windows[0] is the main window; each is (name, start_ns, end_ns), [start, end)."""
    def inside(w, ts):
        return windows[w][1] <= ts < windows[w][2]

    ends: dict = {}  # (key, src) -> dict
    sessions: dict = {}  # key -> dict
    t_end = max((p["ts"] for p in pkts), default=0)
    for p in pkts:
        key, a, b = session_key(p["src"], p["dst"], p["port"])
        s = sessions.setdefault(key, {"key": key, "a": a, "b": b, "up": False, "episodes": [],
                                      "order": len(sessions)})
        e = ends.setdefault((key, p["src"]), new_end(p["src"], p["dst"]))
        r = ends.setdefault((key, p["dst"]), new_end(p["dst"], p["src"]))
        rlast = r["last"]
        last = e["last"]
        gap = None
        if last is not None:
            gap = p["ts"] - last["ts"]
            if last["state"] != p["state"] and inside(0, p["ts"]):
                e["transitions"].append({"ts_ns": p["ts"], "from": STATE_NAMES[last["state"]],
                                         "to": STATE_NAMES[p["state"]], "diag": p["diag"]})
            if (last["state"] == UP and p["state"] == UP and rlast is not None
                    and not (rlast["state"] == UP and rlast["demand"])):
                budget = e["budget"]  # set when the gap's opening packet was sent
                pf = last["poll"] or last["final"] or p["poll"] or p["final"]
                iv = e["interval"]
                hi = 90 if last["mult"] == 1 else 100
                for w in range(len(windows)):
                    if inside(w, p["ts"]):
                        e["gaps"][w].append(gap)
                        e["ratios"][w].append((gap / budget, gap > budget))
                        if not pf:  # RFC 5880 6.8.7 jitter: 75..100 % (90 % with mult 1)
                            j = e["jitter"][w]
                            j[0] += 1
                            j[1] += gap * 100 < iv * 75
                            j[2] += gap * 100 > iv * hi
        # detection: first Down/diag 1 after Up or Init, the peer's last packet Up or Init
        if (p["state"] == 1 and p["diag"] == 1 and last and last["state"] in (2, 3)
                and rlast and rlast["state"] in (2, 3)):
            e["detections"].append((p["ts"], p["ts"] - rlast["ts"], r["budget"]))
        # reply latency: our first packet within 2 ms of the peer's latest
        if e["pending"] is not None and p["ts"] - e["pending"] <= 2_000_000:
            for w in range(len(windows)):
                if inside(w, p["ts"]):
                    e["reply"][w].append(p["ts"] - e["pending"])
        e["pending"] = None
        if r:
            r["pending"] = p["ts"]
        # Poll Sequences
        if p["poll"] and e["poll_open"] is None:
            e["poll_open"] = p["ts"]
        if p["final"] and r:
            if r["poll_open"] is not None:
                r["polls"].append((r["poll_open"], p["ts"] - r["poll_open"]))
                r["poll_open"] = None
            elif inside(0, p["ts"]):
                r["final_without_poll"] += 1
        if not e["incarnations"] or e["incarnations"][-1][0] != p["my_disc"]:
            e["incarnations"].append([p["my_disc"], p["ts"], 0])
        if inside(0, p["ts"]):
            e["incarnations"][-1][2] += 1
        if e["ever_up"]:
            if p["state"] != UP and e["not_up_since"] is None:
                e["not_up_since"] = p["ts"]
            elif p["state"] == UP and e["not_up_since"] is not None:
                e["not_up_ns"] += clip(e["not_up_since"], p["ts"], windows[0])
                e["not_up_since"] = None
        e["last"] = p
        e["interval"] = max(p["tx_us"], rlast["rx_us"] if rlast else 0) * 1000
        e["budget"] = p["mult"] * e["interval"]
        if p["state"] == UP:
            e["ever_up"] = True
            e["class"] = (max(p["tx_us"], rlast["rx_us"] if rlast else 0), p["mult"])
        for w in range(len(windows)):
            if p["ts"] < windows[w][2]:
                e["state_at_end"][w] = p["state"]
            if inside(w, p["ts"]):
                e["packets"][w] += 1
        if s["up"] and p["state"] != UP:
            s["episodes"].append({"start": p["ts"], "src": p["src"], "diag": p["diag"],
                                  "gap": gap})
            for w in range(len(windows)):
                if inside(w, p["ts"]):
                    e["down"][w] += 1
        s["up"] = p["state"] == UP and rlast is not None and rlast["state"] == UP
    for e in ends.values():
        if e["not_up_since"] is not None:
            e["not_up_ns"] += clip(e["not_up_since"], t_end, windows[0])
        e["tag"] = next((name for name, pred in tags if pred(e["src"], e["dst"])), "")
        if e["class"]:
            iv, m = e["class"]
            e["class_name"] = f"{iv / 1000:g}ms x{m}"
        else:
            e["class_name"] = "never-up"
    return {"ends": ends, "sessions": sessions, "windows": windows}


def clip(a: int, b: int, window) -> int:
    a, b = max(a, window[1]), min(b, window[2])
    return max(0, b - a)


def classes(ref: dict, w: int) -> dict:
    """{(tag, class): figures} for window w, same definitions as bfdcap's "classes"."""
    out: dict = {}
    for (key, _src), e in ref["ends"].items():
        if w not in e["state_at_end"]:
            continue  # sent nothing before the window's end
        c = out.setdefault((e["tag"], e["class_name"]), {
            "ends": 0, "sessions": set(), "packets": 0, "gaps": [], "ratios": [],
            "down_events": 0, "ends_up_at_end": 0, "class": e["class"],
            "jitter": [0, 0, 0], "reply": [], "dets": []})
        c["ends"] += 1
        c["sessions"].add(key)
        c["packets"] += e["packets"][w]
        c["gaps"] += e["gaps"][w]
        c["ratios"] += e["ratios"][w]
        c["down_events"] += e["down"][w]
        c["ends_up_at_end"] += e["state_at_end"][w] == UP
        c["jitter"] = [x + y for x, y in zip(c["jitter"], e["jitter"][w])]
        c["reply"] += e["reply"][w]
        win = ref["windows"][w]
        c["dets"] += [d[1] for d in e["detections"] if win[1] <= d[0] < win[2]]
    win = ref["windows"][w]
    for c in out.values():
        c["session_down_events"] = sum(
            sum(1 for ep in ref["sessions"][k]["episodes"] if win[1] <= ep["start"] < win[2])
            for k in c["sessions"])
        c["sessions"] = len(c["sessions"])
        c["gap_ns"] = summary(c.pop("gaps"))
        c["reply_us"] = summary(c.pop("reply"))
        dets = c.pop("dets")
        c["detections"] = len(dets)
        c["detect_max"] = max(dets, default=None)
        ratios = c.pop("ratios")
        c["max_over_budget"] = max((r for r, _ in ratios), default=None)
        c["gaps_over_budget"] = sum(1 for _, over in ratios if over)
    return out
