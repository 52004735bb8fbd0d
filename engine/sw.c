// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sw.c - the software receive path: UDP sockets on 3784 (single hop) and 4784 (multihop), IPv4
 * and IPv6, for sessions whose interface has no XDP program. Each datagram gets the same checks
 * as in the fast path (codec_decode(), then the session's own in engine_rx_packet()); the TTL
 * comes from IP_RECVTTL / IPV6_RECVHOPLIMIT, the local address and interface from PKTINFO.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "codec.h"
#include "engine.h"

/* @shared: SO_REUSEADDR, so the engine a handover (--pin) replaces and its successor can both
 * hold the port for the moment they overlap. */
static int open_one(int family, uint16_t port, bool shared)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd, one = 1;

	fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (shared && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail;
	if (family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		len = sizeof(*s6);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)))
			goto fail;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		len = sizeof(*s4);
		if (setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)))
			goto fail;
	}
	if (bind(fd, (struct sockaddr *)&ss, len))
		goto fail;
	return fd;
fail:
	one = -errno;
	close(fd);
	return one;
}

int sw_open(struct engine *e)
{
	static const struct {
		int family;
		uint16_t port;
	} socks[ENGINE_SW_SOCKS] = {
	    {AF_INET, BFD_PORT_CONTROL},
	    {AF_INET, BFD_PORT_MULTIHOP},
	    {AF_INET6, BFD_PORT_CONTROL},
	    {AF_INET6, BFD_PORT_MULTIHOP},
	};

	for (int i = 0; i < ENGINE_SW_SOCKS; i++) {
		int fd = open_one(socks[i].family, socks[i].port, e->o.pin_dir != NULL);

		if (fd < 0) {
			pr_warn("software path: cannot bind UDP %s port %u: %s; sessions that need "
				"it will not come Up",
				socks[i].family == AF_INET6 ? "IPv6" : "IPv4", socks[i].port,
				strerror(-fd));
			continue;
		}
		e->sw_fd[i] = fd;
	}
	return 0;
}

void sw_close(struct engine *e)
{
	for (int i = 0; i < ENGINE_SW_SOCKS; i++) {
		if (e->sw_fd[i] >= 0)
			close(e->sw_fd[i]);
		e->sw_fd[i] = -1;
	}
}

static void recv_one(struct engine *e, int fd, uint16_t port, uint64_t now_ns, bool *more)
{
	uint8_t buf[512], cbuf[256];
	struct sockaddr_storage from;
	struct iovec iov = {buf, sizeof(buf)};
	struct msghdr mh = {.msg_name = &from,
			    .msg_namelen = sizeof(from),
			    .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	uint8_t local[16] = {0}, peer[16] = {0}, family, ttl = 0;
	uint32_t ifindex = 0;
	struct bfd_pkt p;
	enum bfd_drop_reason why;
	struct cmsghdr *cm;
	ssize_t n;

	*more = false;
	n = recvmsg(fd, &mh, MSG_DONTWAIT);
	if (n < 0)
		return;
	*more = true;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TTL)
			ttl = (uint8_t) * (int *)CMSG_DATA(cm);
		else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo *pi = (struct in_pktinfo *)CMSG_DATA(cm);

			memcpy(local, &pi->ipi_addr, 4);
			ifindex = (uint32_t)pi->ipi_ifindex;
		} else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_HOPLIMIT)
			ttl = (uint8_t) * (int *)CMSG_DATA(cm);
		else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo *pi = (struct in6_pktinfo *)CMSG_DATA(cm);

			memcpy(local, &pi->ipi6_addr, 16);
			ifindex = pi->ipi6_ifindex;
		}
	}
	if (from.ss_family == AF_INET6) {
		family = 6;
		memcpy(peer, &((struct sockaddr_in6 *)&from)->sin6_addr, 16);
	} else {
		family = 4;
		memcpy(peer, &((struct sockaddr_in *)&from)->sin_addr, 4);
	}
	if (port == BFD_PORT_CONTROL && ttl != BFD_TTL_SINGLE_HOP) {
		e->stats.sw_drops[BFD_DROP_TTL]++; /* RFC 5881 section 5 */
		return;
	}
	why = codec_decode(buf, (size_t)n, &p);
	if (why != BFD_DROP_NONE) {
		e->stats.sw_drops[why]++;
		return;
	}
	engine_rx_packet(e, &p, family, port == BFD_PORT_MULTIHOP, local, peer, ifindex, ttl,
			 now_ns);
}

void sw_readable(struct engine *e, int idx, uint64_t now_ns)
{
	uint16_t port = (idx & 1) ? BFD_PORT_MULTIHOP : BFD_PORT_CONTROL; /* sw_open()'s order */
	bool more = true;

	/* Bounded, so a flood cannot keep the loop from its other work. */
	for (int i = 0; i < 256 && more && e->sw_fd[idx] >= 0; i++)
		recv_one(e, e->sw_fd[idx], port, now_ns, &more);
}
