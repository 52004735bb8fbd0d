// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_echo.c - the engine's own echo packet and its neighbour look-up (engine/echo.c).
 *
 * echo_build(): IPv4 and IPv6, self-addressed, UDP from the session's port to 3785, TTL / hop
 * limit 255, the payload naming the session; both checksums verified here by summing the bytes
 * (RFC 1071: a right sum over the header, or over the pseudo-header and the datagram, is all
 * ones). echo_neigh(): in a network namespace of its own (unshare, with a veth pair nobody
 * answers ARP on): a missing entry is asked to resolve (NTF_USE: the kernel creates it and
 * sends ARP, so it exists right after), a reachable one gives its MAC, a stale one is used.
 * The namespace part needs root (CLONE_NEWNET): skipped otherwise, saying so.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "echo.h"

static uint32_t sum16(const uint8_t *p, unsigned len, uint32_t sum)
{
	for (unsigned i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static struct bfd_session session(uint8_t family, const char *local)
{
	struct bfd_session s;

	memset(&s, 0, sizeof(s));
	s.family = family;
	s.local_disc = 0x0A0B0C0D;
	s.local_port = 61007;
	inet_pton(family == 6 ? AF_INET6 : AF_INET, local, s.local_addr);
	return s;
}

static void test_build(void)
{
	struct bfd_session s4 = session(4, "192.0.2.1"), s6 = session(6, "2001:db8::1");
	uint8_t b[ECHO_MAX_LEN], pseudo[40];
	unsigned n;

	n = echo_build(&s4, 7, 0x0102030405060708ULL, b);
	CHECK_EQ(n, 20 + 8 + 24, "IPv4 echo: 52 bytes");
	CHECK(b[0] == 0x45 && b[8] == 255 && b[9] == 17, "IPv4: version 4, TTL 255, UDP");
	CHECK(!memcmp(b + 12, s4.local_addr, 4) && !memcmp(b + 16, s4.local_addr, 4),
	      "IPv4: source = destination = our address (RFC 5881 4)");
	CHECK_EQ(sum16(b, 20, 0), 0xffff, "IPv4 header checksum right");
	CHECK(b[20] == 61007 >> 8 && b[21] == (61007 & 0xff) && b[22] == 3785 >> 8 &&
		  b[23] == (3785 & 0xff),
	      "UDP from the session's port to 3785");
	memcpy(pseudo, b + 12, 8);
	memcpy(pseudo + 8, "\0\x11\0\x20", 4); /* zero, protocol 17, UDP length 32 */
	CHECK_EQ(sum16(b + 20, 32, sum16(pseudo, 12, 0)), 0xffff, "IPv4 UDP checksum right");
	CHECK(!memcmp(b + 28,
		      "XBFE\x0a\x0b\x0c\x0d\0\0\0\x07\0\0\0\0\x01\x02\x03\x04\x05\x06\x07\x08", 24),
	      "payload: magic, our discriminator, sequence, zero, send time (network order)");

	n = echo_build(&s6, 1, 5, b);
	CHECK_EQ(n, 40 + 8 + 24, "IPv6 echo: 72 bytes");
	CHECK(b[0] >> 4 == 6 && b[6] == 17 && b[7] == 255, "IPv6: next header UDP, hop limit 255");
	CHECK(!memcmp(b + 8, s6.local_addr, 16) && !memcmp(b + 24, s6.local_addr, 16),
	      "IPv6: self-addressed");
	memcpy(pseudo, b + 8, 32);
	memcpy(pseudo + 32, "\0\0\0\x20\0\0\0\x11", 8);
	CHECK_EQ(sum16(b + 40, 32, sum16(pseudo, 40, 0)), 0xffff, "IPv6 UDP checksum right");
	CHECK(b[46] | b[47], "IPv6 UDP checksum never 0 (RFC 8200 8.1)");
}

static int sh(const char *cmd)
{
	int r = system(cmd);

	if (r)
		fprintf(stderr, "test_echo: '%s' failed (%d)\n", cmd, r);
	return r;
}

static void test_neigh(void)
{
	struct echo_socks x;
	uint8_t peer[16] = {192, 0, 2, 9}, mac[6] = {0};
	uint32_t ifindex;
	char out[256] = "";
	FILE *f;

	if (geteuid() || unshare(CLONE_NEWNET)) {
		printf(
		    "test_echo: neighbour look-up skipped (needs root for a network namespace)\n");
		return;
	}
	if (sh("ip link add ve0 type veth peer name ve1 && ip link set ve0 up && "
	       "ip link set ve1 up && ip addr add 192.0.2.1/24 dev ve0")) {
		CHECK(0, "a veth pair in the test's own namespace");
		return;
	}
	ifindex = if_nametoindex("ve0");
	echo_socks_init(&x);
	CHECK_EQ(echo_neigh(&x, ifindex, 4, peer, mac), -EAGAIN, "no entry: not yet (-EAGAIN)");
	f = popen("ip neigh show 192.0.2.9 dev ve0", "r");
	if (f) {
		if (!fgets(out, sizeof(out), f))
			out[0] = 0;
		pclose(f);
	}
	CHECK(strstr(out, "192.0.2.9") && (strstr(out, "INCOMPLETE") || strstr(out, "FAILED")),
	      "and the kernel was asked to resolve it (NTF_USE): the entry is being resolved");
	CHECK_EQ(echo_neigh(&x, ifindex, 4, peer, mac), -EAGAIN, "still unresolved: -EAGAIN");
	sh("ip neigh replace 192.0.2.9 lladdr 02:00:00:00:00:09 dev ve0 nud reachable");
	CHECK_EQ(echo_neigh(&x, ifindex, 4, peer, mac), 0, "reachable: its MAC");
	CHECK(!memcmp(mac, "\x02\0\0\0\0\x09", 6), "the MAC the table holds");
	sh("ip neigh replace 192.0.2.9 lladdr 02:00:00:00:00:0a dev ve0 nud stale");
	CHECK_EQ(echo_neigh(&x, ifindex, 4, peer, mac), 0, "stale: used meanwhile");
	CHECK(!memcmp(mac, "\x02\0\0\0\0\x0a", 6), "the stale entry's MAC");
	echo_socks_close(&x);
}

int main(void)
{
	test_build();
	test_neigh();
	return check_done("test_echo");
}
