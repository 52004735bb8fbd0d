// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_engine.c - libFuzzer target for what the engine takes from outside: bfdd's byte stream
 * (framing and every decoder), BFD Control packets (codec_decode), and the state machine driven
 * by whatever survives decoding, with the RFC 5880 invariants checked after every step.
 *
 * Input: a sequence of records [op][len][len bytes]:
 *   op % 4 == 0: bytes appended to a bfddp stream, framed with bfddp_frame(), each message
 *                decoded by type (ADD/DELETE configure the session, as in the engine);
 *   op % 4 == 1: a UDP payload for codec_decode(); accepted packets go to fsm_rx();
 *   op % 4 == 2: the Detection Time expires (fsm_expire());
 *   op % 4 == 3: time moves on by len milliseconds and our next packet is built.
 * Invariants: never P and F together, state 0..3, Detect Mult and Length set, a slow Desired Min
 * TX while not Up, a Detection Time only in Init/Up.
 *
 * Built and run by `make test-fuzz` (clang -fsanitize=fuzzer,address,undefined).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "bfddp.h"
#include "codec.h"
#include "fsm.h"
#include "log.h"

static struct bfd_session sess;
static uint64_t now_ns;
static uint8_t stream[4096];
static size_t stream_len;

static void check(int ok)
{
	if (!ok)
		abort();
}

static void invariants(void)
{
	struct bfd_pkt p;

	fsm_packet(&sess, false, now_ns, &p);
	check(p.state <= 3 && p.state == sess.session_state);
	check((p.flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) != (BFD_FLAG_POLL | BFD_FLAG_FINAL));
	check(p.detect_mult > 0 && p.length == BFD_CTRL_LEN && p.version == BFD_VERSION);
	check(sess.session_state == BFD_STATE_UP || p.desired_min_tx_us >= BFD_SLOW_TX_US);
	fsm_packet(&sess, true, now_ns, &p);
	check((p.flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) == BFD_FLAG_FINAL);
	check(fsm_detect_time_ns(&sess) == 0 || sess.session_state == BFD_STATE_UP ||
	      sess.session_state == BFD_STATE_INIT);
	if (sess.session_state != BFD_STATE_UP)
		check(!fsm_rx_clocked(&sess));
}

static int on_msg(void *ctx, const struct bfddp_header *h, const uint8_t *msg)
{
	struct bfddp_session s;
	struct fsm_config c;
	uint64_t a, b;
	uint32_t lid;

	(void)ctx;
	check(h->length >= BFDDP_HDR_LEN && h->length <= BFDDP_MAX_LEN);
	switch (h->type) {
	case BFDDP_ADD_SESSION:
	case BFDDP_DELETE_SESSION:
		if (bfddp_decode_session(msg, h->length, &s))
			return 0;
		check(s.ifname[sizeof(s.ifname) - 1] == 0);
		c = (struct fsm_config){.desired_min_tx_us = s.min_tx_us ? s.min_tx_us : 1,
					.required_min_rx_us = s.min_rx_us,
					.detect_mult = s.detect_mult,
					.passive = !!(s.flags & BFDDP_SF_PASSIVE),
					.shutdown = !!(s.flags & BFDDP_SF_SHUTDOWN),
					.cpi = !!(s.flags & BFDDP_SF_CBIT)};
		if (h->type == BFDDP_DELETE_SESSION)
			fsm_admin_down(&sess, now_ns);
		else
			fsm_configure(&sess, &c, now_ns);
		break;
	case BFDDP_REQUEST_COUNTERS:
		bfddp_decode_counters_request(msg, h->length, &lid);
		break;
	case BFDDP_ECHO_REQUEST:
	case BFDDP_ECHO_REPLY:
		bfddp_decode_echo(msg, h->length, &a, &b);
		break;
	default:
		break;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct fsm_config start = {
	    .desired_min_tx_us = 10000, .required_min_rx_us = 10000, .detect_mult = 3};
	size_t i = 0;

	log_set_level(LOG_ERR);
	memset(&sess, 0, sizeof(sess));
	sess.lid = sess.local_disc = 0x0A;
	sess.family = 4;
	sess.fast_path = true;
	now_ns = 1000000000ULL;
	stream_len = 0;
	fsm_start(&sess, &start, now_ns);
	while (i + 2 <= size) {
		uint8_t op = data[i], len = data[i + 1];
		const uint8_t *p = data + i + 2;
		struct bfd_pkt pkt;

		if (i + 2 + len > size)
			len = (uint8_t)(size - i - 2);
		i += 2 + (size_t)len;
		switch (op % 4) {
		case 0: {
			long used;

			if (stream_len + len > sizeof(stream))
				stream_len = 0;
			memcpy(stream + stream_len, p, len);
			stream_len += len;
			used = bfddp_frame(stream, stream_len, on_msg, NULL, NULL);
			if (used < 0) {
				stream_len = 0; /* the engine closes the connection here */
			} else {
				check((size_t)used <= stream_len);
				memmove(stream, stream + used, stream_len - (size_t)used);
				stream_len -= (size_t)used;
			}
			break;
		}
		case 1:
			if (codec_decode(p, len, &pkt) == BFD_DROP_NONE)
				fsm_rx(&sess, &pkt, now_ns);
			break;
		case 2:
			fsm_expire(&sess, now_ns);
			break;
		case 3:
			now_ns += (uint64_t)len * 1000000ULL;
			break;
		}
		invariants();
	}
	return 0;
}
