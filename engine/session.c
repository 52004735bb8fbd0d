// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* session.c - see session.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "session.h"

int sessions_init(struct session_table *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = 64;
	while (t->nbuckets < max)
		t->nbuckets <<= 1;
	t->by_slot = calloc(max, sizeof(*t->by_slot));
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	t->abuckets = calloc(t->nbuckets, sizeof(*t->abuckets));
	if (!t->by_slot || !t->buckets || !t->abuckets || timeq_init(&t->txq, max)) {
		sessions_fini(t);
		return -ENOMEM;
	}
	t->max = max;
	return 0;
}

void sessions_fini(struct session_table *t)
{
	for (uint32_t i = 0; t->by_slot && i < t->max; i++)
		free(t->by_slot[i]);
	free(t->by_slot);
	free(t->buckets);
	free(t->abuckets);
	timeq_fini(&t->txq);
	memset(t, 0, sizeof(*t));
}

static uint32_t bucket(const struct session_table *t, uint32_t lid)
{
	return (lid * 2654435761u) & (t->nbuckets - 1);
}

struct bfd_session *sessions_by_lid(const struct session_table *t, uint32_t lid)
{
	struct bfd_session *s;

	for (s = t->buckets[bucket(t, lid)]; s; s = s->hash_next)
		if (s->lid == lid)
			return s;
	return NULL;
}

struct bfd_session *sessions_by_slot(const struct session_table *t, uint32_t slot)
{
	return slot < t->max ? t->by_slot[slot] : NULL;
}

/* FNV-1a over what identifies a peer: an address hash, as the lid hash is for lids. */
static uint32_t addr_bucket(const struct session_table *t, uint8_t family, bool multihop,
			    const uint8_t peer[16])
{
	uint32_t h = 2166136261u;

	h = (h ^ family) * 16777619u;
	h = (h ^ multihop) * 16777619u;
	for (int i = 0; i < 16; i++)
		h = (h ^ peer[i]) * 16777619u;
	return h & (t->nbuckets - 1);
}

void sessions_file_addr(struct session_table *t, struct bfd_session *s)
{
	uint32_t b = addr_bucket(t, s->family, s->multihop, s->peer_addr);

	if (s->addr_filed)
		return;
	s->addr_next = t->abuckets[b];
	t->abuckets[b] = s;
	s->addr_filed = true;
}

static void unfile_addr(struct session_table *t, struct bfd_session *s)
{
	struct bfd_session **pp =
	    &t->abuckets[addr_bucket(t, s->family, s->multihop, s->peer_addr)];

	if (!s->addr_filed)
		return;
	while (*pp && *pp != s)
		pp = &(*pp)->addr_next;
	if (*pp)
		*pp = s->addr_next;
	s->addr_next = NULL;
	s->addr_filed = false;
}

struct bfd_session *sessions_by_peer(const struct session_table *t, uint8_t family, bool multihop,
				     const uint8_t peer[16])
{
	return t->abuckets[addr_bucket(t, family, multihop, peer)];
}

struct bfd_session *sessions_by_addr(const struct session_table *t, uint8_t family, bool multihop,
				     const uint8_t local[16], const uint8_t peer[16],
				     uint32_t ifindex)
{
	for (struct bfd_session *s = sessions_by_peer(t, family, multihop, peer); s;
	     s = s->addr_next)
		if (s->family == family && s->multihop == multihop &&
		    !memcmp(s->peer_addr, peer, 16) && !memcmp(s->local_addr, local, 16) &&
		    (!s->ifindex || !ifindex || s->ifindex == ifindex))
			return s;
	return NULL;
}

struct bfd_session *sessions_add(struct session_table *t, uint32_t lid)
{
	uint32_t slot;

	if (t->count >= t->max)
		return NULL;
	for (slot = t->free_hint; slot < t->max && t->by_slot[slot]; slot++)
		;
	t->free_hint = slot + 1; /* every slot below is taken now */
	return sessions_add_at(t, lid, slot);
}

struct bfd_session *sessions_add_at(struct session_table *t, uint32_t lid, uint32_t slot)
{
	struct bfd_session *s;
	uint32_t b;

	if (slot >= t->max || t->by_slot[slot])
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->lid = lid;
	s->slot = slot;
	s->tx_fd = -1;
	t->by_slot[slot] = s;
	b = bucket(t, lid);
	s->hash_next = t->buckets[b];
	t->buckets[b] = s;
	t->count++;
	if (slot + 1 > t->slots_in_use)
		t->slots_in_use = slot + 1;
	chores_note(t, s); /* no socket yet, no path chosen */
	return s;
}

void chores_note(struct session_table *t, struct bfd_session *s)
{
	if (s->on_chores || !session_has_chores(s))
		return;
	s->chore_prev = NULL;
	s->chore_next = t->chores;
	if (t->chores)
		t->chores->chore_prev = s;
	t->chores = s;
	s->on_chores = true;
	t->n_chores++;
}

void chores_del(struct session_table *t, struct bfd_session *s)
{
	if (!s->on_chores)
		return;
	if (s->chore_prev)
		s->chore_prev->chore_next = s->chore_next;
	else
		t->chores = s->chore_next;
	if (s->chore_next)
		s->chore_next->chore_prev = s->chore_prev;
	s->chore_next = s->chore_prev = NULL;
	s->on_chores = false;
	t->n_chores--;
}

static void unhash(struct session_table *t, struct bfd_session *s)
{
	struct bfd_session **pp = &t->buckets[bucket(t, s->lid)];

	while (*pp && *pp != s)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = s->hash_next;
	s->hash_next = NULL;
}

struct bfd_session *sessions_by_disc(const struct session_table *t, uint32_t disc)
{
	struct bfd_session *s = sessions_by_lid(t, disc);

	if (s && s->local_disc == disc)
		return s;
	/* Only sessions adopted under a new lid are filed apart from their discriminator. */
	for (uint32_t i = 0; t->rekeyed && i < t->slots_in_use; i++)
		if (t->by_slot[i] && t->by_slot[i]->local_disc == disc)
			return t->by_slot[i];
	return NULL;
}

void sessions_rekey(struct session_table *t, struct bfd_session *s, uint32_t lid)
{
	uint32_t b;

	t->rekeyed -= s->lid != s->local_disc;
	t->rekeyed += lid != s->local_disc;
	unhash(t, s);
	s->lid = lid;
	b = bucket(t, lid);
	s->hash_next = t->buckets[b];
	t->buckets[b] = s;
}

void sessions_remove(struct session_table *t, struct bfd_session *s)
{
	s->next_tx_ns = 0;
	txq_update(t, s);
	chores_del(t, s);
	unhash(t, s);
	unfile_addr(t, s);
	t->rekeyed -= s->lid != s->local_disc;
	t->by_slot[s->slot] = NULL;
	if (s->slot < t->free_hint)
		t->free_hint = s->slot;
	t->count--;
	while (t->slots_in_use && !t->by_slot[t->slots_in_use - 1])
		t->slots_in_use--;
	free(s);
}

/* --- transmit queue: the sessions by next_tx_ns (timeq.h) --- */

void txq_update(struct session_table *t, struct bfd_session *s)
{
	timeq_set(&t->txq, s->slot, s->next_tx_ns);
}

struct bfd_session *txq_first(const struct session_table *t)
{
	const struct timeq_entry *e = timeq_first(&t->txq);

	return e ? t->by_slot[e->slot] : NULL;
}

const char *session_addr_str(uint8_t family, const uint8_t addr[16], char *buf, unsigned len)
{
	if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, addr, buf, len))
		buf[0] = 0;
	return buf;
}

const char *session_str(const struct bfd_session *s, char *buf, size_t n)
{
	char l[INET6_ADDRSTRLEN], p[INET6_ADDRSTRLEN];

	snprintf(buf, n, "%s -> %s lid %u",
		 session_addr_str(s->family, s->local_addr, l, sizeof(l)),
		 session_addr_str(s->family, s->peer_addr, p, sizeof(p)), s->lid);
	return buf;
}

bool session_addr_is_zero(const uint8_t addr[16])
{
	static const uint8_t zero[16];

	return !memcmp(addr, zero, 16);
}
