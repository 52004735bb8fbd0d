// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_bfd.bpf.c - the fast path: answer the peer's BFD Control packets in the driver, and one
 * sweep timer that finds sessions past their detection time.
 *
 * For each Control packet on UDP 3784/4784: its IPv4 header and UDP checksums (csum.h), the
 * reception checks of RFC 5881 section 5 and RFC 5880 section 6.8.6, the session by Your
 * Discriminator (or by addresses and interface when it is zero), the arrival time and the peer's
 * fields recorded under the session's lock. A session that is Up gets the packet back as our reply
 * (XDP_TX); packets the engine must act on go to it through the ring buffer. Everything that is not
 * BFD leaves with XDP_PASS, or with --spread-pass for its flow's CPU (spread.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bfd_shared.h"
#include "kern/maps.h"
#include "kern/parse.h"
#include "kern/csum.h"
#include "kern/reply.h"
#include "kern/spread.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Mark @slot in wheel bucket @bucket (bfd_shared.h, BFD_WHEEL_*): its group word, then its top
 * word (a sweep that takes the top word first and the group word after finds the bit now or at
 * its next pass). Atomic: the armed bucket has writers on every CPU and in the engine. A global
 * function: the verifier checks it once, not on every path of its callers. Return: 0, or -1 when
 * the words are out of the maps.
 */
__attribute__((noinline)) int wheel_mark(__u32 bucket, __u32 slot)
{
	__u32 g = bucket * settings.slot_words + (slot >> 6);
	__u32 t = bucket * settings.top_words + (slot >> 12);
	__u64 *gw = bpf_map_lookup_elem(&wheel_groups, &g);
	__u64 *tw = bpf_map_lookup_elem(&wheel_tops, &t);

	if (!gw || !tw)
		return -1;
	__sync_fetch_and_or(gw, 1ULL << (slot & 63));
	__sync_fetch_and_or(tw, 1ULL << ((slot >> 6) & 63));
	return 0;
}

/* Discard with a named reason (RFC 5880 6.8.6: "the packet MUST be discarded"). */
static __always_inline int drop(enum bfd_drop_reason reason)
{
	count(BFD_CNT_DROP_BASE + reason);
	return XDP_DROP;
}

/* A packet for a session we do not hold: count it, then drop it or let the stack have it. */
static __always_inline int unowned(enum bfd_drop_reason reason)
{
	count(BFD_CNT_DROP_BASE + reason);
	if (settings.pass_unowned) {
		count(BFD_CNT_PASS_UNOWNED);
		return XDP_PASS;
	}
	return XDP_DROP;
}

static __always_inline int addr_eq(const __u8 *a, const __u8 *b)
{
	const __u32 *x = (const __u32 *)a, *y = (const __u32 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

static __always_inline int addr_zero(const __u8 *a)
{
	const __u32 *x = (const __u32 *)a;

	return !(x[0] | x[1] | x[2] | x[3]);
}

static __always_inline void post_rx(const struct bfd_ctrl *c, const struct pkt *p, __u32 slot,
				    __u32 incarnation, __u32 ifindex, __u64 now, __u8 evflags)
{
	struct bfd_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(BFD_CNT_EVENT_LOST);
		return;
	}
	e->kind = BFD_EV_RX;
	e->slot = slot;
	e->ts_ns = now;
	e->last_rx_ns = now;
	e->ifindex = ifindex;
	e->peer_port = p->sport;
	e->ttl = p->ttl;
	e->event_flags = evflags;
	e->pkt = *c;
	e->incarnation = incarnation;
	e->_pad = 0;
	bpf_ringbuf_submit(e, 0);
	count(BFD_CNT_EVENT_POSTED);
}

/*
 * Our transmit interval towards the peer (us) from this packet's fields and our configuration,
 * RFC 5880 6.8.2: max(our Desired Min TX in force, its Required Min RX); and in @theirs_us its
 * interval towards us, max(its Desired Min TX, our Required Min RX). Decided here, per packet, so
 * a session whose peer has just left slow start is served at once, whatever userspace is doing.
 * Return: 0 when we owe the peer no periodic packets (Required Min RX 0, or Demand, 6.8.7).
 */
static __always_inline __u32 tx_interval_us(const struct bfd_session_params *s,
					    const struct bfd_ctrl *c, __u8 flags, __u32 *theirs_us)
{
	__u32 peer_rx = bpf_ntohl(c->required_min_rx_us), peer_tx = bpf_ntohl(c->desired_min_tx_us);

	*theirs_us = peer_tx > s->required_min_rx_us ? peer_tx : s->required_min_rx_us;
	if (!peer_rx || (flags & BFD_FLAG_DEMAND))
		return 0;
	return s->tx_in_force_us > peer_rx ? s->tx_in_force_us : peer_rx;
}

/*
 * Judge whether the peer jitters (RFC 5880 6.8.7), from the gaps between its non-Final packets
 * (@theirs_us: its interval now): over each window of BFD_PEER_GAP_WINDOW gaps, a spread under
 * 1/BFD_PEER_STEADY_DIV of its interval means it does not, and our replies to it would carry no
 * jitter either. A gap under half an interval (an extra packet: a Final, a state change) or
 * over 1.5 (a lost packet) is left out; a new interval, or the peer coming Up again, starts a new
 * window. Called under rx->lock.
 */
static __always_inline void judge_peer_jitter(struct bfd_session_rx *rx, __u64 now, __u32 theirs_us)
{
	__u64 gap_ns = now - rx->peer_last_ns;
	__u32 gap_us;

	if (rx->peer_gap_iv_us != theirs_us) {
		rx->peer_gap_iv_us = theirs_us;
		rx->peer_gap_n = 0;
	} else if (rx->peer_last_ns && gap_ns >= (__u64)theirs_us * 500 &&
		   gap_ns <= (__u64)theirs_us * 1500) {
		gap_us = (__u32)(gap_ns / 1000);
		if (!rx->peer_gap_n || gap_us < rx->peer_gap_min_us)
			rx->peer_gap_min_us = gap_us;
		if (!rx->peer_gap_n || gap_us > rx->peer_gap_max_us)
			rx->peer_gap_max_us = gap_us;
		if (++rx->peer_gap_n >= BFD_PEER_GAP_WINDOW) {
			rx->peer_steady = rx->peer_gap_max_us - rx->peer_gap_min_us <
					  theirs_us / BFD_PEER_STEADY_DIV;
			rx->peer_gap_n = 0;
		}
	}
	rx->peer_last_ns = now;
}

static __always_inline int bfd_control(struct xdp_md *ctx, struct pkt *p)
{
	struct bfd_ctrl *wire = p->data + p->l4_off + sizeof(struct udphdr);
	struct bfd_session_params s;
	struct bfd_session_cfg *cfg;
	struct bfd_session_rx *rx;
	struct bfd_session_expiry *ex;
	struct bfd_session_tx *tx;
	struct bfd_ctrl c;
	__u8 local[16] = {}, peer[16] = {};
	__u32 slot, *slotp, ifindex = ctx->ingress_ifindex;
	__u8 state, flags, reply_flags = 0, evflags = 0, steady;
	int reply = 0, notify, expired, sw, may_tx, mirror,
	    multihop = p->dport == BFD_PORT_MULTIHOP;
	__u32 ours_us, theirs_us;
	__u64 now, gap_ns;

	if ((void *)(wire + 1) > p->end || p->udp_payload_len < BFD_CTRL_LEN)
		return drop(BFD_DROP_BAD_LENGTH);
	c = *wire; /* the reply overwrites the packet: work from a copy */
	state = BFD_CTRL_STATE(&c);
	flags = BFD_CTRL_FLAGS(&c);

	/* RFC 5881 section 5 (GTSM); the multihop minimum is per session, checked below. */
	if (!multihop && p->ttl != BFD_TTL_SINGLE_HOP)
		return drop(BFD_DROP_TTL);
	/* RFC 5880 section 6.8.6, in its order. */
	if (BFD_CTRL_VERSION(&c) != BFD_VERSION)
		return drop(BFD_DROP_BAD_VERSION);
	if (c.length < ((flags & BFD_FLAG_AUTH) ? 26 : BFD_CTRL_LEN))
		return drop(BFD_DROP_BAD_LENGTH);
	if (c.length > p->udp_payload_len)
		return drop(BFD_DROP_LENGTH_GT_PAYLOAD);
	if (c.detect_mult == 0)
		return drop(BFD_DROP_ZERO_MULT);
	if (flags & BFD_FLAG_MULTIPOINT)
		return drop(BFD_DROP_MULTIPOINT);
	if (c.my_disc == 0)
		return drop(BFD_DROP_ZERO_MY_DISC);
	if (pkt_addrs(p, local, peer))
		return drop(BFD_DROP_MALFORMED_IP);
	if (c.your_disc) {
		__u32 disc = bpf_ntohl(c.your_disc);

		slotp = bpf_map_lookup_elem(&disc_index, &disc);
		if (!slotp)
			return unowned(BFD_DROP_UNKNOWN_YOUR_DISC);
	} else {
		struct bfd_addr_key k = {
		    .ifindex = ifindex, .family = p->family, .multihop = multihop};

		if (state != BFD_STATE_DOWN && state != BFD_STATE_ADMIN_DOWN)
			return drop(BFD_DROP_ZERO_YOUR_DISC);
		__builtin_memcpy(k.local_addr, local, 16);
		__builtin_memcpy(k.peer_addr, peer, 16);
		slotp = bpf_map_lookup_elem(&addr_index, &k);
		if (!slotp) {
			k.ifindex = 0; /* a session bfdd did not bind to an interface */
			slotp = bpf_map_lookup_elem(&addr_index, &k);
		}
		if (!slotp)
			return unowned(BFD_DROP_NO_SESSION);
	}
	if ((flags & (BFD_FLAG_POLL | BFD_FLAG_FINAL)) == (BFD_FLAG_POLL | BFD_FLAG_FINAL))
		return drop(BFD_DROP_POLL_AND_FINAL);

	slot = *slotp;
	cfg = bpf_map_lookup_elem(&sessions_cfg, &slot);
	rx = bpf_map_lookup_elem(&sessions_rx, &slot);
	ex = bpf_map_lookup_elem(&sessions_expiry, &slot);
	tx = bpf_map_lookup_elem(&sessions_tx, &slot);
	if (!cfg || !rx || !ex || !tx)
		return unowned(BFD_DROP_UNKNOWN_YOUR_DISC);
	bpf_spin_lock(&cfg->lock);
	s = cfg->p;
	bpf_spin_unlock(&cfg->lock);

	if (!(s.session_flags & BFD_SF_ACTIVE))
		return unowned(BFD_DROP_UNKNOWN_YOUR_DISC);
	/* The session found must be the one these addresses, this port and interface belong to. */
	if (!!(s.session_flags & BFD_SF_MULTIHOP) != multihop ||
	    !!(s.session_flags & BFD_SF_IPV6) != (p->family == 6) || !addr_eq(s.peer_addr, peer) ||
	    (!addr_zero(s.local_addr) && !addr_eq(s.local_addr, local)) ||
	    (s.ifindex && s.ifindex != ifindex))
		return drop(BFD_DROP_DEMUX_MISMATCH);
	if (multihop && p->ttl < s.min_ttl)
		return drop(BFD_DROP_TTL);
	/* No authentication is offloaded: fail closed on any A bit (RFC 5880 6.8.6). */
	if (flags & BFD_FLAG_AUTH)
		return drop(BFD_DROP_AUTH_MISMATCH);
	if (s.session_state == BFD_STATE_ADMIN_DOWN)
		return drop(BFD_DROP_ADMIN_DOWN);

	now = bpf_ktime_get_ns();
	/* The dead-man gate: a stale heartbeat withholds every reply, and claims no slot. */
	may_tx = !settings.deadman_ns || (__s64)(now - heartbeat_ns) <= (__s64)settings.deadman_ns;
	count(BFD_CNT_RX_CTRL);
	/* The sweep declared this session down and the engine has not written a cfg since. */
	expired = ex->expired && ex->expired_cfg_gen == s.cfg_gen;
	sw = !!(s.session_flags & BFD_SF_SOFTWARE);
	ours_us = tx_interval_us(&s, &c, flags, &theirs_us);

	bpf_spin_lock(&rx->lock);
	steady = rx->peer_steady;
	if (state != BFD_STATE_UP)
		rx->peer_gap_iv_us = 0; /* judged from Up on: bring-up gaps are no measure */
	else if (!(flags & BFD_FLAG_FINAL))
		judge_peer_jitter(rx, now, theirs_us);
	/* Tell the engine about anything but a steady Up packet with unchanged fields. */
	notify = expired || sw || s.session_state != BFD_STATE_UP || state != BFD_STATE_UP ||
		 rx->remote_state != state || rx->remote_diag != BFD_CTRL_DIAG(&c) ||
		 rx->remote_detect_mult != c.detect_mult ||
		 rx->remote_disc != bpf_ntohl(c.my_disc) ||
		 rx->remote_desired_min_tx_us != bpf_ntohl(c.desired_min_tx_us) ||
		 rx->remote_required_min_rx_us != bpf_ntohl(c.required_min_rx_us) ||
		 rx->remote_required_min_echo_rx_us != bpf_ntohl(c.required_min_echo_rx_us) ||
		 ((rx->remote_flags ^ flags) & (BFD_FLAG_CPI | BFD_FLAG_DEMAND)) ||
		 (flags & BFD_FLAG_FINAL) || steady != rx->peer_steady;
	if ((flags & BFD_FLAG_FINAL) && (s.session_flags & BFD_SF_POLL))
		rx->final_poll_seq = s.poll_seq; /* our Poll Sequence is answered (RFC 5880 6.5) */
	if (sw) {
		/* Served by userspace: the event tells it its packets reach the program again. */
	} else if (s.session_state == BFD_STATE_UP && !expired &&
		   (state == BFD_STATE_UP || state == BFD_STATE_INIT)) {
		if (flags & BFD_FLAG_POLL) {
			reply = 1; /* a Final is owed at once (RFC 5880 6.8.7) */
			reply_flags = BFD_FLAG_FINAL;
		} else if (ours_us && !may_tx) {
			reply = -1; /* withheld by the dead-man gate: no slot claimed */
		} else if (ours_us) {
			/*
			 * A periodic packet (RFC 5880 6.8.7), whoever sends it: claim the shared
			 * clock. A peer at our interval that jitters and a Detect Mult above 1:
			 * its packets clock ours, no sooner than 75 % of the interval after our
			 * last (theirs jitter, so ours do). Otherwise userspace clocks them on
			 * its jittered deadline, and we answer only once that is past (it is
			 * late: starved or descheduled).
			 */
			mirror = theirs_us == ours_us && s.detect_mult > 1 && !rx->peer_steady;
			gap_ns =
			    mirror ? (__u64)ours_us * 750
				   : bfd_tx_jitter_ns(ours_us, s.detect_mult, tx->last_periodic_ns);
			if (bfd_tx_claim(tx, now, gap_ns)) {
				reply = 1;
				if ((s.session_flags & BFD_SF_POLL) &&
				    s.poll_seq != rx->final_poll_seq)
					reply_flags = BFD_FLAG_POLL; /* our Poll is still open */
			} else if (mirror) {
				evflags |= BFD_EVF_TX_EARLY;
				notify = 1;
			}
		}
	} else if (s.session_state == BFD_STATE_INIT && !expired && (flags & BFD_FLAG_POLL) &&
		   (state == BFD_STATE_UP || state == BFD_STATE_INIT) &&
		   bpf_ntohl(c.my_disc) == s.remote_disc) {
		/*
		 * RFC 5880 6.8.7: a Poll gets its Final at once, whatever the session state. A peer
		 * that came Up before us polls to leave slow start and stays slow until answered.
		 * 6.8.6 applies this packet's Init -> Up before the Poll step, so the Final says Up
		 * (build_reply below); the engine makes the same transition from the event.
		 */
		reply = 1;
		reply_flags = BFD_FLAG_FINAL;
	}
	if (reply > 0 && !may_tx)
		reply = -1; /* a Final withheld too */
	if (rx->peer_steady)
		evflags |= BFD_EVF_PEER_STEADY;
	if (reply > 0) {
		rx->last_tx_ns = now;
		rx->tx_packets++;
		rx->tx_bytes += BFD_CTRL_LEN;
	}
	rx->last_rx_ns = now;
	rx->rx_packets++;
	rx->rx_bytes += c.length;
	rx->remote_state = state;
	rx->remote_diag = BFD_CTRL_DIAG(&c);
	rx->remote_flags = flags;
	rx->remote_detect_mult = c.detect_mult;
	rx->remote_disc = bpf_ntohl(c.my_disc);
	rx->remote_desired_min_tx_us = bpf_ntohl(c.desired_min_tx_us);
	rx->remote_required_min_rx_us = bpf_ntohl(c.required_min_rx_us);
	rx->remote_required_min_echo_rx_us = bpf_ntohl(c.required_min_echo_rx_us);
	bpf_spin_unlock(&rx->lock);

	if (reply < 0)
		count(BFD_CNT_DEADMAN_HOLD);
	if (expired) {
		count(BFD_CNT_EXPIRED_HOLD);
		evflags |= BFD_EVF_EXPIRED;
	}
	if (s.session_state != BFD_STATE_UP)
		evflags |= BFD_EVF_NOT_UP;
	if (reply > 0) {
		evflags |= BFD_EVF_REPLIED;
		if (reply_flags & BFD_FLAG_FINAL)
			evflags |= BFD_EVF_FINAL_SENT;
	}
	if (notify) {
		post_rx(&c, p, slot, s.incarnation, ifindex, now, evflags);
		/* What changed may bring the deadline closer (or restart detection after an
		 * expiry): the next sweep looks at the slot. */
		wheel_mark(BFD_WHEEL_ARMED, slot);
	}
	if (reply <= 0) {
		count(BFD_CNT_RX_CONSUMED);
		return XDP_DROP;
	}
	if (s.session_flags & BFD_SF_CPI)
		reply_flags |= BFD_FLAG_CPI;
	if (s.session_state == BFD_STATE_INIT)
		s.session_state = BFD_STATE_UP; /* only the Init branch above replies (C01b) */
	if (build_reply(ctx, p, &s, reply_flags))
		return drop(BFD_DROP_MALFORMED_IP);
	count(BFD_CNT_TX_REPLY);
	if (reply_flags & BFD_FLAG_FINAL)
		count(BFD_CNT_TX_FINAL);
	return XDP_TX;
}

SEC("xdp")
int xdp_bfd(struct xdp_md *ctx)
{
	struct pkt p = {};
	int r = parse_udp(ctx, &p);

	if (r == PARSE_NOT_UDP || (p.dport != BFD_PORT_CONTROL && p.dport != BFD_PORT_MULTIHOP))
		return pass_frame(ctx);
	if (r == PARSE_MALFORMED)
		return drop(BFD_DROP_MALFORMED_IP);
	/* What the stack would have verified, before anything acts on the packet. */
	r = verify_checksums(ctx, &p);
	if (r != BFD_DROP__COUNT)
		return drop(r);
	return bfd_control(ctx, &p);
}

/* --- Detection: one timer walks a timing wheel of deadlines (RFC 5880 section 6.8.4) --- */

/*
 * What a callback of the wheel walk reads. Read-only in the callbacks: state the callback changes
 * on the caller's stack makes the verifier walk every iteration of bpf_loop, so the bit being
 * walked lives in the sweep's map value (walk_top, walk_group) and each level builds its own.
 */
struct sweep_ctx {
	__u64 now_ns;
	__u64 cur_tick;	  /* now_ns / sweep_period_ns */
	__u64 first_tick; /* the first tick whose bucket this sweep reads */
	struct bfd_sweep *sw;
	__u32 bucket; /* the bucket being read; BFD_WHEEL_ARMED for the armed one */
	__u32 index;  /* the top word (in top_cb's children) or group word (in slot_cb) */
};

/* Index of the lowest set bit of a non-zero word: a de Bruijn multiply, no loop. */
static const __u8 debruijn64[64] = {0,	1,  48, 2,  57, 49, 28, 3,  61, 58, 50, 42, 38, 29, 17, 4,
				    62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
				    63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
				    46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,	6};

static __always_inline __u32 lowest_bit(__u64 w)
{
	return debruijn64[((w & -w) * 0x03f79d71b4cb0a89ULL) >> 58];
}

/*
 * Put @slot in the bucket of the tick that first reads it at or after @due_ns: never the tick
 * being swept (it was read), never more than BFD_WHEEL_TICKS - 1 ahead (the horizon: a later
 * deadline is looked at then and scheduled again).
 */
static __always_inline void wheel_schedule(__u32 slot, struct bfd_session_expiry *ex, __u64 due_ns,
					   const struct sweep_ctx *c)
{
	__u64 t = due_ns / settings.sweep_period_ns;

	if (t <= c->cur_tick)
		t = c->cur_tick + 1;
	if (t > c->cur_tick + BFD_WHEEL_TICKS - 1)
		t = c->cur_tick + BFD_WHEEL_TICKS - 1;
	ex->wheel_tick = t;
	wheel_mark((__u32)(t % BFD_WHEEL_TICKS), slot);
}

static __always_inline __u64 earliest(__u64 a, __u64 b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/*
 * A session the peer's packets clock sends nothing while the peer is quiet. RFC 5880 6.8.7 wants
 * our packets whatever we receive, and a peer stalled near its Detection Time would otherwise
 * wake to find us silent just as long: after 1.5 of our intervals without a periodic packet from
 * us (the shared clock: from XDP or userspace), and every 1.5 intervals while it lasts, ask
 * userspace to send. Return: when to look again (ns), 0 for never.
 */
static __always_inline __u64 sweep_quiet(__u32 slot, const struct sweep_ctx *c,
					 struct bfd_session_cfg *cfg, struct bfd_session_rx *rx,
					 struct bfd_session_expiry *ex)
{
	struct bfd_session_tx *tx = bpf_map_lookup_elem(&sessions_tx, &slot);
	__u32 iv_us = cfg->p.tx_in_force_us;
	struct bfd_event *e;
	__u64 ref, iv_ns;

	if (!tx)
		return 0;
	ref = tx->last_periodic_ns; /* ours, whoever sent it */

	if (rx->remote_required_min_rx_us > iv_us)
		iv_us = rx->remote_required_min_rx_us; /* RFC 5880 6.8.7: our interval */
	iv_ns = (__u64)iv_us * 1000;
	if (ex->quiet_ns > ref)
		ref = ex->quiet_ns;
	if (!iv_ns)
		return 0;
	if ((__s64)(c->now_ns - ref) <= (__s64)(iv_ns + iv_ns / 2))
		return ref + iv_ns + iv_ns / 2 + 1;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(BFD_CNT_EVENT_LOST);
		return c->now_ns + 1; /* the next tick retries */
	}
	ex->quiet_ns = c->now_ns;
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = BFD_EV_QUIET;
	e->slot = slot;
	e->ts_ns = c->now_ns;
	e->last_rx_ns = rx->last_rx_ns;
	e->incarnation = cfg->p.incarnation;
	bpf_ringbuf_submit(e, 0);
	count(BFD_CNT_EVENT_POSTED);
	return c->now_ns + iv_ns + iv_ns / 2 + 1;
}

/*
 * One marked slot. From a tick's bucket: a mark left by a later schedule of the slot is stale and
 * costs nothing more; a mark for a later turn of the wheel is put back. Then the checks, and the
 * slot goes back in the wheel at its next deadline, or leaves it: not Init/Up, detection off, or
 * its expiry reported (its next packet, or the engine's next cfg, marks it armed again).
 */
static __always_inline void sweep_slot(__u32 slot, const struct sweep_ctx *c)
{
	struct bfd_session_cfg *cfg = bpf_map_lookup_elem(&sessions_cfg, &slot);
	struct bfd_session_rx *rx = bpf_map_lookup_elem(&sessions_rx, &slot);
	struct bfd_session_expiry *ex = bpf_map_lookup_elem(&sessions_expiry, &slot);
	struct bfd_event *e;
	__u64 detect_ns, pkt_detect_ns, last, due = 0;
	__u32 peer_tx_us;
	__u8 st;

	c->sw->last_visited++;
	if (!cfg || !rx || !ex)
		return;
	if (c->bucket != BFD_WHEEL_ARMED) {
		if (!ex->wheel_tick || ex->wheel_tick % BFD_WHEEL_TICKS != c->bucket)
			return;
		if (ex->wheel_tick > c->cur_tick) {
			wheel_mark(c->bucket, slot);
			return;
		}
	}
	ex->wheel_tick = 0;
	/*
	 * Read without the locks: each field is one aligned load, and a torn view of two fields
	 * only costs a spurious event, which the engine checks against the locked state.
	 */
	if (!(cfg->p.session_flags & BFD_SF_ACTIVE))
		return;
	st = cfg->p.session_state;
	detect_ns = cfg->p.detect_time_ns;
	if (st == BFD_STATE_UP && (cfg->p.session_flags & BFD_SF_RX_CLOCKED))
		due = sweep_quiet(slot, c, cfg, rx, ex);
	if ((st != BFD_STATE_UP && st != BFD_STATE_INIT) || !detect_ns)
		goto out;
	/*
	 * RFC 5880 6.8.4 takes the peer's Desired Min TX and Detect Mult from the last packet
	 * received. The engine's Detection Time lags by whatever events it has not read yet (a
	 * peer going Down advertises 1 s; under load the engine may go Init on the packet before):
	 * never expire sooner than the last packet itself allows.
	 */
	peer_tx_us = rx->remote_desired_min_tx_us;
	if (peer_tx_us < cfg->p.required_min_rx_us)
		peer_tx_us = cfg->p.required_min_rx_us;
	pkt_detect_ns = (__u64)rx->remote_detect_mult * peer_tx_us * 1000;
	if (pkt_detect_ns > detect_ns)
		detect_ns = pkt_detect_ns;
	last = rx->last_rx_ns;
	/* Signed: a packet landing on another CPU after now_ns was read makes this negative. */
	if ((__s64)(c->now_ns - last) <= (__s64)detect_ns) {
		due = earliest(due, last + detect_ns + 1);
		goto out;
	}
	if (ex->reported_rx_ns == last)
		goto out;
	/* Down from now on (replies withheld), whether or not the engine hears of it yet. */
	if (!ex->expired || ex->expired_cfg_gen != cfg->p.cfg_gen) {
		ex->expired_cfg_gen = cfg->p.cfg_gen;
		ex->expired = 1;
		count(BFD_CNT_SWEEP_EXPIRED);
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		/* Ring full (the engine is starved): reported_rx_ns stays, the next tick retries.
		 */
		count(BFD_CNT_EVENT_LOST);
		due = earliest(due, c->now_ns + 1);
		goto out;
	}
	ex->reported_rx_ns = last;
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = BFD_EV_EXPIRED;
	e->slot = slot;
	e->ts_ns = c->now_ns;
	e->last_rx_ns = last;
	e->incarnation = cfg->p.incarnation;
	bpf_ringbuf_submit(e, 0);
	count(BFD_CNT_EVENT_POSTED);
out:
	if (due)
		wheel_schedule(slot, ex, due, c);
}

/* The slots of one group word: take the lowest marked bit each call, stop when none is left. */
static long slot_cb(__u32 i, const struct sweep_ctx *c)
{
	__u64 w = c->sw->walk_group;

	if (!w)
		return 1;
	c->sw->walk_group = w & (w - 1);
	sweep_slot((c->index << 6) + lowest_bit(w), c);
	return 0;
}

/* The group words one top word marks: each is taken (zeroed) and its slots walked. */
static long group_cb(__u32 i, const struct sweep_ctx *c)
{
	struct sweep_ctx gc = *c;
	__u64 w = c->sw->walk_top, *gw;
	__u32 g, key;

	if (!w)
		return 1;
	c->sw->walk_top = w & (w - 1);
	g = (c->index << 6) + lowest_bit(w);
	key = c->bucket * settings.slot_words + g;
	gw = bpf_map_lookup_elem(&wheel_groups, &key);
	if (!gw)
		return 0;
	c->sw->walk_group = __sync_lock_test_and_set(gw, 0);
	gc.index = g;
	bpf_loop(64, slot_cb, &gc, 0);
	return 0;
}

/* Top word @t of the bucket: taken (zeroed) first, then the group words it marks. */
static long top_cb(__u32 t, const struct sweep_ctx *c)
{
	struct sweep_ctx tc = *c;
	__u32 key = c->bucket * settings.top_words + t;
	__u64 *tw = bpf_map_lookup_elem(&wheel_tops, &key);

	if (!tw || !*tw)
		return 0;
	c->sw->walk_top = __sync_lock_test_and_set(tw, 0);
	tc.index = t;
	bpf_loop(64, group_cb, &tc, 0);
	return 0;
}

/* The bucket of tick first_tick + @i. */
static long bucket_cb(__u32 i, const struct sweep_ctx *c)
{
	struct sweep_ctx bc = *c;

	bc.bucket = (__u32)((c->first_tick + i) % BFD_WHEEL_TICKS);
	bpf_loop(settings.top_words, top_cb, &bc, 0);
	return 0;
}

/*
 * One sweep as of @now_ns: the armed bucket, then the bucket of every tick since the last sweep
 * (all BFD_WHEEL_TICKS of them at most, when the timer ran that late). Its cost is the marked words
 * and slots it reads, whatever the number of sessions. Return: the slots visited, or -1 when
 * another sweep is running.
 */
static __always_inline long sweep_run(struct bfd_sweep *sw, __u64 now_ns)
{
	struct sweep_ctx c = {.now_ns = now_ns, .sw = sw, .bucket = BFD_WHEEL_ARMED};
	__u64 last = sw->last_tick, n, took, start_ns = bpf_ktime_get_ns();

	if (__sync_lock_test_and_set(&sw->busy, 1))
		return -1;
	c.cur_tick = now_ns / settings.sweep_period_ns;
	n = !last ? 1 : c.cur_tick > last ? c.cur_tick - last : 0;
	if (n > BFD_WHEEL_TICKS)
		n = BFD_WHEEL_TICKS;
	c.first_tick = c.cur_tick + 1 - n;
	sw->last_visited = 0;
	bpf_loop(settings.top_words, top_cb, &c, 0);
	bpf_loop((__u32)n, bucket_cb, &c, 0);
	if (c.cur_tick > last)
		sw->last_tick = c.cur_tick;
	took = bpf_ktime_get_ns() - start_ns;
	sw->runs++;
	sw->last_scan_ns = took;
	sw->total_scan_ns += took;
	if (took > sw->max_scan_ns)
		sw->max_scan_ns = took;
	sw->total_visited += sw->last_visited;
	if (sw->last_visited > sw->max_visited)
		sw->max_visited = sw->last_visited;
	count(BFD_CNT_SWEEP_RUNS);
	__sync_lock_test_and_set(&sw->busy, 0);
	return (long)sw->last_visited;
}

static int sweep_cb(void *map, __u32 *key, struct bfd_sweep *sw)
{
	sweep_run(sw, bpf_ktime_get_ns());
	if (bpf_timer_start(&sw->timer, settings.sweep_period_ns, 0))
		count(BFD_CNT_TIMER_ERRORS);
	return 0;
}

/*
 * One sweep as if the clock read ctx->now_ns (struct bfd_sweep_at), for the tests and the
 * benchmark (BPF_PROG_TEST_RUN); the engine never runs it. Return: the slots visited, -1 when the
 * timer's sweep was running, -2 without the sweep record.
 */
SEC("syscall")
int sweep_at(struct bfd_sweep_at *ctx)
{
	__u32 key = 0;
	struct bfd_sweep *sw = bpf_map_lookup_elem(&sweep, &key);

	if (!sw)
		return -2;
	return (int)sweep_run(sw, ctx->now_ns);
}

/* Run once by the engine (BPF_PROG_TEST_RUN) to arm the sweep. Return: 0 or -errno. */
SEC("syscall")
int start_sweep(void *ctx)
{
	__u32 key = 0;
	struct bfd_sweep *sw = bpf_map_lookup_elem(&sweep, &key);
	long err;

	if (!sw)
		return -2;
	err = bpf_timer_init(&sw->timer, &sweep, 1 /* CLOCK_MONOTONIC */);
	if (err && err != -16 /* -EBUSY: already initialised */)
		return err;
	err = bpf_timer_set_callback(&sw->timer, sweep_cb);
	if (err)
		return err;
	return bpf_timer_start(&sw->timer, settings.sweep_period_ns, 0);
}
