// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_fsm.c - the RFC 5880 state machine without a kernel: every (local state, received
 * state) pair of section 6.8.6, detection (6.8.4), Poll/Final (6.5), the 6.8.3 rules for timer
 * changes while Up, slow start, jitter (6.8.7), AdminDown (6.8.16) and what the fast path reads.
 */
#include <string.h>
#include "check.h"
#include "fsm.h"
#include "log.h"

#define MS 1000000ULL

static const struct fsm_config cfg10 = {
    .desired_min_tx_us = 10000, .required_min_rx_us = 10000, .detect_mult = 3};

static struct bfd_session fresh(void)
{
	struct bfd_session s;

	memset(&s, 0, sizeof(s));
	s.lid = s.local_disc = 0x0A;
	s.family = 4;
	s.fast_path = true;
	fsm_start(&s, &cfg10, 1000 * MS);
	return s;
}

static struct bfd_pkt peer(uint8_t state, uint8_t flags)
{
	struct bfd_pkt p = {.version = 1,
			    .state = state,
			    .flags = flags,
			    .detect_mult = 3,
			    .length = 24,
			    .my_disc = 0x0B,
			    .your_disc = 0x0A,
			    .desired_min_tx_us = 10000,
			    .required_min_rx_us = 10000};
	return p;
}

/* A session brought to @state by real packets. */
static struct bfd_session in_state(uint8_t state)
{
	struct bfd_session s = fresh();
	struct bfd_pkt down = peer(BFD_STATE_DOWN, 0), init = peer(BFD_STATE_INIT, 0);

	if (state == BFD_STATE_ADMIN_DOWN) {
		struct fsm_config c = cfg10;

		c.shutdown = true;
		fsm_configure(&s, &c, 1001 * MS);
	} else if (state == BFD_STATE_INIT) {
		fsm_rx(&s, &down, 1001 * MS);
	} else if (state == BFD_STATE_UP) {
		fsm_rx(&s, &init, 1001 * MS);
	}
	return s;
}

static void test_transitions(void)
{
	/* [local][received] -> next local state, RFC 5880 6.8.6 */
	static const uint8_t next[4][4] = {
	    [BFD_STATE_ADMIN_DOWN] = {0, 0, 0, 0},
	    [BFD_STATE_DOWN] = {1, 2, 3, 1},
	    [BFD_STATE_INIT] = {1, 2, 3, 3},
	    [BFD_STATE_UP] = {1, 1, 3, 3},
	};
	char what[128];

	for (uint8_t l = 0; l < 4; l++)
		for (uint8_t r = 0; r < 4; r++) {
			struct bfd_session s = in_state(l);
			struct bfd_pkt p = peer(r, 0);
			unsigned acts;

			CHECK_EQ(s.session_state, l, "set-up reaches the local state");
			acts = fsm_rx(&s, &p, 2000 * MS);
			snprintf(what, sizeof(what), "6.8.6: local %s + received %s",
				 bfd_state_name(l), bfd_state_name(r));
			CHECK_EQ(s.session_state, next[l][r], what);
			if (l == BFD_STATE_ADMIN_DOWN)
				CHECK_EQ(acts, 0, "AdminDown ignores every packet");
			if (s.session_state != l) {
				strcat(what, ": change sent, reported");
				CHECK_EQ(acts & (FSM_SEND | FSM_NOTIFY | FSM_PUBLISH),
					 FSM_SEND | FSM_NOTIFY | FSM_PUBLISH, what);
			}
			if ((l == BFD_STATE_UP || l == BFD_STATE_INIT) && next[l][r] == 1)
				CHECK_EQ(s.local_diag, BFD_DIAG_NEIGHBOR_DOWN,
					 "going Down on the peer's word: diag 3");
			if (l == BFD_STATE_UP && next[l][r] == 1)
				CHECK_EQ(s.down_events, 1, "Up -> Down counted");
		}
}

static void test_remote_fields(void)
{
	struct bfd_session s = fresh();
	struct bfd_pkt p = peer(BFD_STATE_DOWN, BFD_FLAG_CPI);

	p.my_disc = 0x1234;
	p.desired_min_tx_us = 1000000;
	p.required_min_rx_us = 50000;
	p.required_min_echo_rx_us = 7;
	p.detect_mult = 5;
	p.diag = 31;
	fsm_rx(&s, &p, 2000 * MS);
	CHECK_EQ(s.remote_disc, 0x1234, "bfd.RemoteDiscr = My Discriminator");
	CHECK_EQ(s.remote_min_rx_us, 50000, "bfd.RemoteMinRxInterval = Required Min RX");
	CHECK_EQ(s.remote_desired_min_tx_us, 1000000, "remote Desired Min TX kept");
	CHECK_EQ(s.remote_detect_mult, 5, "remote Detect Mult kept");
	CHECK_EQ(s.remote_diag, 31, "any diagnostic accepted (R12)");
	CHECK_EQ(s.remote_flags & BFD_FLAG_CPI, BFD_FLAG_CPI, "remote C kept");
	CHECK_EQ(s.remote_min_echo_rx_us, 7, "remote Required Min Echo RX kept");
}

static void test_poll_final(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct bfd_pkt poll = peer(BFD_STATE_UP, BFD_FLAG_POLL);
	struct bfd_pkt fin = peer(BFD_STATE_UP, BFD_FLAG_FINAL);
	struct bfd_pkt out;
	uint32_t seq = s.poll_seq;
	unsigned acts;

	/* Going Up changes Desired Min TX from 1 s to 10 ms: a Poll Sequence (6.8.3). */
	CHECK(s.poll_active, "going Up starts a Poll Sequence");
	CHECK(seq > 0, "poll_seq bumped");
	fsm_packet(&s, false, 2000 * MS, &out);
	CHECK_EQ(out.flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL), BFD_FLAG_POLL, "P while polling");
	CHECK_EQ(out.desired_min_tx_us, 10000, "Up advertises the configured interval");
	acts = fsm_rx(&s, &poll, 2000 * MS);
	CHECK(acts & FSM_FINAL, "a Poll asks for a Final");
	CHECK(!(acts & FSM_SEND), "a Poll alone is not a state change");
	fsm_packet(&s, true, 2000 * MS, &out);
	CHECK_EQ(out.flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL), BFD_FLAG_FINAL,
		 "Final, never with P (6.5)");
	fsm_rx(&s, &fin, 2001 * MS);
	CHECK(!s.poll_active, "the peer's Final ends our Poll Sequence");
	fsm_packet(&s, false, 2001 * MS, &out);
	CHECK_EQ(out.flags & BFD_FLAG_POLL, 0, "no P after the Final");
}

static void test_detection(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct bfd_pkt out;
	unsigned acts;

	CHECK_EQ(fsm_detect_time_ns(&s), 30 * MS, "Detection Time = 3 x max(10, 10) ms (6.8.4)");
	s.remote_desired_min_tx_us = 50000;
	CHECK_EQ(fsm_detect_time_ns(&s), 150 * MS, "uses the remote Desired Min TX when larger");
	acts = fsm_expire(&s, 3000 * MS);
	CHECK_EQ(s.session_state, BFD_STATE_DOWN, "expiry takes the session Down");
	CHECK_EQ(s.local_diag, BFD_DIAG_DETECT_EXPIRED, "with diag 1");
	CHECK_EQ(s.remote_disc, 0, "and forgets the remote discriminator (6.8.1)");
	CHECK(acts & FSM_NOTIFY, "bfdd is told");
	CHECK_EQ(fsm_detect_time_ns(&s), 0, "no detection while Down");
	CHECK_EQ(fsm_expire(&s, 3001 * MS), 0, "expiry in Down does nothing");
	fsm_packet(&s, false, 3001 * MS, &out);
	CHECK_EQ(out.your_disc, 0, "Down packet after expiry says Your Discriminator 0");
	CHECK_EQ(out.diag, BFD_DIAG_DETECT_EXPIRED, "and diag 1");
	CHECK_EQ(out.desired_min_tx_us, 1000000, "slow start again: at least 1 s (6.8.3)");
}

static void test_down_forgets(void)
{
	struct bfd_session s = fresh();
	struct bfd_pkt down = peer(BFD_STATE_DOWN, 0), out;

	down.desired_min_tx_us = 1000000;
	fsm_rx(&s, &down, 2000 * MS); /* Down -> Init */
	fsm_expire(&s, 6000 * MS);    /* Init -> Down after 3 s of silence */
	CHECK_EQ(s.session_state, BFD_STATE_DOWN, "Init expires to Down");
	s.remote_disc = 0x0B;
	s.last_rx_ns = 6000 * MS;
	fsm_packet(&s, false, 8000 * MS, &out);
	CHECK_EQ(out.your_disc, 0x0B, "Down within a Detection Time keeps Your Discriminator");
	fsm_packet(&s, false, 9500 * MS, &out);
	CHECK_EQ(out.your_disc, 0, "Down beyond a Detection Time: Your Discriminator 0 (6.8.1)");
}

/*
 * A fast-path session's last_rx_ns is as old as the last event (steady Up traffic posts none):
 * the AdminDown of a stop still carries the peer's discriminator, so the peer can match it
 * (6.8.16), and forgets it only a Detection Time after entering AdminDown (6.8.1).
 */
static void test_admin_down_keeps_discriminator(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct bfd_pkt out;

	s.remote_disc = 0x0B;
	s.last_rx_ns = 1000 * MS; /* the last event, long before */
	fsm_admin_down(&s, 60000 * MS);
	fsm_packet(&s, false, 60000 * MS, &out);
	CHECK_EQ(out.state, BFD_STATE_ADMIN_DOWN, "stop: AdminDown");
	CHECK_EQ(out.your_disc, 0x0B, "stop: AdminDown names the peer's discriminator (6.8.16)");
	fsm_packet(&s, false, 70000 * MS, &out);
	CHECK_EQ(out.your_disc, 0, "AdminDown, a Detection Time since: forgotten (6.8.1)");
}

static void test_intervals(void)
{
	struct bfd_session s = fresh();
	struct bfd_pkt p = peer(BFD_STATE_INIT, 0);
	uint64_t lo = ~0ULL, hi = 0;
	double sum = 0;

	CHECK_EQ(fsm_tx_interval_us(&s), 1000000, "not Up: 1 s (6.8.3 slow start)");
	fsm_rx(&s, &p, 2000 * MS);
	CHECK_EQ(fsm_tx_interval_us(&s), 10000, "Up: max(10 ms, remote 10 ms)");
	s.remote_min_rx_us = 50000;
	CHECK_EQ(fsm_tx_interval_us(&s), 50000, "a larger remote Required Min RX wins (6.8.2)");
	s.remote_min_rx_us = 0;
	CHECK_EQ(fsm_tx_interval_us(&s), 0,
		 "remote Required Min RX 0: no periodic packets (6.8.7)");
	s.remote_min_rx_us = 10000;
	s.fast_path = false;
	/* The deadline after each of 1000 last packets 1 ms apart, as a gap: spread 75-100 %. */
	for (uint64_t last = 5 * MS; last < 1005 * MS; last += MS) {
		uint64_t t = fsm_next_tx_ns(&s, last) - last;

		lo = t < lo ? t : lo;
		hi = t > hi ? t : hi;
		sum += (double)t;
	}
	CHECK(lo >= 7500000 && lo < 7550000, "jitter floor 75 % (6.8.7), and reached");
	CHECK(hi <= 10000000 && hi > 9950000, "jitter ceiling 100 %, and reached");
	CHECK(sum / 1000 > 8700000 && sum / 1000 < 8800000, "jitter: uniform, mean 87.5 %");
	s.cfg_detect_mult = 1;
	hi = 0;
	for (uint64_t last = 5 * MS; last < 1005 * MS; last += MS) {
		uint64_t t = fsm_next_tx_ns(&s, last) - last;

		hi = t > hi ? t : hi;
	}
	CHECK(hi <= 9000000 && hi > 8950000, "Detect Mult 1: at most 90 % (6.8.7)");
}

static void test_clocking(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct bfd_session_params p;

	CHECK(fsm_rx_clocked(&s), "symmetric and Up: the fast path clocks our packets");
	CHECK_EQ(fsm_next_tx_ns(&s, 0), 0, "... and userspace does not");
	s.cfg_gen = 7;
	fsm_params(&s, &p);
	CHECK_EQ(p.detect_time_ns, 30 * MS, "published Detection Time");
	CHECK_EQ(p.tx_in_force_us, 10000, "published Desired Min TX in force");
	CHECK_EQ(p.cfg_gen, 7, "published generation");
	s.remote_desired_min_tx_us = 1000000; /* peer sends once a second */
	s.remote_min_rx_us = 10000;
	CHECK(!fsm_rx_clocked(&s), "a slower peer cannot clock us: userspace does (C03c)");
	CHECK(fsm_next_tx_ns(&s, 0) > 0, "userspace schedules it");
	s.remote_desired_min_tx_us = s.required_min_rx_us = 5000; /* the peer twice as often */
	CHECK(!fsm_rx_clocked(&s), "a faster peer does not clock us either: userspace does");
	s.remote_desired_min_tx_us = s.required_min_rx_us = 10000;
	s.peer_steady = true;
	CHECK(!fsm_rx_clocked(&s), "a peer that does not jitter: userspace clocks (6.8.7)");
	CHECK_EQ(fsm_next_tx_ns(&s, 100 * MS) - 100 * MS >= 7500000, 1,
		 "... from the shared clock, 75 % on at least");
	s.peer_steady = false;
	s.cfg_detect_mult = 1;
	CHECK(!fsm_rx_clocked(&s), "Detect Mult 1 (at most 90 %): userspace clocks");
	s.cfg_detect_mult = 3;
	s.tx_backstop = true;
	CHECK(fsm_rx_clocked(&s) && fsm_next_tx_ns(&s, 0) > 0,
	      "rx-clocked with the backstop on: userspace has a deadline too");
	/* The backstop (10 ms interval): last periodic packet at 100 ms. */
	s.last_rx_ns = 50 * MS; /* the peer quiet since before our last */
	uint64_t due = fsm_next_tx_ns(&s, 100 * MS);
	CHECK(due >= 107500000 && due <= 110000000, "quiet peer: our jittered deadline (6.8.7)");
	s.last_rx_ns = 102 * MS; /* refused: 20 % after ours */
	due = fsm_next_tx_ns(&s, 100 * MS);
	CHECK(due >= 107500000 && due <= 110000000,
	      "no peer window (a peer mirroring ours): our jittered deadline");
	s.tx_peer_window = true;
	CHECK_EQ(fsm_next_tx_ns(&s, 100 * MS), 100 * MS + 9843750,
		 "peer on its own clock: its window ends 112.5 % after its packet, past our "
		 "interval: 63/64 of ours at most (C13c)");
	s.last_rx_ns = 100 * MS - 4 * MS; /* its window ends at 107.25 ms */
	due = fsm_next_tx_ns(&s, 100 * MS);
	CHECK(due >= 107500000 && due <= 109843750,
	      "its window ends before our jittered deadline: that deadline, 63/64 at most");
	s.last_rx_ns = 100 * MS + 7400000;
	s.last_rx_ns = 100 * MS + 7400000; /* refused: 74 % after ours */
	s.tx_owed = true;
	CHECK_EQ(fsm_next_tx_ns(&s, 100 * MS), 107500000,
		 "owed: 75 % after our last, no sooner (6.8.7)");
	s.tx_owed = s.tx_peer_window = false;
	s.tx_backstop = false;
	s.fast_path = false;
	CHECK(!fsm_rx_clocked(&s), "no fast path: userspace clocks");
}

static void test_timer_change_up(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct bfd_pkt fin = peer(BFD_STATE_UP, BFD_FLAG_FINAL);
	struct fsm_config c = cfg10;

	fsm_rx(&s, &fin, 1500 * MS); /* end the Poll of going Up */
	c.desired_min_tx_us = 2000000;
	CHECK(fsm_configure(&s, &c, 2000 * MS) & FSM_PUBLISH, "a changed interval is published");
	CHECK(s.poll_active, "C02a: a changed interval while Up starts a Poll");
	CHECK_EQ(s.desired_min_tx_us, 2000000, "the new value is advertised at once");
	CHECK_EQ(fsm_tx_interval_us(&s), 10000, "C02a: a longer interval waits for the Final");
	fsm_rx(&s, &fin, 2100 * MS);
	CHECK_EQ(fsm_tx_interval_us(&s), 2000000, "C02a: after the Final, 2 s (no 1 s ceiling)");

	c.desired_min_tx_us = 10000;
	c.required_min_rx_us = 100000;
	fsm_configure(&s, &c, 3000 * MS);
	fsm_rx(&s, &fin, 3100 * MS);
	c.required_min_rx_us = 10000;
	s.remote_desired_min_tx_us = 10000;
	fsm_configure(&s, &c, 4000 * MS);
	CHECK_EQ(fsm_detect_time_ns(&s), 300 * MS,
		 "C02c: a shorter Required Min RX keeps the old detection until the Final");
	fsm_rx(&s, &fin, 4100 * MS);
	CHECK_EQ(fsm_detect_time_ns(&s), 30 * MS, "C02c: and takes effect after it");
	CHECK_EQ(fsm_configure(&s, &c, 5000 * MS), 0, "an identical ADD is a no-op");
}

static void test_admin(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct fsm_config c = cfg10;
	struct bfd_pkt out, up = peer(BFD_STATE_UP, BFD_FLAG_POLL);
	unsigned acts;

	c.shutdown = true;
	acts = fsm_configure(&s, &c, 2000 * MS);
	CHECK_EQ(s.session_state, BFD_STATE_ADMIN_DOWN, "shutdown: AdminDown (6.8.16)");
	CHECK_EQ(s.local_diag, BFD_DIAG_ADMIN_DOWN, "with diag 7");
	CHECK(acts & FSM_SEND, "told to the peer at once");
	CHECK_EQ(fsm_detect_time_ns(&s), 0, "detection stops");
	CHECK_EQ(fsm_rx(&s, &up, 2001 * MS), 0, "C10c: packets and Polls are ignored");
	fsm_packet(&s, false, 2001 * MS, &out);
	CHECK_EQ(out.state, BFD_STATE_ADMIN_DOWN, "AdminDown on the wire");
	CHECK_EQ(fsm_tx_interval_us(&s), 1000000, "at the slow rate");
	c.shutdown = false;
	fsm_configure(&s, &c, 3000 * MS);
	CHECK_EQ(s.session_state, BFD_STATE_DOWN, "no shutdown: Down, handshake again (C10d)");

	s = in_state(BFD_STATE_UP);
	acts = fsm_admin_down(&s, 2000 * MS);
	CHECK(acts & FSM_SEND, "stopping: AdminDown sent");
	CHECK_EQ(s.local_diag, BFD_DIAG_ADMIN_DOWN, "stopping: diag 7");
}

/* 6.8.7: the Passive role sends nothing while bfd.RemoteDiscr is 0 (6.8.1 may zero it again). */
static void test_passive(void)
{
	struct bfd_session s;
	struct fsm_config c = cfg10;
	struct bfd_pkt down = peer(BFD_STATE_DOWN, 0), init = peer(BFD_STATE_INIT, 0), out;
	struct bfd_pkt admin = peer(BFD_STATE_ADMIN_DOWN, 0);

	memset(&s, 0, sizeof(s));
	s.local_disc = 0x0A;
	c.passive = true;
	fsm_start(&s, &c, 0);
	CHECK_EQ(fsm_next_tx_ns(&s, 0), 0, "passive: silent until the peer is heard");
	CHECK(!fsm_may_send(&s), "passive: not even a state change goes out");
	fsm_rx(&s, &down, 1000 * MS);
	CHECK_EQ(s.session_state, BFD_STATE_INIT, "passive: the peer's Down takes it to Init");
	CHECK(fsm_may_send(&s) && fsm_next_tx_ns(&s, 1000 * MS) > 0, "passive: talks once heard");
	fsm_rx(&s, &init, 1001 * MS);
	fsm_expire(&s, 2000 * MS);
	CHECK_EQ(s.remote_disc, 0, "passive: expiry forgets the peer (6.8.1)");
	CHECK(!fsm_may_send(&s), "passive: and falls silent again: no Down packet");
	CHECK_EQ(fsm_next_tx_ns(&s, 2000 * MS), 0, "passive: nothing scheduled");
	fsm_rx(&s, &admin, 5000 * MS);
	CHECK_EQ(s.session_state, BFD_STATE_DOWN, "passive: the peer's AdminDown leaves it Down");
	fsm_packet(&s, false, 5010 * MS, &out);
	CHECK(fsm_may_send(&s), "passive: heard again, may answer");
	CHECK_EQ(out.your_disc, 0x0B, "passive: with the peer's discriminator");
	fsm_packet(&s, false, 5031 * MS, &out);
	CHECK_EQ(out.your_disc, 0, "Down, a Detection Time (3 x 10 ms) of silence: 0 (6.8.1)");
	CHECK(!fsm_may_send(&s), "passive: silent once the peer is forgotten");
}

/* 6.8.7: with Demand mode active on the peer, both Up, periodic transmission ceases. */
static void test_demand(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct bfd_pkt fin = peer(BFD_STATE_UP, BFD_FLAG_FINAL);
	struct bfd_pkt dem = peer(BFD_STATE_UP, BFD_FLAG_DEMAND);
	struct bfd_pkt plain = peer(BFD_STATE_UP, 0);

	fsm_rx(&s, &fin, 1002 * MS); /* ends the Poll Sequence that left slow start */
	s.fast_path = false;	     /* userspace clocks */
	CHECK(fsm_next_tx_ns(&s, 0) > 0, "demand: periodic packets before the peer asks");
	fsm_rx(&s, &dem, 1003 * MS);
	CHECK(s.remote_demand_mode, "demand: D bit taken (bfd.RemoteDemandMode)");
	CHECK_EQ(fsm_next_tx_ns(&s, 0), 0, "demand: no periodic packets while both are Up");
	s.fast_path = true;
	CHECK(!fsm_rx_clocked(&s), "demand: the fast path does not clock them either");
	CHECK_EQ(fsm_next_tx_ns(&s, 0), 0, "demand: nor userspace on the fast path");
	s.poll_active = true;
	CHECK(fsm_next_tx_ns(&s, 0) > 0, "demand: a Poll Sequence is still sent periodically");
	s.poll_active = false;
	s.remote_session_state = BFD_STATE_INIT;
	CHECK(fsm_next_tx_ns(&s, 0) > 0, "demand: the peer not Up: periodic again");
	fsm_rx(&s, &plain, 1004 * MS);
	CHECK(!s.remote_demand_mode, "demand: D cleared");
	s.fast_path = false;
	CHECK(fsm_next_tx_ns(&s, 0) > 0, "demand: cleared, periodic again");
}

/* 6.6, 6.8.4, 6.8.7: Demand mode we ask for, verified by Poll Sequences. */
static void test_our_demand(void)
{
	struct fsm_config c = cfg10;
	struct bfd_session s = fresh();
	struct bfd_pkt init = peer(BFD_STATE_INIT, 0), up = peer(BFD_STATE_UP, 0), out;
	struct bfd_pkt fin = peer(BFD_STATE_UP, BFD_FLAG_FINAL);
	struct bfd_session_params prm;
	unsigned acts;

	c.demand = true;
	c.demand_poll_us = 1000000;
	fsm_configure(&s, &c, 1000 * MS);
	fsm_rx(&s, &init, 1001 * MS); /* Up; the peer still Init */
	fsm_packet(&s, false, 1001 * MS, &out);
	CHECK_EQ(out.flags & BFD_FLAG_DEMAND, 0, "no D until both ends are Up (6.8.7)");
	CHECK_EQ(fsm_next_demand_ns(&s), 0, "no Demand step before that");
	CHECK_EQ(fsm_detect_time_ns(&s), 30 * MS, "detection by silence until then");
	acts = fsm_rx(&s, &fin, 1002 * MS); /* the peer Up; answers the Poll of going Up */
	CHECK(acts & FSM_PUBLISH, "Demand mode becoming active is published");
	fsm_packet(&s, false, 1002 * MS, &out);
	CHECK(out.flags & BFD_FLAG_DEMAND, "both Up: D set");
	fsm_params(&s, &prm);
	CHECK(prm.session_flags & BFD_SF_SOFTWARE, "userspace answers (with D), not the fast path");
	CHECK_EQ(prm.detect_time_ns, 0, "the sweep does not detect by silence");
	CHECK_EQ(fsm_detect_time_ns(&s), 0, "nor does userspace");
	CHECK(!fsm_rx_clocked(&s), "the peer's packets stop: they cannot clock ours");
	CHECK_EQ(fsm_demand_poll_ns(&s), 1000 * MS, "a Poll every --demand-poll-us");
	CHECK_EQ(fsm_next_demand_ns(&s), 2001 * MS, "1 s after the last Poll began");
	CHECK_EQ(fsm_demand_due(&s, 2000 * MS, 0), 0, "not before");
	acts = fsm_demand_due(&s, 2001 * MS, 0);
	CHECK(s.poll_active && (acts & FSM_SEND), "then a Poll, its first P at once");
	fsm_packet(&s, false, 2001 * MS, &out);
	CHECK(out.flags & BFD_FLAG_POLL, "P set");
	CHECK_EQ(fsm_next_demand_ns(&s), 2031 * MS, "its deadline: one Detection Time");
	fsm_rx(&s, &fin, 2002 * MS);
	CHECK(!s.poll_active, "the Final ends it");
	CHECK_EQ(fsm_next_demand_ns(&s), 3001 * MS, "the next Poll 1 s after this one began");
	fsm_demand_due(&s, 3001 * MS, 0);
	CHECK_EQ(fsm_demand_due(&s, 3030 * MS, 0), 0, "unanswered within the Detection Time: Up");
	acts = fsm_demand_due(&s, 3031 * MS, 0);
	CHECK_EQ(s.session_state, BFD_STATE_DOWN, "unanswered for a Detection Time: Down");
	CHECK_EQ(s.local_diag, BFD_DIAG_DETECT_EXPIRED, "with diag 1 (6.8.4)");
	CHECK(acts & FSM_NOTIFY, "bfdd is told");
	CHECK_EQ(fsm_next_demand_ns(&s), 0, "Down: no Demand step");

	/* A peer not in Demand mode (FRR 8.4.4, BIRD 2) still gets our periodic packets: the
	 * Poll's first P rides on the next one, its deadline counted from it (6.8.7). */
	s = fresh();
	fsm_configure(&s, &c, 1000 * MS);
	fsm_rx(&s, &init, 1001 * MS);
	fsm_rx(&s, &fin, 1002 * MS);
	acts = fsm_demand_due(&s, 2001 * MS, 2008 * MS);
	CHECK(s.poll_active && !(acts & FSM_SEND) && (acts & FSM_SCHEDULE),
	      "the Poll begins, no extra packet");
	fsm_packet(&s, false, 2008 * MS, &out);
	CHECK(out.flags & BFD_FLAG_POLL, "the periodic packet carries P");
	CHECK_EQ(fsm_next_demand_ns(&s), 2038 * MS, "a Detection Time from that packet");
	CHECK_EQ(fsm_demand_due(&s, 2037 * MS, 2016 * MS), 0, "not yet unanswered");

	s = fresh();
	c.demand_poll_us = 10000; /* below the 30 ms Detection Time */
	fsm_configure(&s, &c, 1000 * MS);
	fsm_rx(&s, &init, 1001 * MS);
	fsm_rx(&s, &fin, 1002 * MS);
	CHECK_EQ(fsm_demand_poll_ns(&s), 30 * MS, "never more often than the Detection Time");
	c.demand_poll_us = 0;
	fsm_configure(&s, &c, 1003 * MS);
	CHECK(s.session_state == BFD_STATE_UP && !s.poll_active, "option change: no Poll");
	CHECK_EQ(fsm_next_demand_ns(&s), 0, "--demand-poll-us 0: never verify");
	fsm_rx(&s, &up, 1004 * MS);
	CHECK_EQ(fsm_detect_time_ns(&s), 0, "and no detection at all, as stock bfdd");
}

/*
 * Required Min Echo RX (RFC 5880 4.1, 6.8.9): bfdd's value only when it asked for echo on a
 * single-hop session the fast path serves (only XDP returns echo); an echo-only change from bfdd
 * is published at once and starts no Poll Sequence (6.8.3 names only the two Control intervals).
 */
static void test_echo_advertised(void)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct fsm_config c = cfg10;
	struct bfd_session_params p;
	struct bfd_pkt out;
	uint32_t seq;
	unsigned acts;

	fsm_packet(&s, false, 1002 * MS, &out);
	CHECK_EQ(out.required_min_echo_rx_us, 0, "echo not asked for: erx 0");
	c.echo = true;
	c.echo_tx_us = 50000;
	c.echo_rx_us = 70000;
	seq = s.poll_seq;
	acts = fsm_configure(&s, &c, 1003 * MS);
	CHECK(acts & FSM_PUBLISH, "an echo change is published");
	CHECK_EQ(s.poll_seq, seq, "an echo change starts no Poll Sequence");
	fsm_packet(&s, false, 1004 * MS, &out);
	fsm_params(&s, &p);
	CHECK_EQ(out.required_min_echo_rx_us, 70000, "echo asked for: bfdd's erx in our packets");
	CHECK_EQ(p.required_min_echo_rx_us, 70000, "and in the fast path's replies");
	CHECK_EQ(fsm_configure(&s, &c, 1005 * MS), 0, "the same ADD again: a no-op");
	s.fast_path = false;
	CHECK_EQ(fsm_echo_rx_us(&s), 0, "software path: no XDP to return echo, erx 0");
	s.fast_path = true;
	s.multihop = true;
	CHECK_EQ(fsm_echo_rx_us(&s), 0, "multihop: no echo (RFC 5883 section 3)");
	s.multihop = false;
	c.echo_rx_us = 0;
	fsm_configure(&s, &c, 1006 * MS);
	CHECK_EQ(fsm_echo_rx_us(&s), 0, "bfdd's echo receive-interval disabled: erx 0");
}

/* An Up session whose bfdd asked for echo every @tx_us; the peer advertises @peer_erx_us. */
static struct bfd_session echo_session(uint32_t tx_us, uint32_t peer_erx_us, uint8_t mult,
				       uint64_t now_ns)
{
	struct bfd_session s = in_state(BFD_STATE_UP);
	struct fsm_config c = cfg10;
	struct bfd_pkt up = peer(BFD_STATE_UP, 0);

	c.echo = true;
	c.echo_tx_us = tx_us;
	c.echo_rx_us = 50000;
	c.detect_mult = mult;
	fsm_configure(&s, &c, now_ns);
	up.required_min_echo_rx_us = peer_erx_us;
	fsm_rx(&s, &up, now_ns);
	fsm_echo_sync(&s, now_ns);
	return s;
}

/* Send every echo fsm_echo_due() asks for from @t0_ns for @n echoes, each back 1 ms later;
 * the gaps between them (ns) into @min, @max. Return: the time of the last. */
static uint64_t run_echo(struct bfd_session *s, uint64_t t0_ns, int n, uint64_t *min, uint64_t *max)
{
	uint64_t t = t0_ns, last = 0, rx = 0;
	bool send;

	*min = UINT64_MAX;
	*max = 0;
	for (int i = 0; i < n; i++) {
		t = fsm_next_echo_ns(s);
		CHECK_EQ(fsm_echo_due(s, t, rx, &send), 0, "echo returned: no failure");
		if (!send)
			continue;
		fsm_echo_sent(s, t);
		if (last) {
			*min = t - last < *min ? t - last : *min;
			*max = t - last > *max ? t - last : *max;
		}
		last = t;
		rx = t + MS;
	}
	return last;
}

/* Our own echo (RFC 5880 6.8.5, 6.8.9; shared conformance C11a-e). */
static void test_echo_own(void)
{
	uint64_t t = 2000 * MS, min, max, last;
	struct bfd_session s = echo_session(50000, 0, 3, t);
	struct bfd_pkt up = peer(BFD_STATE_UP, 0);
	unsigned acts;
	bool send;

	/* C11a: the peer advertises Required Min Echo RX 0: none (6.8.9 MUST NOT). */
	CHECK_EQ(fsm_echo_tx_us(&s), 0, "C11a: peer erx 0: no echo");
	CHECK_EQ(fsm_next_echo_ns(&s), 0, "C11a: nothing scheduled");
	CHECK_EQ(fsm_echo_due(&s, t, 0, &send), 0, "C11a: no action");
	CHECK(!send, "C11a: nothing sent");

	/* C11b: the larger of bfdd's 50 ms and the peer's 200 ms, the first one at once. */
	s = echo_session(50000, 200000, 3, t);
	CHECK_EQ(fsm_echo_tx_us(&s), 200000, "C11b: max(50 ms, the peer's 200 ms)");
	CHECK_EQ(fsm_next_echo_ns(&s), t, "the first echo goes at once");
	last = run_echo(&s, t, 50, &min, &max);
	CHECK(min == 200 * MS && max == 200 * MS,
	      "C11b: never under the peer's 200 ms (the floor takes the jitter)");

	/* bfdd's interval the larger: 75-100 % of it (6.8.9 jitter), never under the peer's. */
	s = echo_session(400000, 200000, 3, t);
	run_echo(&s, t, 400, &min, &max);
	CHECK(min >= 300 * MS && max <= 400 * MS, "bfdd's 400 ms: gaps 75-100 %");
	CHECK(max - min > 80 * MS, "and spread over that range (jitter)");
	s = echo_session(400000, 200000, 1, t);
	run_echo(&s, t, 400, &min, &max);
	CHECK(min >= 300 * MS && max <= 360 * MS, "Detect Mult 1: gaps 75-90 %");

	/* C11c: the peer's erx goes to 0: echo stops with that packet. */
	s = echo_session(50000, 200000, 3, t);
	last = run_echo(&s, t, 5, &min, &max);
	up.required_min_echo_rx_us = 0;
	acts = fsm_rx(&s, &up, last + MS);
	CHECK(acts & FSM_SCHEDULE, "C11c: the peer's new erx reschedules");
	fsm_echo_sync(&s, last + MS);
	CHECK_EQ(fsm_next_echo_ns(&s), 0, "C11c: echo stopped");
	CHECK_EQ(fsm_echo_due(&s, last + 10000 * MS, 0, &send), 0, "C11c: no failure either");
	CHECK(!send, "C11c: nothing sent");

	/* C11e: no echo back: Down with diag 2 once Detect Mult x interval passed (6.8.5). */
	s = echo_session(50000, 200000, 3, t);
	last = run_echo(&s, t, 5, &min, &max);
	CHECK_EQ(fsm_echo_due(&s, last + MS, last + MS, &send), 0, "the last one back 1 ms later");
	CHECK_EQ(fsm_echo_detect_ns(&s), 600 * MS, "echo detection: 3 x 200 ms");
	CHECK_EQ(fsm_next_echo_ns(&s), last + 200 * MS, "the next echo before the deadline");
	fsm_echo_sent(&s, last + 200 * MS);
	fsm_echo_sent(&s, last + 400 * MS);
	fsm_echo_sent(&s, last + 600 * MS);
	CHECK_EQ(fsm_next_echo_ns(&s), last + MS + 600 * MS + 1, "the deadline comes first");
	CHECK_EQ(fsm_echo_due(&s, last + MS + 600 * MS, 0, &send), 0, "at the deadline: still Up");
	acts = fsm_echo_due(&s, last + MS + 600 * MS + 1, 0, &send);
	CHECK(acts & FSM_NOTIFY && acts & FSM_SEND, "past it: bfdd told, the peer told");
	CHECK(s.session_state == BFD_STATE_DOWN && s.local_diag == BFD_DIAG_ECHO_FAILED,
	      "C11e: Down, diag 2 (Echo Function Failed)");
	CHECK(!send, "no echo with the failure");
	CHECK_EQ(fsm_echo_tx_us(&s), 0, "C11e: no echo while not Up (6.8.9)");
	CHECK_EQ(fsm_next_echo_ns(&s), 0, "and none scheduled");

	/* A new interval restarts detection: silence under the old one does not count. */
	s = echo_session(50000, 50000, 3, t);
	fsm_echo_sent(&s, t);
	up.required_min_echo_rx_us = 200000;
	fsm_rx(&s, &up, t + 140 * MS);
	fsm_echo_sync(&s, t + 140 * MS);
	CHECK_EQ(fsm_echo_due(&s, t + 160 * MS, 0, &send), 0, "new interval: detection restarted");
	CHECK(send, "and the first echo at it goes at once");

	/* Only a single-hop fast-path session, and only when bfdd asked. */
	s = echo_session(50000, 200000, 3, t);
	s.multihop = true;
	CHECK_EQ(fsm_echo_tx_us(&s), 0, "multihop: no echo (RFC 5883 3, C08d)");
	s.multihop = false;
	s.fast_path = false;
	CHECK_EQ(fsm_echo_tx_us(&s), 0, "software path: no XDP to see it come back");
	s.fast_path = true;
	s.echo = false;
	CHECK_EQ(fsm_echo_tx_us(&s), 0, "bfdd did not ask");
}

int main(void)
{
	log_set_level(LOG_ERR);
	test_transitions();
	test_remote_fields();
	test_poll_final();
	test_detection();
	test_down_forgets();
	test_admin_down_keeps_discriminator();
	test_intervals();
	test_clocking();
	test_timer_change_up();
	test_admin();
	test_passive();
	test_demand();
	test_our_demand();
	test_echo_advertised();
	test_echo_own();
	return check_done("test_fsm");
}
