/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bfdpeer.h - a BFD session emulator for regression labs: many sessions of RFC 5880 behaviour
 * (the engine's own state machine, engine/fsm.c, and codec, engine/codec.c), received through
 * an XDP program that rings arrivals to userspace (bpf/xdp_bfdpeer.bpf.c) and sent in batches
 * with sendmmsg(). See docs/bfdpeer.md.
 */
#ifndef PEER_BFDPEER_H
#define PEER_BFDPEER_H

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
	uint8_t min_ttl;  /* multihop only: lowest TTL accepted (single hop: 255, RFC 5881 5) */
	bool passive;	  /* send nothing until the peer is heard (RFC 5880 6.1) */
	bool admin_down;  /* start in AdminDown (RFC 5880 6.8.16) */
	uint32_t my_disc; /* 0: bfdpeer picks one */
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

#endif
