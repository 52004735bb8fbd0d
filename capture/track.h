/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * track.h - sessions, ends, gaps, budgets, transitions and down events, one packet at a time
 * (definitions in docs/bfdcap.md; ladder.md section 5; RFC 5880 sections 6.8.4 and 6.8.6).
 *
 * Memory grows with sessions, transitions, episodes and kept gaps (8 bytes per gap and window
 * holding it), never with captured bytes.
 */
#ifndef BFDCAP_TRACK_H
#define BFDCAP_TRACK_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "decode.h"
#include "stats.h"

/* What one end gathered inside one window. */
struct end_win {
	struct gapvec gaps; /* counted gaps ending inside the window, ns */
	/* the gap with the largest gap/budget and its budget (0 when no gap: see track_win_ratio)
	 */
	int64_t worst_gap_ns, worst_budget_ns;
	uint64_t gaps_over_budget; /* gaps > budget */
	uint64_t packets;	   /* packets inside the window */
	uint64_t down_events;	   /* episodes attributed to this end starting inside */
	uint8_t seen;		   /* sent at least one packet before the window's end */
	uint8_t last_state;	   /* state of its last packet before the window's end */
	/* RFC 5880 6.8.7 on counted gaps not touching a Poll or Final packet */
	uint64_t jitter_checked, jitter_early, jitter_late;
	struct gapvec reply_ns; /* reply latencies ending inside the window, ns */
};

/* A first packet saying Down with diag 1 (detection time expired) after Up or Init. */
struct detection {
	int64_t ts_ns;	   /* that packet */
	int64_t detect_ns; /* since the peer's last packet */
	int64_t budget_ns; /* the peer's budget in force then */
};

/* A Poll Sequence this end started (RFC 5880 6.5): first packet with P to the peer's F. */
struct poll_seq {
	int64_t start_ns;
	int64_t wait_ns;
};

/* One My Discriminator value of an end: a restarted end comes back with a new one. */
struct incarnation {
	uint32_t my_disc;
	int64_t first_ts_ns;
	uint64_t packets;
};

struct transition {
	int64_t ts_ns;
	uint8_t from, to, diag; /* enum bfd_session_state x2, diag of the new packet */
};

/* The latest packet of an end, as far as tracking needs it. Host order, intervals in us. */
struct end_last {
	int64_t ts_ns;
	uint8_t state, flags, diag, detect_mult;
	uint32_t my_disc, your_disc;
	uint32_t desired_min_tx_us, required_min_rx_us;
};

/*
 * One direction of a session: the packets one address sends. Fields every packet touches come
 * first, so that an end's per-packet work stays within two cache lines.
 */
struct end {
	/* hot: read or written for every packet */
	struct end_last last;	    /* valid when has_last */
	int64_t last_budget_ns;	    /* budget in force after its latest packet (RFC 5880 6.8.4) */
	int64_t last_interval_ns;   /* interval in force after its latest packet */
	int64_t pending_peer_ns;    /* the peer's latest packet not yet answered, or TRACK_NONE */
	int64_t poll_open_ns;	    /* start of the open Poll Sequence, or TRACK_NONE */
	int64_t not_up_since_ns;    /* first non-Up packet after being Up, TRACK_NONE while Up */
	struct end_win *win;	    /* one per window */
	uint64_t inc_packets;	    /* main-window packets of the current incarnation */
	uint32_t class_interval_us; /* interval at the last Up packet */
	uint16_t sport;		    /* of the latest packet */
	uint8_t class_mult;	    /* Detect Mult at the last Up packet */
	uint8_t has_last, ever_up;
	/* cold: events and output */
	int tag; /* index into the tag rules, -1 for none */
	uint8_t src[16], dst[16];
	int64_t not_up_ns;     /* inside the main window */
	struct transition *tr; /* inside the main window */
	size_t ntr, cap_tr;
	struct detection *det;
	size_t ndet, cap_det;
	struct poll_seq *poll;
	size_t npoll, cap_poll;
	uint64_t final_without_poll; /* the peer's Finals answering no Poll of ours */
	struct incarnation *inc; /* packets of the last one: in inc_packets until track_finish() */
	size_t ninc, cap_inc;
};

/* "No timestamp" in the fields below: the reader never returns it (it saturates at MIN + 1). */
#define TRACK_NONE INT64_MIN

/* Reply latency counts when our packet follows the peer's within this (ladder.md 5). */
#define TRACK_REPLY_WINDOW_NS 2000000

/* A down episode (ladder.md 5): from the first non-Up packet of an Up session to both Up again. */
struct episode {
	int64_t start_ns, end_ns; /* end_ns TRACK_NONE while still down at the end */
	int64_t last_gap_ns;	  /* gap before the packet that started it, or TRACK_NONE */
	uint8_t end_idx;	  /* 0 or 1: the end it is attributed to */
	uint8_t diag;		  /* that packet's diag */
};

struct session {
	uint8_t a[16], b[16]; /* the address pair, a < b (memcmp) */
	uint16_t port;	      /* UDP destination port: 3784, 4784 or 6784 */
	uint8_t family;	      /* 4 or 6 */
	uint8_t up;	      /* both ends' latest packets say Up */
	uint8_t in_episode;   /* the last episode has not ended */
	struct end ends[2];   /* ends[0] is sent by a, ends[1] by b */
	uint32_t index;	      /* position in tracker.sessions */
	struct episode *ep;   /* every episode, windows filter on output */
	size_t nep, cap_ep;
	uint64_t *win_down; /* episodes starting inside each window */
};

/* An index slot: idx is the session's position + 1 (0: empty); tag, hash bits to skip misses. */
struct track_slot {
	uint32_t tag, idx;
	struct session *s; /* sessions[idx - 1]: one dependent load less per packet */
};

struct tracker {
	struct window *win; /* win[0] is the main window (--from/--to), then the phases */
	int nwin;
	const struct tag_rule *tags;
	int ntags;
	struct session **sessions; /* in order of first packet */
	size_t nsessions, cap_sessions;
	struct track_slot *slots; /* open-addressing index into sessions */
	size_t nslots;
	uint64_t frames, bfd_packets, echo_packets;
	uint64_t ts_backwards; /* frames stamped earlier than the frame before them */
	uint64_t malformed[BFDCAP_M__COUNT];
	uint64_t checksums[BFDCAP_CSUM__COUNT]; /* BFD frames in the main window, by verdict */
	int64_t first_ts_ns, last_ts_ns; /* frames inside the main window; TRACK_NONE before */
	int64_t end_ts_ns; /* latest timestamp processed, for the open tail of not-Up time */
	int oom;	   /* an allocation failed: figures are incomplete */
	void *csv; /* FILE *: --csv-gaps, one line per counted gap in the main window, or NULL */
	void *gaps_bin; /* FILE *: --gaps-bin, the same gaps as struct gap_record, or NULL */
};

/*
 * --gaps-bin: one record per counted gap of the main window (the --csv-gaps rows, in the
 * same order), host byte order. session is the index into the JSON report's "sessions"
 * (order of first packet), end 0 for the packets of addr_a, 1 for those of addr_b.
 */
struct gap_record {
	int64_t ts_ns, gap_ns, budget_ns;
	uint32_t session, end;
};

/*
 * track_init() - @windows[0] must be the main window; @windows and @tags must outlive @t.
 * Return: 0 or -ENOMEM.
 */
int track_init(struct tracker *t, struct window *windows, int nwin, const struct tag_rule *tags,
	       int ntags);

/*
 * track_packet() - account one decoded packet that decode_frame() returned DECODE_OK for.
 * Control packets drive sessions; echo packets are counted. Packets must arrive in capture
 * order. Return: 0, or -ENOMEM (t->oom is set; later packets are still counted where possible).
 */
int track_packet(struct tracker *t, const struct bfdcap_pkt *p);

/*
 * b - a without overflow: a damaged capture can hold any timestamps (saturated to the int64
 * range by the reader), and every figure stays defined for them.
 */
static inline int64_t track_span_ns(int64_t a, int64_t b)
{
	int64_t d;

	if (__builtin_sub_overflow(b, a, &d))
		return b > a ? INT64_MAX : INT64_MIN;
	return d;
}

/* Largest gap/budget of @ew as a double; meaningful when ew->worst_budget_ns != 0 (a gap). */
static inline double track_win_ratio(const struct end_win *ew)
{
	return ew->worst_budget_ns ? (double)ew->worst_gap_ns / (double)ew->worst_budget_ns : 0;
}

/* 1 when @ts_ns falls in window @w: start_ns <= ts < end_ns. */
static inline int track_in_window(const struct window *w, int64_t ts_ns)
{
	return ts_ns >= w->start_ns && ts_ns < w->end_ns;
}

/*
 * track_finish() - close open not-Up spans at the end of the capture. Call once, after the
 * last packet and before reading results.
 */
void track_finish(struct tracker *t);

/*
 * Interval of end @e of @s (the sender), RFC 5880 6.8.4: max(its latest Desired Min TX, the
 * receiver's latest Required Min RX, 0 if the receiver was never seen), in us.
 */
uint32_t track_interval_us(const struct session *s, int e);

/* Detection budget of end @e: its latest Detect Mult x track_interval_us(), in ns. */
int64_t track_budget_ns(const struct session *s, int e);

/* "10ms x3", "never-up" for an end never seen Up. @out at least 48 bytes. */
void track_class_name(const struct end *e, char *out, size_t outlen);

void track_free(struct tracker *t);

#endif /* BFDCAP_TRACK_H */
