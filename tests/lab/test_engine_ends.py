"""Administrative down, the Passive role and Poll Sequences we start, live against FRR 8.4.4
(issue 8 items 5 and 8): one IPv4 session at 300 ms x 3, the engine under the device's bfdd
(--dplaneaddr), stock FRR bfdd as the peer; each change made in a bfdd through vtysh, as an
operator would, and judged on the wire (captured on the bridge, parsed here from the UDP
payload) and from `show bfd peers json` at the other end.

- A timer change from bfdd while Up starts a Poll Sequence (RFC 5880 6.8.3): P on our packets
  until the peer's Final, a larger transmit interval only after it (gaps measured either side).
- The device's `shutdown`: AdminDown, diag 7, at the slow rate (1 s, jittered 75-100 %) for as
  long as it is shut (6.8.16); the peer shows remote diagnostic "administratively down".
- The peer's `shutdown`: we go Down with diag 3 (Neighbor Signaled Session Down, 6.8.6); after a
  Detection Time without a packet our Your Discriminator goes back to 0 (6.8.1).
- The Passive role at either end (6.8.7): the passive end's first packet follows the other's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lab import topo as topo_mod
from lab import util
from lab.rig import capture
from enginelab import cfgs, engine_lab, up

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP and FRR daemons")

IV_MS = 300
TOPO = topo_mod.parse(f"""
[topology]
name = "ends"
prefix_len = 16
[peer]
first_address = "10.77.1.1"
[[device]]
name = "engine"
kind = "engine"
first_address = "10.77.0.1"
[[class]]
name = "v4"
interval_ms = {IV_MS}
detect_mult = 3
count = 1
""", "test_engine_ends")
DEV, PEER = "10.77.0.1", "10.77.1.1"
ADMIN_DOWN, DOWN, UP = 0, 1, 3
P, F = 0x20, 0x10
SLACK_S = 0.05  # scheduling on this shared machine, on top of the RFC's bounds


def parse(pcap: Path) -> list[dict]:
    """Every BFD Control packet of PCAP: time, direction and the fields of RFC 5880 4.1."""
    from scapy.all import IP, UDP, rdpcap  # the independent reader

    out = []
    for pk in rdpcap(str(pcap)):
        if IP not in pk or UDP not in pk or pk[UDP].dport != 3784:
            continue
        b = bytes(pk[UDP].payload)
        out.append({"t": float(pk.time), "src": pk[IP].src, "diag": b[0] & 0x1f,
                    "state": b[1] >> 6, "P": bool(b[1] & P), "F": bool(b[1] & F),
                    "D": bool(b[1] & 0x02),
                    "my": int.from_bytes(b[4:8], "big"), "your": int.from_bytes(b[8:12], "big"),
                    "tx_us": int.from_bytes(b[12:16], "big")})
    return out


def ours(pkts: list[dict]) -> list[dict]:
    return [p for p in pkts if p["src"] == DEV]


def theirs(pkts: list[dict]) -> list[dict]:
    return [p for p in pkts if p["src"] == PEER]


def gaps(pkts: list[dict]) -> list[float]:
    """Seconds between consecutive non-Final packets (a Final is off the schedule, 6.8.7)."""
    ts = [p["t"] for p in pkts if not p["F"]]
    return [b - a for a, b in zip(ts, ts[1:])]


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-ends") as lab:
        yield lab


class Wire:
    """A capture on the bridge for the length of a with block; .pkts afterwards."""

    def __init__(self, lab, name: str) -> None:
        self.cap = capture.Capture(lab.netns.wire, lab.rd.path / f"{name}.pcap",
                                   lab.rd.logs / f"{name}.log")
        lab.registry.add_pid(self.cap.start(), "tcpdump")
        self.pkts: list[dict] = []

    def __enter__(self) -> "Wire":
        time.sleep(0.3)  # tcpdump's buffer is open
        return self

    def __exit__(self, *exc) -> None:
        time.sleep(0.2)
        self.cap.stop()
        self.pkts = parse(self.cap.pcap)


def block(lab, side: str, *lines: str) -> None:
    """Apply LINES inside the session's peer block of SIDE's bfdd ("device" or "peer")."""
    b = lab.duts["engine"] if side == "device" else lab.peer
    head = cfgs(lab.topo, side)[0].head
    b.vtysh("configure terminal", "bfd", head, *lines, "end")


def peer_row(lab) -> dict:
    return lab.peer.peers()[0]


def wait_up(lab, timeout_s: float = 15.0) -> None:
    util.wait_until(lambda: up(lab.peer) == 1 and up(lab.duts["engine"]) == 1 or None,
                    timeout_s, "the session Up at both ends", poll_s=0.2)


def eng_session(lab) -> dict:
    return lab.engines["engine"].stats()["sessions"][0]


def test_timer_change_polls_and_a_longer_interval_waits_for_the_final(lab) -> None:
    """6.8.3 / C02a: transmit-interval 300 -> 600 ms at the device while Up. Our packets carry P
    from the change until the peer's Final, and none after; gaps before it within 75-100 % of
    300 ms, after it within 75-100 % of 600 ms; the peer sees remote-transmit-interval 600."""
    wait_up(lab)
    util.wait_until(lambda: not eng_session(lab)["poll_active"] or None, 10, "no Poll open")
    with Wire(lab, "poll") as w:
        time.sleep(2.5)
        t_change = time.time()
        block(lab, "device", "transmit-interval 600")
        time.sleep(4.0)
    mine, peer = ours(w.pkts), theirs(w.pkts)
    polls = [p for p in mine if p["P"]]
    assert polls, "no Poll on the wire after the change"
    final = next(p for p in peer if p["F"] and p["t"] > polls[0]["t"])
    assert polls[0]["t"] >= t_change - 0.01
    assert all(p["t"] < final["t"] for p in polls), "P after the Final"
    assert all(p["P"] for p in mine if polls[0]["t"] <= p["t"] < final["t"] and not p["F"])
    assert polls[0]["tx_us"] == 600000, polls[0]
    before = gaps([p for p in mine if p["t"] < t_change])
    after = gaps([p for p in mine if p["t"] > final["t"]])
    print(f"gaps before (s): min {min(before):.3f} max {max(before):.3f} n {len(before)}; "
          f"after the Final: min {min(after):.3f} max {max(after):.3f} n {len(after)}; "
          f"Poll {polls[0]['t'] - t_change:.3f} s after the change, Final "
          f"{(final['t'] - polls[0]['t']) * 1e3:.2f} ms after the Poll, {len(polls)} P")
    assert len(before) >= 6 and len(after) >= 4
    assert all(0.75 * 0.3 - 0.002 <= g <= 0.3 + SLACK_S for g in before), before
    assert all(0.75 * 0.6 - 0.002 <= g <= 0.6 + SLACK_S for g in after), after
    assert peer_row(lab)["remote-transmit-interval"] == 600
    block(lab, "device", f"transmit-interval {IV_MS}")
    util.wait_until(lambda: peer_row(lab)["remote-transmit-interval"] == IV_MS or None, 5,
                    "the peer sees 300 ms again")


def test_device_shutdown_sends_admin_down_at_the_slow_rate(lab) -> None:
    """6.8.16: `shutdown` at the device: every packet of ours AdminDown, diag 7, 0.75-1 s apart
    while shut (4.5 s watched); the peer: Down, remote diagnostic "administratively down"."""
    wait_up(lab)
    with Wire(lab, "shut") as w:
        block(lab, "device", "shutdown")
        time.sleep(1.5)
        t0 = time.time()
        time.sleep(4.5)
    row = peer_row(lab)
    block(lab, "device", "no shutdown")
    mine = [p for p in ours(w.pkts) if p["t"] >= t0]
    g = gaps(mine)
    print(f"AdminDown packets {len(mine)}, gaps (s) {[round(x, 3) for x in g]}; peer: "
          f"status {row['status']}, diagnostic {row['diagnostic']}, remote-diagnostic "
          f"{row['remote-diagnostic']}")
    assert len(mine) >= 4
    assert all((p["state"], p["diag"]) == (ADMIN_DOWN, 7) for p in mine), mine
    assert all(0.75 - 0.002 <= x <= 1.0 + SLACK_S for x in g), g
    assert row["status"] == "down" and row["remote-diagnostic"] == "administratively down", row
    wait_up(lab)


def test_peer_shutdown_takes_us_down_diag3_and_your_disc_back_to_0(lab) -> None:
    """6.8.6: the peer's AdminDown takes us Down with diag 3; 6.8.1: once the peer has said
    nothing for a Detection Time, our Down packets carry Your Discriminator 0."""
    wait_up(lab)
    remote_id = peer_row(lab)["id"]
    with Wire(lab, "peer-shut") as w:
        block(lab, "peer", "shutdown")
        util.wait_until(lambda: eng_session(lab)["state"] == "Down" or None, 5, "engine Down")
        s = eng_session(lab)
        time.sleep(5.0)
    row = lab.duts["engine"].peers()[0]
    block(lab, "peer", "no shutdown")
    mine, peer = ours(w.pkts), theirs(w.pkts)
    admin = [p for p in peer if p["state"] == ADMIN_DOWN]
    assert admin, "the peer sent no AdminDown"
    downs = [p for p in mine if p["state"] == DOWN and p["t"] > admin[0]["t"]]
    last_peer = max(p["t"] for p in peer)
    # Down: 6.8.4's Detection Time, with our Required Min RX (300 ms) and its Desired Min TX.
    dt = max(0.3, admin[-1]["tx_us"] / 1e6) * 3
    keep = [p for p in downs if p["t"] < last_peer + dt]
    forgot = [p for p in downs if p["t"] > last_peer + dt]
    print(f"engine: {s['state']} diag {s['local_diag']}; peer's last packet then {len(keep)} "
          f"Down with your={[p['your'] for p in keep]}, {len(forgot)} after {dt:.1f} s with "
          f"your={sorted({p['your'] for p in forgot})}; device bfdd: {row['status']}, "
          f"remote-diagnostic {row['remote-diagnostic']}")
    assert (s["state"], s["local_diag"]) == ("Down", 3), s
    assert downs and all(p["diag"] == 3 for p in downs), downs
    assert keep and all(p["your"] == remote_id for p in keep), keep
    assert forgot and all(p["your"] == 0 for p in forgot), forgot
    # FRR 8.4.4 sends its AdminDown with diag 0 (captured): bfdd shows what we reported.
    names = {0: "ok", 7: "administratively down"}
    assert (row["status"], row["remote-diagnostic"]) == ("down", names[admin[0]["diag"]]), row
    wait_up(lab)


def test_passive_device_waits_for_the_peer(lab) -> None:
    """6.8.7 at our end: `passive-mode` at the device (an ADD update while Up), then the peer
    shut: we go Down, forget its discriminator after a Detection Time (6.8.1) and from then on
    send nothing at all (2 s watched); the peer's `no shutdown`: its first packet, then ours."""
    wait_up(lab)
    block(lab, "device", "passive-mode")
    block(lab, "peer", "shutdown")
    time.sleep(2.5)  # Down at once, then a Detection Time (0.9 s) and our last packet
    with Wire(lab, "passive-device") as w:
        time.sleep(2.0)
        t_on = time.time()
        block(lab, "peer", "no shutdown")
        wait_up(lab)
        time.sleep(0.5)
    block(lab, "device", "no passive-mode")
    mine, peer = ours(w.pkts), theirs(w.pkts)
    quiet = [p for p in mine if p["t"] < t_on]
    first_peer = min(p["t"] for p in peer if p["t"] >= t_on)
    print(f"passive device: our packets in the 2 s before the peer's no shutdown {len(quiet)}; "
          f"the peer's first {first_peer - t_on:.3f} s after it, ours "
          f"{(mine[0]['t'] - first_peer) * 1e3:.2f} ms after the peer's "
          f"(state {mine[0]['state']}, your {mine[0]['your']:#x})")
    assert not quiet, quiet
    assert mine and mine[0]["t"] > first_peer and mine[0]["your"] != 0, mine[:1]
    wait_up(lab)


def test_passive_peer_waits_for_us(lab) -> None:
    """6.8.7 at the FRR peer: `passive-mode` there, our session removed (AdminDown) and, once
    the peer has forgotten us, added again: the peer sends nothing until our first packet."""
    head = cfgs(lab.topo, "device")[0]
    wait_up(lab)
    block(lab, "peer", "passive-mode")
    lab.duts["engine"].vtysh("configure terminal", "bfd", f"no {head.head}", "end")
    time.sleep(4.0)  # the peer's Detection Time at the slow rate: 3 x 1 s
    with Wire(lab, "passive-peer") as w:
        time.sleep(1.5)
        t_add = time.time()
        lab.duts["engine"].add_peers([head])
        wait_up(lab)
        time.sleep(0.5)
    block(lab, "peer", "no passive-mode")
    mine, peer = ours(w.pkts), theirs(w.pkts)
    quiet = [p for p in peer if p["t"] < t_add]
    first_ours = min(p["t"] for p in mine if p["t"] >= t_add)
    first_peer = min(p["t"] for p in peer)
    print(f"passive peer: its packets in the 1.5 s before our add {len(quiet)}; our first "
          f"{first_ours - t_add:.3f} s after the add, the peer's first "
          f"{(first_peer - first_ours) * 1e3:.2f} ms after ours")
    assert not quiet, quiet
    assert first_peer > first_ours
    wait_up(lab)
