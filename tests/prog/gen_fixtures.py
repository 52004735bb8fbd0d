#!/usr/bin/python3
"""Generate tests/prog/fixtures.h: input frames and the exact replies expected from xdp_bfd.

Run from the repository root:
    PYTHONPATH=. /usr/bin/python3 tests/prog/gen_fixtures.py > tests/prog/fixtures.h
Frames, their IP and UDP checksums and the BFD bytes (RFC 5880 section 4.1) come from lab.wire,
the lab's one packet builder, written from the RFCs apart from the XDP program's C, so the
expected replies are an independent reference for its rewrite (lab.wire's frames are checked
against scapy's in tests/lab/test_wire.py).
"""
import ipaddress
import struct
import sys

# scapy only checks the finished bytes (check_references): an implementation apart from lab.wire.
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from lab.wire import bfd as wbfd
from lab.wire import frames

# The sessions prog_test.c installs (slot = index). Discriminators follow conformance.md: ours
# 0x0A, the peer's 0x0B. Source port of our replies: 61000 + slot.
MAC_PEER, MAC_US = "02:00:00:00:00:02", "02:00:00:00:00:01"
V4_US, V4_PEER, V4_OTHER = "192.0.2.1", "192.0.2.2", "198.51.100.2"
V6_US, V6_PEER = "2001:db8::1", "2001:db8::2"
SLOW_US = 1000000
SESSIONS = [
    # name, family, local, peer, local_disc, remote_disc, state, flags, min_ttl, peer_tx_us
    ("S_UP4", 4, V4_US, V4_PEER, 0x0A, 0x0B, 3, "", 255, 300000),
    ("S_UP6", 6, V6_US, V6_PEER, 0x1A, 0x1B, 3, "", 255, 300000),
    ("S_DOWN4", 4, V4_US, "192.0.2.3", 0x2A, 0, 1, "", 255, SLOW_US),
    ("S_ADMIN4", 4, V4_US, "192.0.2.4", 0x3A, 0x3B, 0, "", 255, 300000),
    ("S_MH4", 4, V4_US, "203.0.113.200", 0x4A, 0x4B, 3, "MULTIHOP", 250, 300000),
    # its peer sends once a second (slow start): it cannot clock our 300 ms (RFC 5880 6.8.2)
    ("S_SLOW4", 4, V4_US, "192.0.2.5", 0x5A, 0x5B, 3, "", 255, SLOW_US),
    # we have answered the peer's Down with Init; the peer is Up and polls to leave slow start
    ("S_INIT4", 4, V4_US, "192.0.2.6", 0x6A, 0x6B, 2, "", 255, SLOW_US),
    # Up, served by userspace: its packets had come through the stack
    ("S_SW4", 4, V4_US, "192.0.2.7", 0x7A, 0x7B, 3, "SOFTWARE", 255, 300000),
    # IPv6, its peer address chosen (zero_csum_peer() below) so that the one's-complement sum of
    # our Up reply is all ones: its UDP checksum computes to 0 and must go out as 0xFFFF
    ("S_ZERO6", 6, V6_US, "2001:db8::", 0x8A, 0x8B, 3, "", 255, 300000),
    # Up with echo on (Required Min Echo RX in ECHO_RX_US below): the peer's echo comes back
    ("S_ECHO4", 4, V4_US, "192.0.2.8", 0x9A, 0x9B, 3, "", 255, 300000),
    ("S_ECHO6", 6, V6_US, "2001:db8::8", 0xAA, 0xAB, 3, "", 255, 300000),
]
# The Required Min Echo RX each session advertises (us); 0 for the rest. S_DOWN4's shows that a
# session not Up returns no echo even with echo on (RFC 5880 6.8.9).
ECHO_RX_US = {"S_ECHO4": 50000, "S_ECHO6": 50000, "S_DOWN4": 50000}
S = {s[0]: s for s in SESSIONS}
TX_US = 300000
PEER_SPORT = 50000


def bfd(state=3, diag=0, flags=0, mult=3, length=24, my=0x0B, your=0x0A, tx=TX_US, rx=TX_US,
        erx=0, pad=b""):
    return wbfd.control(state, my, your, diag=diag, flags=flags, mult=mult, length=length,
                        tx_us=tx, rx_us=rx, echo_rx_us=erx) + pad


def _vlans(vlan):
    return () if vlan is None else ((frames.TPID_8021Q, vlan),)


def frame4(payload, src=V4_PEER, dst=V4_US, ttl=255, dport=3784, vlan=None, ident=0x1234,
           sport=PEER_SPORT):
    return frames.udp_frame(MAC_PEER, MAC_US, src, dst, sport, dport, payload, ttl=ttl,
                            ident=ident, vlans=_vlans(vlan))


def frame6(payload, src=V6_PEER, dst=V6_US, hlim=255, dport=3784):
    return frames.udp_frame(MAC_PEER, MAC_US, src, dst, PEER_SPORT, dport, payload, ttl=hlim)


def reply4(sess, flags=0, dport=3784, vlan=None, ident=0x1234, state=None):
    """Our reply for SESS; STATE overrides the session's (a Final after a 6.8.6 transition)."""
    name, _, local, peer, ld, rd, sess_state, _, _, _ = sess
    state = sess_state if state is None else state
    slot = SESSIONS.index(sess)
    return frames.udp_frame(MAC_US, MAC_PEER, local, peer, 61000 + slot, dport,
                            bfd(state=state, flags=flags, my=ld, your=rd), ident=ident,
                            vlans=_vlans(vlan))


def reply6(sess, flags=0):
    name, _, local, peer, ld, rd, state, _, _, _ = sess
    slot = SESSIONS.index(sess)
    return frames.udp_frame(MAC_US, MAC_PEER, local, peer, 61000 + slot, 3784,
                            bfd(state=state, flags=flags, my=ld, your=rd))


def zero_csum_peer(slot_name):
    """The session SLOT_NAME with its peer address's last 16-bit group chosen so that its Up
    reply's UDP checksum computes to 0 (RFC 768: sent as 0xFFFF). The checksum with the group
    at 0 is the complement of the sum; adding exactly that value makes the sum all ones."""
    i = SESSIONS.index(S[slot_name])
    name, fam, local, peer, ld, rd, st, fl, ttl, ptx = SESSIONS[i]
    seg = frames.udp(local, peer, 61000 + i, 3784, bfd(state=st, my=ld, your=rd))
    group = struct.unpack_from("!H", seg, 6)[0]
    peer = str(ipaddress.IPv6Address(int(ipaddress.IPv6Address(peer)) + group))
    SESSIONS[i] = (name, fam, local, peer, ld, rd, st, fl, ttl, ptx)
    S[slot_name] = SESSIONS[i]
    return SESSIONS[i]


def set_udp_csum(frame, value):
    """FRAME (untagged Ethernet, IPv4 without options or IPv6) with its UDP checksum field set."""
    l4 = 14 + (20 if frame[12:14] == b"\x08\x00" else 40)
    return frame[:l4 + 6] + struct.pack("!H", value) + frame[l4 + 8:]


def udp_csum(frame):
    l4 = 14 + (20 if frame[12:14] == b"\x08\x00" else 40)
    return struct.unpack_from("!H", frame, l4 + 6)[0]


def pseudo_only(frame):
    """FRAME as a veth sender with transmit checksum offload leaves it (CHECKSUM_PARTIAL): the
    UDP checksum field holds the folded pseudo-header sum, not complemented (Linux
    ~csum_tcpudp_magic(..., 0)), for the device to finish."""
    v4 = frame[12:14] == b"\x08\x00"
    l4 = 14 + (20 if v4 else 40)
    ulen = struct.unpack_from("!H", frame, l4 + 4)[0]
    if v4:
        pseudo = frame[26:34] + struct.pack("!BBH", 0, 17, ulen)
    else:
        pseudo = frame[22:54] + struct.pack("!I3xB", ulen, 17)
    return set_udp_csum(frame, (~frames.inet_checksum(pseudo)) & 0xFFFF)


def bad_ip_csum(frame):
    """An IPv4 FRAME with its header checksum off by one."""
    c = struct.unpack_from("!H", frame, 24)[0]
    return frame[:24] + struct.pack("!H", c ^ 1) + frame[26:]


def echo_in(src, dst, ttl=255, sport=PEER_SPORT):
    """The peer's Echo packet (UDP 3785, RFC 5881 4) as it reaches us. Its payload is FRR's
    layout (version 1, length 24, its discriminator, a timestamp), though nobody reads it."""
    payload = wbfd.echo(struct.pack("!BBHIQQ", 1, 24, 0, 0x5EED0009, 1700000000, 123456))
    return frames.udp_frame(MAC_PEER, MAC_US, src, dst, sport, 3785, payload, ttl=ttl)


def echo_out(src, dst, ttl=254, sport=PEER_SPORT):
    """The same Echo packet as we return it: MACs swapped, one hop used (a forwarder's TTL),
    addresses SRC -> DST as given (swapped by the caller for echo addressed to us)."""
    payload = wbfd.echo(struct.pack("!BBHIQQ", 1, 24, 0, 0x5EED0009, 1700000000, 123456))
    return frames.udp_frame(MAC_US, MAC_PEER, src, dst, sport, 3785, payload, ttl=ttl)


OWN_SEQ, OWN_TX_NS = 7, 123456789012345


def own_echo(sess, src=None, dst=None, ttl=254, disc=None):
    """The engine's own echo for SESS coming back (engine/echo.c sends it self-addressed from
    the session's port, TTL 255; the neighbour forwards it, 254), payload engine_echo()."""
    name, _, local, peer, ld, rd, st, _, _, _ = sess
    payload = wbfd.engine_echo(ld if disc is None else disc, OWN_SEQ, OWN_TX_NS)
    return frames.udp_frame(MAC_PEER, MAC_US, src or local, dst or local,
                            61000 + SESSIONS.index(sess), 3785, payload, ttl=ttl)


P, F, C, A, D, M = 0x20, 0x10, 0x08, 0x04, 0x02, 0x01
UP4 = S["S_UP4"]
ZERO6 = zero_csum_peer("S_ZERO6")
# name, description, session slot name, input, verdict, expected output or None, counter,
# whether the session's last-receive time must move, whether an event must be posted
FIXTURES = [
    ("up_reply", "Up packet of an Up session: rewritten into our reply (RFC 5880 6.8.7)",
     "S_UP4", frame4(bfd()), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("poll_final", "Poll gets Final at once, never P and F together (RFC 5880 6.5)",
     "S_UP4", frame4(bfd(flags=P)), "XDP_TX", reply4(UP4, flags=F), "tx_final", 1, 0),
    ("vlan_pass", "802.1Q-tagged packet: the VLAN device's, not this session's: to the stack",
     "S_UP4", frame4(bfd(), vlan=100), "XDP_PASS", None, "pass_non_bfd", 0, 0),
    ("ipv6_reply", "IPv6 Up packet: reply with hop limit 255 and a full UDP checksum",
     "S_UP6", frame6(bfd(my=0x1B, your=0x1A)), "XDP_TX", reply6(S["S_UP6"]), "tx_reply", 1, 0),
    ("r09_trailing", "R09: Length 24 inside a 28-byte payload is accepted; reply is 24 bytes",
     "S_UP4", frame4(bfd(pad=b"\0\0\0\0")), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("r12_diag31", "R12: diag 31 is accepted (no diagnostic causes a discard)",
     "S_UP4", frame4(bfd(diag=31)), "XDP_TX", reply4(UP4), "tx_reply", 1, 1),
    ("multihop_ttl250", "Multihop packet at the session's minimum TTL 250 is accepted",
     "S_MH4", frame4(bfd(my=0x4B, your=0x4A), src="203.0.113.200", ttl=250, dport=4784),
     "XDP_TX", reply4(S["S_MH4"], dport=4784), "tx_reply", 1, 0),
    ("down_consumed", "Session not Up: recorded, posted to the engine, not answered in XDP",
     "S_DOWN4", frame4(bfd(state=1, my=0x2C, your=0), src="192.0.2.3"), "XDP_DROP", None,
     "rx_consumed", 1, 1),
    ("slow_not_clocked", "Peer sends once a second, we every 300 ms: userspace clocks us; "
     "not answered before its deadline (6.8.2, 6.8.7)",
     "S_SLOW4", frame4(bfd(my=0x5B, your=0x5A, tx=SLOW_US), src="192.0.2.5"), "XDP_DROP", None,
     "rx_consumed", 1, 0),
    ("slow_poll_final", "Peer too slow to clock us: a Poll is still answered in XDP",
     "S_SLOW4", frame4(bfd(flags=P, my=0x5B, your=0x5A, tx=SLOW_US), src="192.0.2.5"),
     "XDP_TX", reply4(S["S_SLOW4"], flags=F), "tx_final", 1, 0),
    ("slow_peer_speeds_up", "The same peer leaving slow start (300 ms) clocks us at once",
     "S_SLOW4", frame4(bfd(my=0x5B, your=0x5A), src="192.0.2.5"), "XDP_TX",
     reply4(S["S_SLOW4"]), "tx_reply", 1, 1),
    ("peer_rx_zero", "Peer's Required Min RX 0: no periodic packets (6.8.7), not answered",
     "S_UP4", frame4(bfd(rx=0)), "XDP_DROP", None, "rx_consumed", 1, 1),
    ("peer_demand", "Peer in Demand mode: its packets do not clock ours",
     "S_UP4", frame4(bfd(flags=D)), "XDP_DROP", None, "rx_consumed", 1, 1),
    ("non_bfd_pass", "UDP to another port goes to the stack unchanged",
     "S_UP4", frame4(b"hello world", dport=12345), "XDP_PASS", None, "pass_non_bfd", 0, 0),
    ("r01_version0", "R01: version 0", "S_UP4",
     frame4(bytes([0]) + bfd()[1:]), "XDP_DROP", None, "drop.bad_version", 0, 0),
    ("r01_version2", "R01: version 2", "S_UP4",
     frame4(bytes([2 << 5]) + bfd()[1:]), "XDP_DROP", None, "drop.bad_version", 0, 0),
    ("r02_len23", "R02: Length 23", "S_UP4",
     frame4(bfd(length=23)), "XDP_DROP", None, "drop.bad_length", 0, 0),
    ("r03_len30", "R03: Length 30 beyond a 24-byte payload", "S_UP4",
     frame4(bfd(length=30)), "XDP_DROP", None, "drop.length_gt_payload", 0, 0),
    ("r04_auth_len25", "R04: A set with Length 25", "S_UP4",
     frame4(bfd(flags=A, length=25, pad=b"\x01")), "XDP_DROP", None, "drop.bad_length", 0, 0),
    ("r05_mult0", "R05: Detect Mult 0", "S_UP4",
     frame4(bfd(mult=0)), "XDP_DROP", None, "drop.zero_mult", 0, 0),
    ("r06_multipoint", "R06: M bit", "S_UP4",
     frame4(bfd(flags=M)), "XDP_DROP", None, "drop.multipoint", 0, 0),
    ("r07_unknown_your", "R07: Your Discriminator names no session", "S_UP4",
     frame4(bfd(your=0x5EED0002)), "XDP_DROP", None, "drop.unknown_your_disc", 0, 0),
    ("r08_zero_your_up", "R08: Your Discriminator 0 with state Up", "S_UP4",
     frame4(bfd(your=0)), "XDP_DROP", None, "drop.zero_your_disc", 0, 0),
    ("r08_zero_your_init", "R08: Your Discriminator 0 with state Init", "S_UP4",
     frame4(bfd(state=2, your=0)), "XDP_DROP", None, "drop.zero_your_disc", 0, 0),
    ("r10_admin_down", "R10: session AdminDown discards even a Poll", "S_ADMIN4",
     frame4(bfd(flags=P, my=0x3B, your=0x3A), src="192.0.2.4"), "XDP_DROP", None,
     "drop.admin_down", 0, 0),
    ("r11_poll_final", "R11: P and F together", "S_UP4",
     frame4(bfd(flags=P | F)), "XDP_DROP", None, "drop.poll_and_final", 0, 0),
    ("zero_my_disc", "My Discriminator 0", "S_UP4",
     frame4(bfd(my=0)), "XDP_DROP", None, "drop.zero_my_disc", 0, 0),
    ("ttl254", "Single hop at TTL 254 (RFC 5881 section 5)", "S_UP4",
     frame4(bfd(), ttl=254), "XDP_DROP", None, "drop.ttl", 0, 0),
    ("multihop_ttl249", "Multihop below the session's minimum TTL 250", "S_MH4",
     frame4(bfd(my=0x4B, your=0x4A), src="203.0.113.200", ttl=249, dport=4784), "XDP_DROP",
     None, "drop.ttl", 0, 0),
    ("auth_bit", "A bit on a session without authentication (fail closed)", "S_UP4",
     frame4(bfd(flags=A, length=28, pad=b"\x01\x04\x01\x00")), "XDP_DROP", None,
     "drop.auth_mismatch", 0, 0),
    ("no_session", "Your Discriminator 0 from an address pair with no session", "S_UP4",
     frame4(bfd(state=1, my=0x77, your=0), src=V4_OTHER), "XDP_DROP", None,
     "drop.no_session", 0, 0),
    ("demux_mismatch", "Right discriminator, wrong source address", "S_UP4",
     frame4(bfd(), src=V4_OTHER), "XDP_DROP", None, "drop.demux_mismatch", 0, 0),
    # the session's addresses are compared with the frame's in place (xdp_bfd.bpf.c, addr_is):
    # each word of either address, in both families, can fail the match
    ("demux_wrong_local", "Right discriminator, addressed to another address of ours", "S_UP4",
     frame4(bfd(), dst="192.0.2.99"), "XDP_DROP", None, "drop.demux_mismatch", 0, 0),
    ("demux_mismatch6", "IPv6: right discriminator, wrong source address (last word)", "S_UP6",
     frame6(bfd(my=0x1B, your=0x1A), src="2001:db8::99"), "XDP_DROP", None,
     "drop.demux_mismatch", 0, 0),
    ("demux_mismatch6_hi", "IPv6: right discriminator, source differs in its first word",
     "S_UP6", frame6(bfd(my=0x1B, your=0x1A), src="3001:db8::2"), "XDP_DROP", None,
     "drop.demux_mismatch", 0, 0),
    ("demux_wrong_local6", "IPv6: right discriminator, addressed to another address of ours",
     "S_UP6", frame6(bfd(my=0x1B, your=0x1A), dst="2001:db8::98"), "XDP_DROP", None,
     "drop.demux_mismatch", 0, 0),
    ("multihop_on_3784", "A multihop session's packet sent to 3784 does not match it", "S_MH4",
     frame4(bfd(my=0x4B, your=0x4A), src="203.0.113.200", ttl=255, dport=3784), "XDP_DROP",
     None, "drop.demux_mismatch", 0, 0),
    ("short_payload", "UDP payload of 20 bytes", "S_UP4",
     frame4(bfd()[:20]), "XDP_DROP", None, "drop.bad_length", 0, 0),
    ("init_poll_final", "Session Init, peer Up with Poll: Final at once, state Up (6.8.6, C01b)",
     "S_INIT4", frame4(bfd(flags=P, my=0x6B, your=0x6A, tx=SLOW_US), src="192.0.2.6"),
     "XDP_TX", reply4(S["S_INIT4"], flags=F, state=3), "tx_final", 1, 1),
    ("init_up_consumed", "Session Init, peer Up without Poll: for the engine, not answered",
     "S_INIT4", frame4(bfd(my=0x6B, your=0x6A, tx=SLOW_US), src="192.0.2.6"), "XDP_DROP",
     None, "rx_consumed", 1, 1),
    ("init_poll_other_disc", "Session Init, Poll from another My Discriminator: engine's call",
     "S_INIT4", frame4(bfd(flags=P, my=0x6C, your=0x6A, tx=SLOW_US), src="192.0.2.6"),
     "XDP_DROP", None, "rx_consumed", 1, 1),
    ("down_poll_consumed", "Session Down, peer Init with Poll: for the engine, not answered",
     "S_DOWN4", frame4(bfd(state=2, flags=P, my=0x2C, your=0x2A), src="192.0.2.3"),
     "XDP_DROP", None, "rx_consumed", 1, 1),
    ("software_up", "Session served by userspace: reported, not answered (no double rate)",
     "S_SW4", frame4(bfd(my=0x7B, your=0x7A), src="192.0.2.7"), "XDP_DROP", None,
     "rx_consumed", 1, 1),
    ("software_poll", "Session served by userspace: even a Poll is left to it",
     "S_SW4", frame4(bfd(flags=P, my=0x7B, your=0x7A), src="192.0.2.7"), "XDP_DROP", None,
     "rx_consumed", 1, 1),
    # Checksums (csum.h): verified before anything acts on the packet, as the stack would.
    ("csum_bad4", "RFC 768: wrong UDP checksum over IPv4: discarded, counted, not answered",
     "S_UP4", set_udp_csum(frame4(bfd()), udp_csum(frame4(bfd())) ^ 0x0100), "XDP_DROP", None,
     "drop.bad_udp_checksum", 0, 0),
    ("csum_bad4_poll", "Wrong UDP checksum on a Poll: no Final either", "S_UP4",
     set_udp_csum(frame4(bfd(flags=P)), udp_csum(frame4(bfd(flags=P))) ^ 0x8000), "XDP_DROP",
     None, "drop.bad_udp_checksum", 0, 0),
    ("csum_bad6", "Wrong UDP checksum over IPv6: discarded, counted", "S_UP6",
     set_udp_csum(frame6(bfd(my=0x1B, your=0x1A)), udp_csum(frame6(bfd(my=0x1B, your=0x1A))) ^ 1),
     "XDP_DROP", None, "drop.bad_udp_checksum", 0, 0),
    ("csum_zero6", "RFC 8200 8.1: UDP checksum 0 over IPv6 is discarded", "S_UP6",
     set_udp_csum(frame6(bfd(my=0x1B, your=0x1A)), 0), "XDP_DROP", None,
     "drop.zero_udp_checksum_ipv6", 0, 0),
    ("csum_zero4", "RFC 768: 0 over IPv4 means no checksum: accepted, answered with a full one",
     "S_UP4", set_udp_csum(frame4(bfd()), 0), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("csum_partial4", "A veth sender's CHECKSUM_PARTIAL datagram (pseudo-header sum only)",
     "S_UP4", pseudo_only(frame4(bfd())), "XDP_DROP", None, "drop.bad_udp_checksum", 0, 0),
    ("csum_partial6", "The same over IPv6", "S_UP6", pseudo_only(frame6(bfd(my=0x1B, your=0x1A))),
     "XDP_DROP", None, "drop.bad_udp_checksum", 0, 0),
    ("csum_odd25", "Odd UDP payload (Length 24 + 1 byte), right checksum: accepted (R09)",
     "S_UP4", frame4(bfd(pad=b"\x5a")), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("csum_odd25_bad", "The odd byte changed after the checksum was computed: discarded",
     "S_UP4", frame4(bfd(pad=b"\x5a"))[:-1] + b"\x5b", "XDP_DROP", None,
     "drop.bad_udp_checksum", 0, 0),
    ("csum_tail26", "26-byte payload (a 2-byte tail after the 32-bit words): accepted", "S_UP4",
     frame4(bfd(pad=b"\x5a\xa5")), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("csum_tail27", "27-byte payload (a 3-byte tail): accepted", "S_UP4",
     frame4(bfd(pad=b"\x5a\xa5\x11")), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("csum_max512", "A 512-byte UDP datagram, the longest checksummed: accepted, reply 24 bytes",
     "S_UP4", frame4(bfd(pad=bytes(range(240)) * 2)), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    ("csum_over512", "A 513-byte UDP datagram: not checksummed, discarded as bad_length",
     "S_UP4", frame4(bfd(pad=bytes(range(241)) * 2)[:24 + 481]), "XDP_DROP", None,
     "drop.bad_length", 0, 0),
    ("ip_csum_bad", "RFC 791: IPv4 header checksum wrong: discarded before any BFD check",
     "S_UP4", bad_ip_csum(frame4(bfd())), "XDP_DROP", None, "drop.bad_ip_checksum", 0, 0),
    ("zero_reply6", "IPv6 reply whose UDP checksum computes to 0 goes out as 0xFFFF", "S_ZERO6",
     frame6(bfd(my=0x8B, your=0x8A), src=ZERO6[3]), "XDP_TX", reply6(ZERO6), "tx_reply", 1, 0),
    # With our own Poll Sequence open (poll_seq 5): replies carry P until the peer's Final.
    ("our_poll_open", "Our Poll Sequence is open: the reply carries P (RFC 5880 6.5)",
     "S_UP4|POLL", frame4(bfd()), "XDP_TX", reply4(UP4, flags=P), "tx_reply", 1, 0),
    ("our_poll_final", "The peer's Final closes our Poll: reply without P, engine told",
     "S_UP4|POLL", frame4(bfd(flags=F)), "XDP_TX", reply4(UP4), "tx_reply", 1, 1),
    ("our_poll_peer_poll", "Peer's Poll while ours is open: Final only, never P with F",
     "S_UP4|POLL", frame4(bfd(flags=P)), "XDP_TX", reply4(UP4, flags=F), "tx_final", 1, 0),
]


# --- Conformance (../shared/docs/conformance.md; which test covers what: docs/conformance.md) ---
# The [TR] steps the fixtures above leave out. Discard rows of section 2 again with P=1: still
# discarded under the same reason, and no Final (check 3).
DOWN4, ADMIN4, MH4 = S["S_DOWN4"], S["S_ADMIN4"], S["S_MH4"]
CONFORMANCE = [
    ("r01_version0_poll", "R01 with P: version 0, no Final", "S_UP4",
     frame4(bytes([0]) + bfd(flags=P)[1:]), "XDP_DROP", None, "drop.bad_version", 0, 0),
    ("r01_version2_poll", "R01 with P: version 2, no Final", "S_UP4",
     frame4(bytes([2 << 5]) + bfd(flags=P)[1:]), "XDP_DROP", None, "drop.bad_version", 0, 0),
    ("r02_len23_poll", "R02 with P: Length 23, no Final", "S_UP4",
     frame4(bfd(flags=P, length=23)), "XDP_DROP", None, "drop.bad_length", 0, 0),
    ("r03_len30_poll", "R03 with P: Length 30 beyond the payload, no Final", "S_UP4",
     frame4(bfd(flags=P, length=30)), "XDP_DROP", None, "drop.length_gt_payload", 0, 0),
    ("r04_auth_len25_poll", "R04 with P: A set, Length 25, no Final", "S_UP4",
     frame4(bfd(flags=A | P, length=25, pad=b"\x01")), "XDP_DROP", None, "drop.bad_length", 0,
     0),
    ("r05_mult0_poll", "R05 with P: Detect Mult 0, no Final", "S_UP4",
     frame4(bfd(flags=P, mult=0)), "XDP_DROP", None, "drop.zero_mult", 0, 0),
    ("r06_multipoint_poll", "R06 with P: M bit, no Final", "S_UP4",
     frame4(bfd(flags=M | P)), "XDP_DROP", None, "drop.multipoint", 0, 0),
    ("r07_unknown_your_poll", "R07 with P: no such session, no Final", "S_UP4",
     frame4(bfd(flags=P, your=0x5EED0002)), "XDP_DROP", None, "drop.unknown_your_disc", 0, 0),
    ("r08_zero_your_up_poll", "R08 with P: Your Discriminator 0, Up, no Final", "S_UP4",
     frame4(bfd(flags=P, your=0)), "XDP_DROP", None, "drop.zero_your_disc", 0, 0),
    ("r08_zero_your_init_poll", "R08 with P: Your Discriminator 0, Init, no Final", "S_UP4",
     frame4(bfd(state=2, flags=P, your=0)), "XDP_DROP", None, "drop.zero_your_disc", 0, 0),
    # Accepted rows with P: the Final is owed, and it is exactly 24 bytes.
    ("r09_trailing_poll", "R09 with P: 4 trailing bytes accepted, a 24-byte Final", "S_UP4",
     frame4(bfd(flags=P, pad=b"\xde\xad\xbe\xef")), "XDP_TX", reply4(UP4, flags=F),
     "tx_final", 1, 0),
    ("r12_diag31_poll", "R12 with P: diag 31 accepted, Final at once", "S_UP4",
     frame4(bfd(diag=31, flags=P)), "XDP_TX", reply4(UP4, flags=F), "tx_final", 1, 1),
    # R10 / C10c: while we are AdminDown every state, with P or without, is discarded.
    ("c10c_admin_up", "C10c: AdminDown session, peer Up without P", "S_ADMIN4",
     frame4(bfd(my=0x3B, your=0x3A), src="192.0.2.4"), "XDP_DROP", None, "drop.admin_down", 0,
     0),
    ("c10c_admin_init_poll", "C10c: AdminDown session, peer Init with P: no Final",
     "S_ADMIN4", frame4(bfd(state=2, flags=P, my=0x3B, your=0x3A), src="192.0.2.4"),
     "XDP_DROP", None, "drop.admin_down", 0, 0),
    ("c10c_admin_down_poll", "C10c: AdminDown session, peer Down with P: no Final",
     "S_ADMIN4", frame4(bfd(state=1, flags=P, my=0x3B, your=0x3A), src="192.0.2.4"),
     "XDP_DROP", None, "drop.admin_down", 0, 0),
    ("c10c_admin_down_your0", "C10c: AdminDown session found by addresses (Your Disc 0)",
     "S_ADMIN4", frame4(bfd(state=1, my=0x3C, your=0), src="192.0.2.4"), "XDP_DROP", None,
     "drop.admin_down", 0, 0),
    # C01a: a Poll that changes Required Min RX gets its Final at once, Up F1 P0, and the
    # engine is told of the new value.
    ("c01a_poll_rx600", "C01a: Poll with rx 600 ms: Final at once, Up F1 P0", "S_UP4",
     frame4(bfd(flags=P, rx=600000)), "XDP_TX", reply4(UP4, flags=F), "tx_final", 1, 1),
    # C01b: Init, the peer Init with P: the Final carries Up (6.8.6 applies the state change
    # before the Poll step builds the reply; the peer Up with P is init_poll_final above).
    ("c01b_init_peer_init_poll", "C01b: Init, peer Init with P: the Final says Up", "S_INIT4",
     frame4(bfd(state=2, flags=P, my=0x6B, your=0x6A, tx=SLOW_US), src="192.0.2.6"),
     "XDP_TX", reply4(S["S_INIT4"], flags=F, state=3), "tx_final", 1, 1),
    # C03a / C04: Polls that lower our rate or stop it still get their Final at once.
    ("c03a_poll_rx1s", "C03a: Poll with rx 1 s: Final at once", "S_UP4",
     frame4(bfd(flags=P, rx=1000000)), "XDP_TX", reply4(UP4, flags=F), "tx_final", 1, 1),
    ("c04_poll_rx0", "C04: Poll with Required Min RX 0: the one Final", "S_UP4",
     frame4(bfd(flags=P, rx=0)), "XDP_TX", reply4(UP4, flags=F), "tx_final", 1, 1),
    # C06a / C06c: a Down session keyed by addresses; Your Discriminator 0 with Init or Up, and
    # My Discriminator 0, are discarded before the session is looked at.
    ("c06a_down_init_your0", "C06a: Down session, peer Init with Your Disc 0", "S_DOWN4",
     frame4(bfd(state=2, my=0x2C, your=0), src="192.0.2.3"), "XDP_DROP", None,
     "drop.zero_your_disc", 0, 0),
    ("c06a_down_up_your0", "C06a: Down session, peer Up with Your Disc 0", "S_DOWN4",
     frame4(bfd(state=3, my=0x2C, your=0), src="192.0.2.3"), "XDP_DROP", None,
     "drop.zero_your_disc", 0, 0),
    ("c06c_down_my0", "C06c: Down session, My Disc 0 and Your Disc 0", "S_DOWN4",
     frame4(bfd(state=1, my=0, your=0), src="192.0.2.3"), "XDP_DROP", None,
     "drop.zero_my_disc", 0, 0),
    # C07d: the source port is not part of the key; the reply still goes to 3784 (RFC 5881 4).
    ("c07d_sport50001", "C07d: S1 packet from source port 50001: accepted, reply to 3784",
     "S_UP4", frame4(bfd(), sport=50001), "XDP_TX", reply4(UP4), "tx_reply", 1, 0),
    # C08a: multihop TTL 253 is above the minimum 250: accepted; the reply leaves with 255 (C08b).
    ("c08a_multihop_ttl253", "C08a: multihop at TTL 253: accepted, reply TTL 255", "S_MH4",
     frame4(bfd(my=0x4B, your=0x4A), src="203.0.113.200", ttl=253, dport=4784), "XDP_TX",
     reply4(MH4, dport=4784), "tx_reply", 1, 0),
    # C10a / C13a: a received AdminDown or Down on an Up session is the engine's (6.8.6 state
    # change): recorded, posted, not answered in XDP.
    ("c10a_peer_admin_down", "C10a: Up session, peer AdminDown diag 7: to the engine",
     "S_UP4", frame4(bfd(state=0, diag=7)), "XDP_DROP", None, "rx_consumed", 1, 1),
    ("c13a_peer_down", "C13a: Up session, peer Down diag 1: to the engine", "S_UP4",
     frame4(bfd(state=1, diag=1)), "XDP_DROP", None, "rx_consumed", 1, 1),
]
FIXTURES += CONFORMANCE

# --- Echo (kern/echo.h; RFC 5880 6.4, 6.8.9; RFC 5881 4; conformance.md C11) ---
E4, E6 = S["S_ECHO4"][3], S["S_ECHO6"][3]
ECHO = [
    ("echo_self4", "C11f: self-addressed IPv4 echo of an Up echo session: returned, TTL 254",
     "S_ECHO4", echo_in(E4, E4), "XDP_TX", echo_out(E4, E4), "tx_echo", 0, 0),
    ("echo_to_us6", "FRR's IPv6 echo, addressed to us: returned to its sender, hop limit 254",
     "S_ECHO6", echo_in(E6, V6_US), "XDP_TX", echo_out(V6_US, E6), "tx_echo", 0, 0),
    ("echo_to_us4", "IPv4 echo addressed to us: returned to its sender", "S_ECHO4",
     echo_in(E4, V4_US), "XDP_TX", echo_out(V4_US, E4), "tx_echo", 0, 0),
    ("echo_self6", "Self-addressed IPv6 echo: returned as it is, hop limit 254", "S_ECHO6",
     echo_in(E6, E6), "XDP_TX", echo_out(E6, E6), "tx_echo", 0, 0),
    ("echo_sport", "The source port is the sender's: kept", "S_ECHO4",
     echo_in(E4, E4, sport=49999), "XDP_TX", echo_out(E4, E4, sport=49999), "tx_echo", 0, 0),
    ("echo_ttl254", "Echo already forwarded once (TTL 254): never returned (no loop)",
     "S_ECHO4", echo_in(E4, E4, ttl=254), "XDP_DROP", None, "echo_ttl", 0, 0),
    ("echo_not_offered", "C11f: Up session advertising Required Min Echo RX 0: not returned",
     "S_UP4", echo_in(V4_PEER, V4_PEER), "XDP_DROP", None, "echo_refused", 0, 0),
    ("echo_not_up", "Session with echo on but Down: not returned (RFC 5880 6.8.9)", "S_DOWN4",
     echo_in("192.0.2.3", "192.0.2.3"), "XDP_DROP", None, "echo_refused", 0, 0),
    ("echo_to_us_not_up", "Echo addressed to us from the address of a session still Down: "
     "returned (the source names the peer host; FRR's echo of an Up session)", "S_DOWN4",
     echo_in("192.0.2.3", V4_US), "XDP_TX", echo_out(V4_US, "192.0.2.3"), "tx_echo", 0, 0),
    ("echo_unowned", "Echo from an address with no session: to the stack", "S_ECHO4",
     echo_in(V4_OTHER, V4_OTHER), "XDP_PASS", None, "echo_unowned", 0, 0),
    ("echo_to_other6", "FRR's IPv6 echo from the peer to another of our addresses (FRR sends "
     "from its route's source): returned to its sender", "S_ECHO6", echo_in(E6, "2001:db8::9"),
     "XDP_TX", echo_out("2001:db8::9", E6), "tx_echo", 0, 0),
    ("echo_multihop_peer", "Echo from a multihop session's peer: not filed for echo (RFC 5883)",
     "S_MH4", echo_in("203.0.113.200", "203.0.113.200"), "XDP_PASS", None, "echo_unowned", 0,
     0),
    ("echo_bad_csum", "Echo with a wrong UDP checksum: not returned, counted", "S_ECHO4",
     set_udp_csum(echo_in(E4, E4), udp_csum(echo_in(E4, E4)) ^ 0x0400), "XDP_DROP", None,
     "drop.bad_udp_checksum", 0, 0),
]
FIXTURES += ECHO

# --- Our own echo coming back (kern/echo_own.h; RFC 5880 6.4, 6.8.5; conformance.md C11d) ---
SE4, SE6 = S["S_ECHO4"], S["S_ECHO6"]
OWN_ECHO = [
    ("own_echo4", "C11d: our IPv4 echo back (self-addressed, TTL 254): recorded, dropped",
     "S_ECHO4", own_echo(SE4), "XDP_DROP", None, "echo_own_rx", 0, 0),
    ("own_echo6", "C11d: our IPv6 echo back (self-addressed, hop limit 254): recorded, dropped",
     "S_ECHO6", own_echo(SE6), "XDP_DROP", None, "echo_own_rx", 0, 0),
    ("own_echo_ttl255", "C11d: the TTL rule of Control does not apply to echo: 255 accepted",
     "S_ECHO4", own_echo(SE4, ttl=255), "XDP_DROP", None, "echo_own_rx", 0, 0),
    ("own_echo_bad_csum", "Our echo damaged (UDP checksum): dropped as such, not recorded",
     "S_ECHO4", set_udp_csum(own_echo(SE4), udp_csum(own_echo(SE4)) ^ 0x0100), "XDP_DROP",
     None, "drop.bad_udp_checksum", 0, 0),
    ("own_echo_other_engine", "Another engine's echo (same magic, its own address, "
     "a discriminator of ours): the peer's, returned", "S_ECHO4",
     own_echo(SE4, src=SE4[3], dst=SE4[3], ttl=255), "XDP_TX",
     frames.udp_frame(MAC_US, MAC_PEER, SE4[3], SE4[3], 61000 + SESSIONS.index(SE4), 3785,
                      wbfd.engine_echo(SE4[4], OWN_SEQ, OWN_TX_NS), ttl=254), "tx_echo", 0, 0),
    ("own_echo_unknown_disc", "Our magic, a discriminator of no session: not ours; no session "
     "for its source either: to the stack", "S_ECHO4", own_echo(SE4, disc=0x77), "XDP_PASS",
     None, "echo_unowned", 0, 0),
]
FIXTURES += OWN_ECHO


def check_references():
    """The expected bytes stand on scapy's own computation: every reply's checksums verify, and
    the zero-sum reply really carries 0xFFFF."""
    for name, _, _, _, _, fout, *_ in FIXTURES:
        if fout is None:
            continue
        pkt = Ether(fout)
        ip = pkt[1]
        again = Ether(fout)
        del again[UDP].chksum
        if ip.version == 4:
            del again[IP].chksum
        assert bytes(again) == fout, f"{name}: scapy recomputes other checksums"
    assert udp_csum(reply6(ZERO6)) == 0xFFFF, "the zero-sum reply must carry 0xFFFF"
    assert len(frame4(bfd(pad=bytes(range(240)) * 2))) == 14 + 20 + 512


def c_bytes(b):
    rows = [", ".join(f"0x{x:02x}" for x in b[i:i + 12]) for i in range(0, len(b), 12)]
    return "{\n\t\t" + ",\n\t\t".join(rows) + "\n\t}"


def main():
    check_references()
    out = sys.stdout
    out.write("/* Generated by tests/prog/gen_fixtures.py (lab.wire); do not edit. */\n")
    out.write("#ifndef PROG_FIXTURES_H\n#define PROG_FIXTURES_H\n\n#include <stdint.h>\n\n")
    out.write("struct fx_session {\n\tconst char *name;\n\tuint8_t family;\n"
              "\tconst char *local, *peer;\n\tuint32_t local_disc, remote_disc;\n"
              "\tuint8_t state;\n\tuint8_t flags; /* BFD_SF_* */\n\tuint8_t min_ttl;\n"
              "\tuint32_t peer_tx_us; /* the peer's Desired Min TX in steady state */\n"
              "\tuint32_t echo_rx_us; /* our Required Min Echo RX */\n};\n\n")
    out.write("static const struct fx_session fx_sessions[] = {\n")
    for name, fam, local, peer, ld, rd, st, fl, ttl, ptx in SESSIONS:
        flags = " | ".join(f"BFD_SF_{f}" for f in fl.split("|") if f) or "0"
        out.write(f'\t{{ "{name}", {fam}, "{local}", "{peer}", 0x{ld:x}, 0x{rd:x}, {st}, '
                  f'{flags}, {ttl}, {ptx}, {ECHO_RX_US.get(name, 0)} }},\n')
    out.write("};\n\n")
    for name, *_rest in SESSIONS:
        out.write(f"#define {name} {SESSIONS.index(S[name])}\n")
    out.write(f"#define FX_TX_US {TX_US}\n#define FX_PORT_BASE 61000\n")
    out.write(f"#define FX_OWN_SEQ {OWN_SEQ}\n#define FX_OWN_TX_NS {OWN_TX_NS}ULL\n\n")
    out.write("struct fx {\n\tconst char *name, *desc;\n\tint slot;\n\tconst uint8_t *in;\n"
              "\tunsigned in_len;\n\tint verdict;\n\tconst uint8_t *out;\n\tunsigned out_len;\n"
              "\tconst char *counter; /* \"drop.REASON\" or a counter name */\n"
              "\tint rx_moves; /* the session's last-receive time must move */\n"
              "\tint event; /* an event must be posted */\n"
              "\tint poll_open; /* set up with our Poll Sequence 5 open */\n};\n\n")
    for name, desc, slot, fin, verdict, fout, counter, moves, ev in FIXTURES:
        out.write(f"static const uint8_t fx_{name}_in[] = {c_bytes(fin)};\n")
        if fout is not None:
            out.write(f"static const uint8_t fx_{name}_out[] = {c_bytes(fout)};\n")
    out.write("\nstatic const struct fx fixtures[] = {\n")
    for name, desc, slot, fin, verdict, fout, counter, moves, ev in FIXTURES:
        o = f"fx_{name}_out, sizeof(fx_{name}_out)" if fout is not None else "NULL, 0"
        slot, _, variant = slot.partition("|")
        out.write(f'\t{{ "{name}", "{desc}", {slot}, fx_{name}_in, sizeof(fx_{name}_in), '
                  f'{verdict}, {o}, "{counter}", {moves}, {ev}, {int(variant == "POLL")} }},\n')
    out.write("};\n\n#endif\n")


if __name__ == "__main__":
    main()
