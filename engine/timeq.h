/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * timeq.h - a queue of session slots ordered by a time (CLOCK_MONOTONIC ns): a binary min-heap
 * whose entries carry their time, so ordering reads one array and no session. Each slot is in
 * it at most once. The engine's and bfdpeer's transmit queue (session.h, txq_*) and bfdpeer's
 * detection checks are each one of these.
 */
#ifndef XDP_BFD_TIMEQ_H
#define XDP_BFD_TIMEQ_H

#include <stdbool.h>
#include <stdint.h>

struct timeq_entry {
	uint64_t at_ns;
	uint32_t slot;
};

struct timeq {
	struct timeq_entry *heap; /* [max] */
	int32_t *pos;		  /* [max]: each slot's index in heap, -1 if absent */
	uint32_t len, max;
};

/* timeq_init() - an empty queue for slots 0..@max-1. 0, or -ENOMEM. */
int timeq_init(struct timeq *q, uint32_t max);
void timeq_fini(struct timeq *q);
/*
 * timeq_set() - queue @slot at @at_ns, moving it if queued; @at_ns 0 takes it out. O(log n).
 * A slot at or above max is ignored (the caller's table has no such slot).
 */
void timeq_set(struct timeq *q, uint32_t slot, uint64_t at_ns);
/* timeq_at() - when @slot is queued, 0 if it is not. */
uint64_t timeq_at(const struct timeq *q, uint32_t slot);
/* timeq_first() - the entry due first, or NULL when empty. */
static inline const struct timeq_entry *timeq_first(const struct timeq *q)
{
	return q->len ? &q->heap[0] : NULL;
}

#endif
