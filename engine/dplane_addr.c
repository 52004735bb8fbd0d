// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* dplane_addr.c - the addresses of bfdd's data-plane socket, parsed and printed: see dplane.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include "dplane.h"

#define BFDDP_DEFAULT_PORT 50700

int dplane_parse_inet(const char *spec, const char *default_addr, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	char host[96];
	const char *port_s = NULL;
	char *end;
	long port = BFDDP_DEFAULT_PORT;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || (size_t)(close - spec - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, spec + 1, (size_t)(close - spec - 1));
		host[close - spec - 1] = 0;
		if (close[1] == ':')
			port_s = close + 2;
		else if (close[1])
			return -EINVAL;
	} else {
		const char *colon = strrchr(spec, ':');

		if (colon) {
			if ((size_t)(colon - spec) >= sizeof(host))
				return -EINVAL;
			memcpy(host, spec, (size_t)(colon - spec));
			host[colon - spec] = 0;
			port_s = colon + 1;
		} else if (strchr(spec, '.')) {
			snprintf(host, sizeof(host), "%s", spec);
		} else {
			snprintf(host, sizeof(host), "%s", default_addr);
			port_s = spec;
		}
	}
	if (port_s) {
		errno = 0;
		port = strtol(port_s, &end, 10);
		if (errno || *end || port <= 0 || port > 65535)
			return -EINVAL;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		*len = sizeof(*s4);
	} else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
	} else {
		return -EINVAL;
	}
	return 0;
}

void dplane_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, n, "%s:%u", a, ntohs(s4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, n, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, n, "%s", ((const struct sockaddr_un *)ss)->sun_path);
	}
}
