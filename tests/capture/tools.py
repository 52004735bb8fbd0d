"""Parsers of what tcpdump -v and tshark -V print for BFD, for packet-by-packet decode checks.

Each returns one dict per packet with the keys of `bfdcap --packets` that the tool shows, in
the units the tool shows them (tcpdump prints intervals in whole ms).
"""

from __future__ import annotations

import re
import subprocess
from decimal import Decimal

STATE = {"AdminDown": 0, "Down": 1, "Init": 2, "Up": 3}
TCPDUMP_FLAGS = {"Poll": "poll", "Final": "final", "Control Plane Independent": "cpi",
                 "Authentication Present": "auth", "Demand": "demand", "Multipoint": "multipoint"}


def run(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout


def tshark_v(pcap) -> list[dict]:
    """Every frame of `tshark -n -V -r pcap`; BFD Control fields when tshark decoded some."""
    out = run(["tshark", "-n", "-V", "-r", str(pcap), "-o", "udp.check_checksum:FALSE"])
    frames = re.split(r"^Frame \d+:", out, flags=re.M)[1:]
    res = []
    for fr in frames:
        d: dict = {}
        m = re.search(r"^\s+Epoch Time: (\d+\.\d+) seconds", fr, re.M)
        d["ts_ns"] = int(Decimal(m.group(1)) * 10**9)
        ip = re.search(r"^Internet Protocol Version (4|6), Src: (\S+), Dst: (\S+)$", fr, re.M)
        if ip:
            d["src"], d["dst"] = ip.group(2), ip.group(3)
            ttl = re.search(r"^\s+(?:Time to Live|Hop Limit): (\d+)", fr, re.M)
            d["ttl"] = int(ttl.group(1))
        udp = re.search(r"^User Datagram Protocol, Src Port: (\d+), Dst Port: (\d+)", fr, re.M)
        if udp:
            d["sport"], d["dport"] = int(udp.group(1)), int(udp.group(2))
        i = fr.find("\nBFD Control message")
        if i < 0:
            d["bfd"] = False
            res.append(d)
            continue
        b = fr[i:]
        d["bfd"] = True

        def field(pat, conv=int, text=b):
            m = re.search(pat, text, re.M)
            return conv(m.group(1)) if m else None

        d["version"] = field(r"= Protocol Version: (\d+)")
        d["diag"] = field(r"= Diagnostic Code: .*\(0x([0-9a-f]+)\)$", lambda x: int(x, 16))
        d["state"] = field(r"= Session State: .*\(0x([0-9a-f]+)\)$", lambda x: int(x, 16))
        for name, key in (("Poll", "poll"), ("Final", "final"),
                          ("Control Plane Independent", "cpi"),
                          ("Authentication Present", "auth"), ("Demand", "demand"),
                          ("Multipoint", "multipoint")):
            d[key] = field(rf"= {name}: (Set|Not set)$", lambda x: x == "Set")
        d["detect_mult"] = field(r"^\s+Detect Time Multiplier: (\d+)")
        d["length"] = field(r"^\s+Message Length: (\d+) bytes")
        d["my_disc"] = field(r"^\s+My Discriminator: 0x([0-9a-f]+)", lambda x: int(x, 16))
        d["your_disc"] = field(r"^\s+Your Discriminator: 0x([0-9a-f]+)", lambda x: int(x, 16))
        d["desired_min_tx_us"] = field(r"^\s+Desired Min TX Interval: .*\((\d+) us\)")
        d["required_min_rx_us"] = field(r"^\s+Required Min RX Interval: .*\((\d+) us\)")
        d["required_min_echo_rx_us"] = field(r"^\s+Required Min Echo Interval: .*\((\d+) us\)")
        if "\n    Authentication:" in b:
            d["auth_type"] = field(r"^\s+Authentication Type: .*\((\d+)\)$")
            d["auth_key_id"] = field(r"^\s+Authentication Key ID: (\d+)")
            seq = field(r"^\s+Sequence Number: 0x([0-9a-f]+)", lambda x: int(x, 16))
            if seq is not None:
                d["auth_seq"] = seq
        res.append(d)
    return res


class _Reorder:
    """Match groups of the extension-header form in the order of the plain form."""

    def __init__(self, m):
        self.g = [None, m.group(1), m.group(3), m.group(2), m.group(4), m.group(5), m.group(6)]

    def group(self, i):
        return self.g[i]


def tcpdump_v(pcap) -> list[dict]:
    """Every packet of `tcpdump -tt -nn -v --time-stamp-precision=nano -r pcap`."""
    out = run(["tcpdump", "-tt", "-nn", "-v", "--time-stamp-precision=nano", "-r", str(pcap)])
    pkts = re.split(r"^(?=\d+\.\d{9} )", out, flags=re.M)
    res = []
    for p in pkts:
        if not p.strip():
            continue
        d: dict = {"ts_ns": int(Decimal(p.split()[0]) * 10**9)}
        m = re.search(r"\bttl (\d+)\b|\bhlim (\d+)\b", p)
        if m:
            d["ttl"] = int(m.group(1) or m.group(2))
        # "a.1 > b.2: [udp sum ok] BFDv1", or with IPv6 extension headers
        # "a > b: HBH (padn) DSTOPT (padn) 1 > 2: [udp sum ok] BFDv1"
        m = re.search(r"(\S+)\.(\d+) > (\S+)\.(\d+): (?:\[[^\]]*\] )?BFDv(\d+), length: (\d+)",
                      p)
        if not m:
            m = re.search(r"(\S+) > (\S+): (?:[^\n]*?) (\d+) > (\d+): (?:\[[^\]]*\] )?"
                          r"BFDv(\d+), length: (\d+)", p)
            if m:
                m = _Reorder(m)
        if not m:
            d["bfd"] = False
            res.append(d)
            continue
        d["bfd"] = True
        d["src"], d["sport"], d["dst"], d["dport"] = m.group(1), int(m.group(2)), m.group(3), \
            int(m.group(4))
        d["version"] = int(m.group(5))
        d["udp_payload_len"] = int(m.group(6))
        m = re.search(r"State (\w+), Flags: \[([^\]]*)\], Diagnostic: .*\(0x([0-9a-f]+)\)", p)
        d["state"] = STATE[m.group(1)]
        flags = [] if m.group(2) == "none" else [f.strip() for f in m.group(2).split(",")]
        for name, key in TCPDUMP_FLAGS.items():
            d[key] = name in flags
        d["diag"] = int(m.group(3), 16)
        m = re.search(r"Detection Timer Multiplier: (\d+) .*BFD Length: (\d+)", p)
        d["detect_mult"], d["length"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"My Discriminator: 0x([0-9a-f]+), Your Discriminator: 0x([0-9a-f]+)", p)
        d["my_disc"], d["your_disc"] = int(m.group(1), 16), int(m.group(2), 16)
        for label, key in (("Desired min Tx Interval", "desired_min_tx_ms"),
                           ("Required min Rx Interval", "required_min_rx_ms"),
                           ("Required min Echo Interval", "required_min_echo_rx_ms")):
            d[key] = int(re.search(rf"{label}:\s+(\d+) ms", p).group(1))
        m = re.search(r"Authentication: .*\((\d+)\), length: (\d+)", p)
        if m:
            d["auth_type"] = int(m.group(1))
            m = re.search(r"Auth Key ID: (\d+)(?:, Sequence Number: 0x([0-9a-f]+))?", p)
            d["auth_key_id"] = int(m.group(1))
            if m.group(2):
                d["auth_seq"] = int(m.group(2), 16)
        res.append(d)
    return res
