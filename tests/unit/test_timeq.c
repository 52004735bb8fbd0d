// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_timeq.c - engine/timeq.c against a plain array of times: after every operation of a
 * seeded random sequence (set, move earlier or later, remove, pop the first) the queue's first
 * entry must hold the smallest time the array holds, and timeq_at() every slot's time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "check.h"
#include "timeq.h"

#define SLOTS 257 /* odd, so the heap's last level is partly filled */

static uint64_t want[SLOTS]; /* the reference: each slot's time, 0 when absent */
static uint32_t rng = 2463534242u;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* The smallest queued time of the reference, 0 when it holds none. */
static uint64_t want_min(uint32_t *count)
{
	uint64_t m = 0;
	uint32_t i;

	*count = 0;
	for (i = 0; i < SLOTS; i++) {
		if (!want[i])
			continue;
		(*count)++;
		if (!m || want[i] < m)
			m = want[i];
	}
	return m;
}

static int agree(const struct timeq *q)
{
	const struct timeq_entry *e = timeq_first(q);
	uint32_t n, i;
	uint64_t m = want_min(&n);

	if (q->len != n || (n && (!e || e->at_ns != m || want[e->slot] != m)) || (!n && e))
		return 0;
	for (i = 0; i < SLOTS; i++)
		if (timeq_at(q, i) != want[i])
			return 0;
	return 1;
}

int main(void)
{
	struct timeq q;
	uint32_t step, bad_step = 0, pops = 0;
	uint64_t last_pop = 0;
	int sorted = 1;

	CHECK_EQ(timeq_init(&q, SLOTS), 0, "init");
	CHECK(timeq_first(&q) == NULL, "an empty queue has no first entry");
	timeq_set(&q, SLOTS, 5); /* beyond the table: ignored */
	CHECK_EQ(q.len, 0, "a slot past max is not queued");
	timeq_set(&q, 3, 0); /* taking out an absent slot */
	CHECK_EQ(q.len, 0, "removing an absent slot leaves the queue empty");

	/* Equal times: both come out, in either order. */
	timeq_set(&q, 7, 100);
	timeq_set(&q, 9, 100);
	CHECK_EQ(timeq_first(&q)->at_ns, 100, "tie: the time");
	timeq_set(&q, timeq_first(&q)->slot, 0);
	CHECK_EQ(timeq_first(&q)->at_ns, 100, "tie: the other one");
	timeq_set(&q, timeq_first(&q)->slot, 0);
	CHECK_EQ(q.len, 0, "tie: both out");

	for (step = 1; step <= 200000; step++) {
		uint32_t op = next_rand() % 10, slot = next_rand() % SLOTS;
		uint64_t at = 1 + next_rand() % 100000;

		if (op < 5) { /* set or move */
			want[slot] = at;
			timeq_set(&q, slot, at);
		} else if (op < 7) { /* remove */
			want[slot] = 0;
			timeq_set(&q, slot, 0);
		} else if (op < 9 && timeq_first(&q)) { /* pop the first */
			const struct timeq_entry *e = timeq_first(&q);
			uint32_t s = e->slot;

			want[s] = 0;
			timeq_set(&q, s, 0);
			pops++;
		} else if (timeq_first(&q)) { /* the first moves later: it must sink */
			uint32_t s = timeq_first(&q)->slot;

			want[s] += 50000;
			timeq_set(&q, s, want[s]);
		}
		if (!bad_step && !agree(&q))
			bad_step = step;
	}
	CHECK_EQ(bad_step, 0, "first step where the queue and the reference disagree (0: none)");
	CHECK(pops > 10000, "the sequence popped entries");

	/* Draining gives non-decreasing times, each slot once. */
	while (timeq_first(&q)) {
		const struct timeq_entry *e = timeq_first(&q);

		sorted &= e->at_ns >= last_pop;
		last_pop = e->at_ns;
		want[e->slot] = 0;
		timeq_set(&q, e->slot, 0);
	}
	CHECK(sorted, "drained in time order");
	CHECK(agree(&q), "empty after draining, as the reference");
	timeq_fini(&q);
	return check_done("test_timeq");
}
