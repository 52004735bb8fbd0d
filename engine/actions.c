// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * actions.c - carrying out the state machine's actions (fsm.c's FSM_* bits): publish the
 * session's cfg to the XDP program, send a Control packet from userspace, reschedule the next
 * periodic one (RFC 5880 6.8.7), report a change to bfdd; and the transmit timer that clocks
 * the sessions the fast path does not. Every periodic packet userspace sends claims the
 * session's transmit clock, shared with the fast path (bfd_shared.h), first. The lowest of the
 * engine's glue files (glue.h).
 */
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include "engine.h"
#include "fsm.h"
#include "glue.h"
#include "tx.h"

uint64_t engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct bfd_session_tx *engine_tx_clock(struct engine *e, struct bfd_session *s)
{
	struct bfd_session_tx *c = e->kernel_tx ? kern_tx_clock(&e->kern, s->slot) : NULL;

	return c ? c : &s->sw_clock;
}

void engine_addr_key(const struct bfd_session *s, struct bfd_addr_key *k)
{
	memset(k, 0, sizeof(*k));
	k->ifindex = s->ifindex;
	k->family = s->family;
	k->multihop = s->multihop;
	memcpy(k->local_addr, s->local_addr, 16);
	memcpy(k->peer_addr, s->peer_addr, 16);
}

/* --- carrying out actions --- */

void engine_arm_tx_timer(struct engine *e)
{
	struct bfd_session *first = txq_first(&e->st);
	uint64_t when = first ? first->next_tx_ns : 0;
	struct itimerspec its = {0};

	if (when == e->tx_timer_armed_ns)
		return;
	e->tx_timer_armed_ns = when;
	/* A deadline already past fires at once: its lateness counts from now (loop.c). */
	if (when) {
		uint64_t now = engine_now_ns();

		e->tx_timer_due_ns = when > now ? when : now;
	} else {
		e->tx_timer_due_ns = 0;
	}
	its.it_value.tv_sec = (time_t)(when / 1000000000ULL);
	its.it_value.tv_nsec = (long)(when % 1000000000ULL);
	if (!when)
		its.it_value.tv_nsec = 0; /* disarm */
	else if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	timerfd_settime(e->tx_timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

void engine_publish(struct engine *e, struct bfd_session *s)
{
	struct bfd_session_params p;
	char b[128];
	int err;

	if (!e->kernel_tx)
		return;
	s->cfg_gen++; /* a newer cfg ends any expiry the sweep held against the last one */
	fsm_params(s, &p);
	err = kern_session_write(&e->kern, s->slot, &p);
	if (err)
		pr_err("session %s: writing its cfg to the fast path failed: %s",
		       session_str(s, b, sizeof(b)), strerror(-err));
}

static void send_packet(struct engine *e, struct bfd_session *s, bool final, uint64_t now_ns)
{
	struct bfd_pkt p;
	int err;

	fsm_packet(s, final, now_ns, &p);
	if (!fsm_may_send(s))
		return; /* Passive, and the peer forgotten (RFC 5880 6.8.1, 6.8.7) */
	err = tx_send(s, &p);
	if (err) {
		char b[128];

		if (!e->stats.tx_errors++)
			pr_warn("session %s: send failed: %s (counted from now on)",
				session_str(s, b, sizeof(b)), strerror(-err));
		return;
	}
	s->user_tx_packets++;
	s->last_tx_ns = now_ns;
	e->stats.tx_packets++;
}

/*
 * The clock marks when our packet left, not when the loop woke for it: move it from the claimed
 * @at to the time the send returned, so the fast path's next periodic packet waits 75 % of the
 * interval after the packet itself (RFC 5880 6.8.7) even when this loop was held off in between.
 * Lost only if the fast path claimed since (it then waited from @at, the later wait being ours).
 */
static void mark_sent(struct engine *e, struct bfd_session *s, uint64_t at)
{
	__atomic_compare_exchange_n(&engine_tx_clock(e, s)->last_periodic_ns, &at, engine_now_ns(),
				    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

void engine_send_control(struct engine *e, struct bfd_session *s, bool final, uint64_t now_ns)
{
	/*
	 * Anything but a Final counts as periodic: the fast path's next waits for it (6.8.7).
	 * The loop's @now_ns may be stale by what its other handlers took: read the clock again.
	 */
	uint64_t at = engine_now_ns();

	(void)now_ns;
	if (!final)
		__atomic_store_n(&engine_tx_clock(e, s)->last_periodic_ns, at, __ATOMIC_SEQ_CST);
	send_packet(e, s, final, at);
	if (!final)
		mark_sent(e, s, at);
}

bool engine_send_periodic(struct engine *e, struct bfd_session *s, uint64_t gap_ns, uint64_t now_ns)
{
	/* Claimed at the time of sending: a stale @now_ns would let the fast path send too soon. */
	uint64_t at = engine_now_ns();

	(void)now_ns;
	if (!bfd_tx_claim(engine_tx_clock(e, s), at, gap_ns))
		return false;
	send_packet(e, s, false, at);
	mark_sent(e, s, at);
	return true;
}

/* The earlier of two CLOCK_MONOTONIC times where 0 means never. */
static uint64_t earlier(uint64_t a, uint64_t b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* The session's next Control step: its next periodic packet or Demand mode's next step. */
static uint64_t control_next_ns(struct engine *e, struct bfd_session *s)
{
	uint64_t last = __atomic_load_n(&engine_tx_clock(e, s)->last_periodic_ns, __ATOMIC_ACQUIRE);

	return earlier(fsm_next_tx_ns(s, last), fsm_next_demand_ns(s));
}

/* The session's next wake-up: its next Control step or its echo's (echo.h). */
static void schedule(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	fsm_echo_sync(s, now_ns);
	s->next_tx_ns = earlier(control_next_ns(e, s), fsm_next_echo_ns(s));
	txq_update(&e->st, s);
}

/*
 * Our echo's turn (RFC 5880 6.8.9): loss detected (6.8.5: Down, diag 2; the actions returned),
 * else the next echo sent if due. It goes out of the session's interface to the neighbour's MAC;
 * without one (never resolved yet) it is skipped, and the next waits its turn.
 */
static unsigned echo_due(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	struct bfd_session_echo *rec = e->kernel_tx ? kern_echo_rec(&e->kern, s->slot) : NULL;
	uint32_t ifindex = s->ifindex ? s->ifindex : s->xdp_ifindex;
	uint8_t buf[ECHO_MAX_LEN];
	unsigned acts, len;
	bool send;
	int err;

	acts = fsm_echo_due(s, now_ns,
			    rec ? __atomic_load_n(&rec->last_rx_ns, __ATOMIC_RELAXED) : 0, &send);
	if (acts) {
		e->stats.echo_failed++;
		return acts;
	}
	if (!send)
		return 0;
	if (now_ns >= s->echo_neigh_next_ns) {
		uint8_t mac[6];

		/*
		 * The neighbour table once a second (a peer's new MAC is learnt within that); a
		 * failed look, at the next echo. A failed refresh keeps the MAC we had (a flushed
		 * table says nothing about the neighbour) while the kernel resolves it again.
		 */
		err = echo_neigh(&e->echo, ifindex, s->family, s->peer_addr, mac);
		if (!err) {
			memcpy(s->echo_mac, mac, 6);
			s->echo_mac_ok = true;
		} else {
			e->stats.echo_no_neigh++;
		}
		s->echo_neigh_next_ns = err ? now_ns : now_ns + 1000000000ULL;
	}
	fsm_echo_sent(s, now_ns);
	if (!s->echo_mac_ok)
		return 0; /* never resolved yet: nothing to send to */
	len = echo_build(s, s->echo_seq, now_ns, buf);
	err = echo_send(&e->echo, s->family, ifindex, s->echo_mac, buf, len);
	if (err) {
		char b[128];

		if (!e->stats.echo_tx_errors++)
			pr_warn("session %s: sending echo failed: %s (counted from now on)",
				session_str(s, b, sizeof(b)), strerror(-err));
		return 0;
	}
	s->echo_tx_packets++;
	e->stats.echo_tx++;
	return 0;
}

/* Tell bfdd when our state changed, or when the peer's parameters changed while Up. */
static void report(struct engine *e, struct bfd_session *s)
{
	struct dplane_conn *c = dplane_conn_by_serial(&e->dp, s->dplane_serial);
	struct bfddp_state_change sc = {
	    .lid = s->lid,
	    .remote_disc = s->remote_disc,
	    .remote_flags = (s->remote_flags & BFD_FLAG_CPI ? BFDDP_RF_CBIT : 0) |
			    (s->remote_flags & BFD_FLAG_DEMAND ? BFDDP_RF_DEMAND : 0) |
			    (s->remote_flags & BFD_FLAG_MULTIPOINT ? BFDDP_RF_MULTIPOINT : 0),
	    .remote_desired_min_tx_us = s->remote_desired_min_tx_us,
	    .remote_required_min_rx_us = s->remote_min_rx_us,
	    .remote_required_min_echo_rx_us = s->remote_min_echo_rx_us,
	    .state = s->session_state,
	    .remote_diag = s->remote_diag,
	    .remote_detect_mult = s->remote_detect_mult,
	};
	uint8_t buf[BFDDP_STATE_CHANGE_LEN];
	bool remote_changed = sc.remote_disc != s->reported_remote_disc ||
			      sc.remote_flags != s->reported_remote_flags ||
			      sc.remote_desired_min_tx_us != s->reported_remote_tx_us ||
			      sc.remote_required_min_rx_us != s->reported_remote_rx_us ||
			      sc.remote_required_min_echo_rx_us != s->reported_remote_echo_rx_us ||
			      sc.remote_detect_mult != s->reported_remote_mult;

	if (!c)
		return;
	if (s->reported && sc.state == s->reported_state &&
	    !(remote_changed && sc.state == BFD_STATE_UP))
		return;
	/* bfdd's own view of a new session is Down (or AdminDown when shut): nothing to say. */
	if (s->reported || sc.state != (s->shutdown ? BFD_STATE_ADMIN_DOWN : BFD_STATE_DOWN)) {
		dplane_send(&e->dp, c, buf, bfddp_encode_state_change(buf, &sc));
		e->stats.state_changes_sent++;
	}
	s->reported = true;
	s->reported_state = sc.state;
	s->reported_remote_disc = sc.remote_disc;
	s->reported_remote_flags = sc.remote_flags;
	s->reported_remote_tx_us = sc.remote_desired_min_tx_us;
	s->reported_remote_rx_us = sc.remote_required_min_rx_us;
	s->reported_remote_echo_rx_us = sc.remote_required_min_echo_rx_us;
	s->reported_remote_mult = sc.remote_detect_mult;
}

void engine_apply(struct engine *e, struct bfd_session *s, unsigned acts, bool final_sent,
		  uint64_t now_ns)
{
	bool final = (acts & FSM_FINAL) && !final_sent;

	if (acts & FSM_PUBLISH)
		engine_publish(e, s);
	if ((acts & FSM_SEND) || final)
		engine_send_control(e, s, final, now_ns);
	/* A Final alone goes out off the periodic schedule (RFC 5880 6.8.7): keep it. Echo follows
	 * the state and the peer's fields, whose changes come with FSM_SCHEDULE. */
	if (acts & (FSM_SCHEDULE | FSM_SEND))
		schedule(e, s, now_ns);
	report(e, s);
	chores_note(&e->st, s); /* a path or socket change comes with actions */
	engine_arm_tx_timer(e);
}

/* --- the transmit timer --- */

void engine_tx_due(struct engine *e, uint64_t now_ns)
{
	struct bfd_session *s;

	e->tx_timer_armed_ns = 0;
	while ((s = txq_first(&e->st)) && s->next_tx_ns <= now_ns) {
		struct bfd_session_tx *clk = engine_tx_clock(e, s);
		uint64_t last = __atomic_load_n(&clk->last_periodic_ns, __ATOMIC_ACQUIRE);
		uint64_t due = fsm_next_tx_ns(s, last), echo = fsm_next_echo_ns(s);
		unsigned acts = echo && echo <= now_ns ? echo_due(e, s, now_ns) : 0;

		if (acts) {
			engine_apply(e, s, acts | FSM_SCHEDULE, false, now_ns);
			continue;
		}
		/*
		 * Woken for echo alone: the Control clock is left as it is. Otherwise on, even when
		 * the fast path has moved the clock since: the claim below fails and ends the
		 * backstop (skipping that kept userspace sending half of every FRR session's
		 * packets: test_engine_classes).
		 */
		uint64_t ctl =
		    earlier(due, fsm_next_demand_ns(s)); /* control_next_ns(), same `last` */

		if (echo && echo <= now_ns && (!ctl || ctl > now_ns)) {
			schedule(e, s, now_ns);
			continue;
		}
		acts = fsm_demand_due(s, now_ns, due);
		if (acts) {
			/* Demand mode's step (a Poll begins, or one unanswered), not a packet. */
			engine_apply(e, s, acts | FSM_SCHEDULE, false, now_ns);
			continue;
		}
		/*
		 * Claim the shared clock at the deadline the last periodic packet sets (the fast
		 * path may have sent since, moving it). Lost to the fast path: an rx-clocked
		 * session's peer speaks again, so the backstop ends.
		 */
		if (due && engine_send_periodic(e, s, due - last, now_ns))
			s->tx_owed = false;
		else
			s->tx_backstop = s->tx_owed = false;
		schedule(e, s, now_ns);
	}
	engine_arm_tx_timer(e);
}
