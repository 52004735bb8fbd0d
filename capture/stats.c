/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* stats.c - gap vectors and nearest-rank percentiles (see stats.h). */
#include "stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gapvec_grow_push(struct gapvec *g, int64_t gap_ns)
{
	if ((uint64_t)gap_ns >> 32) {
		if (g->nbig == g->cap_big) {
			size_t cap = g->cap_big ? g->cap_big * 2 : 4;
			int64_t *v = realloc(g->big, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			g->big = v;
			g->cap_big = cap;
		}
		g->big[g->nbig++] = gap_ns;
		return 0;
	}
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		uint32_t *v = realloc(g->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		g->v = v;
		g->cap = cap;
	}
	g->v[g->n++] = (uint32_t)gap_ns;
	return 0;
}

void gapvec_free(struct gapvec *g)
{
	free(g->v);
	free(g->big);
	memset(g, 0, sizeof(*g));
}

/*
 * LSD radix sort of the 4-byte gaps, passes whose digit is the same for every value skipped, so
 * millions of gaps take a few linear passes instead of qsort's n log n comparisons. The digit
 * width follows the set's size: 11 bits (three passes) for large sets, 8 bits (four passes,
 * 256-entry tables) for small ones, where zeroing and prefix-summing 2048-entry tables would
 * cost more than the passes saved. A capture sorts once per end and window, thousands of times.
 * Small sets use insertion sort; the few 8-byte gaps, qsort.
 */
#define RADIX_WIDE_BITS 11
#define RADIX_WIDE_FROM 8192 /* gaps in a set */

static void insertion_sort_u32(uint32_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint32_t x = v[i];
		size_t j = i;

		while (j && v[j - 1] > x) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

static inline __attribute__((always_inline)) void
radix_passes(uint32_t *v, uint32_t *tmp, size_t n, unsigned bits,
	     uint32_t *count /* [passes][1 << bits], zeroed */)
{
	unsigned passes = (32 + bits - 1) / bits, size = 1u << bits, mask = size - 1;
	uint32_t *a = v, *b = tmp;

	for (size_t i = 0; i < n; i++)
		for (unsigned p = 0; p < passes; p++)
			count[p * size + ((a[i] >> (p * bits)) & mask)]++;
	for (unsigned p = 0; p < passes; p++) {
		uint32_t *c = count + p * size, sum = 0, *t;
		unsigned shift = p * bits;

		if (c[(a[0] >> shift) & mask] == n)
			continue; /* every value has the same digit here */
		for (unsigned d = 0; d < size; d++) {
			uint32_t k = c[d];

			c[d] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++)
			b[c[(a[i] >> shift) & mask]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	if (a != v)
		memcpy(v, a, n * sizeof(*v));
}

static int radix_sort_u32(uint32_t *v, size_t n)
{
	/* 32-bit counts: a set holds fewer than 2^32 gaps. Sized for the wide digits. */
	uint32_t count[((32 + RADIX_WIDE_BITS - 1) / RADIX_WIDE_BITS) << RADIX_WIDE_BITS];
	unsigned bits = n >= RADIX_WIDE_FROM ? RADIX_WIDE_BITS : 8;
	uint32_t *tmp = malloc(n * sizeof(*tmp));

	if (!tmp)
		return -ENOMEM;
	memset(count, 0, (size_t)((32 + bits - 1) / bits << bits) * sizeof(count[0]));
	if (bits == RADIX_WIDE_BITS) /* constant widths: the pass loops unroll */
		radix_passes(v, tmp, n, RADIX_WIDE_BITS, count);
	else
		radix_passes(v, tmp, n, 8, count);
	free(tmp);
	return 0;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;

	return (p > q) - (p < q);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t p = *(const int64_t *)x, q = *(const int64_t *)y;

	return (p > q) - (p < q);
}

void gapvec_sort(struct gapvec *g)
{
	if (g->sorted_n == gapvec_count(g) && g->sorted_n)
		return;
	g->sorted_n = gapvec_count(g);
	if (g->n < 64)
		insertion_sort_u32(g->v, g->n);
	else if (radix_sort_u32(g->v, g->n))
		qsort(g->v, g->n, sizeof(*g->v), cmp_u32); /* no memory for the copy */
	if (g->nbig > 1)
		qsort(g->big, g->nbig, sizeof(*g->big), cmp_i64);
}

/* 8-byte gaps below zero: they sort before every 4-byte gap. */
static size_t n_negative(const struct gapvec *g)
{
	size_t k = 0;

	while (k < g->nbig && g->big[k] < 0)
		k++;
	return k;
}

int64_t gapvec_at(const struct gapvec *g, size_t rank)
{
	size_t neg = n_negative(g), i = rank - 1;

	if (i < neg)
		return g->big[i];
	i -= neg;
	if (i < g->n)
		return g->v[i];
	return g->big[neg + (i - g->n)];
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
	size_t r = stats_rank(permille, gapvec_count(sorted));

	return r ? gapvec_at(sorted, r) : 0;
}

void stats_summarise(struct gapvec *g, struct gap_summary *out)
{
	gapvec_sort(g);
	out->n = gapvec_count(g);
	out->p50_ns = stats_percentile_ns(g, 500);
	out->p90_ns = stats_percentile_ns(g, 900);
	out->p99_ns = stats_percentile_ns(g, 990);
	out->p99_9_ns = stats_percentile_ns(g, 999);
	out->max_ns = out->n ? gapvec_at(g, out->n) : 0;
}

/* Values at most @x in the sorted set @g (upper bounds in both parts). */
static size_t count_le(const struct gapvec *g, int64_t x)
{
	size_t lo = 0, hi = g->nbig, c;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->big[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	c = lo;
	if (x < 0)
		return c;
	if (x > UINT32_MAX)
		return c + g->n;
	lo = 0;
	hi = g->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->v[mid] <= (uint64_t)x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return c + lo;
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
		size_t c = gapvec_count(runs[i]);

		gapvec_sort(runs[i]);
		if (!c)
			continue;
		n += c;
		if (gapvec_at(runs[i], 1) < lo)
			lo = gapvec_at(runs[i], 1);
		if (gapvec_at(runs[i], c) > hi)
			hi = gapvec_at(runs[i], c);
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
