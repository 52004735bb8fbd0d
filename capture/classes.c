/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* classes.c - per tag and class aggregation over a window (see classes.h). */
#include "classes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int same_class(const struct class_stats *c, const struct end *e, int tag)
{
	if (c->tag != tag || c->ever_up != e->ever_up)
		return 0;
	return !e->ever_up ||
	       (c->interval_us == e->class_interval_us && c->detect_mult == e->class_mult);
}

static int cmp_class(const void *a, const void *b)
{
	const struct class_stats *x = a, *y = b;
	unsigned tx = (unsigned)x->tag, ty = (unsigned)y->tag; /* -1 sorts last */

	if (tx != ty)
		return tx < ty ? -1 : 1;
	if (x->ever_up != y->ever_up)
		return x->ever_up ? -1 : 1;
	if (x->interval_us != y->interval_us)
		return x->interval_us < y->interval_us ? -1 : 1;
	return (x->detect_mult > y->detect_mult) - (x->detect_mult < y->detect_mult);
}

void classes_add_end_events(struct class_stats *c, const struct end *e, const struct window *w)
{
	for (size_t i = 0; i < e->ndet; i++) {
		const struct detection *d = &e->det[i];
		int64_t over = track_span_ns(d->budget_ns, d->detect_ns);

		if (!track_in_window(w, d->ts_ns))
			continue;
		if (!c->detections || d->detect_ns < c->detect_min_ns)
			c->detect_min_ns = d->detect_ns;
		if (!c->detections || d->detect_ns > c->detect_max_ns)
			c->detect_max_ns = d->detect_ns;
		if (!c->detections || over > c->overshoot_max_ns)
			c->overshoot_max_ns = over;
		c->detections++;
		c->detections_early += d->detect_ns < d->budget_ns;
	}
	for (size_t i = 0; i < e->npoll; i++) {
		if (!track_in_window(w, e->poll[i].start_ns))
			continue;
		c->polls++;
		c->polls_answered++;
		if (e->poll[i].wait_ns > c->poll_wait_max_ns)
			c->poll_wait_max_ns = e->poll[i].wait_ns;
	}
	if (e->poll_open_ns != TRACK_NONE && track_in_window(w, e->poll_open_ns))
		c->polls++;
	for (size_t i = 1; i < e->ninc; i++)
		c->restarts += track_in_window(w, e->inc[i].first_ts_ns);
}

int classes_compute(const struct tracker *t, int w, struct class_stats **out)
{
	struct class_stats *cs = NULL;
	struct gapvec **runs = NULL, **rruns = NULL;
	size_t *nruns = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	/* Collect the groups. */
	for (size_t i = 0; i < t->nsessions; i++) {
		for (int k = 0; k < 2; k++) {
			const struct end *e = &t->sessions[i]->ends[k];
			size_t c;

			if (!e->win[w].seen)
				continue;
			for (c = 0; c < n && !same_class(&cs[c], e, e->tag); c++)
				;
			if (c < n)
				continue;
			if (n == cap) {
				struct class_stats *v;

				cap = cap ? cap * 2 : 8;
				v = realloc(cs, cap * sizeof(*v));
				if (!v) {
					free(cs);
					return -ENOMEM;
				}
				cs = v;
			}
			memset(&cs[n], 0, sizeof(cs[n]));
			cs[n].tag = e->tag;
			cs[n].ever_up = e->ever_up;
			cs[n].interval_us = e->class_interval_us;
			cs[n].detect_mult = e->class_mult;
			cs[n].poll_wait_max_ns = -1;
			track_class_name(e, cs[n].name, sizeof(cs[n].name));
			n++;
		}
	}
	if (n)
		qsort(cs, n, sizeof(*cs), cmp_class);
	/* Each class's gap vectors, as runs: one array of pointers, sliced per class below. */
	nruns = calloc(n ? n : 1, sizeof(*nruns));
	runs = calloc(t->nsessions * 2 + 1, sizeof(*runs));
	rruns = calloc(t->nsessions * 2 + 1, sizeof(*rruns));
	if (!nruns || !runs || !rruns) {
		free(nruns);
		free(runs);
		free(rruns);
		free(cs);
		return -ENOMEM;
	}

	/* Fill them. */
	for (size_t i = 0; i < t->nsessions; i++) {
		const struct session *s = t->sessions[i];
		size_t counted[2] = {(size_t)-1, (size_t)-1};

		for (int k = 0; k < 2; k++) {
			const struct end *e = &s->ends[k];
			const struct end_win *ew = &e->win[w];
			size_t c;

			if (!ew->seen)
				continue;
			for (c = 0; !same_class(&cs[c], e, e->tag); c++)
				;
			cs[c].ends++;
			cs[c].packets += ew->packets;
			nruns[c]++;
			if (ew->worst_budget_ns &&
			    (!cs[c].has_ratio || track_win_ratio(ew) > cs[c].max_over_budget)) {
				cs[c].max_over_budget = track_win_ratio(ew);
				cs[c].has_ratio = 1;
			}
			cs[c].gaps_over_budget += ew->gaps_over_budget;
			cs[c].down_events += ew->down_events;
			if (ew->last_state == BFD_STATE_UP)
				cs[c].ends_up_at_end++;
			cs[c].jitter_checked += ew->jitter_checked;
			cs[c].jitter_early += ew->jitter_early;
			cs[c].jitter_late += ew->jitter_late;
			classes_add_end_events(&cs[c], e, &t->win[w]);
			if (counted[0] != c && counted[1] != c) {
				cs[c].sessions++;
				cs[c].session_down_events += s->win_down[w];
				counted[k] = c;
			}
		}
	}
	/* Slice the run arrays by class (counting sort), then summarise each slice. */
	{
		size_t *at = calloc(n ? n : 1, sizeof(*at)), off = 0;

		if (!at) {
			rc = -ENOMEM;
			goto out;
		}
		for (size_t c = 0; c < n; c++) {
			at[c] = off;
			off += nruns[c];
		}
		for (size_t i = 0; i < t->nsessions; i++)
			for (int k = 0; k < 2; k++) {
				struct end *e = &t->sessions[i]->ends[k];
				size_t c;

				if (!e->win[w].seen)
					continue;
				for (c = 0; !same_class(&cs[c], e, e->tag); c++)
					;
				runs[at[c]] = &e->win[w].gaps;
				rruns[at[c]++] = &e->win[w].reply_ns;
			}
		for (size_t c = 0, o = 0; c < n; o += nruns[c++]) {
			stats_summarise_runs(runs + o, nruns[c], &cs[c].gaps);
			stats_summarise_runs(rruns + o, nruns[c], &cs[c].reply);
		}
		free(at);
	}
out:
	free(nruns);
	free(runs);
	free(rruns);
	if (rc) {
		free(cs);
		return rc;
	}
	*out = cs;
	return (int)n;
}
