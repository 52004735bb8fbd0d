/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* stats.c - gap vectors and nearest-rank percentiles (see stats.h). */
#include "stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gapvec_grow_push(struct gapvec *g, int64_t gap_ns)
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

/*
 * LSD radix sort on the order-preserving unsigned image of the values (sign bit flipped),
 * 11-bit digits, passes whose digit is the same for every value skipped: gaps of one capture
 * share their top bits, so 10 million gaps take three or four linear passes instead of
 * qsort's n log n comparisons. Small vectors use insertion sort.
 */
#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)
#define RADIX_PASSES ((64 + RADIX_BITS - 1) / RADIX_BITS)

static void insertion_sort(int64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		int64_t x = v[i];
		size_t j = i;

		while (j && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

static int radix_sort(int64_t *v, size_t n)
{
	static const uint64_t flip = 1ull << 63;
	size_t (*count)[RADIX_SIZE];
	uint64_t *a = (uint64_t *)v, *b;

	count = calloc(RADIX_PASSES, sizeof(*count));
	b = malloc(n * sizeof(*b));
	if (!count || !b) {
		free(count);
		free(b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t k = a[i] ^ flip;

		for (unsigned p = 0; p < RADIX_PASSES; p++)
			count[p][(k >> (p * RADIX_BITS)) & (RADIX_SIZE - 1)]++;
	}
	for (unsigned p = 0; p < RADIX_PASSES; p++) {
		unsigned shift = p * RADIX_BITS;
		size_t sum = 0;
		uint64_t *t;

		if (count[p][((a[0] ^ flip) >> shift) & (RADIX_SIZE - 1)] == n)
			continue; /* every value has the same digit here */
		for (size_t d = 0; d < RADIX_SIZE; d++) {
			size_t c = count[p][d];

			count[p][d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[p][((a[i] ^ flip) >> shift) & (RADIX_SIZE - 1)]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	if (a != (uint64_t *)v) {
		memcpy(v, a, n * sizeof(*v));
		b = a;
	}
	free(b);
	free(count);
	return 0;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;

	return (p > q) - (p < q);
}

void gapvec_sort(struct gapvec *g)
{
	if (g->sorted_n == g->n && g->n)
		return;
	g->sorted_n = g->n;
	if (g->n < 64)
		insertion_sort(g->v_ns, g->n);
	else if (radix_sort(g->v_ns, g->n))
		qsort(g->v_ns, g->n, sizeof(*g->v_ns), cmp_i64); /* no memory for the copy */
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

/* Values at most @x in the sorted run @g (upper bound). */
static size_t count_le(const struct gapvec *g, int64_t x)
{
	size_t lo = 0, hi = g->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->v_ns[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The @rank-th smallest (1-based) value of the union of sorted runs within [lo, hi]. */
static int64_t select_runs(struct gapvec *const *runs, size_t k, size_t rank, int64_t lo,
			   int64_t hi)
{
	while (lo < hi) {
		/* midpoint without overflow, rounding toward -inf */
		int64_t mid = (lo & hi) + ((lo ^ hi) >> 1);
		size_t c = 0;

		for (size_t i = 0; i < k && c < rank; i++)
			c += count_le(runs[i], mid);
		if (c >= rank)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

void stats_summarise_runs(struct gapvec *const *runs, size_t k, struct gap_summary *out)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	size_t n = 0;

	for (size_t i = 0; i < k; i++) {
		gapvec_sort(runs[i]);
		if (!runs[i]->n)
			continue;
		n += runs[i]->n;
		if (runs[i]->v_ns[0] < lo)
			lo = runs[i]->v_ns[0];
		if (runs[i]->v_ns[runs[i]->n - 1] > hi)
			hi = runs[i]->v_ns[runs[i]->n - 1];
	}
	memset(out, 0, sizeof(*out));
	out->n = n;
	if (!n)
		return;
	out->p50_ns = select_runs(runs, k, stats_rank(500, n), lo, hi);
	out->p90_ns = select_runs(runs, k, stats_rank(900, n), lo, hi);
	out->p99_ns = select_runs(runs, k, stats_rank(990, n), lo, hi);
	out->p99_9_ns = select_runs(runs, k, stats_rank(999, n), lo, hi);
	out->max_ns = hi;
}
