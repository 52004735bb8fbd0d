/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bfddp.h - FRR bfdd's distributed data-plane protocol, version 1 (FRR 8.0 .. 10.7), as pure
 * encode/decode functions over byte buffers. Layouts by explicit offset, all integers big-endian
 * (see docs/bfddp.md of the shared reference, sections 2-4). No I/O here: dplane.c does that.
 */
#ifndef ENGINE_BFDDP_H
#define ENGINE_BFDDP_H

#include <stddef.h>
#include <stdint.h>

#define BFDDP_VERSION 1
#define BFDDP_HDR_LEN 8
#define BFDDP_MAX_LEN 1024 /* largest v1 message is 140 bytes; anything far beyond is garbage */

enum bfddp_type {
	BFDDP_ECHO_REQUEST = 0,
	BFDDP_ECHO_REPLY = 1,
	BFDDP_ADD_SESSION = 2,
	BFDDP_DELETE_SESSION = 3,
	BFDDP_STATE_CHANGE = 4,
	BFDDP_REQUEST_COUNTERS = 5,
	BFDDP_SESSION_COUNTERS = 6,
};

/* Message lengths, header included. */
#define BFDDP_ECHO_LEN		   24
#define BFDDP_SESSION_LEN	   140
#define BFDDP_STATE_CHANGE_LEN	   36
#define BFDDP_REQUEST_COUNTERS_LEN 12
#define BFDDP_COUNTERS_LEN	   80

/* Session flags (body offset 0). */
/* Timer range bfdd can configure (ms 10..60000, sent in us; ../shared/docs/bfddp.md 4.2). */
#define BFDDP_TIMER_MIN_US 10000u
#define BFDDP_TIMER_MAX_US 60000000u

#define BFDDP_SF_MULTIHOP 0x01
#define BFDDP_SF_DEMAND	  0x02
#define BFDDP_SF_CBIT	  0x04
#define BFDDP_SF_ECHO	  0x08
#define BFDDP_SF_IPV6	  0x10
#define BFDDP_SF_PASSIVE  0x20
#define BFDDP_SF_SHUTDOWN 0x40

/* remote_flags of STATE_CHANGE: protocol-local bits, not RFC 5880 positions. */
#define BFDDP_RF_CBIT	    0x1
#define BFDDP_RF_DEMAND	    0x2
#define BFDDP_RF_MULTIPOINT 0x4

struct bfddp_header {
	uint8_t version;
	uint16_t type;
	uint16_t id;
	uint16_t length;
};

/* DP_ADD_SESSION / DP_DELETE_SESSION body. Intervals in microseconds. */
struct bfddp_session {
	uint32_t flags;	 /* BFDDP_SF_* */
	uint8_t src[16]; /* IPv4 in bytes 0-3; may be all zero */
	uint8_t dst[16];
	uint32_t lid;	    /* bfdd's local discriminator: the key */
	uint32_t min_tx_us; /* Desired Min TX */
	uint32_t min_rx_us; /* Required Min RX */
	uint32_t min_echo_tx_us;
	uint32_t min_echo_rx_us;
	uint32_t hold_time; /* never filled by bfdd */
	uint8_t ttl;	    /* 255 single hop; multihop: minimum accepted TTL */
	uint8_t detect_mult;
	uint32_t ifindex;
	char ifname[64]; /* NUL-terminated (forced on decode) */
};

/* BFD_STATE_CHANGE body: our local state plus what the peer last said. */
struct bfddp_state_change {
	uint32_t lid;
	uint32_t remote_disc;
	uint32_t remote_flags; /* BFDDP_RF_* */
	uint32_t remote_desired_min_tx_us;
	uint32_t remote_required_min_rx_us;
	uint32_t remote_required_min_echo_rx_us;
	uint8_t state; /* 0..3, enum bfd_session_state */
	uint8_t remote_diag;
	uint8_t remote_detect_mult;
};

struct bfddp_counters {
	uint64_t control_input_bytes;
	uint64_t control_input_packets;
	uint64_t control_output_bytes;
	uint64_t control_output_packets;
	uint64_t echo_input_bytes;
	uint64_t echo_input_packets;
	uint64_t echo_output_bytes;
	uint64_t echo_output_packets;
};

/*
 * bfddp_decode_header() - read the 8-byte header at @buf (@len bytes available, >= 8).
 * Return: 0; -EBADMSG when the length is below 8 or above BFDDP_MAX_LEN; -EPROTO on a version
 * other than 1 (framing cannot be trusted after either: close the connection).
 */
int bfddp_decode_header(const uint8_t *buf, size_t len, struct bfddp_header *h);

/*
 * bfddp_frame() - find the whole messages at the start of a byte stream and hand each to @fn
 * (header decoded, @msg pointing at its first byte, h->length bytes long). Stops early when
 * @fn returns non-zero.
 * Return: bytes consumed (a trailing partial message is left for the next read), or the
 * bfddp_decode_header() error of the first bad header (the stream cannot be trusted after it).
 */
long bfddp_frame(const uint8_t *buf, size_t len,
		 int (*fn)(void *ctx, const struct bfddp_header *h, const uint8_t *msg), void *ctx,
		 struct bfddp_header *bad);

/* bfddp_decode_session() - ADD/DELETE body from a whole message. Return: 0 or -EBADMSG if short. */
int bfddp_decode_session(const uint8_t *msg, size_t len, struct bfddp_session *out);
/* bfddp_decode_counters_request() - lid of a type-5 message. Return: 0 or -EBADMSG. */
int bfddp_decode_counters_request(const uint8_t *msg, size_t len, uint32_t *lid);
/* bfddp_decode_echo() - dp_time and bfdd_time of an echo message. Return: 0 or -EBADMSG. */
int bfddp_decode_echo(const uint8_t *msg, size_t len, uint64_t *dp_time, uint64_t *bfdd_time);

/* Encoders write one whole message at @buf and return its length. */
size_t bfddp_encode_echo_request(uint8_t *buf, uint64_t dp_time);
size_t bfddp_encode_state_change(uint8_t *buf, const struct bfddp_state_change *sc);
size_t bfddp_encode_counters(uint8_t *buf, uint16_t id, uint32_t lid,
			     const struct bfddp_counters *c);
/* ADD (or DELETE with @type) as bfdd sends it: used by the tests' bfdd stand-in. */
size_t bfddp_encode_session(uint8_t *buf, uint16_t type, const struct bfddp_session *s);

#endif
