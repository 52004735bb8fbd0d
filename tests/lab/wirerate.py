"""wirerate - each session's transmission rate and gaps on the wire, per direction, from a capture
window on the lab's bridge (scapy, the independent reader), with which path of each engine sent
(xdp_tx_packets against user_tx_packets). Used by test_engine_facing.py (two engines facing each
other) and tests/bench/peer_gaps.py (the engine against BIRD, under the ladder's loads).

RFC 5880 6.8.7: each periodic packet leaves 75-100 % of the interval after the last, so a
session's rate lies between 1/interval and 1/(0.75 interval); only a Final may come sooner.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lab.harness.lab import Lab
from lab.rig import capture
from lab.rig.engine import Engine
from lab.topo import Topology
from lab.util import LabError

# The capture stamps each packet in the wire namespace; both packets of a gap take the same
# path to it (a veth and the bridge: at most 35 us apart, docs/lab.md section 2).
TOL_MS = 0.2
BFD_FINAL = 0x10
STATE_UP = 3


def tx_paths(engines: dict[str, Engine]) -> dict[str, dict[str, dict[str, int]]]:
    """Per side (the name given in ENGINES) and session peer address: packets sent by XDP and
    by userspace so far, and down events."""
    out = {}
    for side, eng in engines.items():
        st = eng.stats()
        assert st is not None, side
        out[side] = {s["peer"]: {"xdp": s["xdp_tx_packets"], "user": s["user_tx_packets"],
                                 "down": s["down_events"]} for s in st["sessions"]}
    return out


def read_gaps(pcap: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (src, dst): the times (s) of the non-Final Up packets, Finals and non-Up counted."""
    from scapy.all import IP, UDP, IPv6, PcapReader

    out: dict[tuple[str, str], dict[str, Any]] = {}
    with PcapReader(str(pcap)) as r:
        for p in r:
            ip = p.getlayer(IP) or p.getlayer(IPv6)
            if ip is None or UDP not in p or p[UDP].dport not in (3784, 4784):
                continue
            body = bytes(p[UDP].payload)
            e = out.setdefault((ip.src, ip.dst), {"t": [], "finals": 0, "not_up": 0})
            if body[1] >> 6 != STATE_UP:
                e["not_up"] += 1
            elif body[1] & BFD_FINAL:
                e["finals"] += 1
            else:
                e["t"].append(float(p.time))
    return out


def peer_silences(pcap: Path, topo: Topology, device: str) -> list[dict[str, Any]]:
    """The lab's peer silent past the device's Detection Time while the device was Up: for each
    session of DEVICE, each gap between two consecutive packets from the peer (any state) longer
    than the class's budget_ms (RFC 5880 6.8.4) during which the device sent no packet other than
    Up. Such a silence makes the device's Down the correct reaction, and the run cannot judge the
    device there (docs/lab.md section 2, rule b). Each: {device, peer, t0, t1 (s), gap_ms,
    budget_ms}."""
    from scapy.all import IP, UDP, IPv6, PcapReader

    sent: dict[tuple[str, str], list[tuple[float, bool]]] = {}
    with PcapReader(str(pcap)) as r:
        for p in r:
            ip = p.getlayer(IP) or p.getlayer(IPv6)
            if ip is None or UDP not in p or p[UDP].dport not in (3784, 4784):
                continue
            up = bytes(p[UDP].payload)[1] >> 6 == STATE_UP
            sent.setdefault((ip.src, ip.dst), []).append((float(p.time), up))
    out = []
    for s in topo.sessions(device):
        dev, peer = s.device_address, s.peer_address
        not_up = [t for t, up in sent.get((dev, peer), []) if not up]
        t = [x for x, _ in sent.get((peer, dev), [])]
        for a, b in zip(t, t[1:]):
            gap_ms = 1e3 * (b - a)
            if gap_ms > s.cls.budget_ms and not any(a < x < b for x in not_up):
                out.append({"device": dev, "peer": peer, "t0": a, "t1": b,
                            "gap_ms": round(gap_ms, 3), "budget_ms": s.cls.budget_ms})
    return out


def _p99(gaps: list[float]) -> float | None:
    if not gaps:
        return None
    g = sorted(gaps)
    return round(g[min(len(g) - 1, int(0.99 * len(g)))], 3)


def window(lab: Lab, topo: Topology, device: str, name: str, seconds: float,
           engines: dict[str, Engine]) -> dict[str, Any]:
    """Capture SECONDS s of the wire; one row per session of DEVICE and direction ("device":
    from the device, "peer": towards it). ENGINES: the engine at each side ("device", "peer")
    whose tx paths are counted; a side without one reports none."""
    cap = capture.Capture(lab.netns.wire, lab.rd.path / f"{name}.pcap",
                          lab.rd.logs / f"tcpdump-{name}.log")
    lab.registry.add_pid(cap.start(), "tcpdump")
    before = tx_paths(engines)
    time.sleep(seconds)
    after = tx_paths(engines)
    dropped = cap.stop().get("dropped")
    if dropped != 0:  # the lab's own fault: the window would judge packets it never saw
        raise LabError(f"capture {name}: {dropped} packets dropped by the kernel "
                       f"(see {cap.log})")
    seen = read_gaps(cap.pcap)
    rows = []
    for s in topo.sessions(device):
        iv_ms = max(s.cls.interval_ms, s.cls.peer_timers[0])  # RFC 5880 6.8.2, both ways
        for side, src, dst in (("device", s.device_address, s.peer_address),
                               ("peer", s.peer_address, s.device_address)):
            e = seen.get((src, dst), {"t": [], "finals": 0, "not_up": 0})
            t = e["t"]
            gaps = [1e3 * (b - a) for a, b in zip(t, t[1:])]
            span = t[-1] - t[0] if len(t) > 1 else 0.0
            row = {"class": s.cls.name, "side": side, "src": src, "interval_ms": iv_ms,
                   "packets": len(t), "finals": e["finals"], "not_up": e["not_up"],
                   "pps": round((len(t) - 1) / span, 3) if span else 0.0,
                   "band_pps": [round(1e3 / iv_ms, 3), round(1e3 / (0.75 * iv_ms), 3)],
                   "gap_min_ms": round(min(gaps), 3) if gaps else None,
                   "gap_p99_ms": _p99(gaps),
                   "gap_max_ms": round(max(gaps), 3) if gaps else None}
            if side in after:
                far = s.peer_address if side == "device" else s.device_address
                b, a = before[side][far], after[side][far]
                row |= {"xdp_tx": a["xdp"] - b["xdp"], "user_tx": a["user"] - b["user"],
                        "down_events": a["down"]}
            rows.append(row)
    return {"name": name, "rows": rows}


def judge(w: dict[str, Any]) -> list[str]:
    """What breaks RFC 5880 6.8.7's rate in window W (rate outside the jitter band, a gap
    under 75 % of the interval, a packet not Up, a down event), one line each."""
    bad = []
    for r in w["rows"]:
        lo, hi = r["band_pps"]
        where = f"{w['name']} {r['class']} {r['side']} {r['src']}"
        if r["not_up"]:
            bad.append(f"{where}: {r['not_up']} packets not Up")
        if not lo <= r["pps"] <= hi:
            bad.append(f"{where}: {r['pps']} pps outside {lo}-{hi} ({r['packets']} packets)")
        if r["gap_min_ms"] is None or r["gap_min_ms"] < 0.75 * r["interval_ms"] - TOL_MS:
            bad.append(f"{where}: gap {r['gap_min_ms']} ms under 75 % of {r['interval_ms']}")
        if r.get("down_events"):
            bad.append(f"{where}: {r['down_events']} down events")
    return bad


def lines(w: dict[str, Any]) -> list[str]:
    """W's rows, one line each, for the output."""
    return [f"{w['name']:4} {r['class']:15} {r['side']:6} {r['pps']:8.3f} pps (band "
            f"{r['band_pps'][0]}-{r['band_pps'][1]}) gaps {r['gap_min_ms']}/{r['gap_p99_ms']}/"
            f"{r['gap_max_ms']} ms min/p99/max xdp {r.get('xdp_tx', '-')} user "
            f"{r.get('user_tx', '-')} finals {r['finals']}" for r in w["rows"]]
