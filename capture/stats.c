/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* stats.c - gap vectors and nearest-rank percentiles (see stats.h). */
#include "stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gapvec_push(struct gapvec *g, int64_t gap_ns)
{
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		int64_t *v = realloc(g->v_ns, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->v_ns = v;
		g->cap = cap;
	}
	g->v_ns[g->n++] = gap_ns;
	return 0;
}

int gapvec_append(struct gapvec *dst, const struct gapvec *src)
{
	if (dst->n + src->n > dst->cap) {
		size_t cap = dst->n + src->n;
		int64_t *v = realloc(dst->v_ns, (cap ? cap : 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		dst->v_ns = v;
		dst->cap = cap;
	}
	if (src->n)
		memcpy(dst->v_ns + dst->n, src->v_ns, src->n * sizeof(*src->v_ns));
	dst->n += src->n;
	return 0;
}

void gapvec_free(struct gapvec *g)
{
	free(g->v_ns);
	memset(g, 0, sizeof(*g));
}

/* Radix sort would be faster for millions of gaps; qsort keeps it simple and exact. */
static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

void gapvec_sort(struct gapvec *g)
{
	if (g->n > 1)
		qsort(g->v_ns, g->n, sizeof(*g->v_ns), cmp_i64);
}

size_t stats_rank(unsigned permille, size_t n)
{
	unsigned __int128 r;

	if (n == 0)
		return 0;
	r = ((unsigned __int128)permille * n + 999) / 1000;
	if (r < 1)
		r = 1;
	if (r > n)
		r = n;
	return (size_t)r;
}

int64_t stats_percentile_ns(const struct gapvec *sorted, unsigned permille)
{
	size_t r = stats_rank(permille, sorted->n);

	return r ? sorted->v_ns[r - 1] : 0;
}

void stats_summarise(struct gapvec *g, struct gap_summary *out)
{
	gapvec_sort(g);
	out->n = g->n;
	out->p50_ns = stats_percentile_ns(g, 500);
	out->p90_ns = stats_percentile_ns(g, 900);
	out->p99_ns = stats_percentile_ns(g, 990);
	out->p99_9_ns = stats_percentile_ns(g, 999);
	out->max_ns = g->n ? g->v_ns[g->n - 1] : 0;
}
