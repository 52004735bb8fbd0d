/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tx.h - the packets userspace sends itself: slow packets while not Up, state-change and Final
 * packets the fast path cannot send, and periodic packets of sessions it cannot clock. One UDP
 * socket per session, bound to the session's source port (RFC 5881 section 4: 49152-65535, the
 * same for the life of the session), TTL/hop limit 255 (RFC 5881 section 5), sending to the
 * peer's port 3784 (4784 multihop, RFC 5883).
 */
#ifndef ENGINE_TX_H
#define ENGINE_TX_H

#include "codec.h"
#include "session.h"

/* Our source ports: above Linux's ephemeral range (ends at 60999) and above bfdd's own (49152 up).
 */
#define TX_PORT_FIRST 61000
#define TX_PORT_LAST  65535
/* A session without a socket tries again this often (and at once when an address appears). */
#define TX_RETRY_NS 1000000000ULL

/*
 * tx_open() - open @s's socket. Binds s->local_addr (when all-zero, the route to the peer picks
 * it and it is written back into s->local_addr) and the first free port from
 * TX_PORT_FIRST + slot, and SO_BINDTODEVICE s->ifname when set.
 * Return: 0 or -errno.
 */
int tx_open(struct bfd_session *s);
void tx_close(struct bfd_session *s);
/* tx_send() - send @p on @s's socket. Return: 0 or -errno (counted by the caller). */
int tx_send(struct bfd_session *s, const struct bfd_pkt *p);

#endif
