/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * tx.h - the packets userspace sends itself: slow packets while not Up, state-change and Final
 * packets the fast path cannot send, and periodic packets of sessions it cannot clock. Each
 * session has a source port (RFC 5881 section 4: 49152-65535, the same for the life of the
 * session) and sends from a UDP socket shared by every session on that port (and family and
 * interface), bound to the wildcard address, the session's source address given per packet;
 * TTL/hop limit 255 (RFC 5881 section 5), to the peer's port 3784 (4784 multihop, RFC 5883).
 */
#ifndef ENGINE_TX_H
#define ENGINE_TX_H

#include "codec.h"
#include "session.h"

/* Our source ports: above Linux's ephemeral range (ends at 60999) and above bfdd's own (49152 up).
 */
#define TX_PORT_FIRST 61000
#define TX_PORT_LAST  65535
#define TX_PORT_SPAN  (TX_PORT_LAST - TX_PORT_FIRST + 1)
/* A session without a socket tries again this often (and at once when an address appears). */
#define TX_RETRY_NS 1000000000ULL

/*
 * tx_open() - give @s a socket to send from. s->local_addr must be an address of this host (a
 * bind() checks: -EADDRNOTAVAIL while it is missing or tentative); when all-zero, the route to
 * the peer picks it and it is written back. The port: s->local_port if it has one (adopted from
 * the pins), else TX_PORT_FIRST + slot modulo the span, the next one if another program holds
 * it; the socket has SO_BINDTODEVICE s->ifname when set. Return: 0 or -errno.
 */
int tx_open(struct bfd_session *s);
/* tx_close() - @s stops using its socket; the socket closes with its last session. */
void tx_close(struct bfd_session *s);
/* tx_sockets_open() - how many shared sockets are open. */
uint32_t tx_sockets_open(void);
/* tx_send() - send @p on @s's socket. Return: 0 or -errno (counted by the caller). */
int tx_send(struct bfd_session *s, const struct bfd_pkt *p);

#endif
