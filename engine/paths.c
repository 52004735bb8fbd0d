// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * paths.c - which path serves a session (the fast path where its interface runs the XDP program,
 * the software path otherwise) and what arrives on each: the fast path's ring-buffer events
 * (packets, expiries, a quiet peer), the software path's packets (demultiplexed here, RFC 5881
 * section 3), and interfaces and addresses coming and going (ifmon.c). Uses actions.c (glue.h).
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "codec.h"
#include "engine.h"
#include "fsm.h"
#include "glue.h"
#include "tx.h"

/* --- which path serves a session --- */

/*
 * The namespace's addresses, hashed: the interface of each (0 for loopback-only). Read again
 * (getifaddrs()) at the first lookup after an interface or address event, so a batch of adds
 * costs one read, not one per session (each read lists every address: at one address per
 * session that was quadratic, minutes at 65,536 sessions).
 */
struct addr_ent {
	bool used;
	uint8_t family;
	uint8_t addr[16];
	uint32_t idx;
	char name[IF_NAMESIZE];
};

static struct addr_ent *addr_tab;
static uint32_t addr_cap; /* power of two, at least twice the addresses */
static bool addr_stale = true;

static uint32_t addr_hash(uint8_t family, const uint8_t addr[16])
{
	uint32_t h = 2166136261u ^ family;

	for (int i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 16777619u;
	return h;
}

static struct addr_ent *addr_slot(uint8_t family, const uint8_t addr[16])
{
	uint32_t i = addr_hash(family, addr) & (addr_cap - 1);

	while (addr_tab[i].used &&
	       (addr_tab[i].family != family || memcmp(addr_tab[i].addr, addr, 16)))
		i = (i + 1) & (addr_cap - 1);
	return &addr_tab[i];
}

static void addrs_load(void)
{
	struct ifaddrs *ifa, *i;
	char last[IF_NAMESIZE] = "";
	uint32_t n = 0, last_idx = 0;

	free(addr_tab);
	addr_tab = NULL;
	addr_cap = 0;
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next)
		n++;
	for (addr_cap = 64; addr_cap < 2 * n; addr_cap <<= 1)
		;
	addr_tab = calloc(addr_cap, sizeof(*addr_tab));
	for (i = ifa; i && addr_tab; i = i->ifa_next) {
		uint8_t a[16] = {0}, fam;
		struct addr_ent *e;

		if (!i->ifa_addr ||
		    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		fam = i->ifa_addr->sa_family == AF_INET ? 4 : 6;
		memcpy(a,
		       fam == 4 ? (void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
				: (void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
		       fam == 4 ? 4 : 16);
		e = addr_slot(fam, a);
		if (!e->used) {
			e->used = true;
			e->family = fam;
			memcpy(e->addr, a, 16);
		}
		if (e->idx || (i->ifa_flags & IFF_LOOPBACK))
			continue; /* the first interface not a loopback holding it, as listed */
		if (strncmp(last, i->ifa_name, IF_NAMESIZE)) { /* one lookup per run of a name */
			snprintf(last, sizeof(last), "%s", i->ifa_name);
			last_idx = if_nametoindex(last);
		}
		e->idx = last_idx;
		snprintf(e->name, IF_NAMESIZE, "%s", last);
	}
	freeifaddrs(ifa);
	if (!addr_tab)
		addr_cap = 0;
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
	uint8_t a[16] = {0};
	struct addr_ent *e;

	if (addr_stale || !addr_tab) {
		addrs_load();
		addr_stale = false;
	}
	*present = false;
	if (!addr_tab)
		return 0;
	memcpy(a, addr, family == 4 ? 4 : 16);
	e = addr_slot(family, a);
	if (!e->used)
		return 0;
	*present = true;
	if (e->idx)
		snprintf(name, IF_NAMESIZE, "%s", e->name);
	return e->idx;
}

void engine_ifaddrs_hold(bool on)
{
	if (on)
		addr_stale = true; /* a fresh list for the batch */
}

/* Decide whether the fast path serves @s, attaching to its interface when needed. */
void engine_place_session(struct engine *e, struct bfd_session *s)
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
	if (e->kernel_tx && idx && (kern_attached(&e->kern, idx) || !kern_attach(&e->kern, name))) {
		s->fast_path = true;
		s->xdp_ifindex = idx;
	}
	chores_note(&e->st, s); /* the software path's detection is the tick's */
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
		session_str(s, b, sizeof(b)), fast ? "fast" : "software");
	engine_apply(e, s, FSM_PUBLISH | FSM_SCHEDULE, false, now_ns);
}

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
	/* The program's verdict on the peer's jitter decides who clocks our packets (6.8.7). */
	if (s->peer_steady != !!(ev->event_flags & BFD_EVF_PEER_STEADY)) {
		s->peer_steady = !s->peer_steady;
		acts |= FSM_PUBLISH | FSM_SCHEDULE;
	}
	/*
	 * Too early for the fast path to answer (under 75 % after our last periodic packet). Late
	 * in our interval (over half of it), the peer's next would come too late: ours is owed,
	 * sent at once if 75 % has passed by now (the packet was a few us early, and the ring took
	 * longer than that), else at 75 % (s->tx_owed). Sent right after the peer's packet, ours is
	 * back in step with the peer, whose next then clocks ours again; a jittered deadline
	 * instead would put the next peer packet under 75 % after ours half the time, and so on
	 * for cycles. Earlier in our interval (ours went out of step, the peer's timer late), the
	 * peer's next comes 75 % or more after ours: the fast path answers it. Either way the
	 * peer speaks on its own clock, and the backstop waits for the end of its window
	 * (fsm_next_tx_ns()). Within an eighth of our interval the packet answers ours (another
	 * engine mirroring us): our jittered deadlines clock both.
	 */
	if ((ev->event_flags & BFD_EVF_TX_EARLY) && fsm_rx_clocked(s)) {
		uint64_t iv_ns = fsm_tx_interval_us(s) * 1000ULL;
		uint64_t last =
		    __atomic_load_n(&engine_tx_clock(e, s)->last_periodic_ns, __ATOMIC_ACQUIRE);
		/* 0 if a later packet has claimed the clock since (this event is stale) */
		uint64_t since_ours_ns = ev->ts_ns > last ? ev->ts_ns - last : 0;

		e->stats.events_tx_early++;
		s->tx_owed =
		    !engine_send_periodic(e, s, iv_ns * 3 / 4, now_ns) && since_ours_ns > iv_ns / 2;
		s->tx_peer_window = since_ours_ns > iv_ns / 8;
		s->tx_backstop = true;
		acts |= FSM_SCHEDULE;
	}
	/*
	 * The fast path answers only sessions whose published state was Up when the packet
	 * arrived. A packet that overtook the publication of Up got no reply: send it from here,
	 * no sooner than the fast path would have (75 % of the interval after the last periodic
	 * packet, the shared clock).
	 */
	if (!(acts & (FSM_SEND | FSM_FINAL)) && (ev->event_flags & BFD_EVF_NOT_UP) &&
	    fsm_rx_clocked(s) && (p.state == BFD_STATE_UP || p.state == BFD_STATE_INIT) &&
	    engine_send_periodic(e, s, fsm_tx_interval_us(s) * 750ULL, now_ns))
		acts |= FSM_SCHEDULE;
	engine_apply(e, s, acts, ev->event_flags & BFD_EVF_FINAL_SENT, now_ns);
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
	engine_apply(e, s, fsm_expire(s, now_ns), false, now_ns);
}

/*
 * The sweep saw an rx-clocked session send nothing for 1.5 intervals: its peer is quiet. Send
 * from here (RFC 5880 6.8.7: not waiting for reception) and go on sending on our own jittered
 * deadlines (the backstop) until the program, the peer speaking again, claims the clock first.
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
	if (engine_send_periodic(e, s, fsm_tx_interval_us(s) * 750ULL, now_ns)) {
		s->tx_backstop = true;
		s->tx_owed = s->tx_peer_window = false;
		engine_apply(e, s, FSM_SCHEDULE, false, now_ns);
	}
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
	    (!session_addr_is_zero(s->local_addr) && memcmp(s->local_addr, local, 16)) ||
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
	engine_apply(e, s, fsm_rx(s, p, now_ns), false, now_ns);
}

/* --- interfaces coming and going --- */

void engine_iface_gone(struct engine *e, uint32_t ifindex, const char *name)
{
	uint64_t now = engine_now_ns();

	addr_stale = true;
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
		engine_apply(e, s, fsm_path_down(s, now) | FSM_PUBLISH | FSM_SCHEDULE, false, now);
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
void engine_retry_socket(struct engine *e, struct bfd_session *s, uint64_t now_ns, bool repick)
{
	struct bfd_addr_key k;
	char b[128];
	int err;

	if (!repick && (s->tx_fd >= 0 || now_ns < s->tx_retry_ns))
		return;
	s->tx_retry_ns = now_ns + TX_RETRY_NS;
	if (e->kernel_tx) {
		engine_addr_key(s, &k);
		kern_index_del(&e->kern, s->local_disc, &k);
	}
	if (repick) {
		tx_close(s);
		memset(s->local_addr, 0, sizeof(s->local_addr));
	}
	err = tx_open(s);
	if (e->kernel_tx) {
		engine_addr_key(s, &k);
		kern_index_add(&e->kern, s->local_disc, &k, s->slot);
	}
	if (!err)
		pr_info("session %s: socket open, sending", session_str(s, b, sizeof(b)));
	/* The source may be new (or none yet): the fast path's demux follows. */
	if (!err || repick)
		engine_publish(e, s);
	chores_note(&e->st, s); /* still none: the tick tries again */
}

void engine_iface_changed(struct engine *e, uint32_t ifindex, const char *name)
{
	uint64_t now = engine_now_ns();
	struct bfd_addr_key k;
	char b[128];

	addr_stale = true;

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
				session_str(s, b, sizeof(b)));
			engine_retry_socket(e, s, 0, true);
			continue;
		}
		engine_retry_socket(e, s, 0, false); /* an address came or went: try at once */
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
			engine_addr_key(s, &k);
			kern_index_del(&e->kern, s->local_disc, &k);
			s->ifindex = ifindex;
			engine_addr_key(s, &k);
			kern_index_add(&e->kern, s->local_disc, &k, s->slot);
		}
		if (s->fast_path || s->sw_fed)
			continue; /* a stack-fed session returns when the program sees its packets
				   */
		engine_place_session(e, s);
		if (!s->fast_path)
			continue;
		tx_close(s); /* bound to the old device: open it again on the new one */
		if (tx_open(s))
			pr_warn("session %s: no socket to send from", session_str(s, b, sizeof(b)));
		pr_info("session %s: back on the fast path", session_str(s, b, sizeof(b)));
		engine_apply(e, s, FSM_PUBLISH | FSM_SCHEDULE, false, now);
	}
}
