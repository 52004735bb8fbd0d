/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* track.c - session and end tracking (see track.h and docs/bfdcap.md "Definitions"). */
#include "track.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int track_init(struct tracker *t, struct window *windows, int nwin, const struct tag_rule *tags,
	       int ntags)
{
	memset(t, 0, sizeof(*t));
	t->win = windows;
	t->nwin = nwin;
	t->tags = tags;
	t->ntags = ntags;
	t->first_ts_ns = t->last_ts_ns = t->end_ts_ns = TRACK_NONE;
	t->nslots = 1024;
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	return t->slots ? 0 : -ENOMEM;
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A multiply-xorshift mix of the 34-byte key: a few cycles, and spreads addresses that differ
 * in any byte (lab addresses differ only in their last bytes). */
static uint64_t session_hash(int family, uint16_t port, const uint8_t *a, const uint8_t *b)
{
	uint64_t h = (uint64_t)(family << 16 | port) * 0x9E3779B97F4A7C15ull;

	h = (h ^ load64(a)) * 0xBF58476D1CE4E5B9ull;
	h = (h ^ load64(a + 8)) * 0x94D049BB133111EBull;
	h = (h ^ load64(b)) * 0xBF58476D1CE4E5B9ull;
	h = (h ^ load64(b + 8)) * 0x94D049BB133111EBull;
	/*
	 * Finish with a full avalanche (MurmurHash3's fmix64): a multiply only carries upwards,
	 * and the index takes the low bits, which otherwise barely depend on the addresses' last
	 * bytes (IPv4 lab addresses): linear probing then walked about 13 slots per packet.
	 */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static inline int session_is(const struct session *s, int family, uint16_t port, const uint8_t *a,
			     const uint8_t *b)
{
	return s->family == family && s->port == port && load64(s->a) == load64(a) &&
	       load64(s->a + 8) == load64(a + 8) && load64(s->b) == load64(b) &&
	       load64(s->b + 8) == load64(b + 8);
}

static int grow_index(struct tracker *t)
{
	size_t n = t->nslots * 2;
	struct track_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->nsessions; i++) {
		const struct session *s = t->sessions[i];
		uint64_t h = session_hash(s->family, s->port, s->a, s->b);
		size_t j = h & (n - 1);

		while (slots[j].idx)
			j = (j + 1) & (n - 1);
		slots[j] = (struct track_slot){
		    .tag = (uint32_t)(h >> 32), .idx = (uint32_t)(i + 1), .s = t->sessions[i]};
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = n;
	return 0;
}

static int end_tag(const struct tracker *t, int family, const uint8_t *src, const uint8_t *dst)
{
	int i;

	for (i = 0; i < t->ntags; i++) {
		const struct tag_rule *r = &t->tags[i];

		if (prefix_match(&r->src, family, src) &&
		    (!r->has_dst || prefix_match(&r->dst, family, dst)))
			break;
	}
	if (i == t->ntags)
		return -1;
	/* Rules of one name are one tag (a class spread over several prefixes): its first. */
	for (int j = 0; j < i; j++)
		if (!strcmp(t->tags[j].name, t->tags[i].name))
			return j;
	return i;
}

static struct session *session_new(struct tracker *t, int family, uint16_t port, const uint8_t *a,
				   const uint8_t *b)
{
	/* One block: the session, then both ends' window stats, then its window counts, so that
	 * one packet's work stays on neighbouring cache lines. */
	size_t nw = (size_t)t->nwin;
	struct session *s =
	    calloc(1, sizeof(*s) + 2 * nw * sizeof(struct end_win) + nw * sizeof(uint64_t));
	struct end_win *wins;

	if (!s)
		return NULL;
	wins = (struct end_win *)(s + 1);
	s->family = (uint8_t)family;
	s->port = port;
	memcpy(s->a, a, 16);
	memcpy(s->b, b, 16);
	s->win_down = (uint64_t *)(wins + 2 * nw);
	for (int e = 0; e < 2; e++) {
		struct end *en = &s->ends[e];

		memcpy(en->src, e ? b : a, 16);
		memcpy(en->dst, e ? a : b, 16);
		en->tag = end_tag(t, family, en->src, en->dst);
		en->not_up_since_ns = TRACK_NONE;
		en->pending_peer_ns = TRACK_NONE;
		en->poll_open_ns = TRACK_NONE;
		en->win = wins + (size_t)e * nw;
	}
	return s;
}

/* The session key of @p: its addresses in order (a < b), and which end sent it. */
static inline int session_key(const struct bfdcap_pkt *p, const uint8_t **a, const uint8_t **b)
{
	/* memcmp(src, dst, 16) > 0, as two big-endian word compares (no library call) */
	uint64_t s0 = __builtin_bswap64(load64(p->src)), d0 = __builtin_bswap64(load64(p->dst));

	if (s0 > d0 || (s0 == d0 && __builtin_bswap64(load64(p->src + 8)) >
					__builtin_bswap64(load64(p->dst + 8)))) {
		*a = p->dst;
		*b = p->src;
		return 1;
	}
	*a = p->src;
	*b = p->dst;
	return 0;
}

static struct session *session_find(struct tracker *t, const struct bfdcap_pkt *p, int *end_idx)
{
	const uint8_t *a, *b;
	struct session *s;
	uint64_t h;
	size_t j;

	*end_idx = session_key(p, &a, &b);
	h = session_hash(p->family, p->dport, a, b);
	for (j = h & (t->nslots - 1); t->slots[j].idx; j = (j + 1) & (t->nslots - 1)) {
		if (t->slots[j].tag != (uint32_t)(h >> 32))
			continue;
		s = t->slots[j].s;
		if (session_is(s, p->family, p->dport, a, b))
			return s;
	}
	if (t->nsessions == t->cap_sessions) {
		size_t cap = t->cap_sessions ? t->cap_sessions * 2 : 64;
		struct session **v = realloc(t->sessions, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->sessions = v;
		t->cap_sessions = cap;
	}
	s = session_new(t, p->family, p->dport, a, b);
	if (!s)
		return NULL;
	s->index = (uint32_t)t->nsessions;
	t->sessions[t->nsessions++] = s;
	t->slots[j] =
	    (struct track_slot){.tag = (uint32_t)(h >> 32), .idx = (uint32_t)t->nsessions, .s = s};
	if (t->nsessions * 2 > t->nslots && grow_index(t))
		return NULL; /* s stays in sessions; the index is still valid, only full-ish */
	return s;
}

uint32_t track_interval_us(const struct session *s, int e)
{
	const struct end *en = &s->ends[e], *r = &s->ends[!e];
	uint32_t tx = en->last.desired_min_tx_us;
	uint32_t rx = r->has_last ? r->last.required_min_rx_us : 0;

	return tx > rx ? tx : rx;
}

int64_t track_budget_ns(const struct session *s, int e)
{
	return (int64_t)s->ends[e].last.detect_mult * track_interval_us(s, e) * 1000;
}

void track_class_name(const struct end *e, char *out, size_t outlen)
{
	if (!e->ever_up)
		snprintf(out, outlen, "never-up");
	else
		snprintf(out, outlen, "%gms x%u", e->class_interval_us / 1000.0, e->class_mult);
}

/* Add the not-Up span [from, to) clipped to the main window. */
static void add_not_up(struct tracker *t, struct end *e, int64_t from_ns, int64_t to_ns)
{
	const struct window *w = &t->win[0];

	if (from_ns < w->start_ns)
		from_ns = w->start_ns;
	if (to_ns > w->end_ns)
		to_ns = w->end_ns;
	if (to_ns > from_ns)
		if (__builtin_add_overflow(e->not_up_ns, track_span_ns(from_ns, to_ns),
					   &e->not_up_ns))
			e->not_up_ns = INT64_MAX;
}

/* Append @item (of @size bytes) to a growable array; 0 or -ENOMEM. */
static int push(void **arr, size_t *n, size_t *cap, const void *item, size_t size)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 4;
		void *v = realloc(*arr, c * size);

		if (!v)
			return -ENOMEM;
		*arr = v;
		*cap = c;
	}
	memcpy((char *)*arr + *n * size, item, size);
	(*n)++;
	return 0;
}

#define PUSH(arr, n, cap, item) push((void **)&(arr), &(n), &(cap), &(item), sizeof(item))

/* --csv-gaps line: ts_ns,session,src,dst,tag,gap_ns,budget_ns (tag quoted if it needs it). */
static void csv_gap(struct tracker *t, const struct session *s, int ei, int64_t ts_ns,
		    int64_t gap_ns, int64_t budget_ns)
{
	const struct end *e = &s->ends[ei];
	const char *tag = e->tag >= 0 ? t->tags[e->tag].name : "";
	char a[64], b[64];
	FILE *f = t->csv;

	decode_addr_str(s->family, s->a, a, sizeof(a));
	decode_addr_str(s->family, s->b, b, sizeof(b));
	fprintf(f, s->family == 6 ? "%lld,[%s]-[%s]:%u," : "%lld,%s-%s:%u,", (long long)ts_ns, a, b,
		s->port);
	fprintf(f, "%s,%s,", ei ? b : a, ei ? a : b);
	if (strpbrk(tag, ",\"\n")) {
		fputc('"', f);
		for (; *tag; tag++) {
			if (*tag == '"')
				fputc('"', f);
			fputc(*tag, f);
		}
		fputc('"', f);
	} else {
		fputs(tag, f);
	}
	fprintf(f, ",%lld,%lld\n", (long long)gap_ns, (long long)budget_ns);
}

/* RFC 5880 6.8.7: 75-100 % of the interval, 75-90 % with Detect Mult 1; -1 early, 1 late. */
static int jitter_verdict(int64_t gap_ns, int64_t interval_ns, unsigned mult)
{
	__int128 g = (__int128)gap_ns * 100, iv = interval_ns;

	if (g < iv * 75)
		return -1;
	if (g > iv * (mult == 1 ? 90 : 100))
		return 1;
	return 0;
}

static int track_control(struct tracker *t, const struct bfdcap_pkt *p)
{
	int ei, rc = 0;
	struct session *s = session_find(t, p, &ei);
	struct end *e, *r;
	int64_t gap_ns = TRACK_NONE;
	int counted = 0, in_main;

	if (!s)
		return -ENOMEM;
	e = &s->ends[ei];
	r = &s->ends[!ei];
	in_main = track_in_window(&t->win[0], p->ts_ns);

	if (e->has_last) {
		gap_ns = track_span_ns(e->last.ts_ns, p->ts_ns);
		/* A gap counts when both packets say Up and the receiver, seen, is not in Demand.
		 */
		counted = e->last.state == BFD_STATE_UP && p->state == BFD_STATE_UP &&
			  r->has_last &&
			  !(r->last.state == BFD_STATE_UP && (r->last.flags & BFD_FLAG_DEMAND));
		if (e->last.state != p->state && in_main) {
			struct transition tr = {.ts_ns = p->ts_ns,
						.from = e->last.state,
						.to = p->state,
						.diag = p->diag};

			rc |= PUSH(e->tr, e->ntr, e->cap_tr, tr);
		}
	}
	if (counted) {
		/*
		 * Budget in force while the gap ran: set by the packet that opened it and the
		 * receiver's latest packet before that (RFC 5880 6.8.4). Packets the receiver
		 * sends during the gap (Down after its detection fired) do not change it.
		 */
		int64_t budget_ns = e->last_budget_ns;
		/* as a fraction, compared by cross-multiplying: no division per gap */
		int64_t num = budget_ns > 0 ? gap_ns : 0, den = budget_ns > 0 ? budget_ns : 1;
		/* Poll and Final packets are sent off the periodic timer (RFC 5880 6.8.7). */
		int pf = (e->last.flags | p->flags) & (BFD_FLAG_POLL | BFD_FLAG_FINAL);
		int jitter =
		    pf ? 0 : jitter_verdict(gap_ns, e->last_interval_ns, e->last.detect_mult);

		for (int w = 0; w < t->nwin; w++) {
			struct end_win *ew = &e->win[w];

			if (!track_in_window(&t->win[w], p->ts_ns))
				continue;
			rc |= gapvec_push(&ew->gaps, gap_ns);
			if (!ew->worst_budget_ns || (__int128)num * ew->worst_budget_ns >
							(__int128)ew->worst_gap_ns * den) {
				ew->worst_gap_ns = num;
				ew->worst_budget_ns = den;
			}
			if (gap_ns > budget_ns)
				ew->gaps_over_budget++;
			if (!pf) {
				ew->jitter_checked++;
				ew->jitter_early += jitter < 0;
				ew->jitter_late += jitter > 0;
			}
		}
		if (t->csv && in_main)
			csv_gap(t, s, ei, p->ts_ns, gap_ns, budget_ns);
		if (t->gaps_bin && in_main) {
			struct gap_record g = {.ts_ns = p->ts_ns,
					       .gap_ns = gap_ns,
					       .budget_ns = budget_ns,
					       .session = s->index,
					       .end = (uint32_t)ei};

			fwrite(&g, sizeof(g), 1, t->gaps_bin);
		}
	}

	/*
	 * Detection time: the first Down with diag 1 after Up or Init, measured from the peer's
	 * last packet, when that packet said Up or Init (the peer fell silent). An end that was
	 * itself stalled and wakes up to an expired timer sees the peer's Down packets: skipped.
	 */
	if (p->state == BFD_STATE_DOWN && p->diag == BFD_DIAG_DETECT_EXPIRED && e->has_last &&
	    (e->last.state == BFD_STATE_UP || e->last.state == BFD_STATE_INIT) && r->has_last &&
	    (r->last.state == BFD_STATE_UP || r->last.state == BFD_STATE_INIT)) {
		struct detection d = {.ts_ns = p->ts_ns,
				      .detect_ns = track_span_ns(r->last.ts_ns, p->ts_ns),
				      .budget_ns = r->last_budget_ns};

		rc |= PUSH(e->det, e->ndet, e->cap_det, d);
	}

	/* Reply latency: our first packet within 2 ms of the peer's latest. */
	if (e->pending_peer_ns != TRACK_NONE &&
	    track_span_ns(e->pending_peer_ns, p->ts_ns) <= TRACK_REPLY_WINDOW_NS)
		for (int w = 0; w < t->nwin; w++)
			if (track_in_window(&t->win[w], p->ts_ns))
				rc |= gapvec_push(&e->win[w].reply_ns,
						  track_span_ns(e->pending_peer_ns, p->ts_ns));
	e->pending_peer_ns = TRACK_NONE;
	r->pending_peer_ns = p->ts_ns;

	/* Poll Sequences: ours open with P, the peer's F closes them (RFC 5880 6.5). */
	if ((p->flags & BFD_FLAG_POLL) && e->poll_open_ns == TRACK_NONE)
		e->poll_open_ns = p->ts_ns;
	if (p->flags & BFD_FLAG_FINAL) {
		if (r->poll_open_ns != TRACK_NONE) {
			struct poll_seq ps = {.start_ns = r->poll_open_ns,
					      .wait_ns = track_span_ns(r->poll_open_ns, p->ts_ns)};

			rc |= PUSH(r->poll, r->npoll, r->cap_poll, ps);
			r->poll_open_ns = TRACK_NONE;
		} else if (in_main) {
			r->final_without_poll++;
		}
	}

	/* Incarnations: a new My Discriminator is a restarted end. */
	if (!e->has_last || e->last.my_disc != p->my_disc) {
		struct incarnation in = {.my_disc = p->my_disc, .first_ts_ns = p->ts_ns};

		if (e->ninc)
			e->inc[e->ninc - 1].packets = e->inc_packets;
		e->inc_packets = 0;
		rc |= PUSH(e->inc, e->ninc, e->cap_inc, in);
	}
	e->inc_packets += in_main;

	/* Time not Up, once it has been Up. */
	if (e->ever_up) {
		if (p->state != BFD_STATE_UP && e->not_up_since_ns == TRACK_NONE)
			e->not_up_since_ns = p->ts_ns;
		else if (p->state == BFD_STATE_UP && e->not_up_since_ns != TRACK_NONE) {
			add_not_up(t, e, e->not_up_since_ns, p->ts_ns);
			e->not_up_since_ns = TRACK_NONE;
		}
	}

	/* Take the packet as the end's latest. */
	e->has_last = 1;
	e->sport = p->sport;
	e->last = (struct end_last){.ts_ns = p->ts_ns,
				    .state = p->state,
				    .flags = p->flags,
				    .diag = p->diag,
				    .detect_mult = p->detect_mult,
				    .my_disc = p->my_disc,
				    .your_disc = p->your_disc,
				    .desired_min_tx_us = p->desired_min_tx_us,
				    .required_min_rx_us = p->required_min_rx_us};
	e->last_interval_ns = (int64_t)track_interval_us(s, ei) * 1000;
	e->last_budget_ns = track_budget_ns(s, ei);
	if (p->state == BFD_STATE_UP) {
		e->ever_up = 1;
		e->class_interval_us = track_interval_us(s, ei);
		e->class_mult = p->detect_mult;
	}
	for (int w = 0; w < t->nwin; w++) {
		if (p->ts_ns < t->win[w].end_ns) {
			e->win[w].seen = 1;
			e->win[w].last_state = p->state;
		}
		if (track_in_window(&t->win[w], p->ts_ns))
			e->win[w].packets++;
	}

	/* Down episodes: Up session, then a non-Up packet; over when both are Up again. */
	if (s->up && p->state != BFD_STATE_UP) {
		struct episode ep = {.start_ns = p->ts_ns,
				     .end_ns = TRACK_NONE,
				     .last_gap_ns = gap_ns,
				     .end_idx = (uint8_t)ei,
				     .diag = p->diag};

		if (PUSH(s->ep, s->nep, s->cap_ep, ep) == 0)
			s->in_episode = 1;
		else
			rc = -ENOMEM;
		for (int w = 0; w < t->nwin; w++) {
			if (!track_in_window(&t->win[w], p->ts_ns))
				continue;
			e->win[w].down_events++;
			s->win_down[w]++;
		}
	}
	s->up = e->last.state == BFD_STATE_UP && r->has_last && r->last.state == BFD_STATE_UP;
	if (s->up && s->in_episode) {
		s->ep[s->nep - 1].end_ns = p->ts_ns;
		s->in_episode = 0;
	}
	return rc ? -ENOMEM : 0;
}

int track_packet(struct tracker *t, const struct bfdcap_pkt *p)
{
	int rc = 0;

	if (p->ts_ns > t->end_ts_ns)
		t->end_ts_ns = p->ts_ns;
	if (p->kind == BFDCAP_KIND_ECHO) {
		if (track_in_window(&t->win[0], p->ts_ns))
			t->echo_packets++;
		return 0;
	}
	if (track_in_window(&t->win[0], p->ts_ns))
		t->bfd_packets++;
	rc = track_control(t, p);
	if (rc)
		t->oom = 1;
	return rc;
}

void track_finish(struct tracker *t)
{
	for (size_t i = 0; i < t->nsessions; i++)
		for (int e = 0; e < 2; e++) {
			struct end *en = &t->sessions[i]->ends[e];

			if (en->ninc)
				en->inc[en->ninc - 1].packets = en->inc_packets;
			if (en->not_up_since_ns != TRACK_NONE) {
				add_not_up(t, en, en->not_up_since_ns, t->end_ts_ns);
				en->not_up_since_ns = TRACK_NONE;
			}
		}
}

void track_free(struct tracker *t)
{
	for (size_t i = 0; i < t->nsessions; i++) {
		struct session *s = t->sessions[i];

		for (int e = 0; e < 2; e++) {
			for (int w = 0; w < t->nwin; w++) {
				gapvec_free(&s->ends[e].win[w].gaps);
				gapvec_free(&s->ends[e].win[w].reply_ns);
			}
			free(s->ends[e].tr);
			free(s->ends[e].det);
			free(s->ends[e].poll);
			free(s->ends[e].inc);
		}
		free(s->ep);
		free(s); /* with its window stats: one block */
	}
	free(t->sessions);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}
