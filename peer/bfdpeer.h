/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bfdpeer.h - a BFD session emulator for regression labs: many sessions of RFC 5880 behaviour
 * (the engine's own state machine, engine/fsm.c, and codec, engine/codec.c), received through
 * an XDP program that rings arrivals to userspace (bpf/xdp_bfdpeer.bpf.c) and sent in batches
 * with sendmmsg(). See docs/bfdpeer.md.
 */
#ifndef PEER_BFDPEER_H
#define PEER_BFDPEER_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include "bfd_shared.h"
#include "session.h"

/* One session as the session list gives it (docs/bfdpeer.md, "Session list"). */
struct peer_session_cfg {
	uint8_t family; /* 4 or 6 */
	bool multihop;	/* RFC 5883: UDP 4784, TTL checked against min_ttl */
	uint8_t local_addr[16];
	uint8_t peer_addr[16];
	uint32_t desired_min_tx_us;
	uint32_t required_min_rx_us;
	uint8_t detect_mult;
	uint8_t min_ttl; /* multihop only: lowest TTL accepted (single hop: 255, RFC 5881 5) */
	bool passive;	 /* send nothing until the peer is heard (RFC 5880 6.1) */
	bool admin_down; /* start in AdminDown (RFC 5880 6.8.16) */
	bool demand;	 /* Demand mode (RFC 5880 6.6): set D once both ends are Up */
	uint32_t demand_poll_us; /* then verify the path with a Poll this often; 0: never */
	uint32_t my_disc;	 /* 0: bfdpeer picks one */
};

/*
 * peer_sessions_load() - read the session list at @path: a JSON object {"sessions": [...]}.
 * Return: the number of sessions with *@out (malloc'd) filled, or -1 with a message naming
 * the file and entry in @err (@errlen bytes).
 */
int peer_sessions_load(const char *path, struct peer_session_cfg **out, char *err, size_t errlen);

/* Counters over the whole run. */
struct peer_stats {
	uint64_t rx_packets;	/* arrivals read from the ring */
	uint64_t rx_accepted;	/* passed every check and went to a session's state machine */
	uint64_t rx_no_session; /* no session for the discriminator or the addresses */
	uint64_t rx_bad_ttl;	/* RFC 5881 5 / RFC 5883 2 */
	uint64_t rx_dropped[BFD_DROP__COUNT + 1]; /* codec_decode()'s reasons */
	uint64_t rx_delay_max_ns;		  /* arrival to processing */
	uint64_t tx_packets;
	uint64_t tx_errors;
	uint64_t tx_batches;	 /* sendmmsg() calls */
	uint64_t tx_finals;	 /* Finals sent in answer to a Poll (RFC 5880 6.5) */
	uint64_t tx_late_max_ns; /* how late a periodic packet left against its schedule */
	uint64_t tx_late_over_1ms;
	uint64_t tx_late_over_5ms;
	uint64_t detections; /* Detection Time passed: Down with diag 1 (RFC 5880 6.8.4) */
	uint64_t xdp[BFDPEER_CNT__COUNT];
};

/*
 * peer_stats_write() - the stats JSON (docs/bfdpeer.md, "Stats") of @n sessions at @by_slot,
 * written to @path through a temporary file and rename(), so a reader never sees half of it.
 * Return: 0 or -errno.
 */
/*
 * The same in steps, so a long list does not hold the event loop: peer_stats_begin() opens
 * @path.tmp and writes the totals (NULL with errno on failure), peer_stats_sessions() the
 * sessions of slots [@from, @to) (returns @to), peer_stats_end() closes and renames it into
 * place (0 or -errno). Sessions are written as they are when their step runs.
 */
FILE *peer_stats_begin(const char *path, const struct peer_stats *st,
		       struct bfd_session *const *by_slot, uint32_t n, uint64_t started_ns,
		       uint64_t now_ns);
uint32_t peer_stats_sessions(FILE *f, struct bfd_session *const *by_slot, uint32_t from,
			     uint32_t to);
int peer_stats_end(FILE *f, const char *path);
int peer_stats_write(const char *path, const struct peer_stats *st,
		     struct bfd_session *const *by_slot, uint32_t n, uint64_t started_ns,
		     uint64_t now_ns);

/* --- sending (tx.c) --- */

#define PEER_TX_BATCH 64 /* datagrams per sendmmsg() */
#define PEER_TX_SOCKS 4	 /* IPv4/IPv6 x single hop/multihop: [(v6 ? 2 : 0) + multihop] */

struct peer_tx_slot {
	uint8_t payload[BFD_CTRL_LEN];
	struct sockaddr_in6 dst; /* or sockaddr_in */
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
};

struct peer_tx_queue {
	int fd;
	unsigned len;
	struct mmsghdr msgs[PEER_TX_BATCH];
	struct peer_tx_slot slots[PEER_TX_BATCH];
};

/* The send side: a batch per socket, and the sessions to reschedule once it has left. */
struct peer_tx {
	struct peer_tx_queue q[PEER_TX_SOCKS];
	struct session_table *st;
	struct peer_stats *stats;
	int ifindex;		   /* scope of link-local destinations */
	struct bfd_session **sent; /* periodic packet queued: held by peer_tx_flush() */
	uint32_t n_sent;
	uint8_t *sent_by_slot; /* 1: in sent[] */
};

/* CLOCK_MONOTONIC in ns. */
uint64_t peer_now_ns(void);
/* peer_tx_init() - empty batches (no sockets yet: fd -1) for up to @n_sessions sessions of @st,
 * counting in @stats. Return: 0 or -ENOMEM. */
int peer_tx_init(struct peer_tx *tx, struct session_table *st, struct peer_stats *stats,
		 uint32_t n_sessions);
/* peer_tx_open_socket() - the UDP socket of @family bound to @src_port, TTL 255 (RFC 5881 5,
 * RFC 5883 2); the source address goes in each datagram's pktinfo. Return: fd or -errno. */
int peer_tx_open_socket(uint8_t family, uint16_t src_port);
/* peer_tx_queue() - build @s's next packet (a Final when @final, RFC 5880 6.8.7) into its
 * socket's batch, sending the batch first when full. */
void peer_tx_queue(struct peer_tx *tx, struct bfd_session *s, bool final, uint64_t t_ns);
/* peer_tx_schedule() - @s's next periodic packet after one sent at @t_ns (fsm_next_tx_ns()). */
void peer_tx_schedule(struct peer_tx *tx, struct bfd_session *s, uint64_t t_ns);
/* peer_tx_schedule_after_flush() - @s has a packet that is not a Final queued: scheduled from
 * @t_ns, and held to 75 % of the interval after its batch has left by peer_tx_flush(). */
void peer_tx_schedule_after_flush(struct peer_tx *tx, struct bfd_session *s, uint64_t t_ns);
/* peer_tx_flush() - send every batch (sendmmsg(), never blocking), then hold what was sent. */
void peer_tx_flush(struct peer_tx *tx);

#endif
