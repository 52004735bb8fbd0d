/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * dplane.h - connections to FRR bfdd over its data-plane protocol (bfddp.h), in either role:
 * listening for a bfdd started with --dplaneaddr ipv4c:/ipv6c: (FRR 10.3 and later), or
 * connecting to a bfdd that listens (--dplaneaddr ipv4:/ipv6:/unix:), which FRR 8.4.4 needs.
 *
 * Framing survives partial reads and many messages per read; each message is handed on whole.
 * Outgoing messages are written whole and in order; what the socket does not take at once is
 * queued and flushed on EPOLLOUT. A malformed stream (bad length or version) is logged and the
 * connection closed: framing cannot be trusted after it.
 *
 * FRR 8.4.4's bfdd queues a new connection's ADDs in an 8 KiB output buffer and drops what does
 * not fit: it offers at most 58 sessions to a connection (shared docs/bfddp.md, section 6 #1);
 * the rest stay unattached and are offered to the next connection. So when a connection's
 * first offer fills that buffer, the engine connects once more, and again, until an offer
 * comes short: every session reaches the engine, each connection holding up to 58.
 */
#ifndef ENGINE_DPLANE_H
#define ENGINE_DPLANE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "bfd_shared.h"
#include "bfddp.h"

/* Enough connections of 58 sessions each for 3,712 sessions (see above). */
#define DPLANE_MAX_CONNS   64
#define DPLANE_BFDD_OUTBUF 8192 /* bfdd 8.4.4's per-connection output buffer, bytes */
#define DPLANE_OFFER_MAX   (DPLANE_BFDD_OUTBUF / BFDDP_SESSION_LEN) /* 58 ADDs */
/* ADDs this soon after a connect are bfdd's first offer to it (one event-loop pass of bfdd). */
#define DPLANE_OFFER_WINDOW_NS 1000000000ULL
#define DPLANE_IN_CAP	       (BFDDP_MAX_LEN * 8)
/*
 * Bytes queued for bfdd before it counts as stopped reading and is dropped: a message (the largest
 * v1 message is 140 bytes) for every session at the limit at once, about 9 MiB.
 */
#define DPLANE_OUT_MAX ((size_t)BFD_MAX_SESSIONS_LIMIT * 144)
/* Bytes read from one bfdd per pass of the loop: a burst of adds waits its turn behind the ring
 * buffer and the timers instead of holding the loop until bfdd stops sending. */
#define DPLANE_READ_PER_PASS (64u << 10)
#define DPLANE_KEEPALIVE_NS  500000000ULL /* ECHO_REQUEST period (bfddp bug #3 workaround) */
#define DPLANE_RECONNECT_NS  1000000000ULL

struct dplane_conn {
	int fd;
	uint32_t serial;  /* unique per connection for the engine's life */
	bool connecting;  /* non-blocking connect in progress */
	bool closed;	  /* closed; reported and freed once the current event is handled */
	bool was_up;	  /* it had connected: on_disconnect() is owed */
	uint64_t up_ns;	  /* when it connected */
	uint32_t offered; /* sessions (distinct lids) added in its first DPLANE_OFFER_WINDOW_NS */
	uint32_t offered_lids[DPLANE_OFFER_MAX]; /* an update ADD of one is not another session */
	uint8_t in[DPLANE_IN_CAP];
	size_t in_len;
	uint8_t *out;
	size_t out_len, out_cap;
	uint64_t rx_msgs, tx_msgs, rx_bytes, tx_bytes;
	uint64_t echo_sent, echo_replies;
	uint64_t last_echo_rtt_ns;
	uint64_t last_rx_ns;
	uint32_t unknown_types; /* messages of types we skip */
};

struct dplane;

struct dplane_ops {
	/* A connection is up (connected or accepted). */
	void (*on_connect)(void *ctx, struct dplane_conn *c);
	/* It went away; sessions it added are the callee's to handle. */
	void (*on_disconnect)(void *ctx, struct dplane_conn *c);
	/* DP_ADD_SESSION (add or update) or DP_DELETE_SESSION. */
	void (*on_session)(void *ctx, struct dplane_conn *c, uint16_t type,
			   const struct bfddp_session *s);
	/* Fill counters for @lid (zeros for an unknown one: bfdd must get an answer). */
	void (*on_counters)(void *ctx, uint32_t lid, struct bfddp_counters *out);
};

struct dplane {
	int epfd;
	uint64_t tag_listen, tag_conn; /* epoll tags; a conn's tag is tag_conn | index */
	int listen_fd;
	char listen_desc[128];
	bool connect_mode;
	char connect_spec[128];
	struct sockaddr_storage connect_addr;
	socklen_t connect_len;
	uint64_t next_connect_ns;
	uint64_t next_keepalive_ns;
	bool connect_more;	 /* a first offer filled bfdd's buffer: connect once more */
	uint32_t extra_connects; /* connections opened for what bfdd could not offer at once */
	struct dplane_conn *conns[DPLANE_MAX_CONNS];
	uint32_t next_serial;
	const struct dplane_ops *ops;
	void *ctx;
	uint64_t malformed; /* connections closed for a bad stream */
};

/*
 * dplane_init() - register with @epfd; events for the listening socket carry @tag_listen, those
 * for connection i carry @tag_conn | i.
 */
void dplane_init(struct dplane *d, int epfd, uint64_t tag_listen, uint64_t tag_conn,
		 const struct dplane_ops *ops, void *ctx);
/*
 * dplane_listen() - listen on "[ADDR:]PORT" (IPv4 or [IPv6]; ADDR defaults to 127.0.0.1) and log
 * "dplane: listening on A:P (bfdd: ipv4c:A:P)". Return: 0 or -errno.
 */
int dplane_listen(struct dplane *d, const char *spec);
/*
 * dplane_connect() - keep connecting to a listening bfdd at "ipv4:A.B.C.D[:PORT]",
 * "ipv6:[X::Y][:PORT]" or "unix:PATH" (bfdd's own --dplaneaddr syntax; port 50700 by default),
 * retrying every second. Return: 0, or -EINVAL for a spec it cannot parse.
 */
int dplane_connect(struct dplane *d, const char *spec, uint64_t now_ns);
/*
 * dplane_connect_more() - open one more connection to the listening bfdd (connect mode), which
 * offers it the sessions no connection holds. Return: 0, -ENOTCONN when not connecting to a
 * bfdd or none is up, -ENOSPC when DPLANE_MAX_CONNS are open, or -errno from socket/connect.
 */
int dplane_connect_more(struct dplane *d, uint64_t now_ns);
/*
 * dplane_preconnect() - open @n connections to the listening bfdd at @spec (dplane_connect()'s
 * syntax) before the engine can serve, each connected before the next is opened, so bfdd 8.4.4
 * attaches up to 58 sessions to each (and stops its own timers for them). Nothing is read until
 * dplane_adopt(). Return: the sockets put in @fds (fewer if a connect failed), or -EINVAL.
 */
int dplane_preconnect(const char *spec, int *fds, int n);
/* dplane_adopt() - take over dplane_preconnect()'s sockets as connections, up at @now_ns. */
void dplane_adopt(struct dplane *d, const int *fds, int n, uint64_t now_ns);
/* dplane_handle() - an epoll event for a tag this module registered. */
void dplane_handle(struct dplane *d, uint64_t tag, uint32_t events, uint64_t now_ns);
/* dplane_tick() - reconnects and keepalives; call a few times a second. */
void dplane_tick(struct dplane *d, uint64_t now_ns);
/*
 * dplane_reap() - report connections closed since (on_disconnect()) and free them. Call it where
 * no session or connection is in hand: the loop does, after each batch of events.
 */
void dplane_reap(struct dplane *d);
/*
 * dplane_send() - queue one whole message on @c. Return: 0 or -errno; on a failed write the
 * connection is closed, and reported to on_disconnect() only at the next dplane_reap().
 */
int dplane_send(struct dplane *d, struct dplane_conn *c, const uint8_t *msg, size_t len);
/* dplane_conn_by_serial() - the live connection with @serial, or NULL. */
struct dplane_conn *dplane_conn_by_serial(struct dplane *d, uint32_t serial);
int dplane_connected(const struct dplane *d); /* number of live connections */
void dplane_close_all(struct dplane *d);

/*
 * dplane_parse_inet() - "A.B.C.D:P", "[X::Y]:P", "A.B.C.D" or "P" (@default_addr then; port
 * 50700 when none is given) into @ss and @len. Return: 0 or -EINVAL. (dplane_addr.c)
 */
int dplane_parse_inet(const char *spec, const char *default_addr, struct sockaddr_storage *ss,
		      socklen_t *len);
/* dplane_sockaddr_str() - "A.B.C.D:P", "[X::Y]:P" or a unix path, into @buf of @n bytes. */
void dplane_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t n);

#endif
