// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_codec.c - BFD Control packets in userspace: every session-independent check of RFC 5880
 * section 6.8.6 with its reason, the encoder against hand-written bytes, the shared names, and
 * the transmit queue's ordering.
 */
#include <string.h>
#include "check.h"
#include "codec.h"
#include "session.h"

/* [v=1 diag=0 sta=Up P0 F0 mult=3 len=24 my=0B your=0A tx=rx=300000 erx=0] */
static const uint8_t base[24] = {0x20, 0xc0, 3,	   24,	 0, 0,	  0,	0x0b, 0, 0, 0, 0x0a,
				 0,    0x04, 0x93, 0xe0, 0, 0x04, 0x93, 0xe0, 0, 0, 0, 0};

static enum bfd_drop_reason with(int off, uint8_t val, size_t len)
{
	uint8_t b[32];
	struct bfd_pkt p;

	memcpy(b, base, sizeof(base));
	memset(b + 24, 0, sizeof(b) - 24);
	if (off >= 0)
		b[off] = val;
	return codec_decode(b, len, &p);
}

static void test_checks(void)
{
	struct bfd_pkt p;

	CHECK_EQ(codec_decode(base, 24, &p), BFD_DROP_NONE, "base packet accepted");
	CHECK_EQ(p.state, BFD_STATE_UP, "state Up");
	CHECK_EQ(p.my_disc, 0x0b, "My Discriminator");
	CHECK_EQ(p.your_disc, 0x0a, "Your Discriminator");
	CHECK_EQ(p.desired_min_tx_us, 300000, "Desired Min TX");
	CHECK_EQ(with(0, 0x00, 24), BFD_DROP_BAD_VERSION, "R01 version 0");
	CHECK_EQ(with(0, 0x40, 24), BFD_DROP_BAD_VERSION, "R01 version 2");
	CHECK_EQ(with(3, 23, 24), BFD_DROP_BAD_LENGTH, "R02 Length 23");
	CHECK_EQ(with(3, 30, 24), BFD_DROP_LENGTH_GT_PAYLOAD, "R03 Length beyond payload");
	CHECK_EQ(with(-1, 0, 20), BFD_DROP_BAD_LENGTH, "20-byte payload");
	CHECK_EQ(with(-1, 0, 0), BFD_DROP_BAD_LENGTH, "empty payload");
	CHECK_EQ(with(2, 0, 24), BFD_DROP_ZERO_MULT, "R05 Detect Mult 0");
	CHECK_EQ(with(1, 0xc1, 24), BFD_DROP_MULTIPOINT, "R06 M");
	CHECK_EQ(with(7, 0, 24), BFD_DROP_ZERO_MY_DISC, "My Discriminator 0");
	CHECK_EQ(with(11, 0, 24), BFD_DROP_ZERO_YOUR_DISC, "R08 Your 0 while Up");
	CHECK_EQ(with(1, 0xe0 | 0x10, 24), BFD_DROP_POLL_AND_FINAL, "R11 P and F");
	CHECK_EQ(with(3, 24, 28), BFD_DROP_NONE, "R09 Length 24 in a 28-byte payload");
	CHECK_EQ(with(0, 0x3f, 24), BFD_DROP_NONE, "R12 diag 31");
	{
		uint8_t b[25];

		memcpy(b, base, 24);
		b[1] |= BFD_FLAG_AUTH;
		b[3] = 25;
		CHECK_EQ(codec_decode(b, 25, &p), BFD_DROP_BAD_LENGTH, "R04 A with Length 25");
		b[1] = (BFD_STATE_DOWN << 6);
		b[3] = 24;
		memset(b + 8, 0, 4);
		CHECK_EQ(codec_decode(b, 24, &p), BFD_DROP_NONE, "Your 0 while Down is fine");
	}
}

static void test_encode(void)
{
	struct bfd_pkt p = {.version = 1,
			    .diag = 3,
			    .state = BFD_STATE_DOWN,
			    .flags = BFD_FLAG_FINAL | BFD_FLAG_CPI,
			    .detect_mult = 5,
			    .my_disc = 0x01020304,
			    .your_disc = 0x0a0b0c0d,
			    .desired_min_tx_us = 1000000,
			    .required_min_rx_us = 50000,
			    .required_min_echo_rx_us = 0};
	static const uint8_t want[24] = {0x23, 0x58, 5,	   24,	 1, 2,	  3,	4,
					 0x0a, 0x0b, 0x0c, 0x0d, 0, 0x0f, 0x42, 0x40,
					 0,    0,    0xc3, 0x50, 0, 0,	  0,	0};
	uint8_t got[24];
	struct bfd_pkt back;

	codec_encode(&p, got);
	CHECK(!memcmp(got, want, 24), "encode: [v1 diag3 Down F C mult5 1s/50ms] byte for byte");
	CHECK_EQ(codec_decode(got, 24, &back), BFD_DROP_NONE, "round trip decodes");
	CHECK_EQ(back.flags, BFD_FLAG_FINAL | BFD_FLAG_CPI, "flags survive");
}

static void test_names(void)
{
	CHECK(!strcmp(bfd_drop_name(BFD_DROP_BAD_VERSION), "bad_version"), "drop name");
	CHECK(!strcmp(bfd_drop_name(BFD_DROP_POLL_AND_FINAL), "poll_and_final"), "drop name 2");
	CHECK(!strcmp(bfd_drop_name(BFD_DROP_BAD_UDP_CHECKSUM), "bad_udp_checksum"), "csum name");
	CHECK(!strcmp(bfd_drop_name(BFD_DROP_ZERO_UDP_CHECKSUM_IPV6), "zero_udp_checksum_ipv6"),
	      "zero csum name");
	CHECK(!strcmp(bfd_drop_name(BFD_DROP_BAD_IP_CHECKSUM), "bad_ip_checksum"), "ip csum name");
	CHECK(!strcmp(bfd_counter_name(BFD_CNT_TX_REPLY), "tx_reply"), "counter name");
	CHECK(!strcmp(bfd_state_name(2), "Init"), "state name");
	CHECK(!strcmp(bfd_state_name(9), "?"), "out-of-range state");
	CHECK(!strcmp(bfd_drop_name(999), "?"), "out-of-range reason");
}

static void test_txq(void)
{
	struct session_table t;
	struct bfd_session *s[6];
	static const uint64_t when[6] = {50, 10, 40, 30, 20, 60};
	uint64_t prev = 0;

	CHECK_EQ(sessions_init(&t, 8), 0, "table");
	for (int i = 0; i < 6; i++) {
		s[i] = sessions_add(&t, 100 + (uint32_t)i);
		s[i]->next_tx_ns = when[i];
		txq_update(&t, s[i]);
	}
	CHECK_EQ(txq_first(&t)->lid, 101, "earliest first");
	s[1]->next_tx_ns = 70;
	txq_update(&t, s[1]);
	CHECK_EQ(txq_first(&t)->lid, 104, "re-placed later: next earliest");
	sessions_remove(&t, s[4]);
	CHECK_EQ(txq_first(&t)->lid, 103, "removed from the queue with the session");
	CHECK(sessions_by_lid(&t, 104) == NULL, "and from the lid index");
	CHECK(sessions_by_lid(&t, 105) == s[5], "others still found");
	for (int n = 0; n < 5; n++) {
		struct bfd_session *f = txq_first(&t);

		CHECK(f->next_tx_ns >= prev, "popped in order");
		prev = f->next_tx_ns;
		f->next_tx_ns = 0;
		txq_update(&t, f);
	}
	CHECK(txq_first(&t) == NULL, "empty after taking all out");
	CHECK_EQ(sessions_add(&t, 7)->slot, 4, "the lowest free slot is reused");
	sessions_rekey(&t, s[0], 999);
	CHECK(sessions_by_lid(&t, 999) == s[0] && !sessions_by_lid(&t, 100), "rekeyed");
	sessions_fini(&t);
}

/* The tick's list (session_table.chores): only sessions with a chore stay on it. */
static void test_chores(void)
{
	struct session_table t;
	struct bfd_session *a, *b;

	CHECK_EQ(sessions_init(&t, 4), 0, "table");
	a = sessions_add(&t, 1);
	b = sessions_add(&t, 2);
	CHECK_EQ(t.n_chores, 2, "a new session has no socket and no path yet: on the list");
	a->fast_path = true;
	a->tx_fd = 100; /* not a real descriptor: only compared with -1 here */
	CHECK(!session_has_chores(a), "fast path with a socket: nothing for the tick");
	chores_del(&t, a);
	CHECK(t.chores == b && t.n_chores == 1, "the tick took it off");
	chores_note(&t, a);
	CHECK_EQ(t.n_chores, 1, "noted without a chore: stays off");
	a->fast_path = false;
	chores_note(&t, a);
	chores_note(&t, a);
	CHECK_EQ(t.n_chores, 2, "on the software path: back on, once");
	a->fast_path = true;
	a->hold_until_ns = 5;
	chores_del(&t, a);
	chores_note(&t, a);
	CHECK(a->on_chores, "a --dp-hold running is a chore");
	a->tx_fd = -1;
	sessions_remove(&t, a);
	CHECK(t.chores == b && t.n_chores == 1 && !b->chore_next && !b->chore_prev,
	      "removed from the list with the session");
	sessions_remove(&t, b);
	CHECK(t.chores == NULL && t.n_chores == 0, "empty");
	sessions_fini(&t);
}

/* Adds take the lowest free slot without a scan from 0; sessions are found by peer address. */
static void test_slots_and_addresses(void)
{
	struct session_table t;
	struct bfd_session *s[5];
	uint8_t peer[16] = {10, 97, 0, 0}, local[16] = {10, 96, 0, 1};

	CHECK_EQ(sessions_init(&t, 5), 0, "table");
	for (int i = 0; i < 4; i++) {
		s[i] = sessions_add(&t, 10 + (uint32_t)i);
		s[i]->family = 4;
		peer[3] = (uint8_t)i;
		memcpy(s[i]->peer_addr, peer, 16);
		memcpy(s[i]->local_addr, local, 16);
		sessions_file_addr(&t, s[i]);
	}
	CHECK_EQ(t.free_hint, 4, "no free slot below 4");
	peer[3] = 2;
	CHECK(sessions_by_addr(&t, 4, false, local, peer, 0) == s[2], "found by its addresses");
	CHECK(!sessions_by_addr(&t, 4, true, local, peer, 0), "not as multihop");
	CHECK(!sessions_by_addr(&t, 6, false, local, peer, 0), "not as IPv6");
	sessions_remove(&t, s[1]);
	sessions_remove(&t, s[2]);
	CHECK(!sessions_by_addr(&t, 4, false, local, peer, 0), "removed: no longer found");
	CHECK_EQ(sessions_add(&t, 20)->slot, 1, "the lowest freed slot first");
	CHECK_EQ(sessions_add(&t, 21)->slot, 2, "then the next one");
	CHECK_EQ(sessions_add(&t, 22)->slot, 4, "then past the taken ones");
	CHECK(sessions_add(&t, 23) == NULL, "full");
	peer[3] = 3;
	CHECK(sessions_by_addr(&t, 4, false, local, peer, 0) == s[3], "the others still found");
	sessions_fini(&t);
}

int main(void)
{
	test_checks();
	test_encode();
	test_names();
	test_txq();
	test_chores();
	test_slots_and_addresses();
	return check_done("test_codec");
}
