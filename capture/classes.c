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
	return !e->ever_up || (c->interval_us == e->class_interval_us &&
			       c->detect_mult == e->class_mult);
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

int classes_compute(const struct tracker *t, int w, struct class_stats **out)
{
	struct class_stats *cs = NULL;
	struct gapvec *pool = NULL;
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
			cs[n].max_over_budget = -1;
			track_class_name(e, cs[n].name, sizeof(cs[n].name));
			n++;
		}
	}
	if (n)
		qsort(cs, n, sizeof(*cs), cmp_class);
	pool = calloc(n ? n : 1, sizeof(*pool));
	if (!pool) {
		free(cs);
		return -ENOMEM;
	}

	/* Fill them. */
	for (size_t i = 0; i < t->nsessions; i++) {
		const struct session *s = t->sessions[i];
		size_t counted[2] = { (size_t)-1, (size_t)-1 };

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
			if (gapvec_append(&pool[c], &ew->gaps))
				rc = -ENOMEM;
			if (ew->max_over_budget > cs[c].max_over_budget)
				cs[c].max_over_budget = ew->max_over_budget;
			cs[c].gaps_over_budget += ew->gaps_over_budget;
			cs[c].down_events += ew->down_events;
			if (ew->last_state == BFD_STATE_UP)
				cs[c].ends_up_at_end++;
			if (counted[0] != c && counted[1] != c) {
				cs[c].sessions++;
				cs[c].session_down_events += s->win_down[w];
				counted[k] = c;
			}
		}
	}
	for (size_t c = 0; c < n; c++) {
		stats_summarise(&pool[c], &cs[c].gaps);
		gapvec_free(&pool[c]);
	}
	free(pool);
	if (rc) {
		free(cs);
		return rc;
	}
	*out = cs;
	return (int)n;
}
