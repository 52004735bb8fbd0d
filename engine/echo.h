/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * echo.h - the BFD Echo packets the engine originates (RFC 5880 6.4, 6.8.9; RFC 5881 section 4).
 *
 * Each is addressed to ourselves (IPv4 and IPv6: source = destination = the session's local
 * address), UDP from the session's source port to 3785, TTL / hop limit 255, its payload a
 * struct bfd_echo_payload naming the session. A UDP socket would deliver such a packet locally,
 * so it leaves through a packet socket (AF_PACKET) on the session's interface, straight to the
 * neighbour's MAC as the kernel's neighbour table holds it (rtnetlink RTM_GETNEIGH; an entry
 * missing or failed is asked for with NTF_USE, which makes the kernel resolve it). The
 * neighbour forwards it back, and the XDP program records it (kern/echo_own.h); the state
 * machine paces it and detects its loss (fsm_echo_*()). It comes back only if the neighbour
 * forwards that family (or reflects echo itself, as FRR does).
 */
#ifndef ENGINE_ECHO_H
#define ENGINE_ECHO_H

#include <stdint.h>
#include "session.h"

/* The sockets echo needs: a packet socket to send from, rtnetlink for the neighbour table. */
struct echo_socks {
	int pkt_fd; /* -1 until the first echo */
	int nl_fd;
	uint32_t nl_seq;
};

void echo_socks_init(struct echo_socks *x);
void echo_socks_close(struct echo_socks *x);

/*
 * echo_neigh() - the neighbour @addr's MAC on @ifindex (@family 4 or 6) into @mac, from the
 * kernel's neighbour table. An entry that is missing, incomplete or failed is asked to resolve
 * (RTM_NEWNEIGH with NTF_USE: ARP / Neighbour Solicitation), and so is a stale one, though its
 * MAC is used meanwhile. Return: 0, -EAGAIN (being resolved: try later) or -errno.
 */
int echo_neigh(struct echo_socks *x, uint32_t ifindex, uint8_t family, const uint8_t addr[16],
	       uint8_t mac[6]);

/*
 * echo_build() - the IP datagram of @s's echo number @seq sent at @now_ns (IPv4 or IPv6 header,
 * UDP with its checksum, the payload) into @buf (at least ECHO_MAX_LEN bytes). Return: length.
 */
#define ECHO_MAX_LEN (40 + 8 + 24)
unsigned echo_build(const struct bfd_session *s, uint32_t seq, uint64_t now_ns, uint8_t *buf);

/* echo_send() - @len bytes of @buf (echo_build()) out of @ifindex to @mac. Return: 0 or -errno. */
int echo_send(struct echo_socks *x, uint8_t family, uint32_t ifindex, const uint8_t mac[6],
	      const uint8_t *buf, unsigned len);

#endif
