// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_tx.c - the shared send sockets (tx.c) on the loopback, no root: two sessions on one
 * source port share one socket and each packet leaves from its own session's address and that
 * port with TTL 255 (RFC 5881 sections 4 and 5); the socket closes with its last session; a
 * source address this host does not have gets no socket (-EADDRNOTAVAIL, retried by the engine).
 * The receiving end binds 127.0.0.1:3784; when something else holds that port, only the
 * packets' contents are not checked, and the test says so.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "check.h"
#include "codec.h"
#include "session.h"
#include "tx.h"

static struct bfd_session *add(struct session_table *t, uint32_t lid, uint32_t slot,
			       const char *local)
{
	struct bfd_session *s = sessions_add_at(t, lid, slot);

	s->family = 4;
	inet_pton(AF_INET, local, s->local_addr);
	inet_pton(AF_INET, "127.0.0.1", s->peer_addr);
	return s;
}

/* One packet from @rx: its source address and port, its TTL and its My Discriminator. */
static void check_packet(int rx, const char *want_src, uint16_t want_port, uint32_t want_disc)
{
	uint8_t buf[64];
	char ctl[CMSG_SPACE(sizeof(int))], src[INET_ADDRSTRLEN];
	struct sockaddr_in from;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {.msg_name = &from,
			    .msg_namelen = sizeof(from),
			    .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl,
			    .msg_controllen = sizeof(ctl)};
	struct cmsghdr *cm;
	struct bfd_pkt p;
	int ttl = -1;

	CHECK_EQ(recvmsg(rx, &mh, 0), BFD_CTRL_LEN, "one Control packet");
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TTL)
			memcpy(&ttl, CMSG_DATA(cm), sizeof(ttl));
	inet_ntop(AF_INET, &from.sin_addr, src, sizeof(src));
	CHECK(!strcmp(src, want_src), "from the session's own source address");
	CHECK_EQ(ntohs(from.sin_port), want_port, "from the session's source port");
	CHECK_EQ(ttl, 255, "TTL 255 (RFC 5881 section 5)");
	CHECK_EQ(codec_decode(buf, BFD_CTRL_LEN, &p), BFD_DROP_NONE, "decodes");
	CHECK_EQ(p.my_disc, want_disc, "the session's discriminator");
}

int main(void)
{
	struct session_table t;
	struct bfd_session *a, *b, *c;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(BFD_PORT_CONTROL)};
	struct timeval tv = {.tv_sec = 1};
	struct bfd_pkt p = {.version = 1, .state = BFD_STATE_DOWN, .detect_mult = 3};
	int one = 1, rx = socket(AF_INET, SOCK_DGRAM, 0);
	bool listening;

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	setsockopt(rx, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one));
	setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	listening = !bind(rx, (struct sockaddr *)&sin, sizeof(sin));
	if (!listening)
		printf("test_tx: 127.0.0.1:%u is taken here: packets not received\n",
		       BFD_PORT_CONTROL);

	CHECK_EQ(sessions_init(&t, 2 * TX_PORT_SPAN), 0, "table");
	/* Slots 0 and TX_PORT_SPAN: the same source port, other source addresses. */
	a = add(&t, 1, 0, "127.0.0.2");
	b = add(&t, 2, TX_PORT_SPAN, "127.0.0.3");
	c = add(&t, 3, 1, "192.0.2.77"); /* TEST-NET-1: not this host's */
	CHECK_EQ(tx_open(a), 0, "a: socket");
	CHECK_EQ(tx_open(b), 0, "b: socket");
	CHECK_EQ(tx_sockets_open(), 1, "one socket for both");
	CHECK(a->tx_fd >= 0 && a->tx_fd == b->tx_fd, "the same descriptor");
	CHECK_EQ(a->local_port, TX_PORT_FIRST, "a: port by slot");
	CHECK_EQ(b->local_port, TX_PORT_FIRST, "b: the same port");
	CHECK_EQ(tx_open(c), -EADDRNOTAVAIL, "an address this host lacks: no socket");
	CHECK_EQ(c->tx_fd, -1, "c: none");
	CHECK_EQ(tx_sockets_open(), 1, "and none opened for it");

	p.my_disc = 1;
	CHECK_EQ(tx_send(a, &p), 0, "a sends");
	if (listening)
		check_packet(rx, "127.0.0.2", TX_PORT_FIRST, 1);
	p.my_disc = 2;
	CHECK_EQ(tx_send(b, &p), 0, "b sends");
	if (listening)
		check_packet(rx, "127.0.0.3", TX_PORT_FIRST, 2);

	tx_close(a);
	CHECK_EQ(tx_sockets_open(), 1, "open while b uses it");
	CHECK_EQ(tx_send(a, &p), -ENOTCONN, "a: closed");
	p.my_disc = 2;
	CHECK_EQ(tx_send(b, &p), 0, "b still sends");
	if (listening)
		check_packet(rx, "127.0.0.3", TX_PORT_FIRST, 2);
	CHECK_EQ(tx_open(a), 0, "a: again");
	CHECK_EQ(a->local_port, TX_PORT_FIRST, "a: its port kept (RFC 5881 section 4)");
	tx_close(a);
	tx_close(b);
	CHECK_EQ(tx_sockets_open(), 0, "closed with its last session");
	close(rx);
	sessions_fini(&t);
	return check_done("test_tx");
}
