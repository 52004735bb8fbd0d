// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tx.c - bfdpeer's sending: batches per socket, one sendmmsg() each; see bfdpeer.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bfdpeer.h"
#include "codec.h"
#include "fsm.h"
#include "log.h"

uint64_t peer_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int peer_tx_init(struct peer_tx *tx, struct session_table *st, struct peer_stats *stats,
		 uint32_t n_sessions)
{
	unsigned i;

	memset(tx, 0, sizeof(*tx));
	for (i = 0; i < PEER_TX_SOCKS; i++)
		tx->q[i].fd = -1;
	tx->st = st;
	tx->stats = stats;
	tx->sent = calloc(n_sessions ? n_sessions : 1, sizeof(*tx->sent));
	tx->sent_by_slot = calloc(n_sessions ? n_sessions : 1, 1);
	return tx->sent && tx->sent_by_slot ? 0 : -ENOMEM;
}

/* One socket per family and hop type; the source address goes in each datagram's pktinfo. */
int peer_tx_open_socket(uint8_t family, uint16_t src_port)
{
	int fd = socket(family == 6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int ttl = 255, on = 1; /* RFC 5881 section 5, RFC 5883 section 2: TTL 255 */
	int sndbuf = 4 << 20;
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(src_port)};
	struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons(src_port)};
	int err;

	if (fd < 0)
		return -errno;
	/* Room for bursts while the stack is slow to free sent skbs (softirqs starved by a
	 * SCHED_FIFO load); best effort: SO_SNDBUFFORCE needs CAP_NET_ADMIN. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	/* Transparent: no lookup of each datagram's pktinfo source among the host's addresses
	 * (256 hash buckets for all namespaces: 512 long at 65,536 sessions a side). Every source
	 * is one of the session file's, on our interface. Best effort (CAP_NET_ADMIN). */
	setsockopt(fd, family == 6 ? IPPROTO_IPV6 : IPPROTO_IP,
		   family == 6 ? IPV6_TRANSPARENT : IP_TRANSPARENT, &on, sizeof(on));
	if (family == 6)
		err = setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof(ttl)) ||
		      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) ||
		      bind(fd, (struct sockaddr *)&a6, sizeof(a6));
	else
		err = setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) ||
		      bind(fd, (struct sockaddr *)&a4, sizeof(a4));
	if (err) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void flush_queue(struct peer_tx *tx, struct peer_tx_queue *q)
{
	unsigned done = 0;
	int n;

	while (done < q->len) {
		/* Never wait for socket memory: one late packet is better than every session
		 * silent (a full send buffer is counted in tx_errors). */
		n = sendmmsg(q->fd, q->msgs + done, q->len - done, MSG_DONTWAIT);
		tx->stats->tx_batches++;
		if (n <= 0) {
			/* The first datagram failed: count it, go on with the rest. */
			if (!tx->stats->tx_errors++)
				pr_warn("sendmmsg: %s (counted from now on)", strerror(errno));
			tx->stats->tx_packets--; /* queued as sent */
			done++;
			continue;
		}
		done += (unsigned)n;
	}
	q->len = 0;
}

void peer_tx_schedule(struct peer_tx *tx, struct bfd_session *s, uint64_t t_ns)
{
	s->next_tx_ns = fsm_next_tx_ns(s, t_ns);
	txq_update(tx->st, s);
}

/*
 * Send what is queued, then hold each session's next periodic packet to 75 % of its interval
 * (RFC 5880 6.8.7) after the moment the batch has left, not after when the packet was queued: a
 * packet late in a long batch left up to a few hundred us after its pass began (each datagram
 * crosses the veth and the bridge before sendmmsg() takes the next), and counted from the pass
 * its session's next packet, alone in a later batch, came that much under 75 % after it on the
 * wire (docs/bfdpeer.md, Validation). The draw itself stays counted from the pass: counting all
 * of it from here made every gap longer by its batch, and twice as many over 100 %.
 */
void peer_tx_flush(struct peer_tx *tx)
{
	uint64_t t_ns, floor_ns;
	unsigned i;

	for (i = 0; i < PEER_TX_SOCKS; i++)
		if (tx->q[i].len)
			flush_queue(tx, &tx->q[i]);
	if (!tx->n_sent)
		return;
	t_ns = peer_now_ns();
	for (i = 0; i < tx->n_sent; i++) {
		struct bfd_session *s = tx->sent[i];

		tx->sent_by_slot[s->slot] = 0;
		floor_ns = t_ns + fsm_tx_interval_us(s) * 750ULL;
		if (s->next_tx_ns && s->next_tx_ns < floor_ns) {
			s->next_tx_ns = floor_ns;
			txq_update(tx->st, s);
		}
	}
	tx->n_sent = 0;
}

void peer_tx_queue(struct peer_tx *tx, struct bfd_session *s, bool final, uint64_t t_ns)
{
	struct peer_tx_queue *q = &tx->q[(s->family == 6 ? 2 : 0) + (s->multihop ? 1 : 0)];
	uint16_t dport = s->multihop ? BFD_PORT_MULTIHOP : BFD_PORT_CONTROL;
	struct peer_tx_slot *t;
	struct msghdr *m;
	struct cmsghdr *c;
	struct bfd_pkt pkt;

	fsm_packet(s, final, t_ns, &pkt);
	if (!fsm_may_send(s))
		return; /* Passive, and the peer forgotten (RFC 5880 6.8.1, 6.8.7) */
	if (q->len == PEER_TX_BATCH)
		flush_queue(tx, q);
	t = &q->slots[q->len];
	m = &q->msgs[q->len].msg_hdr;
	codec_encode(&pkt, t->payload);
	memset(m, 0, sizeof(*m));
	memset(&t->dst, 0, sizeof(t->dst));
	memset(&t->ctl, 0, sizeof(t->ctl));
	t->iov.iov_base = t->payload;
	t->iov.iov_len = BFD_CTRL_LEN;
	m->msg_iov = &t->iov;
	m->msg_iovlen = 1;
	m->msg_name = &t->dst;
	m->msg_control = t->ctl.buf;
	if (s->family == 6) {
		struct in6_pktinfo pi = {0};

		t->dst.sin6_family = AF_INET6;
		t->dst.sin6_port = htons(dport);
		memcpy(&t->dst.sin6_addr, s->peer_addr, 16);
		/* Link-local (fe80::/10) is scoped to our interface (RFC 4007, RFC 5881 5). */
		if (s->peer_addr[0] == 0xfe && (s->peer_addr[1] & 0xc0) == 0x80) {
			t->dst.sin6_scope_id = (uint32_t)tx->ifindex;
			pi.ipi6_ifindex = (unsigned)tx->ifindex;
		}
		m->msg_namelen = sizeof(struct sockaddr_in6);
		m->msg_controllen = CMSG_SPACE(sizeof(pi));
		c = CMSG_FIRSTHDR(m);
		c->cmsg_level = IPPROTO_IPV6;
		c->cmsg_type = IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(&pi.ipi6_addr, s->local_addr, 16);
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	} else {
		struct sockaddr_in *d4 = (struct sockaddr_in *)&t->dst;
		struct in_pktinfo pi = {0};

		d4->sin_family = AF_INET;
		d4->sin_port = htons(dport);
		memcpy(&d4->sin_addr, s->peer_addr, 4);
		m->msg_namelen = sizeof(struct sockaddr_in);
		m->msg_controllen = CMSG_SPACE(sizeof(pi));
		c = CMSG_FIRSTHDR(m);
		c->cmsg_level = IPPROTO_IP;
		c->cmsg_type = IP_PKTINFO;
		c->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(&pi.ipi_spec_dst, s->local_addr, 4);
		memcpy(CMSG_DATA(c), &pi, sizeof(pi));
	}
	q->len++;
	s->user_tx_packets++;
	s->last_tx_ns = t_ns;
	tx->stats->tx_packets++;
	tx->stats->tx_finals += final;
}

void peer_tx_schedule_after_flush(struct peer_tx *tx, struct bfd_session *s, uint64_t t_ns)
{
	peer_tx_schedule(tx, s, t_ns); /* the draw, counted from the pass */
	if (!tx->sent_by_slot[s->slot]) {
		tx->sent_by_slot[s->slot] = 1;
		tx->sent[tx->n_sent++] = s;
	}
}
