// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bfdd_sessions.c - sessions as bfdd asks for them over the data-plane protocol (bfddp.h): each
 * ADD checked, then a session created, updated or started anew; DELETE and the end of bfdd's
 * connection remove it (AdminDown first, RFC 5880 6.8.16), unless --dp-hold keeps it on the
 * wire for a bfdd that comes back and adopts it; and the counters bfdd asks for. Uses paths.c
 * and actions.c (glue.h).
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include "engine.h"
#include "fsm.h"
#include "glue.h"
#include "tx.h"

/* Demand mode: bfdd asks for it (newer bfdd; 8.4.4 cannot), or --demand names the peer. */
static bool demand_wanted(const struct engine_opts *o, const struct bfddp_session *m)
{
	uint8_t family = (m->flags & BFDDP_SF_IPV6) ? 6 : 4;

	if (o->demand_all || (m->flags & BFDDP_SF_DEMAND))
		return true;
	for (int i = 0; i < o->n_demand_peers; i++)
		if (o->demand_peers[i].family == family &&
		    !memcmp(o->demand_peers[i].addr, m->dst, family == 6 ? 16 : 4))
			return true;
	return false;
}

static void fsm_config_from(const struct engine_opts *o, const struct bfddp_session *m,
			    struct fsm_config *c)
{
	c->demand = demand_wanted(o, m);
	c->demand_poll_us = o->demand_poll_us;
	c->desired_min_tx_us = m->min_tx_us;
	c->required_min_rx_us = m->min_rx_us;
	c->detect_mult = m->detect_mult;
	c->passive = !!(m->flags & BFDDP_SF_PASSIVE);
	c->shutdown = !!(m->flags & BFDDP_SF_SHUTDOWN);
	c->cpi = !!(m->flags & BFDDP_SF_CBIT);
	c->echo = !!(m->flags & BFDDP_SF_ECHO);
	c->echo_tx_us = m->min_echo_tx_us;
	c->echo_rx_us = m->min_echo_rx_us;
}

/*
 * What bfdd asks for must make sense before the engine acts on it (ADD for a new session or an
 * update). Return: NULL, or why it cannot (for the log line; the message is then counted and
 * dropped, the session as it was).
 */
static const char *session_invalid(const struct bfddp_session *m)
{
	size_t n = strnlen(m->ifname, sizeof(m->ifname));

	if (!m->lid)
		return "local discriminator 0";
	if (session_addr_is_zero(m->dst))
		return "no peer address";
	if (!memcmp(m->src, m->dst, 16))
		return "a session with itself (local address = peer address)";
	if (!m->min_tx_us)
		return "Desired Min TX 0 (RFC 5880 4.1: must be nonzero)";
	/* Out of what bfdd can configure: a corrupt or hostile ADD; running it could flood. */
	if (m->min_tx_us < BFDDP_TIMER_MIN_US || m->min_tx_us > BFDDP_TIMER_MAX_US)
		return "Desired Min TX out of range (10 ms .. 60 s)";
	if (m->min_rx_us &&
	    (m->min_rx_us < BFDDP_TIMER_MIN_US || m->min_rx_us > BFDDP_TIMER_MAX_US))
		return "Required Min RX out of range (0, or 10 ms .. 60 s)";
	if (!m->detect_mult)
		return "Detect Mult 0 (RFC 5880 6.8.6: must be nonzero)";
	if (n >= IF_NAMESIZE)
		return "interface name longer than an interface name can be";
	for (size_t i = 0; i < n; i++)
		if (m->ifname[i] < 0x21 || m->ifname[i] > 0x7e)
			return "interface name with unprintable bytes";
	return NULL;
}

/*
 * A session adopted from the pins (--pin) knows its interface by index and its source as an
 * address: bfdd's ADD matches it when the interface it names is that one and its source is
 * that address or none.
 */
static bool same_pinned(const struct bfd_session *s, const struct bfddp_session *m)
{
	size_t n = strnlen(m->ifname, sizeof(m->ifname));
	uint32_t ifindex = m->ifname[0] && n < IF_NAMESIZE ? if_nametoindex(m->ifname) : 0;

	return s->family == ((m->flags & BFDDP_SF_IPV6) ? 6 : 4) &&
	       s->multihop == !!(m->flags & BFDDP_SF_MULTIHOP) &&
	       !memcmp(s->peer_addr, m->dst, 16) &&
	       (session_addr_is_zero(m->src) || !memcmp(s->local_addr, m->src, 16)) &&
	       ifindex == s->ifindex;
}

/* bfdd added a session adopted from the pins again: take what only its ADD says. */
static void settle_pinned(struct bfd_session *s, const struct bfddp_session *m)
{
	if (!s->from_pin)
		return;
	s->from_pin = false;
	s->local_from_route = session_addr_is_zero(m->src);
	snprintf(s->cfg_ifname, sizeof(s->cfg_ifname), "%.*s", (int)sizeof(s->cfg_ifname) - 1,
		 m->ifname);
}

static bool same_addresses(const struct bfd_session *s, const struct bfddp_session *m)
{
	if (s->from_pin)
		return same_pinned(s, m);

	/* An ADD without a source matches a session whose source the route picked, and only it. */
	return s->family == ((m->flags & BFDDP_SF_IPV6) ? 6 : 4) &&
	       s->multihop == !!(m->flags & BFDDP_SF_MULTIHOP) &&
	       !memcmp(s->peer_addr, m->dst, 16) &&
	       (session_addr_is_zero(m->src)
		    ? s->local_from_route
		    : !s->local_from_route && !memcmp(s->local_addr, m->src, 16)) &&
	       !strncmp(s->cfg_ifname, m->ifname, sizeof(s->cfg_ifname));
}

static void session_create(struct engine *e, struct dplane_conn *c, const struct bfddp_session *m,
			   uint64_t now_ns)
{
	struct bfd_session *s;
	struct bfd_addr_key k;
	struct fsm_config cfg;
	char b[128];
	int err;

	s = sessions_add(&e->st, m->lid);
	if (!s) {
		pr_err("dplane: rejecting session lid %u: all %u slots in use (--max-sessions)",
		       m->lid, e->st.max);
		e->stats.bfdd_rejected++;
		return;
	}
	s->dplane_serial = c ? c->serial : 0;
	s->incarnation = ++e->incarnations;
	s->local_disc = m->lid;
	s->family = (m->flags & BFDDP_SF_IPV6) ? 6 : 4;
	s->multihop = !!(m->flags & BFDDP_SF_MULTIHOP);
	s->min_ttl = s->multihop ? m->ttl : BFD_TTL_SINGLE_HOP;
	memcpy(s->local_addr, m->src, 16);
	s->local_from_route = session_addr_is_zero(m->src);
	memcpy(s->peer_addr, m->dst, 16);
	sessions_file_addr(&e->st, s);
	snprintf(s->cfg_ifname, sizeof(s->cfg_ifname), "%.*s", (int)sizeof(s->cfg_ifname) - 1,
		 m->ifname);
	if (m->ifname[0]) {
		s->ifindex = strlen(m->ifname) < IF_NAMESIZE ? if_nametoindex(m->ifname) : 0;
		if (s->ifindex)
			memcpy(s->ifname, m->ifname, strlen(m->ifname) + 1);
		else
			pr_warn("session lid %u: no interface %s here; not binding to it", m->lid,
				m->ifname);
	}
	if ((m->flags & BFDDP_SF_ECHO) && (s->multihop || !m->min_echo_rx_us))
		pr_info("session lid %u: echo requested; not returned (%s)", m->lid,
			s->multihop ? "multihop, RFC 5883" : "Required Min Echo RX 0");
	err = tx_open(s);
	if (err) {
		pr_err("session %s: no socket to send from: %s (retried each second)",
		       session_str(s, b, sizeof(b)), strerror(-err));
		s->tx_retry_ns = now_ns + TX_RETRY_NS;
	}
	engine_place_session(e, s);
	if (e->kernel_tx) {
		engine_addr_key(s, &k);
		if (kern_session_clear(&e->kern, s->slot) ||
		    kern_index_add(&e->kern, s->local_disc, &k, s->slot))
			pr_err("session %s: fast-path index: %s", session_str(s, b, sizeof(b)),
			       strerror(errno));
		kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
	}
	fsm_config_from(&e->o, m, &cfg);
	pr_info("session %s: added (%s, tx %u us, rx %u us, mult %u%s%s%s%s)",
		session_str(s, b, sizeof(b)), s->fast_path ? "fast path" : "software path",
		m->min_tx_us, m->min_rx_us, m->detect_mult, cfg.passive ? ", passive" : "",
		cfg.shutdown ? ", shutdown" : "", s->multihop ? ", multihop" : "",
		cfg.demand ? ", demand" : "");
	engine_apply(e, s, fsm_start(s, &cfg, now_ns), false, now_ns);
	e->stats.bfdd_adds++;
}

static void session_destroy(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	struct bfd_addr_key k;

	/* RFC 5880 6.8.16: tell the peer it is administrative, so it does not count a failure. */
	engine_apply(e, s, fsm_admin_down(s, now_ns), false, now_ns);
	if (e->kernel_tx) {
		engine_addr_key(s, &k);
		kern_index_del(&e->kern, s->local_disc, &k);
		kern_session_clear(&e->kern, s->slot);
	}
	tx_close(s);
	sessions_remove(&e->st, s);
	if (e->kernel_tx)
		kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
	engine_arm_tx_timer(e);
}

/* The session @m's addresses (and interface) already belong to, or NULL. */
static struct bfd_session *session_with_addresses(struct engine *e, const struct bfddp_session *m)
{
	for (struct bfd_session *s = sessions_by_peer(&e->st, (m->flags & BFDDP_SF_IPV6) ? 6 : 4,
						      !!(m->flags & BFDDP_SF_MULTIHOP), m->dst);
	     s; s = s->addr_next)
		if (same_addresses(s, m))
			return s;
	return NULL;
}

/* bfdd came back with new lids (a restart): take over a held session with the same addresses. */
static struct bfd_session *adopt_held(struct engine *e, struct dplane_conn *c,
				      const struct bfddp_session *m)
{
	struct bfd_session *s = session_with_addresses(e, m);

	if (!s || !s->hold_until_ns)
		return NULL;
	if (sessions_by_lid(&e->st, m->lid))
		return NULL;
	sessions_rekey(&e->st, s, m->lid);
	s->dplane_serial = c->serial;
	s->hold_until_ns = 0;
	s->reported = false; /* bfdd has it Down: tell it what we have */
	pr_info("session lid %u: adopted again by bfdd, keeping discriminator %u", m->lid,
		s->local_disc);
	return s;
}

static void on_session(void *ctx, struct dplane_conn *c, uint16_t type,
		       const struct bfddp_session *m)
{
	struct engine *e = ctx;
	struct bfd_session *s = sessions_by_lid(&e->st, m->lid);
	uint64_t now = engine_now_ns();
	struct fsm_config cfg;
	const char *why;
	unsigned acts;
	char b[128];

	if (s && dplane_conn_by_serial(&e->dp, s->dplane_serial) && s->dplane_serial != c->serial) {
		/* Another live bfdd connection owns it: this one may neither change nor remove it.
		 */
		pr_warn("dplane: session lid %u belongs to another bfdd connection; ignoring this "
			"one's %s",
			m->lid, type == BFDDP_DELETE_SESSION ? "DELETE" : "ADD");
		e->stats.bfdd_rejected++;
		return;
	}
	if (type == BFDDP_ADD_SESSION)
		e->last_add_ns = now;
	if (type == BFDDP_DELETE_SESSION) {
		if (s) {
			e->stats.bfdd_deletes++;
			session_destroy(e, s, now);
		}
		return;
	}
	why = session_invalid(m);
	if (why) {
		pr_err("dplane: rejecting %s of session lid %u: %s", s ? "an update" : "the ADD",
		       m->lid, why);
		e->stats.bfdd_rejected++;
		return;
	}
	if (s && !same_addresses(s, m)) {
		/* bfdd reuses lids only for new peers: the old session is gone, start this one. */
		pr_warn("session %s: bfdd now gives it other addresses or another interface; "
			"starting it anew",
			session_str(s, b, sizeof(b)));
		session_destroy(e, s, now);
		s = NULL;
	}
	if (!s)
		s = adopt_held(e, c, m);
	if (!s) {
		struct bfd_session *twin = session_with_addresses(e, m);

		if (twin) {
			/* Two sessions cannot share one address key (the fast path's, RFC 5881
			 * demux). */
			pr_err(
			    "dplane: rejecting the ADD of session lid %u: same addresses as lid %u",
			    m->lid, twin->lid);
			e->stats.bfdd_rejected++;
			return;
		}
		session_create(e, c, m, now);
		return;
	}
	s->dplane_serial = c->serial;
	s->hold_until_ns = 0;
	settle_pinned(s, m);
	fsm_config_from(&e->o, m, &cfg);
	e->stats.bfdd_updates++;
	acts = fsm_configure(s, &cfg, now);
	if (s->multihop && s->min_ttl != m->ttl) {
		/* `minimum-ttl` changed on a live session: the fast path must check the new one. */
		pr_info("session %s: minimum TTL %u -> %u", session_str(s, b, sizeof(b)),
			s->min_ttl, m->ttl);
		s->min_ttl = m->ttl;
		acts |= FSM_PUBLISH;
	}
	engine_apply(e, s, acts, false, now);
}

static void on_counters(void *ctx, uint32_t lid, struct bfddp_counters *out)
{
	struct engine *e = ctx;
	struct bfd_session *s = sessions_by_lid(&e->st, lid);
	struct bfd_session_rx rx = {0};

	memset(out, 0, sizeof(*out));
	if (!s)
		return; /* zeros: bfdd waits for an answer whatever the lid */
	if (e->kernel_tx && s->fast_path)
		kern_session_rx(&e->kern, s->slot, &rx);
	out->control_input_packets = rx.rx_packets + s->sw_rx_packets;
	out->control_input_bytes = rx.rx_bytes + s->sw_rx_packets * BFD_CTRL_LEN;
	out->control_output_packets = rx.tx_packets + s->user_tx_packets;
	out->control_output_bytes = out->control_output_packets * BFD_CTRL_LEN;
}

static void on_connect(void *ctx, struct dplane_conn *c)
{
	struct engine *e = ctx;

	(void)c; /* bfdd offers its sessions by itself: engine_readd_check() waits for them */
	e->last_add_ns = engine_now_ns();
}

static void on_disconnect(void *ctx, struct dplane_conn *c)
{
	struct engine *e = ctx;
	uint64_t now = engine_now_ns();

	if (e->leave)
		return; /* the next engine has the sessions: nothing goes to the wire */
	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		struct bfd_session *s = e->st.by_slot[i];

		if (!s || s->dplane_serial != c->serial)
			continue;
		if (e->o.dp_hold_s && !e->stop) {
			s->hold_until_ns = now + (uint64_t)e->o.dp_hold_s * 1000000000ULL;
			chores_note(&e->st, s); /* the tick ends the hold */
		} else
			session_destroy(e, s, now);
	}
	if (e->o.dp_hold_s && !e->stop)
		pr_info("dplane: keeping sessions on the wire for %u s (--dp-hold)",
			e->o.dp_hold_s);
}

const struct dplane_ops engine_dplane_ops = {
    .on_connect = on_connect,
    .on_disconnect = on_disconnect,
    .on_session = on_session,
    .on_counters = on_counters,
};

/* --- sessions bfdd did not come back for, and the engine's own end --- */

bool engine_hold_expired(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	if (!s->hold_until_ns || now_ns < s->hold_until_ns)
		return false;
	pr_info("session lid %u: bfdd did not come back within --dp-hold; removing", s->lid);
	session_destroy(e, s, now_ns);
	return true;
}

void engine_stop_sessions(struct engine *e)
{
	uint64_t now = engine_now_ns();

	for (uint32_t i = 0; i < e->st.slots_in_use; i++)
		if (e->st.by_slot[i])
			session_destroy(e, e->st.by_slot[i], now);
}
