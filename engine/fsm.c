// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fsm.c - see fsm.h. Section numbers are RFC 5880's. */
#include <string.h>
#include "fsm.h"
#include "log.h"

#define NS_PER_US 1000ULL

static uint32_t max_u32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* 6.8.3: while not Up, Desired Min TX is at least one second. */
static uint32_t advertised_tx_us(const struct bfd_session *s, uint8_t state)
{
	return state == BFD_STATE_UP ? s->cfg_desired_min_tx_us
				     : max_u32(s->cfg_desired_min_tx_us, BFD_SLOW_TX_US);
}

static void end_poll(struct bfd_session *s)
{
	s->poll_active = false;
	s->tx_in_force_us = s->desired_min_tx_us;
	s->rx_in_force_us = s->required_min_rx_us;
}

static void start_poll(struct bfd_session *s, uint64_t now_ns)
{
	s->poll_active = true;
	s->poll_seq++;
	s->poll_start_ns = now_ns;
}

/*
 * 6.6: Demand mode is active on our side (we send D, the peer may stop its periodic packets)
 * when bfd.DemandMode is set and both ends are Up; detection is then by Poll Sequence (6.8.4).
 */
static bool demand_active(const struct bfd_session *s)
{
	return s->demand_mode && s->session_state == BFD_STATE_UP &&
	       s->remote_session_state == BFD_STATE_UP;
}

/* 6.8.4: the Detection Time, whatever the mode; 0 while the peer's multiplier is unknown. */
static uint64_t detection_ns(const struct bfd_session *s)
{
	return (uint64_t)s->remote_detect_mult *
	       max_u32(s->rx_in_force_us, s->remote_desired_min_tx_us) * NS_PER_US;
}

/* Every change of session_state goes through here, with the section that caused it. */
static unsigned fsm_set(struct bfd_session *s, uint8_t state, uint8_t diag, const char *why,
			uint64_t now_ns)
{
	uint8_t old = s->session_state;
	uint32_t old_tx = s->desired_min_tx_us;
	char l[48], p[48];

	if (old == state && s->local_diag == diag)
		return 0;
	s->local_diag = diag;
	if (old == state)
		return FSM_PUBLISH | FSM_SEND;
	s->session_state = state;
	s->state_since_ns = now_ns;
	pr_info("session %s -> %s lid %u: %s -> %s diag %u (RFC 5880 %s)",
		session_addr_str(s->family, s->local_addr, l, sizeof(l)),
		session_addr_str(s->family, s->peer_addr, p, sizeof(p)), s->lid,
		bfd_state_name(old), bfd_state_name(state), diag, why);
	if (old == BFD_STATE_UP)
		s->down_events++;
	if (state == BFD_STATE_UP)
		s->up_events++;
	s->desired_min_tx_us = advertised_tx_us(s, state);
	end_poll(s);
	/* 6.8.3: a changed Desired Min TX while Up (leaving slow start) needs a Poll Sequence. */
	if (state == BFD_STATE_UP && s->desired_min_tx_us != old_tx)
		start_poll(s, now_ns);
	return FSM_PUBLISH | FSM_NOTIFY | FSM_SEND | FSM_SCHEDULE;
}

static void apply_config(struct bfd_session *s, const struct fsm_config *c)
{
	s->cfg_desired_min_tx_us = c->desired_min_tx_us;
	s->cfg_required_min_rx_us = c->required_min_rx_us;
	s->cfg_detect_mult = c->detect_mult ? c->detect_mult : 3;
	s->passive = c->passive;
	s->cpi = c->cpi;
	s->shutdown = c->shutdown;
	s->demand_mode = c->demand;
	s->demand_poll_us = c->demand_poll_us;
	s->echo = c->echo;
	s->cfg_echo_tx_us = c->echo_tx_us;
	s->cfg_echo_rx_us = c->echo_rx_us;
}

static bool same_echo(const struct bfd_session *s, const struct fsm_config *c)
{
	return c->echo == s->echo && c->echo_tx_us == s->cfg_echo_tx_us &&
	       c->echo_rx_us == s->cfg_echo_rx_us;
}

unsigned fsm_start(struct bfd_session *s, const struct fsm_config *c, uint64_t now_ns)
{
	apply_config(s, c);
	s->session_state = c->shutdown ? BFD_STATE_ADMIN_DOWN : BFD_STATE_DOWN;
	s->local_diag = c->shutdown ? BFD_DIAG_ADMIN_DOWN : BFD_DIAG_NONE;
	s->remote_session_state = BFD_STATE_DOWN;
	s->remote_disc = 0;
	s->remote_min_rx_us = 1; /* 6.8.1: initialised to 1 */
	s->desired_min_tx_us = advertised_tx_us(s, s->session_state);
	s->required_min_rx_us = c->required_min_rx_us;
	s->state_since_ns = now_ns;
	end_poll(s);
	return FSM_PUBLISH | FSM_SCHEDULE;
}

unsigned fsm_configure(struct bfd_session *s, const struct fsm_config *c, uint64_t now_ns)
{
	uint32_t old_tx = s->desired_min_tx_us, old_rx = s->required_min_rx_us;
	unsigned acts = 0;

	if (c->desired_min_tx_us == s->cfg_desired_min_tx_us &&
	    c->required_min_rx_us == s->cfg_required_min_rx_us &&
	    (c->detect_mult ? c->detect_mult : 3) == s->cfg_detect_mult &&
	    c->passive == s->passive && c->shutdown == s->shutdown && c->cpi == s->cpi &&
	    c->demand == s->demand_mode && c->demand_poll_us == s->demand_poll_us &&
	    same_echo(s, c))
		return 0; /* bfdd repeats identical ADDs: a no-op */
	apply_config(s, c);
	if (c->shutdown && s->session_state != BFD_STATE_ADMIN_DOWN) {
		s->remote_disc = 0;
		return fsm_set(s, BFD_STATE_ADMIN_DOWN, BFD_DIAG_ADMIN_DOWN, "6.8.16", now_ns);
	}
	if (!c->shutdown && s->session_state == BFD_STATE_ADMIN_DOWN) {
		/* bfdd has already set Down and told its clients; restart quietly. */
		acts = fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_NONE, "6.8.16", now_ns);
		s->required_min_rx_us = s->rx_in_force_us = c->required_min_rx_us;
		return acts;
	}
	s->desired_min_tx_us = advertised_tx_us(s, s->session_state);
	s->required_min_rx_us = c->required_min_rx_us;
	if (s->session_state == BFD_STATE_UP &&
	    (s->desired_min_tx_us != old_tx || s->required_min_rx_us != old_rx)) {
		/*
		 * 6.8.3: a longer interval of ours waits for the Poll Sequence to end, and so does
		 * a shorter Required Min RX for detection; the other directions apply at once.
		 */
		s->tx_in_force_us = min_u32(s->tx_in_force_us, s->desired_min_tx_us);
		s->rx_in_force_us = max_u32(s->rx_in_force_us, s->required_min_rx_us);
		start_poll(s, now_ns);
	} else if (!s->poll_active || s->session_state != BFD_STATE_UP) {
		end_poll(s);
	}
	return acts | FSM_PUBLISH | FSM_SCHEDULE;
}

unsigned fsm_rx(struct bfd_session *s, const struct bfd_pkt *p, uint64_t now_ns)
{
	bool changed, was_demand = demand_active(s);
	unsigned acts = 0;

	if (s->session_state == BFD_STATE_ADMIN_DOWN)
		return 0; /* 6.8.6: discard */
	changed = s->remote_disc != p->my_disc || s->remote_min_rx_us != p->required_min_rx_us ||
		  s->remote_desired_min_tx_us != p->desired_min_tx_us ||
		  s->remote_detect_mult != p->detect_mult ||
		  s->remote_min_echo_rx_us != p->required_min_echo_rx_us ||
		  ((s->remote_flags ^ p->flags) & (BFD_FLAG_CPI | BFD_FLAG_DEMAND));
	s->last_rx_ns = now_ns;
	s->remote_disc = p->my_disc;
	s->remote_session_state = p->state;
	s->remote_demand_mode = !!(p->flags & BFD_FLAG_DEMAND);
	s->remote_min_rx_us = p->required_min_rx_us;
	s->remote_desired_min_tx_us = p->desired_min_tx_us;
	s->remote_min_echo_rx_us = p->required_min_echo_rx_us;
	s->remote_detect_mult = p->detect_mult;
	s->remote_diag = p->diag;
	s->remote_flags = p->flags;
	if (changed)
		acts |= FSM_PUBLISH | FSM_SCHEDULE | FSM_NOTIFY;
	if ((p->flags & BFD_FLAG_FINAL) && s->poll_active) {
		end_poll(s); /* 6.5: the Final ends our Poll Sequence */
		acts |= FSM_PUBLISH | FSM_SCHEDULE;
	}

	if (p->state == BFD_STATE_ADMIN_DOWN) {
		if (s->session_state != BFD_STATE_DOWN)
			acts |= fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_NEIGHBOR_DOWN, "6.8.6", now_ns);
	} else if (s->session_state == BFD_STATE_DOWN) {
		if (p->state == BFD_STATE_DOWN)
			acts |= fsm_set(s, BFD_STATE_INIT, s->local_diag, "6.8.6", now_ns);
		else if (p->state == BFD_STATE_INIT)
			acts |= fsm_set(s, BFD_STATE_UP, s->local_diag, "6.8.6", now_ns);
	} else if (s->session_state == BFD_STATE_INIT) {
		if (p->state == BFD_STATE_INIT || p->state == BFD_STATE_UP)
			acts |= fsm_set(s, BFD_STATE_UP, s->local_diag, "6.8.6", now_ns);
	} else if (p->state == BFD_STATE_DOWN) { /* Up */
		acts |= fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_NEIGHBOR_DOWN, "6.8.6", now_ns);
	}
	/* Our D bit, the sweep's Detection Time and who clocks our packets follow Demand mode. */
	if (demand_active(s) != was_demand)
		acts |= FSM_PUBLISH | FSM_SCHEDULE;
	if (p->flags & BFD_FLAG_POLL)
		acts |= FSM_FINAL; /* 6.8.7: Final as soon as practicable */
	return acts;
}

static unsigned expire(struct bfd_session *s, const char *why, uint64_t now_ns)
{
	s->remote_disc = 0; /* 6.8.1: a Detection Time without packets forgets it */
	s->remote_session_state = BFD_STATE_DOWN;
	return fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_DETECT_EXPIRED, why, now_ns);
}

unsigned fsm_expire(struct bfd_session *s, uint64_t now_ns)
{
	if (s->session_state != BFD_STATE_UP && s->session_state != BFD_STATE_INIT)
		return 0;
	return expire(s, "6.8.4", now_ns);
}

uint64_t fsm_demand_poll_ns(const struct bfd_session *s)
{
	uint64_t every = (uint64_t)s->demand_poll_us * NS_PER_US, budget = detection_ns(s);

	if (!s->demand_poll_us)
		return 0;
	return every > budget ? every : budget;
}

uint64_t fsm_next_demand_ns(const struct bfd_session *s)
{
	uint64_t budget = detection_ns(s), every = fsm_demand_poll_ns(s);

	if (!demand_active(s))
		return 0;
	if (s->poll_active)
		return budget ? s->poll_start_ns + budget : 0;
	return every ? max_u64(s->poll_start_ns, s->state_since_ns) + every : 0;
}

unsigned fsm_demand_due(struct bfd_session *s, uint64_t now_ns, uint64_t next_periodic_ns)
{
	uint64_t when = fsm_next_demand_ns(s);

	if (!when || now_ns < when)
		return 0;
	if (s->poll_active) /* 6.8.4: a Detection Time since the Poll began, no Final */
		return expire(s, "6.8.4 demand mode, Poll unanswered", now_ns);
	/*
	 * 6.6: verify the path. A peer not in Demand mode still gets our periodic packets: the
	 * first P rides on the next one (an extra packet would leave sooner than the interval,
	 * 6.8.7; measured against FRR 8.4.4 and BIRD 2: 1.3-68 ms after the last), and the
	 * deadline counts from it. Otherwise the first P goes now.
	 */
	if (next_periodic_ns) {
		start_poll(s, max_u64(now_ns, next_periodic_ns));
		return FSM_PUBLISH | FSM_SCHEDULE;
	}
	start_poll(s, now_ns);
	return FSM_PUBLISH | FSM_SEND | FSM_SCHEDULE;
}

unsigned fsm_path_down(struct bfd_session *s, uint64_t now_ns)
{
	if (s->session_state != BFD_STATE_UP && s->session_state != BFD_STATE_INIT)
		return 0;
	return fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_PATH_DOWN, "4.1 path down", now_ns);
}

unsigned fsm_admin_down(struct bfd_session *s, uint64_t now_ns)
{
	return fsm_set(s, BFD_STATE_ADMIN_DOWN, BFD_DIAG_ADMIN_DOWN, "6.8.16", now_ns) | FSM_SEND;
}

uint32_t fsm_tx_interval_us(const struct bfd_session *s)
{
	if (s->remote_min_rx_us == 0)
		return 0; /* 6.8.7: the peer asked for no periodic packets */
	return max_u32(s->tx_in_force_us, s->remote_min_rx_us);
}

uint32_t fsm_peer_interval_us(const struct bfd_session *s)
{
	return max_u32(s->remote_desired_min_tx_us, s->required_min_rx_us);
}

uint64_t fsm_detect_time_ns(const struct bfd_session *s)
{
	if (s->session_state != BFD_STATE_UP && s->session_state != BFD_STATE_INIT)
		return 0;
	/* 6.8.4: with Demand mode active the peer may be silent; fsm_demand_due() detects. */
	return demand_active(s) ? 0 : detection_ns(s);
}

bool fsm_rx_clocked(const struct bfd_session *s)
{
	uint32_t tx = fsm_tx_interval_us(s);

	return s->fast_path && s->session_state == BFD_STATE_UP && tx && !s->remote_demand_mode &&
	       !demand_active(s) && fsm_peer_interval_us(s) == tx && s->cfg_detect_mult > 1 &&
	       !s->peer_steady;
}

/*
 * The backstop of an rx-clocked session (s->tx_backstop): the peer's packets clock ours, and
 * userspace sends only what the program could not. A packet the program refused for coming too
 * early (under 75 % after our last) late in our interval leaves ours owed, 75 % after our last
 * (s->tx_owed), which puts us back in step with the peer. While the peer speaks on its own clock
 * (s->tx_peer_window), userspace then waits for the later of its jittered deadline and the end of
 * the peer's window: its next packet is due within its interval (75-100 %, it jitters) of the
 * last we heard of, plus an eighth for its own timer's lateness; but no later than 63/64 of our
 * interval after our last (a late peer must not stretch our gap past the interval). Firing sooner,
 * on the jittered deadline alone, beat the peer's packet to the clock half the time, and that
 * packet then came too early after ours in turn: 143 of 1,123 packets from userspace against
 * FRR 8.4.4 (tests/lab/test_engine_frr.py). A quiet peer, or one that only answers ours (another
 * engine mirroring us), gets our jittered deadlines (6.8.7).
 */
static uint64_t backstop_tx_ns(const struct bfd_session *s, uint32_t tx_us, uint64_t last_ns)
{
	uint64_t iv_ns = (uint64_t)tx_us * NS_PER_US, due, window_end, cap;

	if (s->tx_owed)
		return last_ns + iv_ns * 3 / 4;
	due = last_ns + bfd_tx_jitter_ns(tx_us, s->cfg_detect_mult, last_ns);
	if (!s->tx_peer_window)
		return due;
	window_end = s->last_rx_ns + iv_ns + iv_ns / 8;
	if (window_end < due)
		return due;
	/*
	 * Never past our own interval waiting for the peer (RFC 5880 6.8.7: at most 100 %; C13c:
	 * 700 sessions under L4, gaps of 52-100 ms came from this wait): 63/64 of it at most, the
	 * rest for our wake-up. As late as that, the peer's next packet comes first as often as it
	 * can, and each of ours that does not lets the peer drift back into step (its mean gap
	 * is 87.5 %).
	 */
	cap = last_ns + iv_ns - iv_ns / 64;
	return window_end < cap ? window_end : cap;
}

uint64_t fsm_next_tx_ns(const struct bfd_session *s, uint64_t last_periodic_ns)
{
	uint32_t tx = fsm_tx_interval_us(s);

	if (!tx || (fsm_rx_clocked(s) && !s->tx_backstop) || !fsm_may_send(s))
		return 0;
	/* 6.8.7: Demand mode active on the peer: no periodic packets, only a Poll Sequence's. */
	if (s->remote_demand_mode && s->session_state == BFD_STATE_UP &&
	    s->remote_session_state == BFD_STATE_UP && !s->poll_active)
		return 0;
	if (fsm_rx_clocked(s))
		return backstop_tx_ns(s, tx, last_periodic_ns);
	/* 6.8.7: 75-100 % of the interval, 75-90 % with Detect Mult 1. */
	return last_periodic_ns + bfd_tx_jitter_ns(tx, s->cfg_detect_mult, last_periodic_ns);
}

bool fsm_may_send(const struct bfd_session *s)
{
	return !(s->passive && !s->remote_disc); /* 6.8.7: the Passive role waits for the peer */
}

void fsm_forget(struct bfd_session *s, uint64_t now_ns)
{
	/*
	 * Up and Init forget through fsm_expire(); AdminDown discards what arrives (6.8.6). The
	 * silence counts from the later of the last packet and entering the state: a fast-path
	 * session's last_rx_ns is only as fresh as the last event (steady Up traffic posts none),
	 * and the AdminDown of a stop must carry the peer's discriminator, or the peer cannot
	 * match it and counts a failure (6.8.16).
	 */
	if (s->session_state != BFD_STATE_UP && s->session_state != BFD_STATE_INIT &&
	    s->remote_disc && s->remote_detect_mult &&
	    now_ns - max_u64(s->last_rx_ns, s->state_since_ns) >
		(uint64_t)s->remote_detect_mult *
		    max_u32(s->required_min_rx_us, s->remote_desired_min_tx_us) * NS_PER_US)
		s->remote_disc = 0; /* 6.8.1 */
}

void fsm_packet(struct bfd_session *s, bool final, uint64_t now_ns, struct bfd_pkt *out)
{
	fsm_forget(s, now_ns);
	memset(out, 0, sizeof(*out));
	out->version = BFD_VERSION;
	out->diag = s->local_diag;
	out->state = s->session_state;
	/* 6.5: never Poll and Final together; a Final takes precedence. */
	out->flags = final ? BFD_FLAG_FINAL : (s->poll_active ? BFD_FLAG_POLL : 0);
	if (s->cpi)
		out->flags |= BFD_FLAG_CPI;
	if (demand_active(s))
		out->flags |= BFD_FLAG_DEMAND; /* 6.8.7: D only while both ends are Up */
	out->detect_mult = s->cfg_detect_mult;
	out->length = BFD_CTRL_LEN;
	out->my_disc = s->local_disc;
	out->your_disc = s->remote_disc;
	out->desired_min_tx_us = s->desired_min_tx_us;
	out->required_min_rx_us = s->required_min_rx_us;
	out->required_min_echo_rx_us = fsm_echo_rx_us(s);
}

uint32_t fsm_echo_rx_us(const struct bfd_session *s)
{
	return s->echo && !s->multihop && s->fast_path ? s->cfg_echo_rx_us : 0;
}

uint32_t fsm_echo_tx_us(const struct bfd_session *s)
{
	if (!s->echo || s->multihop || !s->fast_path || s->session_state != BFD_STATE_UP ||
	    !s->remote_min_echo_rx_us || !s->cfg_echo_tx_us)
		return 0;
	return max_u32(s->cfg_echo_tx_us, s->remote_min_echo_rx_us);
}

uint64_t fsm_echo_detect_ns(const struct bfd_session *s)
{
	return (uint64_t)s->cfg_detect_mult * s->echo_iv_us * NS_PER_US;
}

void fsm_echo_sync(struct bfd_session *s, uint64_t now_ns)
{
	uint32_t iv = fsm_echo_tx_us(s);

	if (iv == s->echo_iv_us && (!iv || s->echo_since_ns))
		return;
	/* Started, stopped, or a new interval: detection counts from now, the first one goes. */
	s->echo_iv_us = iv;
	s->echo_since_ns = iv ? now_ns : 0;
	s->echo_last_tx_ns = 0;
}

/*
 * 6.8.9: echo is jittered like Control (75-100 % of the interval, 6.8.7), but the gap never goes
 * under the peer's Required Min Echo RX: the stricter reading (shared conformance C11b), so when
 * the peer's value is the larger, the gaps are exactly it.
 */
static uint64_t echo_gap_ns(const struct bfd_session *s)
{
	return max_u64(bfd_tx_jitter_ns(s->echo_iv_us, s->cfg_detect_mult, s->echo_last_tx_ns),
		       (uint64_t)s->remote_min_echo_rx_us * NS_PER_US);
}

static uint64_t echo_deadline_ns(const struct bfd_session *s)
{
	return max_u64(s->echo_since_ns, s->echo_last_rx_ns) + fsm_echo_detect_ns(s);
}

uint64_t fsm_next_echo_ns(const struct bfd_session *s)
{
	uint64_t tx, deadline;

	if (!s->echo_since_ns || !s->echo_iv_us)
		return 0;
	tx = s->echo_last_tx_ns ? s->echo_last_tx_ns + echo_gap_ns(s) : s->echo_since_ns;
	deadline = echo_deadline_ns(s) + 1;
	return tx < deadline ? tx : deadline;
}

unsigned fsm_echo_due(struct bfd_session *s, uint64_t now_ns, uint64_t rx_ns, bool *send)
{
	*send = false;
	s->echo_last_rx_ns = max_u64(s->echo_last_rx_ns, rx_ns);
	if (!s->echo_since_ns || !s->echo_iv_us)
		return 0;
	if (now_ns > echo_deadline_ns(s)) {
		unsigned acts =
		    fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_ECHO_FAILED, "6.8.5 echo lost", now_ns);

		fsm_echo_sync(s, now_ns); /* not Up any more: stopped */
		return acts;
	}
	*send = !s->echo_last_tx_ns || now_ns >= s->echo_last_tx_ns + echo_gap_ns(s);
	return 0;
}

void fsm_echo_sent(struct bfd_session *s, uint64_t now_ns)
{
	s->echo_last_tx_ns = now_ns;
	s->echo_seq++;
}

void fsm_params(const struct bfd_session *s, struct bfd_session_params *p)
{
	memset(p, 0, sizeof(*p));
	p->session_state = s->session_state;
	p->local_diag = s->local_diag;
	p->detect_mult = s->cfg_detect_mult;
	p->session_flags = BFD_SF_ACTIVE | (s->family == 6 ? BFD_SF_IPV6 : 0) |
			   (s->multihop ? BFD_SF_MULTIHOP : 0) | (s->cpi ? BFD_SF_CPI : 0) |
			   (s->poll_active ? BFD_SF_POLL : 0) |
			   /* Demand mode's few packets (Polls, Finals, with D) are userspace's. */
			   (s->fast_path && !demand_active(s) ? 0 : BFD_SF_SOFTWARE) |
			   (fsm_rx_clocked(s) ? BFD_SF_RX_CLOCKED : 0);
	p->min_ttl = s->multihop ? s->min_ttl : BFD_TTL_SINGLE_HOP;
	p->local_port = s->local_port;
	p->ifindex = s->ifindex;
	p->local_disc = s->local_disc;
	p->remote_disc = s->remote_disc;
	p->desired_min_tx_us = s->desired_min_tx_us;
	p->required_min_rx_us = s->required_min_rx_us;
	p->required_min_echo_rx_us = fsm_echo_rx_us(s);
	p->poll_seq = s->poll_seq;
	p->incarnation = s->incarnation;
	/* The sweep can only watch sessions whose packets the program sees. */
	p->detect_time_ns = s->fast_path ? fsm_detect_time_ns(s) : 0;
	/* The program decides per packet whether the peer clocks us, from this and the packet. */
	p->tx_in_force_us = s->tx_in_force_us;
	p->cfg_gen = s->cfg_gen;
	memcpy(p->local_addr, s->local_addr, 16);
	memcpy(p->peer_addr, s->peer_addr, 16);
}
