// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* echo.c - see echo.h. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <net/ethernet.h>
#include <netpacket/packet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include "bfd_shared.h"
#include "echo.h"

#define IPTOS_CS6 0xc0 /* network control, as the Control packets (tx.c) */

void echo_socks_init(struct echo_socks *x)
{
	x->pkt_fd = x->nl_fd = -1;
	x->nl_seq = 0;
}

void echo_socks_close(struct echo_socks *x)
{
	if (x->pkt_fd >= 0)
		close(x->pkt_fd);
	if (x->nl_fd >= 0)
		close(x->nl_fd);
	echo_socks_init(x);
}

static int nl_open(struct echo_socks *x)
{
	struct timeval tv = {.tv_usec = 100000}; /* the kernel answers at once; never hang */

	if (x->nl_fd >= 0)
		return 0;
	x->nl_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (x->nl_fd < 0)
		return -errno;
	setsockopt(x->nl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return 0;
}

struct neigh_req {
	struct nlmsghdr nh;
	struct ndmsg nd;
	char attrs[64];
};

static void neigh_req_init(struct neigh_req *r, uint16_t type, uint16_t flags, uint32_t ifindex,
			   uint8_t family, const uint8_t addr[16], uint32_t seq)
{
	unsigned alen = family == 6 ? 16 : 4;
	struct rtattr *a;

	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_type = type;
	r->nh.nlmsg_flags = NLM_F_REQUEST | flags;
	r->nh.nlmsg_seq = seq;
	r->nd.ndm_family = family == 6 ? AF_INET6 : AF_INET;
	r->nd.ndm_ifindex = (int)ifindex;
	a = (struct rtattr *)r->attrs;
	a->rta_type = NDA_DST;
	a->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(a), addr, alen);
	r->nh.nlmsg_len = NLMSG_LENGTH(sizeof(r->nd)) + RTA_ALIGN(a->rta_len);
}

/* Ask the kernel to resolve the neighbour (NTF_USE: as if a packet wanted it). */
static void neigh_solicit(struct echo_socks *x, uint32_t ifindex, uint8_t family,
			  const uint8_t addr[16])
{
	struct neigh_req r;

	neigh_req_init(&r, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, ifindex, family, addr,
		       ++x->nl_seq);
	r.nd.ndm_flags = NTF_USE;
	r.nd.ndm_state = NUD_NONE;
	send(x->nl_fd, &r, r.nh.nlmsg_len, 0); /* its ack is drained by the next query */
}

int echo_neigh(struct echo_socks *x, uint32_t ifindex, uint8_t family, const uint8_t addr[16],
	       uint8_t mac[6])
{
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} u;
	struct neigh_req r;
	int err = nl_open(x), state = -1;
	bool have = false;
	ssize_t n;

	if (err)
		return err;
	while (recv(x->nl_fd, u.buf, sizeof(u.buf), MSG_DONTWAIT) > 0)
		; /* acks of earlier solicitations */
	neigh_req_init(&r, RTM_GETNEIGH, 0, ifindex, family, addr, ++x->nl_seq);
	if (send(x->nl_fd, &r, r.nh.nlmsg_len, 0) < 0)
		return -errno;
	n = recv(x->nl_fd, u.buf, sizeof(u.buf), 0);
	if (n < 0)
		return -errno;
	for (struct nlmsghdr *h = &u.nh; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_seq != x->nl_seq)
			continue;
		if (h->nlmsg_type == NLMSG_ERROR) {
			err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			continue;
		}
		if (h->nlmsg_type != RTM_NEWNEIGH)
			continue;
		struct ndmsg *nd = NLMSG_DATA(h);
		int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd)));

		state = nd->ndm_state;
		for (struct rtattr *a = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
		     RTA_OK(a, alen); a = RTA_NEXT(a, alen))
			if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == 6) {
				memcpy(mac, RTA_DATA(a), 6);
				have = true;
			}
	}
	if (err && err != -ENOENT)
		return err;
	/* Usable: confirmed, or stale (then probed: a stale entry is kept, not refreshed). */
	if (have && (state & (NUD_REACHABLE | NUD_PERMANENT | NUD_NOARP | NUD_DELAY | NUD_PROBE)))
		return 0;
	neigh_solicit(x, ifindex, family, addr);
	return have && (state & NUD_STALE) ? 0 : -EAGAIN;
}

/* RFC 1071 sum of @len bytes (network order pairs), folded by the caller. */
static uint32_t sum16(const uint8_t *p, unsigned len, uint32_t sum)
{
	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

unsigned echo_build(const struct bfd_session *s, uint32_t seq, uint64_t now_ns, uint8_t *buf)
{
	unsigned alen = s->family == 6 ? 16 : 4, ip_len = s->family == 6 ? 40 : 20;
	unsigned udp_len = 8 + sizeof(struct bfd_echo_payload);
	struct bfd_echo_payload pl = {
	    .magic = htonl(BFD_ECHO_MAGIC),
	    .my_disc = htonl(s->local_disc),
	    .seq = htonl(seq),
	    .tx_ns = htobe64(now_ns),
	};
	uint8_t *ip = buf, *udp = buf + ip_len;
	uint32_t sum;
	uint16_t c;

	memset(buf, 0, ip_len + udp_len);
	if (s->family == 6) {
		ip[0] = 0x60 | IPTOS_CS6 >> 4;
		ip[1] = (IPTOS_CS6 & 0x0f) << 4;
		ip[4] = (uint8_t)(udp_len >> 8);
		ip[5] = (uint8_t)udp_len;
		ip[6] = IPPROTO_UDP;
		ip[7] = BFD_TTL_SINGLE_HOP;
		memcpy(ip + 8, s->local_addr, 16); /* self-addressed (RFC 5881 4) */
		memcpy(ip + 24, s->local_addr, 16);
	} else {
		ip[0] = 0x45;
		ip[1] = IPTOS_CS6;
		ip[2] = (uint8_t)((ip_len + udp_len) >> 8);
		ip[3] = (uint8_t)(ip_len + udp_len);
		ip[6] = 0x40; /* DF */
		ip[8] = BFD_TTL_SINGLE_HOP;
		ip[9] = IPPROTO_UDP;
		memcpy(ip + 12, s->local_addr, 4);
		memcpy(ip + 16, s->local_addr, 4);
		c = fold(sum16(ip, 20, 0));
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
	}
	udp[0] = (uint8_t)(s->local_port >> 8);
	udp[1] = (uint8_t)s->local_port;
	udp[2] = BFD_PORT_ECHO >> 8;
	udp[3] = BFD_PORT_ECHO & 0xff;
	udp[4] = (uint8_t)(udp_len >> 8);
	udp[5] = (uint8_t)udp_len;
	memcpy(udp + 8, &pl, sizeof(pl));
	/* the pseudo-header: both addresses (the same one twice), protocol, UDP length */
	sum = sum16(s->local_addr, alen, 0);
	sum = sum16(s->local_addr, alen, sum) + IPPROTO_UDP + udp_len;
	c = fold(sum16(udp, udp_len, sum));
	if (!c)
		c = 0xffff; /* RFC 768: 0 means none (and is refused over IPv6, RFC 8200 8.1) */
	udp[6] = (uint8_t)(c >> 8);
	udp[7] = (uint8_t)c;
	return ip_len + udp_len;
}

int echo_send(struct echo_socks *x, uint8_t family, uint32_t ifindex, const uint8_t mac[6],
	      const uint8_t *buf, unsigned len)
{
	struct sockaddr_ll to = {
	    .sll_family = AF_PACKET,
	    .sll_protocol = htons(family == 6 ? ETHERTYPE_IPV6 : ETHERTYPE_IP),
	    .sll_ifindex = (int)ifindex,
	    .sll_halen = 6,
	};

	if (x->pkt_fd < 0) {
		/* Protocol 0: send only, nothing is queued to it. */
		x->pkt_fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (x->pkt_fd < 0)
			return -errno;
	}
	memcpy(to.sll_addr, mac, 6);
	if (sendto(x->pkt_fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)len)
		return -errno;
	return 0;
}
