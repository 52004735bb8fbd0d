/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stats.h - kept gaps and nearest-rank percentiles, the one percentile implementation of the
 * project (docs/bfdcap.md, ladder.md section 5).
 */
#ifndef BFDCAP_STATS_H
#define BFDCAP_STATS_H

#include <stddef.h>
#include <stdint.h>

/*
 * A growable set of gaps in ns, stored compactly: gaps in [0, 2^32) ns (up to 4.29 s, nearly
 * all of them) take 4 bytes; the rest (negative gaps of a reordered capture, stalls longer than
 * 4.29 s) go to a small 8-byte side array. Zero-initialised is empty.
 */
struct gapvec {
	uint32_t *v; /* gaps in [0, 2^32) ns */
	size_t n, cap;
	int64_t *big; /* the others */
	size_t nbig, cap_big;
	size_t sorted_n; /* gapvec_count() when last sorted: appending needs no extra store */
};

/* Grow and append (the slow path of gapvec_push()). Return: 0 or -ENOMEM. */
int gapvec_grow_push(struct gapvec *g, int64_t gap_ns);

/* Append @gap_ns. Return: 0, or -ENOMEM (the set is unchanged). Inline: once per gap. */
static inline int gapvec_push(struct gapvec *g, int64_t gap_ns)
{
	if (__builtin_expect((uint64_t)gap_ns >> 32 || g->n == g->cap, 0))
		return gapvec_grow_push(g, gap_ns);
	g->v[g->n++] = (uint32_t)gap_ns;
	return 0;
}

/* Number of gaps held. */
static inline size_t gapvec_count(const struct gapvec *g)
{
	return g->n + g->nbig;
}

void gapvec_free(struct gapvec *g);
/* Sort ascending in place (needed before the lookups below); no-op when still sorted. */
void gapvec_sort(struct gapvec *g);
/* The @rank-th smallest gap (1-based, 1 <= rank <= gapvec_count()) of a sorted set, ns. */
int64_t gapvec_at(const struct gapvec *sorted, size_t rank);

/*
 * stats_rank() - 1-based nearest rank of the @permille-th per-mille percentile of @n samples:
 * ceil(permille * n / 1000), computed exactly in integers, clamped to [1, n]. p99.9 is 999,
 * p7 is 70: ceil(70 * 100 / 1000) = 7, ceil(999 * 1000 / 1000) = 999.
 * Return: the rank, 0 when @n is 0.
 */
size_t stats_rank(unsigned permille, size_t n);

/*
 * stats_percentile_ns() - nearest-rank percentile of a sorted vector: the value at 1-based rank
 * stats_rank(@permille, n). Return: the value in ns; 0 when the vector is empty (callers print
 * null for n == 0).
 */
int64_t stats_percentile_ns(const struct gapvec *sorted, unsigned permille);

/* The five figures reported for a set of gaps (ns); valid when n > 0. */
struct gap_summary {
	size_t n;
	int64_t p50_ns, p90_ns, p99_ns, p99_9_ns, max_ns;
};

/* Sort @g and fill @out. */
void stats_summarise(struct gapvec *g, struct gap_summary *out);

/*
 * stats_summarise_runs() - the same figures over the union of @k vectors, without merging
 * them: each is sorted in place, then every rank is found by bisecting the value range and
 * counting, in each sorted run, the values at most the candidate. Exact; memory O(1); time
 * O(k log n) per bisection step instead of a copy and a sort of every value.
 */
void stats_summarise_runs(struct gapvec *const *runs, size_t k, struct gap_summary *out);

#endif /* BFDCAP_STATS_H */
