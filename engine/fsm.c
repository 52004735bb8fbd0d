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

static void start_poll(struct bfd_session *s)
{
	s->poll_active = true;
	s->poll_seq++;
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
		start_poll(s);
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
	    c->passive == s->passive && c->shutdown == s->shutdown && c->cpi == s->cpi)
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
		s->heard = false;
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
		start_poll(s);
	} else {
		end_poll(s);
	}
	return FSM_PUBLISH | FSM_SCHEDULE;
}

unsigned fsm_rx(struct bfd_session *s, const struct bfd_pkt *p, uint64_t now_ns)
{
	unsigned acts = 0;
	bool changed;

	if (s->session_state == BFD_STATE_ADMIN_DOWN)
		return 0; /* 6.8.6: discard */
	changed = s->remote_disc != p->my_disc || s->remote_min_rx_us != p->required_min_rx_us ||
		  s->remote_desired_min_tx_us != p->desired_min_tx_us ||
		  s->remote_detect_mult != p->detect_mult ||
		  s->remote_min_echo_rx_us != p->required_min_echo_rx_us ||
		  ((s->remote_flags ^ p->flags) & (BFD_FLAG_CPI | BFD_FLAG_DEMAND));
	s->heard = true;
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
	if (p->flags & BFD_FLAG_POLL)
		acts |= FSM_FINAL; /* 6.8.7: Final as soon as practicable */
	return acts;
}

unsigned fsm_expire(struct bfd_session *s, uint64_t now_ns)
{
	if (s->session_state != BFD_STATE_UP && s->session_state != BFD_STATE_INIT)
		return 0;
	s->remote_disc = 0; /* 6.8.1: a Detection Time without packets forgets it */
	s->remote_session_state = BFD_STATE_DOWN;
	return fsm_set(s, BFD_STATE_DOWN, BFD_DIAG_DETECT_EXPIRED, "6.8.4", now_ns);
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
	return (uint64_t)s->remote_detect_mult *
	       max_u32(s->rx_in_force_us, s->remote_desired_min_tx_us) * NS_PER_US;
}

bool fsm_rx_clocked(const struct bfd_session *s)
{
	uint32_t tx = fsm_tx_interval_us(s);

	return s->fast_path && s->session_state == BFD_STATE_UP && tx && !s->remote_demand_mode &&
	       fsm_peer_interval_us(s) == tx && s->cfg_detect_mult > 1 && !s->peer_steady;
}

uint64_t fsm_next_tx_ns(const struct bfd_session *s, uint64_t last_periodic_ns)
{
	uint32_t tx = fsm_tx_interval_us(s);

	if (!tx || (fsm_rx_clocked(s) && !s->tx_backstop) || (s->passive && !s->heard))
		return 0;
	/* 6.8.7: Demand mode active on the peer: no periodic packets, only a Poll Sequence's. */
	if (s->remote_demand_mode && s->session_state == BFD_STATE_UP &&
	    s->remote_session_state == BFD_STATE_UP && !s->poll_active)
		return 0;
	/* 6.8.7: 75-100 % of the interval, 75-90 % with Detect Mult 1. */
	return last_periodic_ns + bfd_tx_jitter_ns(tx, s->cfg_detect_mult, last_periodic_ns);
}

void fsm_packet(struct bfd_session *s, bool final, uint64_t now_ns, struct bfd_pkt *out)
{
	if (s->session_state == BFD_STATE_DOWN && s->remote_disc && s->remote_detect_mult &&
	    now_ns - s->last_rx_ns >
		(uint64_t)s->remote_detect_mult *
		    max_u32(s->required_min_rx_us, s->remote_desired_min_tx_us) * NS_PER_US)
		s->remote_disc = 0; /* 6.8.1 */
	memset(out, 0, sizeof(*out));
	out->version = BFD_VERSION;
	out->diag = s->local_diag;
	out->state = s->session_state;
	/* 6.5: never Poll and Final together; a Final takes precedence. */
	out->flags = final ? BFD_FLAG_FINAL : (s->poll_active ? BFD_FLAG_POLL : 0);
	if (s->cpi)
		out->flags |= BFD_FLAG_CPI;
	out->detect_mult = s->cfg_detect_mult;
	out->length = BFD_CTRL_LEN;
	out->my_disc = s->local_disc;
	out->your_disc = s->remote_disc;
	out->desired_min_tx_us = s->desired_min_tx_us;
	out->required_min_rx_us = s->required_min_rx_us;
	out->required_min_echo_rx_us = 0; /* echo reception is not offered */
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
			   (s->fast_path ? 0 : BFD_SF_SOFTWARE) |
			   (fsm_rx_clocked(s) ? BFD_SF_RX_CLOCKED : 0);
	p->min_ttl = s->multihop ? s->min_ttl : BFD_TTL_SINGLE_HOP;
	p->local_port = s->local_port;
	p->ifindex = s->ifindex;
	p->local_disc = s->local_disc;
	p->remote_disc = s->remote_disc;
	p->desired_min_tx_us = s->desired_min_tx_us;
	p->required_min_rx_us = s->required_min_rx_us;
	p->required_min_echo_rx_us = 0;
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
