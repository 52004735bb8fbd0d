// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ifmon.c - follow interfaces and addresses through rtnetlink (RTMGRP_LINK and the address
 * groups), so that an interface deleted and created again (new ifindex, no XDP program) never
 * leaves sessions relying on a fast path that is gone (conformance C12). Parsing only; what to
 * do is paths.c's (engine_iface_gone(), engine_iface_changed()).
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "engine.h"

int ifmon_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
				 .nl_groups =
				     RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void link_msg(struct engine *e, const struct nlmsghdr *nh)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);
	const struct rtattr *rta = IFLA_RTA(ifi);
	int len = (int)IFLA_PAYLOAD(nh);
	char name[IF_NAMESIZE] = "";

	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type == IFLA_IFNAME && RTA_PAYLOAD(rta) <= IF_NAMESIZE)
			memcpy(name, RTA_DATA(rta), RTA_PAYLOAD(rta));
	name[IF_NAMESIZE - 1] = 0;
	if (nh->nlmsg_type == RTM_DELLINK)
		engine_iface_gone(e, (uint32_t)ifi->ifi_index, name);
	else
		engine_iface_changed(e, (uint32_t)ifi->ifi_index, name);
}

void ifmon_readable(struct engine *e, int fd)
{
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		int len = (int)n;

		if (n <= 0) {
			if (n < 0 &&
			    errno == ENOBUFS) /* we fell behind: look at everything again */
				engine_iface_changed(e, 0, "");
			return;
		}
		for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned)len);
		     nh = NLMSG_NEXT(nh, len)) {
			switch (nh->nlmsg_type) {
			case RTM_NEWLINK:
			case RTM_DELLINK:
				if (nh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct ifinfomsg)))
					link_msg(e, nh);
				break;
			case RTM_NEWADDR:
			case RTM_DELADDR:
				engine_iface_changed(e, 0, "");
				break;
			default:
				break;
			}
		}
	}
}
