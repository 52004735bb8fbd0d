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

/*
 * Whether a session's 16-byte address field @a (IPv4 in its first 4 bytes, zeros after) holds
 * the frame's address at @w (4 bytes for IPv4, 16 for IPv6): what addr_eq() says of the address
 * pkt_addrs() would have copied out, read in place instead of through two zeroed copies.
 */
static __always_inline int addr_is(const __u8 *a, const __u32 *w, int v6)
{
	const __u32 *x = (const __u32 *)a;

	if (!v6)
		return x[0] == w[0] && !(x[1] | x[2] | x[3]);
	return x[0] == w[0] && x[1] == w[1] && x[2] == w[2] && x[3] == w[3];
}

#include "kern/echo.h" /* uses drop(), pass_frame() and the address helpers above */

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
	const __u32 *src, *dst; /* the frame's peer (source) and local (destination) address */
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
	if (pkt_addr_ptrs(p, &src, &dst))
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
		if (pkt_addrs(p, k.local_addr, k.peer_addr))
			return drop(BFD_DROP_MALFORMED_IP);
		slotp = addr_index_lookup(&k);
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
	    !!(s.session_flags & BFD_SF_IPV6) != (p->family == 6) ||
	    !addr_is(s.peer_addr, src, p->family == 6) ||
	    (!addr_zero(s.local_addr) && !addr_is(s.local_addr, dst, p->family == 6)) ||
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

	if (r == PARSE_NOT_UDP || (p.dport != BFD_PORT_CONTROL && p.dport != BFD_PORT_MULTIHOP &&
				   p.dport != BFD_PORT_ECHO))
		return pass_frame(ctx);
	if (r == PARSE_MALFORMED)
		return drop(BFD_DROP_MALFORMED_IP);
	if (p.dport == BFD_PORT_ECHO)
		return bfd_echo(ctx, &p); /* checks what it returns itself (kern/echo.h) */
	/* What the stack would have verified, before anything acts on the packet. */
	r = verify_checksums(ctx, &p);
	if (r != BFD_DROP__COUNT)
		return drop(r);
	return bfd_control(ctx, &p);
}

/*
 * The program the XDP links run: a tail call into slot 0 of xdp_bfd_progs, where the engine puts
 * xdp_bfd. A live handover then swaps the slot (one map update: no RCU grace period) instead of
 * the links' program (bpf_link_update() waits for one in the kernel's XDP dispatcher). It uses
 * no other map, so an engine of any maps layout can hand over through the pinned array; xdp_bfd
 * does not use the array, so nothing in it holds the array (which is cleared when its last user
 * reference goes). (libbpf binds the object's .rodata to every program it loads, this one too:
 * held while the entry program lives, used by no instruction of it.)
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xdp_bfd_progs SEC(".maps");

SEC("xdp")
int xdp_bfd_entry(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &xdp_bfd_progs, 0);
	return XDP_PASS; /* slot 0 empty: the stack has the packet, as with no program */
}

#include "kern/sweep.h" /* detection: uses wheel_mark() and count() above */

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
