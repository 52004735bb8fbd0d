/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * session.h - one BFD session as the engine holds it (RFC 5880 section 6.8.1 variables, with
 * the section's names minus "bfd."), and the table that finds sessions by bfdd's local
 * discriminator, by slot and by address, plus the transmit queue: a min-heap of the sessions
 * userspace must clock, ordered by their next transmit time.
 */
#ifndef ENGINE_SESSION_H
#define ENGINE_SESSION_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bfd_shared.h"
#include "timeq.h"

struct tx_sock;

struct bfd_session {
	/* Identity. */
	uint32_t lid;	      /* bfdd's local discriminator: the key of every data-plane message */
	uint32_t slot;	      /* index in the BPF session arrays */
	uint32_t incarnation; /* unique for the engine's life: ring events name it (slots and lids
				 recur) */
	uint8_t family;	      /* 4 or 6 */
	bool multihop;	      /* RFC 5883: UDP 4784, TTL >= min_ttl */
	uint8_t local_addr[16]; /* IPv4 in bytes 0-3 */
	bool local_from_route;	/* bfdd gave no source: local_addr is the one the route picked */
	uint8_t peer_addr[16];
	uint32_t ifindex; /* 0: not bound to an interface */
	char ifname[IF_NAMESIZE];
	char cfg_ifname[IF_NAMESIZE]; /* the interface bfdd named, whether it exists here or not */
	uint16_t local_port;	      /* our UDP source port (RFC 5881 section 4) */
	int tx_fd;		      /* socket userspace sends from; -1 if none */
	struct tx_sock *tx_sock;      /* that socket, shared by sessions on one port (tx.c) */
	uint64_t tx_retry_ns;	      /* no socket yet (address or route missing): next try */
	bool fast_path;		      /* its interface runs the XDP program */
	bool sw_fed; /* its packets came through the stack: stays on the software path until the
		      * program reports one (interface events do not move it) */
	uint32_t xdp_ifindex;	/* that interface (0: none) */
	uint32_t dplane_serial; /* the bfdd connection that added it */
	uint32_t cfg_gen;	/* generation of the cfg last written to the fast path */
	uint64_t hold_until_ns; /* bfdd went away: kept on the wire until then (--dp-hold) */
	/* Adopted from the pinned maps (--pin): bfdd's interface name and whether the route
	 * picked the source are unknown until bfdd adds it again. */
	bool from_pin;

	/* Configuration from bfdd (microseconds). */
	uint32_t cfg_desired_min_tx_us;
	uint32_t cfg_required_min_rx_us;
	uint8_t cfg_detect_mult;
	uint8_t min_ttl;
	bool passive;  /* send nothing until the peer is heard */
	bool shutdown; /* administratively down (RFC 5880 6.8.16) */
	bool cpi;      /* send C: control plane independent */
	/* bfd.DemandMode (RFC 5880 6.6): set D once both ends are Up, so the peer stops its
	 * periodic packets; we then verify the path with a Poll Sequence every demand_poll_us. */
	bool demand_mode;
	uint32_t demand_poll_us; /* 0: never verify (stock bfdd's behaviour) */
	/* Echo from bfdd (RFC 5880 6.4): its ECHO flag, echo TX interval (not negotiated, bfddp.md
	 * section 6 #9) and Required Min Echo RX. */
	bool echo;
	uint32_t cfg_echo_tx_us;
	uint32_t cfg_echo_rx_us;

	/* Our own echo (RFC 5880 6.4, 6.8.9; fsm_echo_*()), CLOCK_MONOTONIC ns. */
	uint64_t echo_since_ns;	     /* when it started at this interval; 0: not running */
	uint32_t echo_iv_us;	     /* the interval it runs at (fsm_echo_tx_us() then) */
	uint64_t echo_last_tx_ns;    /* our last echo packet; 0: none since it started */
	uint64_t echo_last_rx_ns;    /* the last one back (the fast path's record) */
	uint32_t echo_seq;	     /* echo packets sent for the session, ever */
	uint64_t echo_tx_packets;    /* sent (back: the fast path's record, kern_echo_rec()) */
	uint64_t echo_neigh_next_ns; /* when to ask the neighbour table again */
	uint8_t echo_mac[6];	     /* the neighbour's, from the kernel's neighbour table */
	bool echo_mac_ok;

	/* RFC 5880 6.8.1 state variables. */
	uint8_t session_state;
	uint8_t remote_session_state;
	uint8_t local_diag;
	uint32_t local_disc;
	uint32_t remote_disc;
	uint32_t desired_min_tx_us; /* as advertised now: at least 1 s while not Up */
	uint32_t required_min_rx_us;
	uint32_t remote_min_rx_us; /* bfd.RemoteMinRxInterval */
	bool remote_demand_mode;
	/* What else the peer last said. */
	uint32_t remote_desired_min_tx_us;
	uint32_t remote_min_echo_rx_us;
	uint8_t remote_detect_mult;
	uint8_t remote_diag;
	uint8_t remote_flags;

	/* Poll Sequence (RFC 5880 6.5, 6.8.3). */
	bool poll_active;
	uint32_t poll_seq; /* bumped per sequence; the XDP program sets P until this is answered */
	uint32_t tx_in_force_us; /* Desired Min TX used for our interval until the sequence ends */
	uint32_t rx_in_force_us; /* Required Min RX used for detection until the sequence ends */
	uint64_t poll_start_ns;	 /* when our last Poll Sequence began (its first P), 0: none */

	/* Timing, CLOCK_MONOTONIC ns. */
	uint64_t last_rx_ns;
	uint64_t last_tx_ns; /* last packet userspace sent */
	/* The transmit clock when there is no fast path to share it with (bfd_shared.h). */
	struct bfd_session_tx sw_clock;
	/* The program judged that the peer does not jitter (BFD_EVF_PEER_STEADY): its packets
	 * cannot clock ours, userspace does (RFC 5880 6.8.7). */
	bool peer_steady;
	/* An rx-clocked session whose peer's packet came too early or not at all: userspace sends
	 * what the fast path could not, until the fast path claims the clock again. */
	bool tx_backstop;
	/* The program refused the peer's packet as too early after ours (BFD_EVF_TX_EARLY), late
	 * in our interval: ours is owed 75 % after our last periodic packet. */
	bool tx_owed;
	/* ... not right after ours: the peer speaks on its own clock, and the backstop waits for
	 * the end of its window (fsm_next_tx_ns()). */
	bool tx_peer_window;
	uint64_t next_tx_ns; /* 0: userspace does not clock this session now */
	uint64_t state_since_ns;

	/* Counters kept in userspace (the XDP program counts its own in sessions_rx). */
	uint64_t user_tx_packets;
	uint64_t sw_rx_packets; /* packets received on the software path (not XDP) */
	uint64_t up_events;
	uint64_t down_events; /* Up -> anything else */

	/* What bfdd was last told (BFD_STATE_CHANGE), so only changes are sent. */
	bool reported;
	uint8_t reported_state;
	uint8_t reported_remote_mult;
	uint32_t reported_remote_disc;
	uint32_t reported_remote_tx_us;
	uint32_t reported_remote_rx_us;
	uint32_t reported_remote_echo_rx_us;
	uint32_t reported_remote_flags;

	struct bfd_session *hash_next;
	/* Filed by peer address (sessions_file_addr()): the chain of its peer-address bucket. */
	struct bfd_session *addr_next;
	bool addr_filed;
	/* On the tick's list (session_table.chores): see session_has_chores(). */
	struct bfd_session *chore_next, *chore_prev;
	bool on_chores;
};

struct session_table {
	struct bfd_session **by_slot;  /* [max] */
	struct bfd_session **buckets;  /* by lid */
	struct bfd_session **abuckets; /* by family, hop type and peer address */
	uint32_t nbuckets;	       /* power of two, of each */
	uint32_t free_hint; /* no free slot below it: adds stay O(1), not a scan from slot 0 */
	uint32_t max;
	uint32_t count;
	uint32_t slots_in_use; /* highest used slot + 1 */
	uint32_t rekeyed; /* sessions whose lid is not their discriminator (adopted, --dp-hold) */
	struct timeq txq; /* the transmit queue: slots by next_tx_ns */
	/* The sessions the userspace tick must look at (session_has_chores()), so that its cost
	 * is theirs, not that of every idle fast-path session. */
	struct bfd_session *chores;
	uint32_t n_chores;
};

/*
 * session_has_chores() - whether the userspace tick has work for @s: detection on the software
 * path (the sweep covers only the fast path), a socket still to open, or a --dp-hold running.
 */
static inline bool session_has_chores(const struct bfd_session *s)
{
	return !s->fast_path || s->tx_fd < 0 || s->hold_until_ns;
}

/* sessions_init() - room for @max sessions. Return: 0 or -ENOMEM. */
int sessions_init(struct session_table *t, uint32_t max);
void sessions_fini(struct session_table *t);

/* sessions_add() - a zeroed session with @lid in the lowest free slot. NULL when full. */
struct bfd_session *sessions_add(struct session_table *t, uint32_t lid);
/* sessions_add_at() - the same in @slot (a pinned session keeps its slot). NULL if taken. */
struct bfd_session *sessions_add_at(struct session_table *t, uint32_t lid, uint32_t slot);
/* sessions_remove() - take @s out of the table and the queue, and free it. */
void sessions_remove(struct session_table *t, struct bfd_session *s);
struct bfd_session *sessions_by_lid(const struct session_table *t, uint32_t lid);
/* sessions_by_disc() - the session whose My Discriminator is @disc (the lid, unless adopted). */
struct bfd_session *sessions_by_disc(const struct session_table *t, uint32_t disc);
/* sessions_rekey() - file @s under bfdd's new @lid (its wire discriminator is unchanged). */
void sessions_rekey(struct session_table *t, struct bfd_session *s, uint32_t lid);
struct bfd_session *sessions_by_slot(const struct session_table *t, uint32_t slot);
/*
 * sessions_file_addr() - file @s by its family, multihop and peer_addr (set them first; they do
 * not change for the session's life). sessions_remove() takes it out.
 */
void sessions_file_addr(struct session_table *t, struct bfd_session *s);
/*
 * sessions_by_peer() - the first filed session of the bucket holding (@family, @multihop, @peer):
 * walk ->addr_next and compare, the bucket also holds other peers.
 */
struct bfd_session *sessions_by_peer(const struct session_table *t, uint8_t family, bool multihop,
				     const uint8_t peer[16]);
/* sessions_by_addr() - by addresses, hop type and interface (0 matches any); filed ones only. */
struct bfd_session *sessions_by_addr(const struct session_table *t, uint8_t family, bool multihop,
				     const uint8_t local[16], const uint8_t peer[16],
				     uint32_t ifindex);

/*
 * chores_note() - put @s on the tick's list if session_has_chores(@s) (no-op if it is there):
 * call after anything that can make it true. Sessions start on the list (sessions_add_at());
 * the tick takes off those with nothing left (chores_del()), sessions_remove() any.
 */
void chores_note(struct session_table *t, struct bfd_session *s);
void chores_del(struct session_table *t, struct bfd_session *s);

/* txq_update() - (re)place @s by its next_tx_ns; next_tx_ns 0 takes it out. */
void txq_update(struct session_table *t, struct bfd_session *s);
/* txq_first() - the session due first, or NULL. */
struct bfd_session *txq_first(const struct session_table *t);

/* "10.0.0.1" or "fd00::1" for a 16-byte address field. */
const char *session_addr_str(uint8_t family, const uint8_t addr[16], char *buf, unsigned len);
/* session_str() - "10.0.0.1 -> 10.0.0.2 lid 7": @s for a log line, in @buf (@n bytes). */
const char *session_str(const struct bfd_session *s, char *buf, size_t n);
/* session_addr_is_zero() - all 16 bytes zero: no address (for a source: the route picks it). */
bool session_addr_is_zero(const uint8_t addr[16]);

#endif
