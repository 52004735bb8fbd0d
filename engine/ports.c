// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* ports.c - see ports.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "ports.h"

#define RESERVED_PATH "/proc/sys/net/ipv4/ip_local_reserved_ports"
#define RANGE_PATH    "/proc/sys/net/ipv4/ip_local_port_range"

bool ports_reserved(const char *list, uint16_t port)
{
	const char *p = list;

	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;

		if (end == p)
			return false; /* not a list the kernel writes */
		b = a;
		if (*end == '-')
			b = strtoul(end + 1, &end, 10);
		if (port >= a && port <= b)
			return true;
		p = end + strspn(end, ", \t\n");
	}
	return false;
}

/* The reserved-ports list (empty when it cannot be read), in @buf. */
static const char *read_reserved(char *buf, size_t len)
{
	FILE *f = fopen(RESERVED_PATH, "r");

	buf[0] = 0;
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	return buf;
}

/* The ephemeral range; false when it cannot be read. */
static bool read_range(unsigned *lo, unsigned *hi)
{
	FILE *f = fopen(RANGE_PATH, "r");
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%u %u", lo, hi) == 2;
	fclose(f);
	return ok;
}

void ports_check_dplane(uint16_t port, bool listening)
{
	char list[4096];
	unsigned lo, hi;

	if (!port || !read_range(&lo, &hi) || port < lo || port > hi)
		return;
	if (ports_reserved(read_reserved(list, sizeof(list)), port))
		return;
	pr_warn("ports: the data-plane port %u (which %s) is in the ephemeral range %u-%u and not "
		"in net.ipv4.ip_local_reserved_ports: a connect() to it while nothing listens can "
		"be given %u as its own source port and connect to itself, holding the port for "
		"good; reserve it (sysctl -w net.ipv4.ip_local_reserved_ports=%u, as "
		"/etc/sysctl.d/50-xdp-bfd.conf does)",
		port, listening ? "the engine listens on" : "bfdd listens on", lo, hi, port, port);
}

void ports_check_source(uint16_t first, uint16_t last)
{
	char list[4096];
	unsigned lo, hi, n = 0;

	read_reserved(list, sizeof(list));
	for (unsigned p = first; p <= last; p++)
		n += ports_reserved(list, (uint16_t)p);
	if (n)
		pr_warn(
		    "ports: net.ipv4.ip_local_reserved_ports (%s) holds %u of the engine's source "
		    "ports %u-%u: they are outside the default ephemeral range and need no "
		    "reservation; the engine binds them explicitly, which a reservation does not "
		    "prevent, so take them out of the list unless another program needs them",
		    list, n, first, last);
	if (read_range(&lo, &hi) && lo <= last && hi >= first)
		pr_warn(
		    "ports: the ephemeral range %u-%u (net.ipv4.ip_local_port_range) overlaps the "
		    "engine's source ports %u-%u: other programs' sockets may take them and "
		    "sessions then bind others; end the range below %u",
		    lo, hi, first, last, first);
}
