// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* codec.c - see codec.h. */
#include <arpa/inet.h>
#include <string.h>
#include "codec.h"

#define LOWER_NAME(name, text) #name,
static const char *const drop_names_upper[] = {BFD_DROP_REASONS(LOWER_NAME)};
static const char *const counter_names_upper[] = {BFD_COUNTERS(LOWER_NAME)};
#undef LOWER_NAME

static char drop_names[BFD_DROP__COUNT][32];
static char counter_names[BFD_CNT_DROP_BASE][32];

static const char *lower(char *dst, size_t n, const char *src)
{
	size_t i;

	if (!dst[0]) {
		for (i = 0; i + 1 < n && src[i]; i++)
			dst[i] = (src[i] >= 'A' && src[i] <= 'Z') ? src[i] - 'A' + 'a' : src[i];
		dst[i] = 0;
	}
	return dst;
}

const char *bfd_drop_name(unsigned reason)
{
	if (reason >= BFD_DROP__COUNT)
		return "?";
	return lower(drop_names[reason], sizeof(drop_names[0]), drop_names_upper[reason]);
}

const char *bfd_counter_name(unsigned counter)
{
	if (counter >= BFD_CNT_DROP_BASE)
		return "?";
	return lower(counter_names[counter], sizeof(counter_names[0]),
		     counter_names_upper[counter]);
}

const char *bfd_state_name(unsigned state)
{
	static const char *const names[] = {"AdminDown", "Down", "Init", "Up"};

	return state < 4 ? names[state] : "?";
}

void codec_from_wire(const struct bfd_ctrl *c, struct bfd_pkt *out)
{
	out->version = BFD_CTRL_VERSION(c);
	out->diag = BFD_CTRL_DIAG(c);
	out->state = BFD_CTRL_STATE(c);
	out->flags = BFD_CTRL_FLAGS(c);
	out->detect_mult = c->detect_mult;
	out->length = c->length;
	out->my_disc = ntohl(c->my_disc);
	out->your_disc = ntohl(c->your_disc);
	out->desired_min_tx_us = ntohl(c->desired_min_tx_us);
	out->required_min_rx_us = ntohl(c->required_min_rx_us);
	out->required_min_echo_rx_us = ntohl(c->required_min_echo_rx_us);
}

enum bfd_drop_reason codec_decode(const void *buf, size_t payload_len, struct bfd_pkt *out)
{
	struct bfd_ctrl c;

	memset(out, 0, sizeof(*out));
	if (payload_len < BFD_CTRL_LEN) {
		/* Too short to hold the mandatory section: decode what is there for the log. */
		if (payload_len >= 1)
			out->version = ((const uint8_t *)buf)[0] >> 5;
		return payload_len >= 1 && out->version != BFD_VERSION ? BFD_DROP_BAD_VERSION
								       : BFD_DROP_BAD_LENGTH;
	}
	memcpy(&c, buf, sizeof(c));
	codec_from_wire(&c, out);
	if (out->version != BFD_VERSION)
		return BFD_DROP_BAD_VERSION;
	if (out->length < ((out->flags & BFD_FLAG_AUTH) ? 26 : BFD_CTRL_LEN))
		return BFD_DROP_BAD_LENGTH;
	if (out->length > payload_len)
		return BFD_DROP_LENGTH_GT_PAYLOAD;
	if (out->detect_mult == 0)
		return BFD_DROP_ZERO_MULT;
	if (out->flags & BFD_FLAG_MULTIPOINT)
		return BFD_DROP_MULTIPOINT;
	if (out->my_disc == 0)
		return BFD_DROP_ZERO_MY_DISC;
	if (out->your_disc == 0 && out->state != BFD_STATE_DOWN &&
	    out->state != BFD_STATE_ADMIN_DOWN)
		return BFD_DROP_ZERO_YOUR_DISC;
	if ((out->flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) == (BFD_FLAG_POLL | BFD_FLAG_FINAL))
		return BFD_DROP_POLL_AND_FINAL;
	return BFD_DROP_NONE;
}

void codec_encode(const struct bfd_pkt *p, void *buf)
{
	struct bfd_ctrl c;

	c.version_diag = (uint8_t)((BFD_VERSION << 5) | (p->diag & 0x1f));
	c.state_flags = (uint8_t)(((p->state & 3) << 6) | (p->flags & 0x3f));
	c.detect_mult = p->detect_mult;
	c.length = BFD_CTRL_LEN;
	c.my_disc = htonl(p->my_disc);
	c.your_disc = htonl(p->your_disc);
	c.desired_min_tx_us = htonl(p->desired_min_tx_us);
	c.required_min_rx_us = htonl(p->required_min_rx_us);
	c.required_min_echo_rx_us = htonl(p->required_min_echo_rx_us);
	memcpy(buf, &c, sizeof(c));
}
