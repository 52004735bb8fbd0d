"""lab.wire against independent references: scapy's frames and checksums, the committed BPF
fixtures (tests/prog/fixtures.h, first made with scapy), and bfddp's layout in engine/bfddp.h."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

from scapy.layers.inet import IP, UDP  # python3-scapy (packaging/deps.txt)
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from lab.wire import bfd, bfddp, frames

REPO = Path(__file__).resolve().parents[2]
A, B = "02:00:00:00:00:01", "02:00:00:00:00:02"


def test_ipv4_udp_frame_matches_scapy() -> None:
    pay = bfd.control("Up", 0x0B, 0x0A, flags="P")
    got = frames.udp_frame(A, B, "192.0.2.1", "192.0.2.2", 49152, 3784, pay, ttl=254,
                           ident=7, vlans=((frames.TPID_8021Q, 12),))
    ip = IP(src="192.0.2.1", dst="192.0.2.2", ttl=254, id=7, tos=0xC0)
    want = bytes(Ether(src=A, dst=B) / Dot1Q(vlan=12) / ip / UDP(sport=49152, dport=3784) / pay)
    assert got == want


def test_ipv6_udp_frame_matches_scapy() -> None:
    pay = bfd.control(1, 5, 0, diag=3)
    got = frames.udp_frame(A, B, "2001:db8::1", "2001:db8::2", 50000, 4784, pay, ttl=250)
    want = bytes(Ether(src=A, dst=B) / IPv6(src="2001:db8::1", dst="2001:db8::2", hlim=250,
                                            tc=0xC0) / UDP(sport=50000, dport=4784) / pay)
    assert got == want


def test_control_fields_rfc5880_4_1() -> None:
    b = bfd.control("Init", 0x01020304, 0x0A0B0C0D, diag=7, flags="PFM", mult=5, tx_us=10000,
                    rx_us=20000, echo_rx_us=30000)
    assert b.hex() == "27b1051801020304" "0a0b0c0d" "00002710" "00004e20" "00007530"
    d = bfd.decode_control(b)
    got = (d["state"], d["diag"], d["P"], d["F"], d["mult"], d["length"])
    assert got == (2, 7, True, True, 5, 24)
    sha1 = bfd.control(1, 1, 0, auth=bfd.auth_digest(bfd.AUTH_KEYED_SHA1, 1, 1, bytes(20)))
    assert len(sha1) == 52 and sha1[3] == 52 and sha1[1] & 0x04  # A bit, length with auth


def test_bfddp_session_layout_engine_bfddp_h() -> None:
    m = bfddp.session(bfddp.ADD_SESSION, ipaddress.ip_address("10.0.0.1").packed,
                      ipaddress.ip_address("10.0.0.2").packed, 0x0A, 10000, 20000,
                      flags=bfddp.SF_SHUTDOWN, ttl=254, detect_mult=4, ifindex=9, ifname=b"eth0")
    assert len(m) == bfddp.SESSION_LEN == 140
    assert m[:8] == bytes([1, 0, 0, 2, 0, 0, 0, 140])  # version, zero, type, id, length
    assert m[8:12] == bytes([0, 0, 0, 0x40]) and m[12:16] == bytes([10, 0, 0, 1])
    assert m[44:48] == bytes([0, 0, 0, 0x0A])  # lid after flags and two 16-byte addresses
    assert m[68:70] == bytes([254, 4]) and m[72:76] == bytes([0, 0, 0, 9])
    assert m[76:80] == b"eth0" and m[80:] == bytes(60)
    assert bfddp.request_counters(7, mid=3) == bytes([1, 0, 0, 5, 0, 3, 0, 12, 0, 0, 0, 7])


def test_bpf_fixtures_regenerate_byte_identical() -> None:
    cp = subprocess.run(["/usr/bin/python3", str(REPO / "tests/prog/gen_fixtures.py")],
                        capture_output=True, text=True, check=True, cwd=REPO,
                        env={"PYTHONPATH": str(REPO)})
    assert cp.stdout == (REPO / "tests/prog/fixtures.h").read_text()
