// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * prog_test.c - the XDP program under BPF_PROG_TEST_RUN, loaded through the engine's own
 * kern.c. For each fixture of fixtures.h (made by gen_fixtures.py with scapy): the verdict, the
 * exact reply bytes (checksums included), the one counter that must move, whether the session's
 * receive state moved or stayed untouched, and whether an event reached the ring buffer. Then the
 * dead-man gate, the reply-gap rate limit, the sweep timer and --pass-unowned.
 *
 * prog_test --bench: ns per packet on the reply path, the pass path and the discard path, beside
 * xdp_swap (swap addresses, XDP_TX) in the same run.
 * prog_test --bench-sweep BASE.bpf.o: the detection sweep's cost at 1,024, 8,192 and 65,536 idle
 * Up sessions, the object of an earlier commit (make bench-sweep builds it) beside this one.
 */
#include <bpf/btf.h>
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include "bfd_shared.h"
#include "check.h"
#include "codec.h"
#include "kern.h"
#include "log.h"
#include "xdp_bfd.skel.h"
#include "xdp_swap.skel.h"

#define XDP_ABORTED 0
#define XDP_DROP    1
#define XDP_PASS    2
#define XDP_TX	    3
#include "fixtures.h"

static const struct fx *fixture_named(const char *name);
static struct bfd_event last_event;
static int events_seen;
static uint32_t expired_slots[256]; /* slots of BFD_EV_EXPIRED events, in arrival order */
static int n_expired;

static int on_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size >= sizeof(last_event))
		memcpy(&last_event, data, sizeof(last_event));
	if (last_event.kind == BFD_EV_EXPIRED && n_expired < 256)
		expired_slots[n_expired++] = last_event.slot;
	events_seen++;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void addr16(uint8_t family, const char *s, uint8_t out[16])
{
	memset(out, 0, 16);
	inet_pton(family == 6 ? AF_INET6 : AF_INET, s, out);
}

static void fx_params(int slot, struct bfd_session_params *p)
{
	const struct fx_session *f = &fx_sessions[slot];

	memset(p, 0, sizeof(*p));
	p->session_state = f->state;
	p->local_diag = f->state == BFD_STATE_ADMIN_DOWN ? BFD_DIAG_ADMIN_DOWN : 0;
	p->detect_mult = 3;
	p->session_flags = BFD_SF_ACTIVE | f->flags | (f->family == 6 ? BFD_SF_IPV6 : 0);
	p->min_ttl = f->min_ttl;
	p->local_port = (uint16_t)(FX_PORT_BASE + slot);
	p->local_disc = f->local_disc;
	p->remote_disc = f->remote_disc;
	p->desired_min_tx_us = FX_TX_US;
	p->required_min_rx_us = FX_TX_US;
	p->tx_in_force_us = FX_TX_US;
	p->required_min_echo_rx_us = f->echo_rx_us;
	p->cfg_gen = 1;
	p->incarnation = 100 + (uint32_t)slot;
	addr16(f->family, f->local, p->local_addr);
	addr16(f->family, f->peer, p->peer_addr);
}

static void fx_key(int slot, struct bfd_addr_key *k)
{
	const struct fx_session *f = &fx_sessions[slot];

	memset(k, 0, sizeof(*k));
	k->family = f->family;
	k->multihop = !!(f->flags & BFD_SF_MULTIHOP);
	addr16(f->family, f->local, k->local_addr);
	addr16(f->family, f->peer, k->peer_addr);
}

/* The receive state of a session in steady state: the peer's base packet seen before. */
static void seed_rx(struct kern *k, int slot)
{
	const struct fx_session *f = &fx_sessions[slot];
	struct bfd_session_rx rx;

	memset(&rx, 0, sizeof(rx));
	rx.remote_state = f->state == BFD_STATE_DOWN ? BFD_STATE_DOWN : BFD_STATE_UP;
	rx.remote_disc = f->remote_disc;
	rx.remote_desired_min_tx_us = f->peer_tx_us;
	rx.remote_required_min_rx_us = FX_TX_US;
	rx.remote_detect_mult = 3;
	bpf_map__update_elem(k->skel->maps.sessions_rx, &slot, sizeof(slot), &rx, sizeof(rx),
			     BPF_F_LOCK);
	kern_tx_clock(k, (uint32_t)slot)->last_periodic_ns = 0; /* nothing sent yet */
}

static void install(struct kern *k)
{
	for (int i = 0; i < (int)(sizeof(fx_sessions) / sizeof(fx_sessions[0])); i++) {
		struct bfd_session_params p;
		struct bfd_addr_key key;

		fx_params(i, &p);
		fx_key(i, &key);
		kern_session_write(k, (uint32_t)i, &p);
		kern_index_add(k, p.local_disc, &key, (uint32_t)i);
		seed_rx(k, i);
	}
	kern_set_slots_in_use(k, sizeof(fx_sessions) / sizeof(fx_sessions[0]));
	kern_heartbeat(k, mono_ns());
}

static int counter_index(const char *name)
{
	if (!strncmp(name, "drop.", 5)) {
		for (unsigned i = 0; i < BFD_DROP__COUNT; i++)
			if (!strcmp(bfd_drop_name(i), name + 5))
				return (int)(BFD_CNT_DROP_BASE + i);
		return -1;
	}
	for (unsigned i = 0; i < BFD_CNT_DROP_BASE; i++)
		if (!strcmp(bfd_counter_name(i), name))
			return (int)i;
	return -1;
}

static int run(int prog_fd, const void *in, unsigned in_len, void *out, unsigned *out_len)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = in_len, .data_out = out,
		    .data_size_out = *out_len, .repeat = 1);
	int err = bpf_prog_test_run_opts(prog_fd, &opts);

	if (err) {
		fprintf(stderr, "bpf_prog_test_run: %s\n", strerror(errno));
		return -1;
	}
	*out_len = opts.data_size_out;
	return (int)opts.retval;
}

static void hexdiff(const uint8_t *got, unsigned got_len, const uint8_t *want, unsigned want_len)
{
	unsigned n = got_len > want_len ? got_len : want_len;

	for (unsigned i = 0; i < n; i++)
		if (i >= got_len || i >= want_len || got[i] != want[i])
			fprintf(stderr, "  byte %u: got %s%02x want %s%02x\n", i,
				i < got_len ? "" : "--", i < got_len ? got[i] : 0,
				i < want_len ? "" : "--", i < want_len ? want[i] : 0);
}

static void run_fixture(struct kern *k, int prog_fd, const struct fx *f)
{
	uint64_t before[BFD_CNT__COUNT], after[BFD_CNT__COUNT];
	struct bfd_session_rx rx0, rx1;
	struct bfd_session_params p;
	uint8_t out[2048];
	unsigned out_len = sizeof(out);
	int idx = counter_index(f->counter), verdict;
	char what[160];

	fx_params(f->slot, &p);
	if (f->poll_open) {
		p.session_flags |= BFD_SF_POLL;
		p.poll_seq = 5;
	}
	kern_session_write(k, (uint32_t)f->slot, &p);
	seed_rx(k, f->slot);
	/* userspace clocks this one and has just sent: its deadline is ahead */
	if (!strcmp(f->name, "slow_not_clocked"))
		kern_tx_clock(k, (uint32_t)f->slot)->last_periodic_ns = mono_ns();
	kern_ring_consume(k);
	events_seen = 0;
	kern_counters(k, before);
	kern_session_rx(k, (uint32_t)f->slot, &rx0);

	/* The kern is manual (no sweep timer): clear the armed bucket, then see what the packet
	 * marks. */
	memset(k->wheel_groups + (size_t)BFD_WHEEL_ARMED * k->slot_words, 0, k->slot_words * 8);
	memset(k->wheel_tops + (size_t)BFD_WHEEL_ARMED * k->top_words, 0, k->top_words * 8);
	verdict = run(prog_fd, f->in, f->in_len, out, &out_len);

	kern_counters(k, after);
	kern_session_rx(k, (uint32_t)f->slot, &rx1);
	kern_ring_consume(k);
	snprintf(what, sizeof(what), "%s (%s): verdict", f->name, f->desc);
	CHECK_EQ(verdict, f->verdict, what);
	if (f->out) {
		snprintf(what, sizeof(what), "%s: reply length", f->name);
		CHECK_EQ(out_len, f->out_len, what);
		snprintf(what, sizeof(what), "%s: reply bytes equal scapy's", f->name);
		CHECK(out_len == f->out_len && !memcmp(out, f->out, out_len), what);
		if (out_len != f->out_len || memcmp(out, f->out, out_len))
			hexdiff(out, out_len, f->out, f->out_len);
	}
	snprintf(what, sizeof(what), "%s: counter %s", f->name, f->counter);
	CHECK(idx >= 0, what);
	if (idx >= 0)
		CHECK_EQ(after[idx] - before[idx], 1, what);
	if (f->verdict != XDP_TX) {
		snprintf(what, sizeof(what), "%s: no reply counted", f->name);
		CHECK_EQ(after[BFD_CNT_TX_REPLY] - before[BFD_CNT_TX_REPLY], 0, what);
	}
	snprintf(what, sizeof(what), "%s: session receive state %s", f->name,
		 f->rx_moves ? "moved" : "untouched");
	if (f->rx_moves)
		CHECK(rx1.last_rx_ns > rx0.last_rx_ns && rx1.rx_packets == rx0.rx_packets + 1,
		      what);
	else
		CHECK(!memcmp(&rx0, &rx1, sizeof(rx0)), what);
	snprintf(what, sizeof(what), "%s: events posted", f->name);
	CHECK_EQ(events_seen, f->event, what);
	/* A packet the engine is told of may move the deadline closer: the sweep looks next. */
	snprintf(what, sizeof(what), "%s: slot marked for the sweep %s", f->name,
		 f->event ? "(an event)" : "not (no event)");
	CHECK_EQ((int)(k->wheel_groups[(size_t)BFD_WHEEL_ARMED * k->slot_words +
				       ((uint32_t)f->slot >> 6)] >>
			   ((uint32_t)f->slot & 63) &
		       1),
		 f->event, what);
	if (f->event && events_seen) {
		snprintf(what, sizeof(what), "%s: event carries the packet", f->name);
		/* every fixture with an event is untagged IPv4: BFD starts at 14 + 20 + 8 */
		CHECK(last_event.kind == BFD_EV_RX && last_event.slot == (uint32_t)f->slot &&
			  !memcmp(&last_event.pkt, f->in + 42, BFD_CTRL_LEN),
		      what);
		snprintf(what, sizeof(what), "%s: event says whether the state was Up", f->name);
		CHECK_EQ(!!(last_event.event_flags & BFD_EVF_NOT_UP),
			 fx_sessions[f->slot].state != BFD_STATE_UP, what);
		snprintf(what, sizeof(what), "%s: event says whether XDP replied", f->name);
		CHECK_EQ(!!(last_event.event_flags & BFD_EVF_REPLIED), f->verdict == XDP_TX, what);
	}
	if (f->poll_open && f->verdict == XDP_TX) {
		snprintf(what, sizeof(what), "%s: Final recorded for our poll 5", f->name);
		CHECK_EQ(rx1.final_poll_seq, strcmp(f->name, "our_poll_final") ? 0 : 5, what);
	}
}

/*
 * The links' program, xdp_bfd_entry: with xdp_bfd in slot 0 of xdp_bfd_progs every fixture
 * gives what xdp_bfd gives directly (run_fixture()'s checks, verdict, bytes, counters, events);
 * with the slot empty, XDP_PASS and the frame untouched (the stack has it, as with no program).
 */
static void test_entry(struct kern *k)
{
	int fd = bpf_program__fd(k->skel->progs.xdp_bfd_entry), failed = check_failures;
	const struct fx *f = fixture_named("poll_final");
	__u32 key = 0;
	uint8_t out[512];
	unsigned len = sizeof(out);

	for (unsigned i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		run_fixture(k, fd, &fixtures[i]);
	CHECK_EQ(check_failures - failed, 0, "entry: every fixture as through xdp_bfd");
	CHECK_EQ(bpf_map_delete_elem(bpf_map__fd(k->skel->maps.xdp_bfd_progs), &key), 0,
		 "entry: slot 0 emptied");
	CHECK_EQ(run(fd, f->in, f->in_len, out, &len), XDP_PASS, "entry: slot 0 empty: XDP_PASS");
	CHECK(len == f->in_len && !memcmp(out, f->in, len), "entry: slot 0 empty: frame untouched");
	CHECK_EQ(kern_progs_fill(k), 0, "entry: slot 0 filled again");
}

/*
 * Our own echo coming back (kern/echo_own.h): the slot's record in sessions_echo, which the
 * engine reads through its mapping, takes the arrival, the sequence and the send time; a damaged
 * one leaves it as it was.
 */
static void test_own_echo(struct kern *k, int prog_fd)
{
	const struct fx *ok = fixture_named("own_echo4"), *bad = fixture_named("own_echo_bad_csum");
	struct bfd_session_echo *rec = kern_echo_rec(k, S_ECHO4), r0;
	uint8_t out[256];
	unsigned out_len = sizeof(out);
	uint64_t t0, t1;

	CHECK(ok && bad && rec, "own echo: fixtures and the mapped record");
	if (!ok || !bad || !rec)
		return;
	r0 = *rec;
	t0 = mono_ns();
	CHECK_EQ(run(prog_fd, ok->in, ok->in_len, out, &out_len), XDP_DROP, "own echo: dropped");
	t1 = mono_ns();
	CHECK_EQ(rec->rx_packets, r0.rx_packets + 1, "own echo: counted in the session's record");
	CHECK(rec->last_rx_ns >= t0 && rec->last_rx_ns <= t1, "own echo: arrival recorded (now)");
	CHECK_EQ(rec->last_seq, FX_OWN_SEQ, "own echo: its sequence number");
	CHECK(rec->last_tx_ns == FX_OWN_TX_NS, "own echo: the send time it carried");
	r0 = *rec;
	out_len = sizeof(out);
	run(prog_fd, bad->in, bad->in_len, out, &out_len);
	CHECK(!memcmp(&r0, rec, sizeof(r0)), "own echo damaged: the record untouched");
}

static void test_deadman(struct kern *k, int prog_fd)
{
	const struct fx *up = &fixtures[0];
	uint64_t before[BFD_CNT__COUNT], after[BFD_CNT__COUNT];
	uint8_t out[512];
	unsigned len = sizeof(out);

	install(k);
	kern_heartbeat(k, 1); /* the engine last ran at boot: long past the 3 s bound */
	kern_counters(k, before);
	CHECK_EQ(run(prog_fd, up->in, up->in_len, out, &len), XDP_DROP,
		 "dead-man: stale heartbeat withholds the reply");
	kern_counters(k, after);
	CHECK_EQ(after[BFD_CNT_DEADMAN_HOLD] - before[BFD_CNT_DEADMAN_HOLD], 1,
		 "dead-man: counted");
	kern_heartbeat(k, mono_ns());
	len = sizeof(out);
	CHECK_EQ(run(prog_fd, up->in, up->in_len, out, &len), XDP_TX,
		 "dead-man: fresh heartbeat answers again");
}

/* Run @in with the shared transmit clock of @slot set @ago_us before now. */
static int run_after(struct kern *k, int prog_fd, uint32_t slot, double ago_us, const uint8_t *in,
		     unsigned in_len)
{
	uint8_t out[512];
	unsigned len = sizeof(out);

	kern_tx_clock(k, slot)->last_periodic_ns = mono_ns() - (uint64_t)(ago_us * 1000);
	return run(prog_fd, in, in_len, out, &len);
}

/*
 * The shared transmit clock (RFC 5880 6.8.7): what the fast path sends and what userspace sends
 * count together; a Final is not periodic and claims nothing.
 */
static void test_tx_clock(struct kern *k, int prog_fd)
{
	const struct fx *up = &fixtures[0], *poll = fixture_named("poll_final"),
			*fin = fixture_named("our_poll_final"),
			*slow = fixture_named("slow_not_clocked");
	struct bfd_session_tx *clk = kern_tx_clock(k, S_UP4);
	uint8_t out[512];
	unsigned len = sizeof(out);
	uint64_t t0;

	install(k);
	CHECK_EQ(run(prog_fd, up->in, up->in_len, out, &len), XDP_TX, "tx clock: first answered");
	CHECK(clk->last_periodic_ns && mono_ns() - clk->last_periodic_ns < 1000000000ULL,
	      "tx clock: the reply claimed the shared clock");
	kern_ring_consume(k);
	events_seen = 0;
	len = sizeof(out);
	CHECK_EQ(run(prog_fd, up->in, up->in_len, out, &len), XDP_DROP,
		 "tx clock: a second packet at once is not answered (RFC 5880 6.8.7 rate)");
	kern_ring_consume(k);
	CHECK(events_seen == 1 && (last_event.event_flags & BFD_EVF_TX_EARLY),
	      "tx clock: the engine is told the packet came too early to answer");
	/* 300 ms both ways, a jittering peer: its packets clock ours from 75 %, 225 ms, on. */
	CHECK_EQ(run_after(k, prog_fd, S_UP4, 224900, up->in, up->in_len), XDP_DROP,
		 "tx clock: 224.9 ms after our last periodic packet, not yet");
	CHECK_EQ(run_after(k, prog_fd, S_UP4, 225100, up->in, up->in_len), XDP_TX,
		 "tx clock: 225.1 ms after, answered");

	/* Userspace sends our Poll (it claims the clock); the peer's Final comes 50 us later. */
	seed_rx(k, S_UP4);
	t0 = mono_ns() - 50000;
	CHECK(bfd_tx_claim(clk, t0, 0), "tx clock: userspace claims it for its Poll");
	len = sizeof(out);
	CHECK_EQ(run(prog_fd, fin->in, fin->in_len, out, &len), XDP_DROP,
		 "tx clock: the peer's Final right after our Poll gets no periodic packet");
	CHECK_EQ(clk->last_periodic_ns, t0, "tx clock: and leaves the clock at our Poll");
	len = sizeof(out);
	CHECK_EQ(run(prog_fd, poll->in, poll->in_len, out, &len), XDP_TX,
		 "tx clock: a Poll from the peer is answered with a Final at once");
	CHECK_EQ(clk->last_periodic_ns, t0, "tx clock: the Final claims nothing");
	CHECK(!bfd_tx_claim(clk, mono_ns(), 225000000ULL),
	      "tx clock: userspace's next periodic packet still waits for 75 %");

	/* A slower peer: userspace clocks us, the fast path answers only past its deadline. */
	seed_rx(k, S_SLOW4);
	CHECK_EQ(run_after(k, prog_fd, S_SLOW4, 224000, slow->in, slow->in_len), XDP_DROP,
		 "tx clock: userspace's deadline (75-100 % of 300 ms) not reached: not answered");
	CHECK_EQ(run_after(k, prog_fd, S_SLOW4, 300100, slow->in, slow->in_len), XDP_TX,
		 "tx clock: past userspace's deadline (it is late): the fast path answers");
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ULL),
			      .tv_nsec = (long)(t_ns % 1000000000ULL)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* What the jitter passes gathered, over as many passes as a loaded machine needed. */
struct jitter_stats {
	uint32_t packets, by_xdp, early, late, on_time;
	double sum, sq, lo, hi;
	bool steady_seen;
};

/*
 * One pass of test_jitter(): @n_peer packets of a peer fixed at @iv_us through the program,
 * userspace's timer emulated beside it; adds the gaps after the first @skip to @st.
 */
static void jitter_pass(struct kern *k, int prog_fd, uint8_t detect_mult, uint32_t iv_us,
			uint32_t n_peer, uint32_t skip, struct jitter_stats *st)
{
	struct bfd_session_tx *clk = kern_tx_clock(k, S_UP4);
	struct bfd_session_params p;
	uint8_t in[512], out[512];
	uint32_t be = htonl(iv_us), n = 0;
	uint64_t sent[400], t_peer, due;
	bool userspace = detect_mult == 1;
	struct sched_param rt = {.sched_priority = 10}, was = {0};
	int policy = sched_getscheduler(0);
	unsigned len;

	install(k);
	fx_params(S_UP4, &p);
	p.detect_mult = detect_mult;
	p.desired_min_tx_us = p.required_min_rx_us = p.tx_in_force_us = iv_us;
	kern_session_write(k, S_UP4, &p);
	memcpy(in, fixtures[0].in, fixtures[0].in_len);
	memcpy(in + 42 + 12, &be, 4); /* the peer's Desired Min TX */
	memcpy(in + 42 + 16, &be, 4); /* and Required Min RX: 20 ms both ways */
	in[40] = in[41] = 0;	      /* IPv4 UDP checksum 0: none computed (RFC 768) */
	kern_ring_consume(k);
	/* A fixed-rate peer needs a punctual one: wake on time even on a busy machine. */
	sched_getparam(0, &was);
	sched_setscheduler(0, SCHED_FIFO, &rt);
	t_peer = mono_ns() + 1000000;
	for (uint32_t i = 0; i < n_peer && n < 400; i++, t_peer += iv_us * 1000ULL) {
		for (;;) { /* userspace's deadlines before the peer's next packet */
			uint64_t last = clk->last_periodic_ns;

			due = last + bfd_tx_jitter_ns(iv_us, detect_mult, last);
			if (!userspace || due >= t_peer)
				break;
			sleep_until(due);
			if (bfd_tx_claim(clk, mono_ns(),
					 bfd_tx_jitter_ns(iv_us, detect_mult, last)))
				sent[n++] = clk->last_periodic_ns;
		}
		sleep_until(t_peer);
		len = sizeof(out);
		if (run(prog_fd, in, (unsigned)fixtures[0].in_len, out, &len) == XDP_TX) {
			sent[n++] = clk->last_periodic_ns;
			st->by_xdp++;
		}
		events_seen = 0;
		kern_ring_consume(k);
		if (events_seen) /* the engine follows the program's verdict, both ways */
			userspace =
			    detect_mult == 1 || (last_event.event_flags & BFD_EVF_PEER_STEADY);
		st->steady_seen |= userspace;
	}
	sched_setscheduler(0, policy, &was);
	st->packets += n;
	/*
	 * Each packet against the deadline the one before it set (prev + bfd_tx_jitter_ns(prev)):
	 * after it only by the emulated timer's own lateness (a loaded machine wakes a sleeper
	 * late), counted apart and left out of the upper bound. Before it only when the program
	 * mirrored the peer (a loaded machine also jitters the emulated peer: judged jittering,
	 * rightly), never under 75 %, which holds for every gap.
	 */
	for (uint32_t i = skip + 1; i < n; i++) {
		double g = (double)(sent[i] - sent[i - 1]) / (iv_us * 1000.0);
		uint64_t dl = sent[i - 1] + bfd_tx_jitter_ns(iv_us, detect_mult, sent[i - 1]);
		double late = sent[i] > dl ? (double)(sent[i] - dl) / (iv_us * 1000.0) : 0;

		st->early += sent[i] < dl;
		st->lo = g < st->lo ? g : st->lo;
		if (late > 0.01) {
			st->late++;
			continue;
		}
		st->on_time++;
		st->sum += g;
		st->sq += g * g;
		st->hi = g > st->hi ? g : st->hi;
	}
}

/*
 * Jitter against a peer that sends at a fixed rate (RFC 5880 6.8.7), the fast path and
 * userspace together: the peer's packets go through the program every 20 ms; userspace is the
 * engine's transmit timer (actions.c) reduced to its rule: from the first RX event saying the
 * peer does not jitter (or from the start with Detect Mult 1, which the fast path never
 * mirrors), it claims the shared clock at each jittered deadline and sends. Each periodic packet
 * is a claim of the clock; their gaps must lie in 75-100 % of the interval (75-90 % with Detect
 * Mult 1), spread as a uniform draw does. A loaded machine wakes the emulated timer and peer
 * late, and such gaps say nothing about the rule: passes repeat (at most 4) until 40 gaps were
 * woken on time; fewer after 4 passes fails.
 */
static void test_jitter(struct kern *k, int prog_fd, uint8_t detect_mult)
{
	const uint32_t iv_us = 20000, n_peer = 220, skip = 40, want_on_time = 40;
	struct jitter_stats st = {.lo = 1e9};
	double cap = detect_mult == 1 ? 0.90 : 1.0, mean = 0, sd = 0;
	unsigned passes = 0;
	char what[160];

	while (passes < 4 && st.on_time < want_on_time) {
		jitter_pass(k, prog_fd, detect_mult, iv_us, n_peer, skip, &st);
		passes++;
	}
	if (st.on_time) {
		mean = st.sum / st.on_time;
		sd = sqrt(st.sq / st.on_time - mean * mean);
	}
	snprintf(what, sizeof(what),
		 "jitter, Detect Mult %u: the engine is told the peer is steady", detect_mult);
	CHECK(st.steady_seen, what);
	printf("jitter, Detect Mult %u, peer fixed at %u us, %u pass(es): %u periodic packets (%u "
	       "from XDP), gaps after the first %u of each pass: min %.4f of the interval (%u "
	       "before their deadline: mirrored); %u woken over 1 %% late left out: max %.4f mean "
	       "%.4f sd %.4f (%.0f us)\n",
	       detect_mult, iv_us, passes, st.packets, st.by_xdp, skip, st.lo, st.early, st.late,
	       st.hi, mean, sd, sd * iv_us);
	snprintf(what, sizeof(what), "jitter, Detect Mult %u: %u gaps woken on time (want %u)",
		 detect_mult, st.on_time, want_on_time);
	CHECK(st.on_time >= want_on_time, what);
	snprintf(what, sizeof(what), "jitter, Detect Mult %u: no gap under 75 %%", detect_mult);
	CHECK(st.lo >= 0.75, what);
	snprintf(what, sizeof(what), "jitter, Detect Mult %u: no gap over %.0f %% (+1 %%)",
		 detect_mult, cap * 100);
	CHECK(st.hi <= cap + 0.01, what);
	/* uniform over 25 % (15 %) of the interval: sd 7.2 % (4.3 %); a fixed-rate echo: ~0 */
	snprintf(what, sizeof(what), "jitter, Detect Mult %u: spread (sd %.0f us)", detect_mult,
		 sd * iv_us);
	CHECK(sd >= (detect_mult == 1 ? 0.03 : 0.05), what);
}

/* The sweep's expiry holds replies until the engine writes a newer cfg (RFC 5880 6.8.4). */
static void test_expired_hold(struct kern *k, int prog_fd)
{
	const struct fx *up = &fixtures[0];
	uint64_t before[BFD_CNT__COUNT], after[BFD_CNT__COUNT];
	struct bfd_session_expiry ex = {.reported_rx_ns = 1, .expired_cfg_gen = 1, .expired = 1};
	struct bfd_session_params p;
	uint32_t slot = S_UP4;
	uint8_t out[512];
	unsigned len = sizeof(out);

	install(k);
	kern_ring_consume(k);
	events_seen = 0;
	bpf_map__update_elem(k->skel->maps.sessions_expiry, &slot, sizeof(slot), &ex, sizeof(ex),
			     0);
	kern_counters(k, before);
	CHECK_EQ(run(prog_fd, up->in, up->in_len, out, &len), XDP_DROP,
		 "expired: no Up reply once the Detection Time has passed");
	kern_counters(k, after);
	kern_ring_consume(k);
	CHECK_EQ(after[BFD_CNT_EXPIRED_HOLD] - before[BFD_CNT_EXPIRED_HOLD], 1, "expired: counted");
	CHECK_EQ(events_seen, 1, "expired: the engine is told of the packet");
	CHECK(last_event.event_flags & BFD_EVF_EXPIRED, "expired: the event says so");
	fx_params(S_UP4, &p);
	CHECK_EQ(last_event.incarnation, p.incarnation, "rx event: names the slot's session");
	fx_params(S_UP4, &p);
	p.cfg_gen = 2; /* the engine has acted: a newer cfg */
	kern_session_write(k, S_UP4, &p);
	seed_rx(k, S_UP4);
	len = sizeof(out);
	CHECK_EQ(run(prog_fd, up->in, up->in_len, out, &len), XDP_TX,
		 "expired: a newer cfg from the engine ends the hold");
	memset(&ex, 0, sizeof(ex));
	bpf_map__update_elem(k->skel->maps.sessions_expiry, &slot, sizeof(slot), &ex, sizeof(ex),
			     0);
}

/* The sweep timer, in real time. */
static void test_sweep(void)
{
	struct kern_opts o = {.max_sessions = 64,
			      .sweep_period_ns = 1000000,
			      .deadman_ns = 3000000000ULL,
			      .on_event = on_event};
	struct bfd_session_params p;
	struct bfd_session_rx rx;
	uint64_t deadline;
	struct kern kk, *k = &kk;

	if (kern_open(k, &o)) {
		CHECK(0, "sweep: load");
		return;
	}
	install(k);
	kern_ring_consume(k);
	events_seen = 0;
	fx_params(S_UP4, &p);
	p.detect_time_ns = 2000000; /* 2 ms */
	p.required_min_rx_us = 500;
	kern_session_rx(k, S_UP4, &rx);
	/* The peer's last packet advertised 300 ms x 3: the sweep must not expire it at 10 ms,
	 * whatever the engine's (lagging) Detection Time says (RFC 5880 6.8.4). */
	rx.last_rx_ns = mono_ns() - 10000000;
	bpf_map__update_elem(k->skel->maps.sessions_rx, &(uint32_t){S_UP4}, sizeof(uint32_t), &rx,
			     sizeof(rx), BPF_F_LOCK);
	kern_session_write(k, S_UP4, &p);
	usleep(20000);
	kern_ring_consume(k);
	CHECK_EQ(events_seen, 0,
		 "sweep: the peer's last packet allows 900 ms: not expired at 10 ms");
	rx.remote_desired_min_tx_us = 500; /* now it allows 1.5 ms */
	bpf_map__update_elem(k->skel->maps.sessions_rx, &(uint32_t){S_UP4}, sizeof(uint32_t), &rx,
			     sizeof(rx), BPF_F_LOCK);
	/* The XDP program marks a slot whose peer changed its fields; this test wrote them. */
	kern_session_arm(k, S_UP4);
	deadline = mono_ns() + 500000000ULL;
	while (!events_seen && mono_ns() < deadline) {
		usleep(1000);
		kern_ring_consume(k);
	}
	CHECK_EQ(events_seen, 1, "sweep: an expired session is reported");
	CHECK_EQ(last_event.kind, BFD_EV_EXPIRED, "sweep: event kind");
	CHECK_EQ(last_event.slot, S_UP4, "sweep: event slot");
	CHECK_EQ(last_event.last_rx_ns, rx.last_rx_ns, "sweep: event names the last arrival");
	CHECK_EQ(last_event.incarnation, p.incarnation, "sweep: event names the slot's session");
	{
		struct bfd_session_expiry ex;
		uint32_t slot = S_UP4;

		bpf_map__lookup_elem(k->skel->maps.sessions_expiry, &slot, sizeof(slot), &ex,
				     sizeof(ex), 0);
		CHECK(ex.expired && ex.expired_cfg_gen == p.cfg_gen,
		      "sweep: the expiry holds the cfg generation it saw");
	}
	usleep(20000);
	kern_ring_consume(k);
	CHECK_EQ(events_seen, 1, "sweep: reported once per silence, not every sweep");
	p.detect_time_ns = 0;
	kern_session_write(k, S_UP4, &p);
	kern_close(k);
}

/* One sweep through sweep_at as if the clock read @now_ns. Return: slots visited (-1..-2 errors).
 */
static long sweep_at(struct kern *k, uint64_t now_ns)
{
	struct bfd_sweep_at a = {.now_ns = now_ns};
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));

	if (bpf_prog_test_run_opts(bpf_program__fd(k->skel->progs.sweep_at), &o))
		return -100;
	return (int)o.retval;
}

static void sweep_session(struct kern *k, uint32_t slot, uint8_t state, uint64_t detect_ns,
			  uint32_t peer_tx_us, uint64_t last_rx_ns)
{
	struct bfd_session_params p;
	struct bfd_session_rx rx;

	memset(&p, 0, sizeof(p));
	p.session_state = state;
	p.detect_mult = 3;
	p.session_flags = BFD_SF_ACTIVE;
	p.local_disc = 1000 + slot;
	p.desired_min_tx_us = peer_tx_us;
	p.required_min_rx_us = peer_tx_us;
	p.tx_in_force_us = peer_tx_us;
	p.detect_time_ns = detect_ns;
	p.cfg_gen = 1;
	p.incarnation = 7000 + slot;
	memset(&rx, 0, sizeof(rx));
	rx.last_rx_ns = last_rx_ns;
	rx.remote_state = state;
	rx.remote_desired_min_tx_us = peer_tx_us;
	rx.remote_required_min_rx_us = peer_tx_us;
	rx.remote_detect_mult = 3;
	bpf_map__update_elem(k->skel->maps.sessions_rx, &slot, sizeof(slot), &rx, sizeof(rx),
			     BPF_F_LOCK);
	kern_session_write(k, slot, &p);
}

/*
 * The timing wheel at the limit, driven by sweep_at with a made-up clock (1 ms ticks): sessions
 * at slots 0, 63, 64 and 65535 (first and last bit of a group word, first of the next, the last
 * slot) expire 3 ms after their last packet and are reported in the tick that passes it, and only
 * marked slots are read: 1,024 Down sessions once (when written), never again; 100 sessions with
 * a 2 s Detection Time at the wheel's horizon (511 ticks) and at their deadline.
 */
static void test_sweep_wheel(void)
{
	struct kern_opts o = {.max_sessions = BFD_MAX_SESSIONS_LIMIT,
			      .sweep_period_ns = 1000000,
			      .sweep_manual = true,
			      .on_event = on_event};
	static const uint32_t due[] = {0, 63, 64, 65535};
	const uint64_t t0 = 1000000000000ULL, ms = 1000000; /* 1000 s: tick 1,000,000 */
	uint64_t visited = 0;
	struct bfd_sweep sw;
	struct kern k;
	long v;

	if (kern_open(&k, &o)) {
		CHECK(0, "wheel: load with 65,536 slots");
		return;
	}
	for (unsigned i = 0; i < 4; i++)
		sweep_session(&k, due[i], BFD_STATE_UP, 3 * ms, 1000, t0);
	for (uint32_t s = 4096; s < 4096 + 1024; s++)
		sweep_session(&k, s, BFD_STATE_DOWN, 0, 1000000, 0);
	for (uint32_t s = 8192; s < 8192 + 100; s++)
		sweep_session(&k, s, BFD_STATE_UP, 2000 * ms, 300000, t0);
	kern_ring_consume(&k);
	events_seen = n_expired = 0;

	v = sweep_at(&k, t0);
	CHECK_EQ(v, 4 + 1024 + 100, "wheel: the first sweep reads every slot written (armed)");
	visited += (uint64_t)v;
	for (int t = 1; t <= 2; t++) {
		v = sweep_at(&k, t0 + (uint64_t)t * ms);
		visited += (uint64_t)v;
		CHECK_EQ(v, 0, "wheel: nothing marked before the deadline's tick: nothing read");
	}
	v = sweep_at(&k, t0 + 3 * ms);
	visited += (uint64_t)v;
	CHECK_EQ(v, 4, "wheel: the deadline's tick reads the 4 due slots");
	kern_ring_consume(&k);
	CHECK_EQ(events_seen, 0, "wheel: exactly 3 ms after the last packet: not expired (6.8.4)");
	v = sweep_at(&k, t0 + 3 * ms + 1);
	visited += (uint64_t)v;
	kern_ring_consume(&k);
	CHECK_EQ(v, 0, "wheel: a second sweep in the same tick reads nothing more");
	v = sweep_at(&k, t0 + 4 * ms);
	visited += (uint64_t)v;
	kern_ring_consume(&k);
	CHECK_EQ(v, 4, "wheel: the next tick reads the 4 slots again");
	CHECK_EQ(n_expired, 4, "wheel: 4 expiries reported");
	CHECK_EQ(events_seen, 4, "wheel: and nothing else");
	CHECK(n_expired == 4 && expired_slots[0] == 0 && expired_slots[1] == 63 &&
		  expired_slots[2] == 64 && expired_slots[3] == 65535,
	      "wheel: slots 0, 63, 64, 65535 expired, in slot order");
	CHECK_EQ(last_event.last_rx_ns, t0, "wheel: the expiry names the last arrival");
	v = sweep_at(&k, t0 + 5 * ms);
	visited += (uint64_t)v;
	CHECK_EQ(v, 0, "wheel: a reported expiry leaves the wheel");
	v = sweep_at(&k, t0 + 510 * ms);
	visited += (uint64_t)v;
	CHECK_EQ(v, 0, "wheel: 505 ticks at once, nothing marked in them");
	v = sweep_at(&k, t0 + 511 * ms);
	visited += (uint64_t)v;
	CHECK_EQ(v, 100, "wheel: the 2 s sessions are read at the horizon (511 ticks)");
	v = sweep_at(&k, t0 + 1022 * ms);
	visited += (uint64_t)v;
	CHECK_EQ(v, 100, "wheel: and at the next horizon");
	v = sweep_at(&k, t0 + 1533 * ms);
	visited += (uint64_t)v;
	CHECK_EQ(v, 100, "wheel: and the next");
	kern_ring_consume(&k);
	CHECK_EQ(events_seen, 4, "wheel: none of them expired so far");
	v = sweep_at(&k, t0 + 2000 * ms + 1);
	visited += (uint64_t)v;
	kern_ring_consume(&k);
	CHECK_EQ(v, 100, "wheel: their deadline's tick reads them");
	CHECK_EQ(n_expired, 104, "wheel: and they expire then");
	kern_sweep_stats(&k, &sw);
	CHECK_EQ(sw.last_visited, 100, "wheel: the sweep record's last_visited");
	CHECK_EQ(sw.total_visited, visited, "wheel: slots_visited sums what each sweep returned");
	CHECK_EQ(sw.runs, 12, "wheel: 12 sweeps run");
	kern_close(&k);
}

/*
 * C14b (../shared/docs/conformance.md): 500 sessions re-armed every 10 ms for 10 simulated
 * minutes (prog_test --sweep-scale; the first simulated minute in make test), the sweep driven by
 * sweep_at at the engine's default tick (--sweep-us 1000), then 53 of them silent from known
 * packets on. The peer of session s sends at t0 + s * 20 us + k * 10 ms (packet k), written into
 * sessions_rx as the XDP program records a steady Up packet (last_rx_ns only; such a packet marks
 * nothing in the wheel), with its reply's claim of the shared transmit clock for the even slots
 * (BFD_SF_RX_CLOCKED: the quiet check runs on them too). The engine does not react to any event, so
 * a repeated expiry would show: the sweep must post each silence once by itself. Expect for each
 * silenced session exactly one BFD_EV_EXPIRED, in the first tick whose time is past its last packet
 * + 30 ms (within one tick: docs/engine.md, Detection), naming that packet; for each live one no
 * event at all; for each silenced rx-clocked one a BFD_EV_QUIET 15 ms (1.5 intervals) + at most a
 * tick after our last packet and every 15-16 ms after.
 */
#define SCALE_N		500
#define SCALE_IV_NS	10000000ULL /* the peers' interval and ours */
#define SCALE_DETECT_NS (3 * SCALE_IV_NS)
#define SCALE_QUIET_NS	(SCALE_IV_NS + SCALE_IV_NS / 2)
#define SCALE_TICK_NS	1000000ULL /* the sweep's tick: --sweep-us 1000, the default */
/* 10 minutes of 10 ms: prog_test --sweep-scale (about 14 s here: 28.5 million packets written
 * through the syscall at about 290 ns each, 600,091 sweeps); make test runs the first minute. */
#define SCALE_PACKETS_SOAK  60000ULL
#define SCALE_PACKETS_SHORT 6000ULL
/* session s: s * 20 us into each 10 ms (s % 50 == 0: on a tick) */
#define SCALE_PHASE_NS 20000ULL
/* swept past the last packet: the last silence's expiry */
#define SCALE_TAIL_TICKS 100

struct scale_run {
	uint64_t t0;
	uint64_t last_ns[SCALE_N];     /* the session's latest packet, as written */
	int64_t silent_after[SCALE_N]; /* the last packet (k) of a silenced session; -1: live */
	unsigned n_expired[SCALE_N], n_quiet[SCALE_N];
	uint64_t expired_ts[SCALE_N], expired_last[SCALE_N], quiet_ref[SCALE_N];
	unsigned bad_quiet, other_events;
	int first_bad_quiet_slot;
	uint64_t first_bad_quiet_gap_ns;
};

static int on_scale_event(void *ctx, void *data, size_t size)
{
	struct scale_run *r = ctx;
	struct bfd_event e;

	if (size < sizeof(e)) {
		r->other_events++;
		return 0;
	}
	memcpy(&e, data, sizeof(e));
	if (e.slot >= SCALE_N || (e.kind != BFD_EV_EXPIRED && e.kind != BFD_EV_QUIET)) {
		r->other_events++;
		return 0;
	}
	if (e.kind == BFD_EV_EXPIRED) {
		if (!r->n_expired[e.slot]++) {
			r->expired_ts[e.slot] = e.ts_ns;
			r->expired_last[e.slot] = e.last_rx_ns;
		}
		return 0;
	}
	/* Quiet: 1.5 intervals after our last packet (or the last quiet report), within a tick. */
	r->n_quiet[e.slot]++;
	if (r->silent_after[e.slot] < 0 || e.ts_ns - r->quiet_ref[e.slot] <= SCALE_QUIET_NS ||
	    e.ts_ns - r->quiet_ref[e.slot] > SCALE_QUIET_NS + SCALE_TICK_NS) {
		if (!r->bad_quiet++) {
			r->first_bad_quiet_slot = (int)e.slot;
			r->first_bad_quiet_gap_ns = e.ts_ns - r->quiet_ref[e.slot];
		}
	}
	r->quiet_ref[e.slot] = e.ts_ns;
	return 0;
}

static int scale_silenced(uint32_t s)
{
	return s % 10 == 0 || s == 63 || s == 64 || s == 499;
}

static void test_sweep_scale(uint64_t n_packets)
{
	static struct scale_run r;
	struct kern_opts o = {.max_sessions = 512,
			      .sweep_period_ns = SCALE_TICK_NS,
			      .sweep_manual = true,
			      .on_event = on_scale_event,
			      .ctx = &r};
	LIBBPF_OPTS(bpf_map_batch_opts, bo, .elem_flags = BPF_F_LOCK);
	static uint32_t keys[SCALE_N];
	static struct bfd_session_rx vals[SCALE_N], shadow[SCALE_N];
	const uint64_t t0 = 1000000000000ULL; /* 1000 s: a multiple of the tick */
	const uint64_t last_pkt_ns = (n_packets - 1) * SCALE_IV_NS;
	const uint64_t ticks = last_pkt_ns / SCALE_TICK_NS + SCALE_TAIL_TICKS;
	uint64_t next_k[SCALE_N], visited = 0, packets = 0, started = mono_ns(), took_ns;
	unsigned n_silenced = 0, wrong_count = 0, wrong_time = 0, wrong_last = 0, live_events = 0,
		 silent_no_quiet = 0, write_errors = 0, sweep_errors = 0;
	int rx_fd;
	struct bfd_sweep sw;
	struct kern k;

	memset(&r, 0, sizeof(r));
	r.t0 = t0;
	if (kern_open(&k, &o)) {
		CHECK(0, "scale: load");
		return;
	}
	rx_fd = bpf_map__fd(k.skel->maps.sessions_rx);
	for (uint32_t s = 0; s < SCALE_N; s++) {
		uint64_t phase = s * SCALE_PHASE_NS;

		/* Silences spread over the run: slot 0 after its first packet, 499 after its
		 * last, the rest at packets 100 .. n_packets - 101 in no particular order. */
		r.silent_after[s] = !scale_silenced(s) ? -1
				    : s == 0	       ? 0
				    : s == 499	       ? (int64_t)n_packets - 1
					       : 100 + (int64_t)((s * 7919ULL) % (n_packets - 200));
		n_silenced += r.silent_after[s] >= 0;
		sweep_session(&k, s, BFD_STATE_UP, SCALE_DETECT_NS, SCALE_IV_NS / 1000,
			      t0 + phase - SCALE_IV_NS);
		if (s % 2 == 0) {
			struct bfd_session_params p;

			/* the peer's packets clock ours: the quiet check runs on it */
			kern_session_cfg(&k, s, &p);
			p.session_flags |= BFD_SF_RX_CLOCKED;
			kern_session_write(&k, s, &p);
		}
		kern_session_rx(&k, s, &shadow[s]);
		r.last_ns[s] = t0 + phase - SCALE_IV_NS; /* packet -1, before the run */
		r.quiet_ref[s] = r.last_ns[s];
		kern_tx_clock(&k, s)->last_periodic_ns = r.last_ns[s]; /* our reply to it */
		next_k[s] = 0;
	}
	kern_ring_consume(&k);

	for (uint64_t t = 0; t <= ticks; t++) {
		uint64_t now = t0 + t * SCALE_TICK_NS;
		uint32_t n = 0;
		long v;

		/* The packets that arrived since the last sweep, each as the program records it. */
		for (uint32_t s = 0; s < SCALE_N; s++) {
			uint64_t at = t0 + s * SCALE_PHASE_NS + next_k[s] * SCALE_IV_NS;

			if (at > now ||
			    (r.silent_after[s] >= 0 && (int64_t)next_k[s] > r.silent_after[s]))
				continue;
			shadow[s].last_rx_ns = at;
			shadow[s].rx_packets++;
			if (s % 2 == 0) {
				shadow[s].last_tx_ns = at; /* our reply: the shared clock */
				kern_tx_clock(&k, s)->last_periodic_ns = at;
				r.quiet_ref[s] = at;
			}
			r.last_ns[s] = at;
			next_k[s]++;
			packets++;
			keys[n] = s;
			vals[n++] = shadow[s];
		}
		if (n) {
			uint32_t count = n;

			if (bpf_map_update_batch(rx_fd, keys, vals, &count, &bo) || count != n)
				write_errors++;
		}
		v = sweep_at(&k, now);
		if (v < 0)
			sweep_errors++;
		else
			visited += (uint64_t)v;
		kern_ring_consume(&k);
	}
	took_ns = mono_ns() - started;

	for (uint32_t s = 0; s < SCALE_N; s++) {
		uint64_t last, want_ts;

		if (r.silent_after[s] < 0) {
			if (r.n_expired[s] + r.n_quiet[s] && !live_events)
				fprintf(stderr,
					"scale: live slot %u: %u expiries, %u quiet reports\n", s,
					r.n_expired[s], r.n_quiet[s]);
			live_events += r.n_expired[s] + r.n_quiet[s];
			continue;
		}
		last = t0 + s * SCALE_PHASE_NS + (uint64_t)r.silent_after[s] * SCALE_IV_NS;
		/* The first tick whose time is past the Detection Time (t0 is on a tick). */
		want_ts = ((last + SCALE_DETECT_NS) / SCALE_TICK_NS + 1) * SCALE_TICK_NS;
		if (r.n_expired[s] != 1) {
			if (!wrong_count++)
				fprintf(stderr,
					"scale: slot %u silent after packet %lld: %u expiries\n", s,
					(long long)r.silent_after[s], r.n_expired[s]);
			continue;
		}
		if (r.expired_ts[s] != want_ts || r.expired_ts[s] - last <= SCALE_DETECT_NS ||
		    r.expired_ts[s] - last > SCALE_DETECT_NS + SCALE_TICK_NS) {
			if (!wrong_time++)
				fprintf(stderr,
					"scale: slot %u expired %lld ns after its last packet, "
					"want %llu\n",
					s, (long long)(r.expired_ts[s] - last),
					(unsigned long long)(want_ts - last));
		}
		wrong_last += r.expired_last[s] != last;
		silent_no_quiet += s % 2 == 0 && !r.n_quiet[s];
	}
	kern_sweep_stats(&k, &sw);
	printf("scale: %d sessions, %llu packets, %llu sweeps of %llu us (%.0f s simulated) in "
	       "%.2f s; "
	       "slots read per sweep %.1f (max %llu)\n",
	       SCALE_N, (unsigned long long)packets, (unsigned long long)sw.runs,
	       (unsigned long long)(SCALE_TICK_NS / 1000), (double)(ticks * SCALE_TICK_NS) / 1e9,
	       (double)took_ns / 1e9, (double)visited / (double)(ticks + 1),
	       (unsigned long long)sw.max_visited);
	if (r.bad_quiet)
		fprintf(stderr,
			"scale: %u quiet reports out of place, the first slot %d, %llu ns after "
			"the previous\n",
			r.bad_quiet, r.first_bad_quiet_slot,
			(unsigned long long)r.first_bad_quiet_gap_ns);
	CHECK_EQ(write_errors, 0, "scale: every packet written (sessions_rx, BPF_F_LOCK)");
	CHECK_EQ(sweep_errors, 0, "scale: every sweep ran");
	CHECK_EQ(n_silenced, 53, "scale: 53 sessions silenced");
	CHECK_EQ(wrong_count, 0, "scale: exactly one expiry per silenced session");
	CHECK_EQ(wrong_time, 0, "scale: each in the first tick past its Detection Time");
	CHECK_EQ(wrong_last, 0, "scale: each naming the session's last packet");
	CHECK_EQ(live_events, 0, "scale: no expiry, no quiet report for the 447 live sessions");
	CHECK_EQ(r.other_events, 0, "scale: no other event");
	CHECK_EQ(r.bad_quiet, 0,
		 "scale: quiet reports 15 ms + at most a tick apart, silent ones only");
	CHECK_EQ(silent_no_quiet, 0, "scale: every silenced rx-clocked session reported quiet");
	CHECK_EQ(sw.runs, ticks + 1, "scale: the sweep record counts every sweep");
	CHECK_EQ(sw.total_visited, visited, "scale: slots_visited sums what each sweep returned");
	/* A full scan reads 500 a sweep; the wheel reads a slot about once per deadline
	 * (15 ms for the rx-clocked, 20-30 ms for the others). */
	CHECK(visited < 50 * (ticks + 1),
	      "scale: the wheel reads under 50 slots a sweep on average");
	kern_close(&k);
}

static const struct fx *fixture_named(const char *name)
{
	for (unsigned i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		if (!strcmp(fixtures[i].name, name))
			return &fixtures[i];
	return NULL;
}

/* --spread-pass: what is not BFD is redirected to the cpumap (the frame unchanged), BFD still
 * gets its reply; each CPU that is online holds an entry. */
static void test_spread_pass(void)
{
	struct kern_opts o = {.max_sessions = 16,
			      .sweep_period_ns = 100000000ULL,
			      .spread_pass = true,
			      .on_event = on_event};
	const struct fx *pass = fixture_named("non_bfd_pass"), *tagged = fixture_named("vlan_pass"),
			*reply = fixture_named("up_reply");
	uint64_t before[BFD_CNT__COUNT], after[BFD_CNT__COUNT];
	struct kern k;
	uint8_t out[512];
	unsigned len = sizeof(out);
	int fd;

	if (kern_open(&k, &o)) {
		CHECK(0, "spread-pass: load");
		return;
	}
	CHECK_EQ(k.spread_cpus, (int)sysconf(_SC_NPROCESSORS_ONLN),
		 "spread-pass: a cpumap entry per online CPU");
	install(&k);
	fd = bpf_program__fd(k.skel->progs.xdp_bfd);
	kern_counters(&k, before);
	CHECK_EQ(run(fd, pass->in, pass->in_len, out, &len), XDP_REDIRECT,
		 "spread-pass: UDP to another port is redirected to its flow's CPU");
	CHECK(len == pass->in_len && !memcmp(out, pass->in, len),
	      "spread-pass: the redirected frame is unchanged");
	len = sizeof(out);
	CHECK_EQ(run(fd, tagged->in, tagged->in_len, out, &len), XDP_REDIRECT,
		 "spread-pass: a VLAN-tagged frame too");
	len = sizeof(out);
	CHECK_EQ(run(fd, reply->in, reply->in_len, out, &len), XDP_TX,
		 "spread-pass: BFD is still answered in XDP");
	CHECK(len == reply->out_len && !memcmp(out, reply->out, len),
	      "spread-pass: the reply's bytes are the fixture's");
	kern_counters(&k, after);
	CHECK_EQ(after[BFD_CNT_PASS_SPREAD] - before[BFD_CNT_PASS_SPREAD], 2,
		 "spread-pass: counted as spread");
	CHECK_EQ(after[BFD_CNT_PASS_NON_BFD] - before[BFD_CNT_PASS_NON_BFD], 0,
		 "spread-pass: not counted as passed here");
	kern_close(&k);
}

static void test_pass_unowned(void)
{
	struct kern_opts o = {.max_sessions = 16,
			      .sweep_period_ns = 100000000ULL,
			      .pass_unowned = true,
			      .on_event = on_event};
	uint64_t before[BFD_CNT__COUNT], after[BFD_CNT__COUNT];
	const struct fx *f = fixture_named("r07_unknown_your");
	struct kern k;
	uint8_t out[512];
	unsigned len = sizeof(out);

	if (kern_open(&k, &o)) {
		CHECK(0, "pass-unowned: load");
		return;
	}
	install(&k);
	kern_counters(&k, before);
	CHECK_EQ(run(bpf_program__fd(k.skel->progs.xdp_bfd), f->in, f->in_len, out, &len), XDP_PASS,
		 "pass-unowned: unknown discriminator goes to the stack");
	kern_counters(&k, after);
	CHECK_EQ(after[BFD_CNT_DROP_BASE + BFD_DROP_UNKNOWN_YOUR_DISC] -
		     before[BFD_CNT_DROP_BASE + BFD_DROP_UNKNOWN_YOUR_DISC],
		 1, "pass-unowned: still counted by reason");
	CHECK_EQ(after[BFD_CNT_PASS_UNOWNED] - before[BFD_CNT_PASS_UNOWNED], 1,
		 "pass-unowned: counted as passed");
	kern_close(&k);
}

/* --- benchmark --- */

/*
 * ns per packet: median over 5 rounds of the mean BPF_PROG_TEST_RUN duration of 100,000 runs,
 * each on a fresh copy of the frame (repeat = 1). Rerunning the program on the frame it has just
 * rewritten would measure something else: the reply is not a valid packet for the same session,
 * and the reply gap (RFC 5880 6.8.7) allows one reply per interval.
 */
static double ns_per_packet(int prog_fd, const uint8_t *in, unsigned len, int want)
{
	uint8_t buf[512];
	double round_ns[5];

	for (int r = 0; r < 5; r++) {
		uint64_t sum = 0;

		for (int i = 0; i < 100000; i++) {
			LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = len,
				    .data_out = buf, .data_size_out = sizeof(buf), .repeat = 1);

			if (bpf_prog_test_run_opts(prog_fd, &opts) || (int)opts.retval != want) {
				fprintf(stderr, "bench: run failed (retval %u)\n", opts.retval);
				exit(1);
			}
			sum += opts.duration;
		}
		round_ns[r] = (double)sum / 100000;
	}
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (round_ns[j] < round_ns[i]) {
				double t = round_ns[i];

				round_ns[i] = round_ns[j];
				round_ns[j] = t;
			}
	return round_ns[2];
}

static int bench(void)
{
	struct kern_opts o = {.max_sessions = 1024,
			      .sweep_period_ns = 1000000,
			      .deadman_ns = 3000000000ULL,
			      .on_event = on_event};
	struct bfd_session_params p;
	struct bfd_addr_key key;
	struct xdp_swap *swap;
	struct kern k;
	const struct fx *pass = NULL, *drop = NULL, *up = &fixtures[0];
	uint8_t self[sizeof(fx_up_reply_in)];
	double t_reply, t_pass, t_drop, t_swap, t_reply_entry, t_pass_entry;
	int fd, entry_fd;

	for (unsigned i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		if (!strcmp(fixtures[i].name, "non_bfd_pass"))
			pass = &fixtures[i];
		if (!strcmp(fixtures[i].name, "r07_unknown_your"))
			drop = &fixtures[i];
	}
	if (kern_open(&k, &o))
		return 1;
	/*
	 * The peer's packet with Poll: a Final is owed at once (RFC 5880 6.8.7), so every run takes
	 * the whole reply path whatever the reply gap. fixtures.h holds the same frame with P as
	 * poll_final; its checksums come from scapy.
	 */
	for (unsigned i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		if (!strcmp(fixtures[i].name, "poll_final"))
			memcpy(self, fixtures[i].in, sizeof(self));
	fx_params(S_UP4, &p);
	fx_key(S_UP4, &key);
	kern_session_write(&k, S_UP4, &p);
	kern_index_add(&k, p.local_disc, &key, S_UP4);
	kern_set_slots_in_use(&k, S_UP4 + 1);
	kern_heartbeat(&k, mono_ns() + 3600000000000ULL);
	fd = bpf_program__fd(k.skel->progs.xdp_bfd);
	swap = xdp_swap__open_and_load();
	if (!swap)
		return 1;
	/* What the links run: xdp_bfd_entry, a tail call into xdp_bfd (slot 0 of xdp_bfd_progs). */
	entry_fd = bpf_program__fd(k.skel->progs.xdp_bfd_entry);
	t_reply = ns_per_packet(fd, self, sizeof(self), XDP_TX);
	t_reply_entry = ns_per_packet(entry_fd, self, sizeof(self), XDP_TX);
	t_pass = ns_per_packet(fd, pass->in, pass->in_len, XDP_PASS);
	t_pass_entry = ns_per_packet(entry_fd, pass->in, pass->in_len, XDP_PASS);
	t_drop = ns_per_packet(fd, drop->in, drop->in_len, XDP_DROP);
	t_swap = ns_per_packet(bpf_program__fd(swap->progs.xdp_swap), up->in, up->in_len, XDP_TX);
	printf("BPF_PROG_TEST_RUN, 100,000 runs of one fresh frame each, median of 5 rounds, "
	       "ns per packet:\n");
	printf("  xdp_bfd reply path (Up session, Poll: Final) %7.1f  (%.2fx xdp_swap)\n", t_reply,
	       t_reply / t_swap);
	printf("  the same through xdp_bfd_entry (tail call)   %7.1f  (%+.1f ns)\n", t_reply_entry,
	       t_reply_entry - t_reply);
	printf("  xdp_bfd pass path (non-BFD UDP, XDP_PASS)    %7.1f  (%.2fx xdp_swap)\n", t_pass,
	       t_pass / t_swap);
	printf("  the same through xdp_bfd_entry (tail call)   %7.1f  (%+.1f ns)\n", t_pass_entry,
	       t_pass_entry - t_pass);
	printf("  xdp_bfd discard (unknown Your Discriminator) %7.1f  (%.2fx xdp_swap)\n", t_drop,
	       t_drop / t_swap);
	printf("  xdp_swap (swap MAC and IPv4, XDP_TX)         %7.1f\n", t_swap);
	xdp_swap__destroy(swap);
	kern_close(&k);
	return 0;
}

/* --- the sweep benchmark --- */

#define BENCH_TX_US	 300000ULL /* 300 ms x 3: the mesh class of most sessions */
#define BENCH_WARMUP_MS	 1500	   /* past the first sweep of every armed slot */
#define BENCH_MEASURE_MS 4000

/* The sweep record's fields up to total_scan_ns: the same offsets in both objects. */
struct sweep_head {
	uint8_t timer[16];
	uint64_t runs, last_scan_ns, max_scan_ns, total_scan_ns;
};

struct sweep_fig {
	double ns_per_sweep, cpu_pct, visited_per_sweep;
	uint64_t max_scan_ns;
	uint64_t expired; /* sweep_expired: must stay 0, the peers are all sending */
};

/* A per-CPU counter of either object (the counter enum is the same in both), summed. */
static uint64_t percpu_sum(int fd, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[512] = {0}, sum = 0;

	if (ncpu <= 0 || ncpu > 512 || bpf_map_lookup_elem(fd, &idx, v))
		return UINT64_MAX;
	for (int c = 0; c < ncpu; c++)
		sum += v[c];
	return sum;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * Every session Up, its peer sending every 300 ms at a phase of its own: last_rx_ns is the peer's
 * latest packet as of now (one batch write for all), as if the XDP program had recorded it.
 */
static void bench_rx(int rx_fd, uint32_t n, uint64_t now_ns, uint32_t *keys,
		     struct bfd_session_rx *vals)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o, .elem_flags = BPF_F_LOCK);
	uint64_t iv = BENCH_TX_US * 1000;
	uint32_t count = n;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t phase = (uint64_t)i * (iv / n);

		keys[i] = i;
		memset(&vals[i], 0, sizeof(vals[i]));
		vals[i].last_rx_ns = now_ns - (now_ns + phase) % iv;
		vals[i].remote_state = BFD_STATE_UP;
		vals[i].remote_disc = 50000 + i;
		vals[i].remote_desired_min_tx_us = BENCH_TX_US;
		vals[i].remote_required_min_rx_us = BENCH_TX_US;
		vals[i].remote_detect_mult = 3;
	}
	if (bpf_map_update_batch(rx_fd, keys, vals, &count, &o) || count != n) {
		fprintf(stderr, "bench-sweep: writing sessions_rx: %s\n", strerror(errno));
		exit(1);
	}
}

static void bench_params(uint32_t i, struct bfd_session_params *p)
{
	memset(p, 0, sizeof(*p));
	p->session_state = BFD_STATE_UP;
	p->detect_mult = 3;
	p->session_flags = BFD_SF_ACTIVE;
	p->local_disc = 1 + i;
	p->remote_disc = 50000 + i;
	p->desired_min_tx_us = BENCH_TX_US;
	p->required_min_rx_us = BENCH_TX_US;
	p->tx_in_force_us = BENCH_TX_US;
	p->detect_time_ns = 3 * BENCH_TX_US * 1000;
	p->cfg_gen = 1;
	p->incarnation = 1 + i;
}

/*
 * Run the armed sweep over n idle sessions: warm up, then the sweep record's own figures over
 * BENCH_MEASURE_MS of wall time, the peers' packets refreshed every 100 ms.
 */
static void bench_measure(int sweep_fd, int rx_fd, int cnt_fd, uint32_t n, struct sweep_fig *f)
{
	uint32_t *keys = calloc(n, sizeof(*keys)), key = 0;
	struct bfd_session_rx *vals = calloc(n, sizeof(*vals));
	uint8_t v0[512], v1[512];
	struct sweep_head h0, h1;
	uint64_t w0, w1, vis0 = 0, vis1 = 0;
	int visited = 0;

	if (!keys || !vals)
		exit(1);
	for (int ms = 0; ms < BENCH_WARMUP_MS; ms += 100) {
		bench_rx(rx_fd, n, mono_ns(), keys, vals);
		sleep_ms(100);
	}
	bpf_map_lookup_elem(sweep_fd, &key, v0);
	w0 = mono_ns();
	for (int ms = 0; ms < BENCH_MEASURE_MS; ms += 100) {
		bench_rx(rx_fd, n, mono_ns(), keys, vals);
		sleep_ms(100);
	}
	bpf_map_lookup_elem(sweep_fd, &key, v1);
	w1 = mono_ns();
	memcpy(&h0, v0, sizeof(h0));
	memcpy(&h1, v1, sizeof(h1));
	/* Only the current object counts the slots it reads (struct bfd_sweep). */
	{
		struct bfd_sweep s0, s1;
		struct bpf_map_info info = {0};
		uint32_t len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(sweep_fd, &info, &len) &&
		    info.value_size == sizeof(struct bfd_sweep)) {
			memcpy(&s0, v0, sizeof(s0));
			memcpy(&s1, v1, sizeof(s1));
			vis0 = s0.total_visited;
			vis1 = s1.total_visited;
			visited = 1;
		}
	}
	f->ns_per_sweep =
	    (double)(h1.total_scan_ns - h0.total_scan_ns) / (double)(h1.runs - h0.runs);
	f->cpu_pct = 100.0 * (double)(h1.total_scan_ns - h0.total_scan_ns) / (double)(w1 - w0);
	f->visited_per_sweep =
	    visited ? (double)(vis1 - vis0) / (double)(h1.runs - h0.runs) : (double)n;
	f->max_scan_ns = h1.max_scan_ns;
	f->expired = percpu_sum(cnt_fd, BFD_CNT_SWEEP_EXPIRED);
	free(keys);
	free(vals);
}

/* Offset of global @name in the object's .bss (BTF), or -1. */
static long bss_offset(struct bpf_object *obj, const char *name)
{
	struct btf *btf = bpf_object__btf(obj);
	int id = btf ? btf__find_by_name_kind(btf, ".bss", BTF_KIND_DATASEC) : -1;
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, (uint32_t)id) : NULL;
	const struct btf_var_secinfo *vs;

	if (!t)
		return -1;
	vs = btf_var_secinfos(t);
	for (unsigned i = 0; i < btf_vlen(t); i++, vs++)
		if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off),
			    name))
			return vs->offset;
	return -1;
}

/* The earlier object: its sweep visits slots [0, slots_in_use) every tick. */
static int bench_base(const char *path, uint32_t n, struct sweep_fig *f)
{
	static const char *sized[] = {"sessions_cfg", "sessions_rx", "sessions_expiry",
				      "disc_index", "addr_index"};
	LIBBPF_OPTS(bpf_test_run_opts, run);
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	uint32_t *keys = calloc(n, sizeof(*keys)), zero = 0;
	struct bfd_session_rx *vals = calloc(n, sizeof(*vals));
	struct bpf_map *bss;
	uint8_t bss_mem[256];
	long off;
	int cfg_fd;

	if (!obj) {
		fprintf(stderr, "bench-sweep: cannot open %s (make bench-sweep builds it)\n", path);
		return 1;
	}
	for (unsigned i = 0; i < 5; i++)
		bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, sized[i]), n);
	if (bpf_object__load(obj)) {
		fprintf(stderr, "bench-sweep: cannot load %s\n", path);
		return 1;
	}
	cfg_fd = bpf_map__fd(bpf_object__find_map_by_name(obj, "sessions_cfg"));
	/* The peers' packets first: a session is Up only once they arrive. */
	bench_rx(bpf_map__fd(bpf_object__find_map_by_name(obj, "sessions_rx")), n, mono_ns(), keys,
		 vals);
	free(keys);
	free(vals);
	for (uint32_t i = 0; i < n; i++) {
		struct bfd_session_cfg v = {0};

		bench_params(i, &v.p);
		bpf_map_update_elem(cfg_fd, &i, &v, BPF_F_LOCK);
	}
	bss = bpf_object__find_map_by_name(obj, ".bss");
	off = bss_offset(obj, "slots_in_use");
	if (!bss || off < 0 || (size_t)off + 4 > bpf_map__value_size(bss) ||
	    bpf_map__value_size(bss) > sizeof(bss_mem) ||
	    bpf_map_lookup_elem(bpf_map__fd(bss), &zero, bss_mem)) {
		fprintf(stderr, "bench-sweep: no slots_in_use in %s\n", path);
		return 1;
	}
	memcpy(bss_mem + off, &n, sizeof(n));
	bpf_map_update_elem(bpf_map__fd(bss), &zero, bss_mem, 0);
	if (bpf_prog_test_run_opts(
		bpf_program__fd(bpf_object__find_program_by_name(obj, "start_sweep")), &run) ||
	    run.retval) {
		fprintf(stderr, "bench-sweep: arming the earlier sweep failed\n");
		return 1;
	}
	bench_measure(bpf_map__fd(bpf_object__find_map_by_name(obj, "sweep")),
		      bpf_map__fd(bpf_object__find_map_by_name(obj, "sessions_rx")),
		      bpf_map__fd(bpf_object__find_map_by_name(obj, "counters")), n, f);
	bpf_object__close(obj);
	return 0;
}

/* This object, through the engine's kern.c: every session written as the engine writes it. */
static int bench_now(uint32_t n, struct sweep_fig *f)
{
	struct kern_opts o = {.max_sessions = n, .sweep_period_ns = 1000000, .on_event = on_event};
	uint32_t *keys = calloc(n, sizeof(*keys));
	struct bfd_session_rx *vals = calloc(n, sizeof(*vals));
	struct kern k;

	if (!keys || !vals || kern_open(&k, &o))
		return 1;
	/* The peers' packets first: a session is Up only once they arrive. */
	bench_rx(bpf_map__fd(k.skel->maps.sessions_rx), n, mono_ns(), keys, vals);
	free(keys);
	free(vals);
	for (uint32_t i = 0; i < n; i++) {
		struct bfd_session_params p;

		bench_params(i, &p);
		kern_session_write(&k, i, &p);
	}
	kern_set_slots_in_use(&k, n);
	bench_measure(bpf_map__fd(k.skel->maps.sweep), bpf_map__fd(k.skel->maps.sessions_rx),
		      bpf_map__fd(k.skel->maps.counters), n, f);
	kern_ring_consume(&k);
	kern_close(&k);
	return 0;
}

static int bench_sweep(const char *base)
{
	static const uint32_t sizes[] = {1024, 8192, 65536};
	struct sweep_fig before[3], after[3];

	for (int i = 0; i < 3; i++)
		if (bench_base(base, sizes[i], &before[i]) || bench_now(sizes[i], &after[i]))
			return 1;
	events_seen = 0;
	printf("Detection sweep, --sweep-us 1000, every session Up at 300 ms x 3 with its peer's "
	       "packets\nrecorded every 100 ms; the sweep's own clock over %d s after %d ms of "
	       "warm-up (%s = before):\n",
	       BENCH_MEASURE_MS / 1000, BENCH_WARMUP_MS, base);
	printf("  %8s | %15s %8s | %10s %8s | %11s %6s | %7s\n", "sessions", "ns/sweep before",
	       "after", "CPU before", "after", "slots/sweep", "after", "expired");
	for (int i = 0; i < 3; i++)
		printf("  %8u | %15.0f %8.0f | %9.2f%% %7.3f%% | %11.0f %6.1f | %3llu %3llu\n",
		       sizes[i], before[i].ns_per_sweep, after[i].ns_per_sweep, before[i].cpu_pct,
		       after[i].cpu_pct, before[i].visited_per_sweep, after[i].visited_per_sweep,
		       (unsigned long long)before[i].expired, (unsigned long long)after[i].expired);
	for (int i = 0; i < 3; i++)
		if (before[i].expired || after[i].expired) {
			fprintf(stderr, "bench-sweep: sessions expired: the figures are void\n");
			return 1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	struct kern_opts o = {.max_sessions = 64,
			      .sweep_period_ns = 1000000,
			      .deadman_ns = 3000000000ULL,
			      .sweep_manual = true, /* run_fixture reads the wheel's marks */
			      .on_event = on_event};
	struct kern k;
	int prog_fd;

	log_set_level(LOG_WARN);
	log_hook_libbpf();
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		return bench();
	if (argc > 2 && !strcmp(argv[1], "--bench-sweep"))
		return bench_sweep(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "--sweep-scale")) {
		test_sweep_scale(SCALE_PACKETS_SOAK);
		return check_done("prog_test --sweep-scale");
	}
	if (kern_open(&k, &o)) {
		fprintf(stderr, "prog_test: cannot load the XDP object (root and BPF needed)\n");
		return 1;
	}
	prog_fd = bpf_program__fd(k.skel->progs.xdp_bfd);
	install(&k);
	for (unsigned i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		run_fixture(&k, prog_fd, &fixtures[i]);
	test_entry(&k);
	test_own_echo(&k, prog_fd);
	test_deadman(&k, prog_fd);
	test_tx_clock(&k, prog_fd);
	test_jitter(&k, prog_fd, 3);
	test_jitter(&k, prog_fd, 1);
	test_expired_hold(&k, prog_fd);
	kern_close(&k);
	test_sweep();
	test_sweep_wheel();
	test_sweep_scale(SCALE_PACKETS_SHORT);
	test_pass_unowned();
	test_spread_pass();
	return check_done("prog_test");
}
