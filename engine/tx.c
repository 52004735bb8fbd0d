// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* tx.c - see tx.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

int tx_open(struct bfd_session *s)
{
	const uint16_t span = TX_PORT_LAST - TX_PORT_FIRST + 1;
	struct sockaddr_storage ss;
	socklen_t len;
	bool picked = session_addr_is_zero(s->local_addr);
	int fd, err = 0;

	if (picked && (err = route_source(s)))
		return err;
	fd = socket(s->family == 6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		err = -errno;
		goto fail_nofd;
	}
	err = set_opts(fd, s);
	if (err)
		goto fail;
	for (uint32_t i = 0; i < span; i++) {
		uint16_t port = (uint16_t)(TX_PORT_FIRST + (s->slot + i) % span);

		len = fill_sockaddr(&ss, s->family, s->local_addr, port, s->ifindex);
		if (!bind(fd, (struct sockaddr *)&ss, len)) {
			s->local_port = port;
			err = 0;
			break;
		}
		err = -errno;
		if (err != -EADDRINUSE)
			goto fail;
	}
	if (err)
		goto fail;
	/*
	 * Not connect()ed: a connected UDP socket hands an ICMP port unreachable from the peer's
	 * host (its daemon restarting) to the next send(), which then sends nothing.
	 */
	s->tx_fd = fd;
	return 0;
fail:
	close(fd);
fail_nofd:
	if (picked) /* the route may pick another source by the next try */
		memset(s->local_addr, 0, sizeof(s->local_addr));
	return err;
}

void tx_close(struct bfd_session *s)
{
	if (s->tx_fd >= 0)
		close(s->tx_fd);
	s->tx_fd = -1;
}

int tx_send(struct bfd_session *s, const struct bfd_pkt *p)
{
	uint8_t buf[BFD_CTRL_LEN];
	struct sockaddr_storage to;
	socklen_t len =
	    fill_sockaddr(&to, s->family, s->peer_addr,
			  s->multihop ? BFD_PORT_MULTIHOP : BFD_PORT_CONTROL, s->ifindex);

	if (s->tx_fd < 0)
		return -ENOTCONN;
	codec_encode(p, buf);
	if (sendto(s->tx_fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&to, len) !=
	    sizeof(buf))
		return -errno;
	return 0;
}
