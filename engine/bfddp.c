// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bfddp.c - see bfddp.h. Offsets are wire offsets (header included). */
#include <errno.h>
#include <string.h>
#include "bfddp.h"

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, (uint32_t)v);
}

static void put_header(uint8_t *buf, uint16_t type, uint16_t id, uint16_t length)
{
	buf[0] = BFDDP_VERSION;
	buf[1] = 0;
	put16(buf + 2, type);
	put16(buf + 4, id);
	put16(buf + 6, length);
}

int bfddp_decode_header(const uint8_t *buf, size_t len, struct bfddp_header *h)
{
	if (len < BFDDP_HDR_LEN)
		return -EBADMSG;
	h->version = buf[0];
	h->type = get16(buf + 2);
	h->id = get16(buf + 4);
	h->length = get16(buf + 6);
	if (h->version != BFDDP_VERSION)
		return -EPROTO;
	if (h->length < BFDDP_HDR_LEN || h->length > BFDDP_MAX_LEN)
		return -EBADMSG;
	return 0;
}

long bfddp_frame(const uint8_t *buf, size_t len,
		 int (*fn)(void *ctx, const struct bfddp_header *h, const uint8_t *msg), void *ctx,
		 struct bfddp_header *bad)
{
	size_t off = 0;

	while (len - off >= BFDDP_HDR_LEN) {
		struct bfddp_header h;
		int err = bfddp_decode_header(buf + off, len - off, &h);

		if (err) {
			if (bad)
				*bad = h;
			return err;
		}
		if (len - off < h.length)
			break; /* the rest arrives later */
		if (fn(ctx, &h, buf + off)) {
			off += h.length;
			break;
		}
		off += h.length;
	}
	return (long)off;
}

int bfddp_decode_session(const uint8_t *m, size_t len, struct bfddp_session *s)
{
	if (len < BFDDP_SESSION_LEN)
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	s->flags = get32(m + 8);
	memcpy(s->src, m + 12, 16);
	memcpy(s->dst, m + 28, 16);
	s->lid = get32(m + 44);
	s->min_tx_us = get32(m + 48);
	s->min_rx_us = get32(m + 52);
	s->min_echo_tx_us = get32(m + 56);
	s->min_echo_rx_us = get32(m + 60);
	s->hold_time = get32(m + 64);
	s->ttl = m[68];
	s->detect_mult = m[69];
	s->ifindex = get32(m + 72);
	memcpy(s->ifname, m + 76, sizeof(s->ifname));
	s->ifname[sizeof(s->ifname) - 1] = 0;
	return 0;
}

int bfddp_decode_counters_request(const uint8_t *m, size_t len, uint32_t *lid)
{
	if (len < BFDDP_REQUEST_COUNTERS_LEN)
		return -EBADMSG;
	*lid = get32(m + 8);
	return 0;
}

int bfddp_decode_echo(const uint8_t *m, size_t len, uint64_t *dp_time, uint64_t *bfdd_time)
{
	if (len < BFDDP_ECHO_LEN)
		return -EBADMSG;
	*dp_time = get64(m + 8);
	*bfdd_time = get64(m + 16);
	return 0;
}

size_t bfddp_encode_echo_request(uint8_t *buf, uint64_t dp_time)
{
	put_header(buf, BFDDP_ECHO_REQUEST, 0, BFDDP_ECHO_LEN);
	put64(buf + 8, dp_time);
	put64(buf + 16, 0);
	return BFDDP_ECHO_LEN;
}

size_t bfddp_encode_state_change(uint8_t *buf, const struct bfddp_state_change *sc)
{
	put_header(buf, BFDDP_STATE_CHANGE, 0, BFDDP_STATE_CHANGE_LEN);
	put32(buf + 8, sc->lid);
	put32(buf + 12, sc->remote_disc);
	put32(buf + 16, sc->remote_flags);
	put32(buf + 20, sc->remote_desired_min_tx_us);
	put32(buf + 24, sc->remote_required_min_rx_us);
	put32(buf + 28, sc->remote_required_min_echo_rx_us);
	buf[32] = sc->state & 3; /* bfdd indexes a 4-name table with it */
	buf[33] = sc->remote_diag;
	buf[34] = sc->remote_detect_mult;
	buf[35] = 0;
	return BFDDP_STATE_CHANGE_LEN;
}

size_t bfddp_encode_counters(uint8_t *buf, uint16_t id, uint32_t lid,
			     const struct bfddp_counters *c)
{
	put_header(buf, BFDDP_SESSION_COUNTERS, id, BFDDP_COUNTERS_LEN);
	put32(buf + 8, lid);
	put32(buf + 12, 0);
	put64(buf + 16, c->control_input_bytes);
	put64(buf + 24, c->control_input_packets);
	put64(buf + 32, c->control_output_bytes);
	put64(buf + 40, c->control_output_packets);
	put64(buf + 48, c->echo_input_bytes);
	put64(buf + 56, c->echo_input_packets);
	put64(buf + 64, c->echo_output_bytes);
	put64(buf + 72, c->echo_output_packets);
	return BFDDP_COUNTERS_LEN;
}

size_t bfddp_encode_session(uint8_t *buf, uint16_t type, const struct bfddp_session *s)
{
	memset(buf, 0, BFDDP_SESSION_LEN);
	put_header(buf, type, 0, BFDDP_SESSION_LEN);
	put32(buf + 8, s->flags);
	memcpy(buf + 12, s->src, 16);
	memcpy(buf + 28, s->dst, 16);
	put32(buf + 44, s->lid);
	put32(buf + 48, s->min_tx_us);
	put32(buf + 52, s->min_rx_us);
	put32(buf + 56, s->min_echo_tx_us);
	put32(buf + 60, s->min_echo_rx_us);
	put32(buf + 64, s->hold_time);
	buf[68] = s->ttl;
	buf[69] = s->detect_mult;
	put32(buf + 72, s->ifindex);
	memcpy(buf + 76, s->ifname, strnlen(s->ifname, sizeof(s->ifname) - 1));
	return BFDDP_SESSION_LEN;
}
