// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* timeq.c - see timeq.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "timeq.h"

int timeq_init(struct timeq *q, uint32_t max)
{
	memset(q, 0, sizeof(*q));
	q->heap = calloc(max ? max : 1, sizeof(*q->heap));
	q->pos = malloc((max ? max : 1) * sizeof(*q->pos));
	if (!q->heap || !q->pos) {
		timeq_fini(q);
		return -ENOMEM;
	}
	memset(q->pos, 0xff, (max ? max : 1) * sizeof(*q->pos)); /* -1: absent */
	q->max = max;
	return 0;
}

void timeq_fini(struct timeq *q)
{
	free(q->heap);
	free(q->pos);
	memset(q, 0, sizeof(*q));
}

static void place(struct timeq *q, uint32_t i, struct timeq_entry e)
{
	q->heap[i] = e;
	q->pos[e.slot] = (int32_t)i;
}

static void sift_up(struct timeq *q, uint32_t i)
{
	struct timeq_entry e = q->heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;

		if (q->heap[parent].at_ns <= e.at_ns)
			break;
		place(q, i, q->heap[parent]);
		i = parent;
	}
	place(q, i, e);
}

static void sift_down(struct timeq *q, uint32_t i)
{
	struct timeq_entry e = q->heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = l;

		if (l >= q->len)
			break;
		if (r < q->len && q->heap[r].at_ns < q->heap[l].at_ns)
			m = r;
		if (q->heap[m].at_ns >= e.at_ns)
			break;
		place(q, i, q->heap[m]);
		i = m;
	}
	place(q, i, e);
}

void timeq_set(struct timeq *q, uint32_t slot, uint64_t at_ns)
{
	int32_t i;

	if (slot >= q->max)
		return;
	i = q->pos[slot];
	if (i >= 0 && at_ns) { /* move in place: one sift, not a removal and an insertion */
		uint64_t was = q->heap[i].at_ns;

		q->heap[i].at_ns = at_ns;
		if (at_ns < was)
			sift_up(q, (uint32_t)i);
		else
			sift_down(q, (uint32_t)i);
		return;
	}
	if (i >= 0) { /* out: the last entry fills the hole, then finds its place */
		struct timeq_entry last = q->heap[--q->len];

		q->pos[slot] = -1;
		if (last.slot != slot) {
			place(q, (uint32_t)i, last);
			sift_up(q, (uint32_t)i);
			sift_down(q, (uint32_t)q->pos[last.slot]);
		}
		return;
	}
	if (!at_ns)
		return;
	place(q, q->len++, (struct timeq_entry){.at_ns = at_ns, .slot = slot});
	sift_up(q, q->len - 1);
}

uint64_t timeq_at(const struct timeq *q, uint32_t slot)
{
	return slot < q->max && q->pos[slot] >= 0 ? q->heap[q->pos[slot]].at_ns : 0;
}
