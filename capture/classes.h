/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * classes.h - ends grouped by tag and class ("10ms x3"), per window: pooled gap percentiles,
 * budgets, down events, ends Up at the window's end (docs/bfdcap.md "classes").
 */
#ifndef BFDCAP_CLASSES_H
#define BFDCAP_CLASSES_H

#include "stats.h"
#include "track.h"

struct class_stats {
	int tag;       /* index into the tag rules, -1 untagged ("") */
	char name[48]; /* "10ms x3" or "never-up" */
	int ever_up;   /* 0 for "never-up": interval, mult and budget are null */
	uint32_t interval_us;
	uint8_t detect_mult;
	size_t ends, sessions;
	uint64_t packets;
	struct gap_summary gaps; /* pooled over the ends' gaps in the window */
	double max_over_budget;	 /* valid when has_ratio */
	int has_ratio;		 /* 0: no counted gap */
	uint64_t gaps_over_budget;
	uint64_t down_events; /* episodes attributed to these ends, starting in the window */
	uint64_t session_down_events; /* all episodes of their sessions, each session once */
	size_t ends_up_at_end;	      /* last packet before the window's end says Up */
	uint64_t jitter_checked, jitter_early, jitter_late; /* RFC 5880 6.8.7 */
	struct gap_summary reply;			    /* pooled reply latencies, ns */
	size_t detections, detections_early; /* early: declared before the budget ran out */
	int64_t detect_min_ns, detect_max_ns, overshoot_max_ns; /* valid when detections > 0 */
	size_t polls, polls_answered;
	int64_t poll_wait_max_ns; /* -1: none answered */
	size_t restarts;	  /* new My Discriminator values starting inside the window */
};

/*
 * classes_compute() - the class table of window @w (0 = main window). An end belongs to a
 * window's table when it sent a packet before the window's end. Sorted by tag (rule order,
 * untagged last), then never-up last, interval, Detect Mult.
 * Return: number of classes (*@out malloc'd, free with free()), or -ENOMEM.
 */
int classes_compute(const struct tracker *t, int w, struct class_stats **out);

/*
 * classes_add_end_events() - add @e's detections, Poll Sequences and restarts that fall in @w
 * to @c (also used for one end alone, with a zeroed @c whose poll_wait_max_ns is -1).
 */
void classes_add_end_events(struct class_stats *c, const struct end *e, const struct window *w);

#endif /* BFDCAP_CLASSES_H */
