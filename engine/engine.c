// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * engine.c - the glue: bfdd's messages, the fast path's events, the software path's packets and
 * the transmit timer become state machine events (fsm.c); their actions are carried out here:
 * publish the session's cfg to the XDP program, send a packet, reschedule, report to bfdd.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "codec.h"
#include "engine.h"
#include "fsm.h"
#include "tx.h"

uint64_t engine_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint32_t rand32(struct engine *e)
{
	uint32_t x = e->rand_state; /* xorshift32: jitter needs spread, not secrecy */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return e->rand_state = x;
}

static const char *sess_str(const struct bfd_session *s, char *buf, size_t n)
{
	char l[INET6_ADDRSTRLEN], p[INET6_ADDRSTRLEN];

	snprintf(buf, n, "%s -> %s lid %u",
		 session_addr_str(s->family, s->local_addr, l, sizeof(l)),
		 session_addr_str(s->family, s->peer_addr, p, sizeof(p)), s->lid);
	return buf;
}

static void addr_key(const struct bfd_session *s, struct bfd_addr_key *k)
{
	memset(k, 0, sizeof(*k));
	k->ifindex = s->ifindex;
	k->family = s->family;
	k->multihop = s->multihop;
	memcpy(k->local_addr, s->local_addr, 16);
	memcpy(k->peer_addr, s->peer_addr, 16);
}

/* --- carrying out actions --- */

static void arm_tx_timer(struct engine *e)
{
	struct bfd_session *first = txq_first(&e->st);
	uint64_t when = first ? first->next_tx_ns : 0;
	struct itimerspec its = {0};

	if (when == e->tx_timer_armed_ns)
		return;
	e->tx_timer_armed_ns = when;
	its.it_value.tv_sec = (time_t)(when / 1000000000ULL);
	its.it_value.tv_nsec = (long)(when % 1000000000ULL);
	if (!when)
		its.it_value.tv_nsec = 0; /* disarm */
	else if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	timerfd_settime(e->tx_timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void publish(struct engine *e, struct bfd_session *s)
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
		       sess_str(s, b, sizeof(b)), strerror(-err));
}

static void send_packet(struct engine *e, struct bfd_session *s, bool final, uint64_t now_ns)
{
	struct bfd_pkt p;
	int err;

	fsm_packet(s, final, now_ns, &p);
	err = tx_send(s, &p);
	if (err) {
		char b[128];

		if (!e->stats.tx_errors++)
			pr_warn("session %s: send failed: %s (counted from now on)",
				sess_str(s, b, sizeof(b)), strerror(-err));
		return;
	}
	s->user_tx_packets++;
	s->last_tx_ns = now_ns;
	e->stats.tx_packets++;
}

static void schedule(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	s->next_tx_ns = fsm_next_tx_ns(s, now_ns, rand32(e));
	txq_update(&e->st, s);
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

static void apply(struct engine *e, struct bfd_session *s, unsigned acts, bool final_sent,
		  uint64_t now_ns)
{
	bool final = (acts & FSM_FINAL) && !final_sent;

	if (acts & FSM_PUBLISH)
		publish(e, s);
	if ((acts & FSM_SEND) || final)
		send_packet(e, s, final, now_ns);
	/* A Final alone goes out off the periodic schedule (RFC 5880 6.8.7): keep it. */
	if (acts & (FSM_SCHEDULE | FSM_SEND))
		schedule(e, s, now_ns);
	report(e, s);
	arm_tx_timer(e);
}

/* --- sessions from bfdd --- */

static void fsm_config_from(const struct bfddp_session *m, struct fsm_config *c)
{
	c->desired_min_tx_us = m->min_tx_us;
	c->required_min_rx_us = m->min_rx_us;
	c->detect_mult = m->detect_mult;
	c->passive = !!(m->flags & BFDDP_SF_PASSIVE);
	c->shutdown = !!(m->flags & BFDDP_SF_SHUTDOWN);
	c->cpi = !!(m->flags & BFDDP_SF_CBIT);
}

/*
 * The interface holding @addr in this namespace, for sessions bfdd did not bind to one; 0 for
 * none, and for a loopback device (@present: whether any interface holds it): an address there (the
 * usual multihop source) says nothing about where the peer's packets arrive, so such sessions start
 * on the software path and move to the fast path when the program sees their packets.
 */
static uint32_t iface_of_addr(uint8_t family, const uint8_t addr[16], char name[IF_NAMESIZE],
			      bool *present)
{
	struct ifaddrs *ifa, *i;
	uint32_t idx = 0;

	*present = false;
	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i && !idx; i = i->ifa_next) {
		bool match;

		if (!i->ifa_addr)
			continue;
		match = (family == 4 && i->ifa_addr->sa_family == AF_INET &&
			 !memcmp(&((struct sockaddr_in *)i->ifa_addr)->sin_addr, addr, 4)) ||
			(family == 6 && i->ifa_addr->sa_family == AF_INET6 &&
			 !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, addr, 16));
		*present |= match;
		if (match && !(i->ifa_flags & IFF_LOOPBACK)) {
			idx = if_nametoindex(i->ifa_name);
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
		}
	}
	freeifaddrs(ifa);
	return idx;
}

/* Decide whether the fast path serves @s, attaching to its interface when needed. */
static void place_session(struct engine *e, struct bfd_session *s)
{
	char name[IF_NAMESIZE] = "";
	uint32_t idx = s->ifindex;
	bool present;

	if (idx)
		snprintf(name, sizeof(name), "%s", s->ifname);
	else
		idx = iface_of_addr(s->family, s->local_addr, name, &present);
	s->fast_path = false;
	s->xdp_ifindex = 0;
	if (!e->kernel_tx || !idx)
		return;
	if (!kern_attached(&e->kern, idx) && kern_attach(&e->kern, name))
		return;
	s->fast_path = true;
	s->xdp_ifindex = idx;
}

/*
 * A session runs on the path its packets arrive on: the fast path watches and clocks only what
 * its program sees. Packets for it on the software path (an interface without the program, or
 * frames the program passes up: IPv4 options, fragments) move it there; an event from the
 * program moves it back.
 */
static void move_session(struct engine *e, struct bfd_session *s, bool fast, uint32_t ifindex,
			 uint64_t now_ns)
{
	char b[128];

	if (s->fast_path == fast || (fast && !e->kernel_tx))
		return;
	s->fast_path = fast;
	s->sw_fed = !fast;
	s->xdp_ifindex = fast ? ifindex : 0;
	pr_info("session %s: its packets arrive on the %s path; serving it there",
		sess_str(s, b, sizeof(b)), fast ? "fast" : "software");
	apply(e, s, FSM_PUBLISH | FSM_SCHEDULE, false, now_ns);
}

static bool addr_is_zero(const uint8_t a[16])
{
	static const uint8_t zero[16];

	return !memcmp(a, zero, 16);
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
	if (addr_is_zero(m->dst))
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

static bool same_addresses(const struct bfd_session *s, const struct bfddp_session *m)
{
	/* An ADD without a source matches a session whose source the route picked, and only it. */
	return s->family == ((m->flags & BFDDP_SF_IPV6) ? 6 : 4) &&
	       s->multihop == !!(m->flags & BFDDP_SF_MULTIHOP) &&
	       !memcmp(s->peer_addr, m->dst, 16) &&
	       (addr_is_zero(m->src)
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
	s->local_from_route = addr_is_zero(m->src);
	memcpy(s->peer_addr, m->dst, 16);
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
	if (m->flags & BFDDP_SF_ECHO)
		pr_info("session lid %u: echo requested; the echo function is not offered", m->lid);
	err = tx_open(s);
	if (err) {
		pr_err("session %s: no socket to send from: %s (retried each second)",
		       sess_str(s, b, sizeof(b)), strerror(-err));
		s->tx_retry_ns = now_ns + TX_RETRY_NS;
	}
	place_session(e, s);
	if (e->kernel_tx) {
		addr_key(s, &k);
		if (kern_session_clear(&e->kern, s->slot) ||
		    kern_index_add(&e->kern, s->local_disc, &k, s->slot))
			pr_err("session %s: fast-path index: %s", sess_str(s, b, sizeof(b)),
			       strerror(errno));
		kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
	}
	fsm_config_from(m, &cfg);
	pr_info("session %s: added (%s, tx %u us, rx %u us, mult %u%s%s%s)",
		sess_str(s, b, sizeof(b)), s->fast_path ? "fast path" : "software path",
		m->min_tx_us, m->min_rx_us, m->detect_mult, cfg.passive ? ", passive" : "",
		cfg.shutdown ? ", shutdown" : "", s->multihop ? ", multihop" : "");
	apply(e, s, fsm_start(s, &cfg, now_ns), false, now_ns);
	e->stats.bfdd_adds++;
}

static void session_destroy(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	struct bfd_addr_key k;

	/* RFC 5880 6.8.16: tell the peer it is administrative, so it does not count a failure. */
	apply(e, s, fsm_admin_down(s, now_ns), false, now_ns);
	if (e->kernel_tx) {
		addr_key(s, &k);
		kern_index_del(&e->kern, s->local_disc, &k);
		kern_session_clear(&e->kern, s->slot);
	}
	tx_close(s);
	sessions_remove(&e->st, s);
	if (e->kernel_tx)
		kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
	arm_tx_timer(e);
}

/* The session @m's addresses (and interface) already belong to, or NULL. */
static struct bfd_session *session_with_addresses(struct engine *e, const struct bfddp_session *m)
{
	for (uint32_t i = 0; i < e->st.slots_in_use; i++)
		if (e->st.by_slot[i] && same_addresses(e->st.by_slot[i], m))
			return e->st.by_slot[i];
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
			sess_str(s, b, sizeof(b)));
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
	fsm_config_from(m, &cfg);
	e->stats.bfdd_updates++;
	apply(e, s, fsm_configure(s, &cfg, now), false, now);
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
	(void)ctx;
	(void)c; /* bfdd offers its sessions by itself */
}

static void on_disconnect(void *ctx, struct dplane_conn *c)
{
	struct engine *e = ctx;
	uint64_t now = engine_now_ns();

	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		struct bfd_session *s = e->st.by_slot[i];

		if (!s || s->dplane_serial != c->serial)
			continue;
		if (e->o.dp_hold_s && !e->stop)
			s->hold_until_ns = now + (uint64_t)e->o.dp_hold_s * 1000000000ULL;
		else
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

/* --- the fast path's events --- */

static void on_rx_event(struct engine *e, const struct bfd_event *ev, uint64_t now_ns)
{
	struct bfd_session *s = sessions_by_slot(&e->st, ev->slot);
	struct bfd_pkt p;
	unsigned acts;

	codec_from_wire(&ev->pkt, &p);
	if (!s || ev->incarnation != s->incarnation) {
		e->stats.events_stale++; /* the slot changed hands after the program read it */
		return;
	}
	e->stats.events_rx++;
	move_session(e, s, true, ev->ifindex, now_ns);
	acts = fsm_rx(s, &p, ev->ts_ns);
	/*
	 * The fast path answers only sessions whose published state was Up when the packet
	 * arrived. A packet that overtook the publication of Up got no reply: send it from here,
	 * no sooner than the fast path would have (its own reply gap, measured from our last).
	 */
	if (!(acts & (FSM_SEND | FSM_FINAL)) && (ev->event_flags & BFD_EVF_NOT_UP) &&
	    fsm_rx_clocked(s) && (p.state == BFD_STATE_UP || p.state == BFD_STATE_INIT) &&
	    now_ns - s->last_tx_ns >= fsm_tx_interval_us(s) * 700ULL)
		acts |= FSM_SEND;
	apply(e, s, acts, ev->event_flags & BFD_EVF_FINAL_SENT, now_ns);
}

/*
 * The sweep saw a Detection Time pass without a packet: the session went down then (RFC 5880
 * 6.8.4), even if this loop runs late and a packet has arrived since (the program answers
 * nothing meanwhile). Only a state change after the sweep's look, or a Detection Time that has
 * grown since, makes the report moot.
 */
static void on_expired_event(struct engine *e, const struct bfd_event *ev, uint64_t now_ns)
{
	struct bfd_session *s = sessions_by_slot(&e->st, ev->slot);
	uint64_t dt;

	if (!s || !s->fast_path || ev->incarnation != s->incarnation) {
		e->stats.events_stale++;
		return;
	}
	dt = fsm_detect_time_ns(s);
	if (!dt || s->state_since_ns > ev->ts_ns || ev->ts_ns - ev->last_rx_ns <= dt) {
		e->stats.events_expired_stale++;
		return;
	}
	e->stats.events_expired++;
	apply(e, s, fsm_expire(s, now_ns), false, now_ns);
}

/*
 * The sweep saw an rx-clocked session send nothing for 1.5 intervals: its peer is quiet. Send
 * from here (RFC 5880 6.8.7: not waiting for reception); the program clocks it again when the
 * peer speaks.
 */
static void on_quiet_event(struct engine *e, const struct bfd_event *ev, uint64_t now_ns)
{
	struct bfd_session *s = sessions_by_slot(&e->st, ev->slot);

	if (!s || ev->incarnation != s->incarnation || s->session_state != BFD_STATE_UP ||
	    !fsm_rx_clocked(s)) {
		e->stats.events_stale++;
		return;
	}
	e->stats.events_quiet++;
	send_packet(e, s, false, now_ns);
}

int engine_on_event(void *ctx, void *data, size_t size)
{
	struct engine *e = ctx;
	const struct bfd_event *ev = data;
	uint64_t now = engine_now_ns();

	if (size < sizeof(*ev))
		return 0;
	if (ev->kind == BFD_EV_RX)
		on_rx_event(e, ev, now);
	else if (ev->kind == BFD_EV_EXPIRED)
		on_expired_event(e, ev, now);
	else if (ev->kind == BFD_EV_QUIET)
		on_quiet_event(e, ev, now);
	return 0;
}

/* --- the software path --- */

void engine_rx_packet(struct engine *e, const struct bfd_pkt *p, uint8_t family, bool multihop,
		      const uint8_t local[16], const uint8_t peer[16], uint32_t ifindex,
		      uint8_t ttl, uint64_t now_ns)
{
	struct bfd_session *s;

	/* With --pass-unowned the program has counted what it hands up: count it once. */
	bool counted = e->kernel_tx && ifindex && kern_attached(&e->kern, ifindex);

	if (p->your_disc) {
		s = sessions_by_disc(&e->st, p->your_disc);
		if (!s) {
			e->stats.sw_drops[BFD_DROP_UNKNOWN_YOUR_DISC] += !counted;
			return;
		}
	} else {
		s = sessions_by_addr(&e->st, family, multihop, local, peer, ifindex);
		if (!s) {
			e->stats.sw_drops[BFD_DROP_NO_SESSION] += !counted;
			return;
		}
	}
	if (s->family != family || s->multihop != multihop || memcmp(s->peer_addr, peer, 16) ||
	    (!addr_is_zero(s->local_addr) && memcmp(s->local_addr, local, 16)) ||
	    (s->ifindex && ifindex && s->ifindex != ifindex)) {
		e->stats.sw_drops[BFD_DROP_DEMUX_MISMATCH]++;
		return;
	}
	if (multihop && ttl < s->min_ttl) {
		e->stats.sw_drops[BFD_DROP_TTL]++;
		return;
	}
	if (p->flags & BFD_FLAG_AUTH) {
		e->stats.sw_drops[BFD_DROP_AUTH_MISMATCH]++;
		return;
	}
	if (s->session_state == BFD_STATE_ADMIN_DOWN) {
		e->stats.sw_drops[BFD_DROP_ADMIN_DOWN]++;
		return;
	}
	e->stats.sw_rx++;
	s->sw_rx_packets++;
	move_session(e, s, false, 0, now_ns);
	apply(e, s, fsm_rx(s, p, now_ns), false, now_ns);
}

/* --- interfaces coming and going --- */

void engine_iface_gone(struct engine *e, uint32_t ifindex, const char *name)
{
	uint64_t now = engine_now_ns();

	if (!e->kernel_tx || !kern_attached(&e->kern, ifindex))
		return;
	kern_detach(&e->kern, ifindex);
	pr_warn("kernel-tx: %s (ifindex %u) is gone; its sessions are on the software path until "
		"it returns",
		name[0] ? name : "interface", ifindex);
	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		struct bfd_session *s = e->st.by_slot[i];

		if (!s || (s->xdp_ifindex != ifindex && s->ifindex != ifindex))
			continue;
		s->fast_path = false;
		s->xdp_ifindex = 0;
		apply(e, s, fsm_path_down(s, now) | FSM_PUBLISH | FSM_SCHEDULE, false, now);
	}
}

static bool wanted(const struct engine *e, const char *name)
{
	for (int i = 0; i < e->o.n_kernel_tx; i++)
		if (!strcmp(e->o.kernel_tx[i], name))
			return true;
	return false;
}

/*
 * A session without a socket (its source address or route was missing when it was added): try
 * again. With @repick, drop the socket and the source the route had picked (that address is
 * gone) and let the route pick again. A new source changes the session's address key: the
 * fast-path index and the published cfg follow it.
 */
static void retry_socket(struct engine *e, struct bfd_session *s, uint64_t now_ns, bool repick)
{
	struct bfd_addr_key k;
	char b[128];
	int err;

	if (!repick && (s->tx_fd >= 0 || now_ns < s->tx_retry_ns))
		return;
	s->tx_retry_ns = now_ns + TX_RETRY_NS;
	if (e->kernel_tx) {
		addr_key(s, &k);
		kern_index_del(&e->kern, s->local_disc, &k);
	}
	if (repick) {
		tx_close(s);
		memset(s->local_addr, 0, sizeof(s->local_addr));
	}
	err = tx_open(s);
	if (e->kernel_tx) {
		addr_key(s, &k);
		kern_index_add(&e->kern, s->local_disc, &k, s->slot);
	}
	if (!err)
		pr_info("session %s: socket open, sending", sess_str(s, b, sizeof(b)));
	if (!err || repick)
		publish(e,
			s); /* the source may be new (or none yet): the fast path's demux follows */
}

void engine_iface_changed(struct engine *e, uint32_t ifindex, const char *name)
{
	uint64_t now = engine_now_ns();
	struct bfd_addr_key k;
	char b[128];

	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		struct bfd_session *s = e->st.by_slot[i];
		bool present;

		if (!s)
			continue;
		if (s->local_from_route && s->tx_fd >= 0 &&
		    (iface_of_addr(s->family, s->local_addr, b, &present), !present)) {
			/* The source the route picked is gone (renumbered): let the route pick
			 * again. */
			pr_info("session %s: source address gone; picking another",
				sess_str(s, b, sizeof(b)));
			retry_socket(e, s, 0, true);
			continue;
		}
		retry_socket(e, s, 0, false); /* an address came or went: try at once */
	}
	if (!e->kernel_tx)
		return; /* everything else is about the fast path */
	if (ifindex && name[0] && wanted(e, name) && !kern_attached(&e->kern, ifindex))
		kern_attach(&e->kern, name);
	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		struct bfd_session *s = e->st.by_slot[i];

		if (!s)
			continue;
		if (ifindex && s->ifname[0] && !strcmp(s->ifname, name) && s->ifindex != ifindex) {
			/* bound by name to an interface that came back under a new ifindex */
			addr_key(s, &k);
			kern_index_del(&e->kern, s->local_disc, &k);
			s->ifindex = ifindex;
			addr_key(s, &k);
			kern_index_add(&e->kern, s->local_disc, &k, s->slot);
		}
		if (s->fast_path || s->sw_fed)
			continue; /* a stack-fed session returns when the program sees its packets
				   */
		place_session(e, s);
		if (!s->fast_path)
			continue;
		tx_close(s); /* bound to the old device: open it again on the new one */
		if (tx_open(s))
			pr_warn("session %s: no socket to send from", sess_str(s, b, sizeof(b)));
		pr_info("session %s: back on the fast path", sess_str(s, b, sizeof(b)));
		apply(e, s, FSM_PUBLISH | FSM_SCHEDULE, false, now);
	}
}

/* --- timers --- */

void engine_tx_due(struct engine *e, uint64_t now_ns)
{
	struct bfd_session *s;

	e->tx_timer_armed_ns = 0;
	while ((s = txq_first(&e->st)) && s->next_tx_ns <= now_ns) {
		send_packet(e, s, false, now_ns);
		schedule(e, s, now_ns);
	}
	arm_tx_timer(e);
}

/* Detection on the software path: the sweep covers only fast-path sessions. */
static void sw_detect(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	uint64_t dt = fsm_detect_time_ns(s);

	if (!s->fast_path && dt && now_ns - s->last_rx_ns > dt)
		apply(e, s, fsm_expire(s, now_ns), false, now_ns);
}

void engine_tick(struct engine *e, uint64_t now_ns)
{
	if (e->kernel_tx)
		kern_heartbeat(&e->kern, now_ns);
	dplane_tick(&e->dp, now_ns);
	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		struct bfd_session *s = e->st.by_slot[i];

		if (!s)
			continue;
		if (s->hold_until_ns && now_ns >= s->hold_until_ns) {
			pr_info("session lid %u: bfdd did not come back within --dp-hold; removing",
				s->lid);
			session_destroy(e, s, now_ns);
			continue;
		}
		sw_detect(e, s, now_ns);
		retry_socket(e, s, now_ns, false);
	}
}

void engine_stop_sessions(struct engine *e)
{
	uint64_t now = engine_now_ns();

	for (uint32_t i = 0; i < e->st.slots_in_use; i++)
		if (e->st.by_slot[i])
			session_destroy(e, e->st.by_slot[i], now);
}

/* --- set-up --- */

int engine_init(struct engine *e)
{
	struct kern_opts ko = {
	    .max_sessions = e->o.max_sessions,
	    .deadman_ns = e->o.deadman_us * 1000ULL,
	    .sweep_period_ns = e->o.sweep_us * 1000ULL,
	    .pass_unowned = e->o.pass_unowned,
	    .force_generic = e->o.xdp_generic,
	    .on_event = engine_on_event,
	    .ctx = e,
	};
	int err;

	e->start_ns = engine_now_ns();
	e->rand_state = (uint32_t)(e->start_ns ^ ((uint64_t)getpid() << 16)) | 1;
	for (int i = 0; i < ENGINE_SW_SOCKS; i++)
		e->sw_fd[i] = -1;
	err = sessions_init(&e->st, e->o.max_sessions);
	if (err)
		return err;
	if (e->o.n_kernel_tx) {
		err = kern_open(&e->kern, &ko);
		if (err)
			return err;
		e->kernel_tx = true;
		if (e->o.deadman_us)
			pr_info("kernel-tx: dead-man gate at %lluus",
				(unsigned long long)e->o.deadman_us);
		kern_heartbeat(&e->kern, engine_now_ns());
		for (int i = 0; i < e->o.n_kernel_tx; i++) {
			err = kern_attach(&e->kern, e->o.kernel_tx[i]);
			if (err)
				return err;
		}
	} else {
		pr_info("kernel-tx: off; every session runs on the software path");
	}
	return 0;
}

void engine_fini(struct engine *e)
{
	if (e->kernel_tx)
		kern_close(&e->kern);
	e->kernel_tx = false;
	sessions_fini(&e->st);
}
