/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * decode.h - one captured frame to one BFD packet: link layer, IPv4/IPv6, UDP, BFD Control
 * (RFC 5880 section 4.1, ports of RFC 5881, 5883, 7130) and BFD Echo (RFC 5881 section 4).
 *
 * Pure functions over a byte buffer: no allocation, no global state, every read bounds-checked
 * against the captured length, so any input is safe (the fuzz target calls decode_frame()).
 */
#ifndef BFDCAP_DECODE_H
#define BFDCAP_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "bfd_shared.h"

/* Link types (DLT_* values as returned by pcap_datalink()). */
#define BFDCAP_DLT_NULL	      0
#define BFDCAP_DLT_EN10MB     1
#define BFDCAP_DLT_RAW	      12 /* LINKTYPE_RAW (101) is mapped to DLT_RAW by libpcap on Linux */
#define BFDCAP_DLT_RAW_BSD    14
#define BFDCAP_DLT_LOOP	      108
#define BFDCAP_DLT_LINUX_SLL  113
#define BFDCAP_DLT_IPV4	      228
#define BFDCAP_DLT_IPV6	      229
#define BFDCAP_DLT_LINUX_SLL2 276
#define BFDCAP_LINKTYPE_RAW   101 /* as stored in files; libpcap hands it out as DLT_RAW */

/*
 * Why a frame on a BFD port could not be used. The names shared with the engine and the XDP
 * program come from BFD_DROP_REASONS (bfd_shared.h); the others are the capture's own.
 * "Invalid" reasons (decode succeeded, but a receiver must discard the packet per RFC 5880
 * section 6.8.6) are marked so --packets can still print the fields.
 * X(name, json_name, invalid, "description")
 */
#define BFDCAP_MALFORMED(X)                                                                        \
	X(TRUNCATED, "truncated", 0, "frame captured shorter than its headers or BFD section")     \
	X(LINKTYPE, "unsupported_linktype", 0, "link type bfdcap does not decode")                 \
	X(MALFORMED_IP, "malformed_ip", 0, "IPv4/IPv6 header inconsistent")                        \
	X(IP_FRAGMENT, "ip_fragment", 0, "UDP in an IP fragment: cannot be decoded alone")         \
	X(BAD_UDP, "bad_udp", 0, "UDP length below 8 or beyond the IP payload")                    \
	X(SHORT_PAYLOAD, "short_payload", 0, "UDP payload shorter than 24 bytes")                  \
	X(BAD_VERSION, "bad_version", 0, "Version is not 1")                                       \
	X(BAD_LENGTH, "bad_length", 0, "Length below 24 (26 with A set)")                          \
	X(LENGTH_GT_PAYLOAD, "length_gt_payload", 0, "Length beyond the UDP payload")              \
	X(BAD_AUTH, "bad_auth", 0, "authentication section inconsistent with its type or Length")  \
	X(ZERO_MULT, "zero_mult", 1, "Detect Mult is zero")                                        \
	X(MULTIPOINT, "multipoint", 1, "Multipoint (M) bit set")                                   \
	X(ZERO_MY_DISC, "zero_my_disc", 1, "My Discriminator is zero")                             \
	X(ZERO_YOUR_DISC, "zero_your_disc", 1,                                                     \
	  "Your Discriminator zero while state is not Down or AdminDown")                          \
	X(POLL_AND_FINAL, "poll_and_final", 1, "Poll and Final both set")                          \
	X(NO_TIMESTAMP, "no_timestamp", 0, "pcapng Simple Packet Block: no timestamp to use")      \
	X(READ_ERROR, "read_error", 0, "the file ended inside a record or could not be read")

#define BFDCAP_M_ENUM(name, json, invalid, text) BFDCAP_M_##name,
enum bfdcap_malformed { BFDCAP_M_NONE = -1, BFDCAP_MALFORMED(BFDCAP_M_ENUM) BFDCAP_M__COUNT };
#undef BFDCAP_M_ENUM

/* JSON name of a malformed reason ("truncated", ...); "?" when out of range. */
const char *decode_malformed_name(int reason);
/* 1 when the reason is a RFC 5880 6.8.6 discard of an otherwise decodable packet. */
int decode_malformed_is_invalid(int reason);

/*
 * What a receiver verifying checksums would say of the frame (RFC 791, RFC 768, RFC 8200 8.1).
 * Reported, never a reason to skip the packet: a capture taken on the sending host sees its
 * outgoing datagrams before the NIC (or a veth with transmit offload) finishes their checksum.
 * The names of the failures are the engine's discard reasons (BFD_DROP_REASONS).
 * X(name, json_name)
 */
#define BFDCAP_CHECKSUMS(X)                                                                        \
	X(UNVERIFIED, "unverified") /* the capture cut the datagram short */                       \
	X(OK, "ok")                                                                                \
	X(NONE, "none") /* IPv4 UDP checksum 0: the sender computed none (RFC 768) */              \
	X(BAD_IP, "bad_ip_checksum")                                                               \
	X(BAD_UDP, "bad_udp_checksum")                                                             \
	X(ZERO_UDP_IPV6, "zero_udp_checksum_ipv6")

#define BFDCAP_CSUM_ENUM(name, json) BFDCAP_CSUM_##name,
enum bfdcap_checksum { BFDCAP_CHECKSUMS(BFDCAP_CSUM_ENUM) BFDCAP_CSUM__COUNT };
#undef BFDCAP_CSUM_ENUM

/* JSON name of a checksum verdict; "?" when out of range. */
const char *decode_checksum_name(int verdict);
/* 1 when a receiver verifying checksums discards the packet (bad IP or UDP, zero over IPv6). */
int decode_checksum_failed(int verdict);

enum bfdcap_kind {
	BFDCAP_KIND_CONTROL = 1, /* UDP destination port 3784, 4784 or 6784 */
	BFDCAP_KIND_ECHO = 2,	 /* UDP port 3785, either direction */
};

/* Authentication types, RFC 5880 section 4.2. */
enum bfdcap_auth_type {
	BFDCAP_AUTH_SIMPLE = 1,
	BFDCAP_AUTH_KEYED_MD5 = 2,
	BFDCAP_AUTH_METICULOUS_MD5 = 3,
	BFDCAP_AUTH_KEYED_SHA1 = 4,
	BFDCAP_AUTH_METICULOUS_SHA1 = 5,
};

/*
 * One decoded packet. Addresses in network byte order (IPv4 in the first 4 bytes, rest zero);
 * every other field in host order. Control fields are valid when kind is CONTROL.
 */
struct bfdcap_pkt {
	int64_t ts_ns;	/* capture timestamp, ns since the epoch */
	uint8_t family; /* 4 or 6 */
	uint8_t kind;	/* enum bfdcap_kind */
	uint8_t ttl;	/* IPv4 TTL or IPv6 hop limit */
	uint8_t version;
	uint8_t diag;  /* enum bfd_diag */
	uint8_t state; /* enum bfd_session_state */
	uint8_t flags; /* BFD_FLAG_* */
	uint8_t detect_mult;
	uint8_t length;	  /* the Length field */
	uint8_t has_auth; /* A bit set and the section decoded */
	uint8_t auth_type;
	uint8_t auth_len;
	uint8_t auth_key_id;  /* 0 for simple password: key id is still the byte after Auth Len */
	uint8_t has_auth_seq; /* MD5 and SHA1 types carry a sequence number */
	uint16_t sport, dport;
	uint32_t auth_seq;
	uint32_t my_disc, your_disc;
	uint32_t desired_min_tx_us, required_min_rx_us, required_min_echo_rx_us;
	uint32_t payload_len; /* UDP payload bytes (echo: the echo payload) */
	uint8_t src[16], dst[16];
	uint8_t checksum; /* enum bfdcap_checksum */
	int malformed;	  /* enum bfdcap_malformed, BFDCAP_M_NONE when usable */
};

enum bfdcap_decode_result {
	DECODE_NOT_BFD = 0,   /* no BFD port, not IP, or not UDP: ignored */
	DECODE_OK = 1,	      /* @pkt fully valid */
	DECODE_MALFORMED = 2, /* on a BFD port but unusable; pkt->malformed says why */
	DECODE_INVALID = 3, /* fields decoded but a 6.8.6 check fails; pkt->malformed says which */
};

/*
 * decode_frame() - decode one captured frame.
 * @linktype: LINKTYPE_* or DLT_* of the frame (BFDCAP_DLT_*, BFDCAP_LINKTYPE_RAW).
 * @data, @caplen: the captured bytes (network byte order), possibly cut short by the snap length.
 * @pkt: filled in; pkt->ts_ns is left as the caller set it.
 * Return: enum bfdcap_decode_result. Never reads outside @data[0..caplen).
 */
int decode_frame(int linktype, const uint8_t *data, size_t caplen, struct bfdcap_pkt *pkt);

/*
 * decode_bfd_control() - check and decode a BFD Control packet (RFC 5880 4.1, 4.2, 6.8.6).
 * @buf, @avail: the captured part of the UDP payload; @udp_payload_len: its length per the UDP
 * header (>= @avail when the frame was cut).
 * Return: DECODE_OK, DECODE_MALFORMED or DECODE_INVALID, as decode_frame().
 */
int decode_bfd_control(const uint8_t *buf, size_t avail, size_t udp_payload_len,
		       struct bfdcap_pkt *pkt);

/* Text of a state ("AdminDown", "Down", "Init", "Up"). */
const char *decode_state_name(unsigned state);

/* Format an address of @family (4 or 6) into @out (at least 46 bytes). Returns @out. */
char *decode_addr_str(int family, const uint8_t *addr, char *out, size_t outlen);

#endif /* BFDCAP_DECODE_H */
