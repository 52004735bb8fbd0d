// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tx.c - see tx.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "log.h"
#include "tx.h"

#define IPTOS_CS6 0xc0 /* network control, as routing protocols mark BFD */

static socklen_t fill_sockaddr(struct sockaddr_storage *ss, uint8_t family, const uint8_t addr[16],
			       uint16_t port, uint32_t ifindex)
{
	memset(ss, 0, sizeof(*ss));
	if (family == 6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		memcpy(&s6->sin6_addr, addr, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = ifindex;
		return sizeof(*s6);
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	memcpy(&s4->sin_addr, addr, 4);
	return sizeof(*s4);
}

static int set_opts(int fd, const struct bfd_session *s)
{
	int one = 1, ttl = BFD_TTL_SINGLE_HOP, tos = IPTOS_CS6;

	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		return -errno;
	if (s->family == 6) {
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof(ttl)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)))
			return -errno;
	} else if (setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof(ttl)) ||
		   setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos))) {
		return -errno;
	}
	if (s->ifname[0] &&
	    setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, s->ifname, (socklen_t)strlen(s->ifname)))
		return -errno;
	return 0;
}

/* The source address the routing table picks towards the peer, for an all-zero local address. */
static int route_source(struct bfd_session *s)
{
	struct sockaddr_storage ss;
	socklen_t len = fill_sockaddr(&ss, s->family, s->peer_addr, BFD_PORT_CONTROL, s->ifindex);
	int fd = socket(s->family == 6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (s->ifname[0])
		setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, s->ifname,
			   (socklen_t)strlen(s->ifname));
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		err = -errno;
	} else {
		len = sizeof(ss);
		if (getsockname(fd, (struct sockaddr *)&ss, &len))
			err = -errno;
		else if (s->family == 6)
			memcpy(s->local_addr, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
		else
			memcpy(s->local_addr, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	}
	close(fd);
	return err;
}

/*
 * The shared sockets: one per (family, source port, interface bound to), bound to the wildcard
 * address, each session's source address given per packet (IP_PKTINFO / IPV6_PKTINFO). A socket
 * per session would need 65,536 descriptors at --max-sessions 65536, over the hard open-file
 * limit of many hosts; this way it is at most 2 x TX_PORT_SPAN per interface.
 */
struct tx_sock {
	struct tx_sock *next;
	uint8_t family;
	uint16_t port;
	char ifname[IF_NAMESIZE];
	int fd;
	uint32_t refs;
};

static struct tx_sock *tx_socks[2][TX_PORT_SPAN]; /* [IPv6][port - TX_PORT_FIRST] */
static uint32_t tx_nsocks;
static bool tx_warned;

uint32_t tx_sockets_open(void)
{
	return tx_nsocks;
}

static struct tx_sock **sock_chain(uint8_t family, uint16_t port)
{
	return &tx_socks[family == 6][port - TX_PORT_FIRST];
}

/* A new shared socket for (@s's family and interface, @port). Return: 0 or -errno. */
static int sock_open(const struct bfd_session *s, uint16_t port, struct tx_sock **out)
{
	static const uint8_t any[16];
	struct sockaddr_storage ss;
	socklen_t len = fill_sockaddr(&ss, s->family, any, port, 0);
	int one = 1, err = 0;
	int fd = socket(s->family == 6 ? AF_INET6 : AF_INET,
			SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct tx_sock *ts;

	if (fd < 0)
		return -errno;
	err = set_opts(fd, s);
	if (!err && s->family == 6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		err = -errno;
	/*
	 * Transparent: the kernel does not look the per-packet source up among the host's
	 * addresses on each send (__ip_dev_find(), ipv6_chk_addr(): hash chains of 256 buckets
	 * shared by every namespace, 512 long at 65,536 sessions a side: 64 % of the engine's CPU,
	 * 138 us a send). tx_open() checked that the address is ours. Best effort (CAP_NET_ADMIN).
	 */
	if (!err &&
	    setsockopt(fd, s->family == 6 ? IPPROTO_IPV6 : IPPROTO_IP,
		       s->family == 6 ? IPV6_TRANSPARENT : IP_TRANSPARENT, &one, sizeof(one)) &&
	    !tx_warned) {
		tx_warned = true;
		pr_warn("tx: no IP_TRANSPARENT (%s): each send looks its source up among the "
			"host's addresses",
			strerror(errno));
	}
	if (!err && bind(fd, (struct sockaddr *)&ss, len))
		err = -errno;
	ts = err ? NULL : calloc(1, sizeof(*ts));
	if (!err && !ts)
		err = -ENOMEM;
	if (err) {
		close(fd);
		return err;
	}
	ts->family = s->family;
	ts->port = port;
	memcpy(ts->ifname, s->ifname, sizeof(ts->ifname));
	ts->fd = fd;
	ts->next = *sock_chain(s->family, port);
	*sock_chain(s->family, port) = ts;
	tx_nsocks++;
	*out = ts;
	return 0;
}

/* The shared socket for @s on @port, opened if need be. Return: 0 or -errno. */
static int sock_get(const struct bfd_session *s, uint16_t port, struct tx_sock **out)
{
	for (struct tx_sock *ts = *sock_chain(s->family, port); ts; ts = ts->next)
		if (!strncmp(ts->ifname, s->ifname, sizeof(ts->ifname))) {
			*out = ts;
			return 0;
		}
	return sock_open(s, port, out);
}

/* Whether @s's source address is one of this host's (and not tentative): a bind() says so. */
static int source_usable(const struct bfd_session *s)
{
	struct sockaddr_storage ss;
	socklen_t len = fill_sockaddr(&ss, s->family, s->local_addr, 0, s->ifindex);
	int fd = socket(s->family == 6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&ss, len))
		err = -errno;
	close(fd);
	return err;
}

int tx_open(struct bfd_session *s)
{
	bool picked = session_addr_is_zero(s->local_addr);
	struct tx_sock *ts = NULL;
	int err = 0;

	if (picked && (err = route_source(s)))
		return err;
	if (!picked && (err = source_usable(s)))
		return err;
	/* The port the session had (adopted from the pins, or before a reopen), else by slot. */
	for (uint32_t i = 0; i < TX_PORT_SPAN; i++) {
		uint16_t port = s->local_port >= TX_PORT_FIRST /* and <= TX_PORT_LAST: 65535 */
				    ? (uint16_t)(TX_PORT_FIRST +
						 (s->local_port - TX_PORT_FIRST + i) % TX_PORT_SPAN)
				    : (uint16_t)(TX_PORT_FIRST + (s->slot + i) % TX_PORT_SPAN);

		err = sock_get(s, port, &ts);
		if (err != -EADDRINUSE)
			break;
	}
	if (err) {
		if (picked) /* the route may pick another source by the next try */
			memset(s->local_addr, 0, sizeof(s->local_addr));
		return err;
	}
	ts->refs++;
	s->tx_sock = ts;
	s->tx_fd = ts->fd;
	s->local_port = ts->port;
	return 0;
}

void tx_close(struct bfd_session *s)
{
	struct tx_sock *ts = s->tx_sock, **pp;

	s->tx_fd = -1;
	s->tx_sock = NULL;
	if (!ts || --ts->refs)
		return;
	for (pp = sock_chain(ts->family, ts->port); *pp && *pp != ts; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = ts->next;
	close(ts->fd);
	free(ts);
	tx_nsocks--;
}

int tx_send(struct bfd_session *s, const struct bfd_pkt *p)
{
	uint8_t buf[BFD_CTRL_LEN];
	union {
		char b[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_storage to;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr mh = {
	    .msg_name = &to, .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b};
	struct cmsghdr *cm;

	if (s->tx_fd < 0)
		return -ENOTCONN;
	mh.msg_namelen =
	    fill_sockaddr(&to, s->family, s->peer_addr,
			  s->multihop ? BFD_PORT_MULTIHOP : BFD_PORT_CONTROL, s->ifindex);
	memset(&ctl, 0, sizeof(ctl));
	cm = (struct cmsghdr *)ctl.b;
	/* The source address per packet: the socket is shared by every source on this port. */
	if (s->family == 6) {
		struct in6_pktinfo pi = {.ipi6_ifindex = s->ifindex};

		memcpy(&pi.ipi6_addr, s->local_addr, 16);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		mh.msg_controllen = CMSG_SPACE(sizeof(pi));
	} else {
		struct in_pktinfo pi = {0};

		memcpy(&pi.ipi_spec_dst, s->local_addr, 4);
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		mh.msg_controllen = CMSG_SPACE(sizeof(pi));
	}
	codec_encode(p, buf);
	if (sendmsg(s->tx_fd, &mh, MSG_DONTWAIT) != sizeof(buf))
		return -errno;
	return 0;
}
