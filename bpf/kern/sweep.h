/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/sweep.h - detection (RFC 5880 section 6.8.4): one timer walks a timing wheel of deadlines
 * (BPF side only; the wheel's layout in bfd_shared.h, BFD_WHEEL_*). xdp_bfd.bpf.c includes it
 * after wheel_mark(), and runs it from its timer and from the sweep_at test program.
 */
#ifndef BFD_KERN_SWEEP_H
#define BFD_KERN_SWEEP_H

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

#endif /* BFD_KERN_SWEEP_H */
