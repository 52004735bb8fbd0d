// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* dplane.c - see dplane.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "dplane.h"
#include "log.h"
#include "ports.h"

void dplane_init(struct dplane *d, int epfd, uint64_t tag_listen, uint64_t tag_conn,
		 const struct dplane_ops *ops, void *ctx)
{
	memset(d, 0, sizeof(*d));
	d->epfd = epfd;
	d->tag_listen = tag_listen;
	d->tag_conn = tag_conn;
	d->listen_fd = -1;
	d->ops = ops;
	d->ctx = ctx;
	d->next_serial = 1;
}

int dplane_listen(struct dplane *d, const char *spec)
{
	struct sockaddr_storage ss;
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = d->tag_listen};
	socklen_t len;
	int fd, one = 1, err;
	char where[128];

	err = dplane_parse_inet(spec, "127.0.0.1", &ss, &len);
	if (err) {
		pr_err("dplane: cannot parse listen address '%s' (want [ADDR:]PORT)", spec);
		return err;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 8) ||
	    epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		err = -errno;
		close(fd);
		pr_err("dplane: cannot listen on %s: %s", spec, strerror(-err));
		return err;
	}
	d->listen_fd = fd;
	dplane_sockaddr_str(&ss, where, sizeof(where));
	snprintf(d->listen_desc, sizeof(d->listen_desc), "%s", where);
	pr_info("dplane: listening on %s (bfdd: %s:%s)", where,
		ss.ss_family == AF_INET6 ? "ipv6c" : "ipv4c", where);
	ports_check_dplane(ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							  : ((struct sockaddr_in *)&ss)->sin_port),
			   true);
	return 0;
}

int dplane_connect(struct dplane *d, const char *spec, uint64_t now_ns)
{
	int err = -EINVAL;

	memset(&d->connect_addr, 0, sizeof(d->connect_addr));
	if (!strncmp(spec, "ipv4:", 5) || !strncmp(spec, "ipv6:", 5)) {
		err = dplane_parse_inet(spec + 5, "127.0.0.1", &d->connect_addr, &d->connect_len);
		if (!err && (d->connect_addr.ss_family == AF_INET6) != (spec[3] == '6'))
			err = -EINVAL;
	} else if (!strncmp(spec, "unix:", 5)) {
		struct sockaddr_un *su = (struct sockaddr_un *)&d->connect_addr;

		if (strlen(spec + 5) > 0 && strlen(spec + 5) < sizeof(su->sun_path)) {
			su->sun_family = AF_UNIX;
			strcpy(su->sun_path, spec + 5);
			d->connect_len = sizeof(*su);
			err = 0;
		}
	}
	if (err) {
		pr_err("dplane: cannot parse '%s' (want ipv4:A.B.C.D[:PORT], ipv6:[X::Y][:PORT] or "
		       "unix:PATH)",
		       spec);
		return err;
	}
	if (d->connect_addr.ss_family == AF_INET)
		ports_check_dplane(ntohs(((struct sockaddr_in *)&d->connect_addr)->sin_port),
				   false);
	else if (d->connect_addr.ss_family == AF_INET6)
		ports_check_dplane(ntohs(((struct sockaddr_in6 *)&d->connect_addr)->sin6_port),
				   false);
	snprintf(d->connect_spec, sizeof(d->connect_spec), "%s", spec);
	d->connect_mode = true;
	d->next_connect_ns = now_ns;
	return 0;
}

static int conn_slot(struct dplane *d)
{
	for (int i = 0; i < DPLANE_MAX_CONNS; i++)
		if (!d->conns[i])
			return i;
	return -1;
}

static int conn_index(const struct dplane *d, const struct dplane_conn *c)
{
	for (int i = 0; i < DPLANE_MAX_CONNS; i++)
		if (d->conns[i] == c)
			return i;
	return -1;
}

static struct dplane_conn *conn_new(struct dplane *d, int fd, bool connecting)
{
	int i = conn_slot(d);
	struct dplane_conn *c;
	struct epoll_event ev;

	if (i < 0) {
		pr_warn("dplane: more than %d bfdd connections; refusing one", DPLANE_MAX_CONNS);
		close(fd);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->serial = d->next_serial++;
	c->connecting = connecting;
	ev.events = EPOLLIN | (connecting ? EPOLLOUT : 0);
	ev.data.u64 = d->tag_conn | (uint64_t)i;
	if (epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		free(c);
		return NULL;
	}
	d->conns[i] = c;
	return c;
}

/*
 * Close now; tell the owner and free later, in reap(): a failed write can close a connection
 * in the middle of handling a session, and the owner's on_disconnect() may free that session.
 */
static void conn_close(struct dplane *d, struct dplane_conn *c, const char *why)
{
	if (c->closed)
		return;
	c->closed = true;
	c->was_up = !c->connecting;
	if (c->was_up)
		pr_info("dplane: bfdd disconnected (%s)", why);
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
}

/* Hand closed connections to on_disconnect() and free them; only where nothing is in hand. */
static void reap(struct dplane *d)
{
	for (int i = 0; i < DPLANE_MAX_CONNS; i++) {
		struct dplane_conn *c = d->conns[i];

		if (!c || !c->closed)
			continue;
		d->conns[i] = NULL;
		if (c->was_up && d->ops->on_disconnect)
			d->ops->on_disconnect(d->ctx, c);
		free(c->out);
		free(c);
	}
}

void dplane_reap(struct dplane *d)
{
	reap(d);
}

static void set_tcp_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on unix */
}

static void conn_up(struct dplane *d, struct dplane_conn *c, uint64_t now_ns)
{
	c->connecting = false;
	c->up_ns = now_ns;
	if (d->connect_mode)
		pr_info("dplane: connected to %s", d->connect_spec);
	pr_info("dplane: bfdd connected");
	if (d->ops->on_connect)
		d->ops->on_connect(d->ctx, c);
}

static int try_connect(struct dplane *d, uint64_t now_ns)
{
	int fd, err;

	d->next_connect_ns = now_ns + DPLANE_RECONNECT_NS;
	if (conn_slot(d) < 0)
		return -ENOSPC;
	fd = socket(d->connect_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	set_tcp_nodelay(fd);
	if (connect(fd, (struct sockaddr *)&d->connect_addr, d->connect_len) &&
	    errno != EINPROGRESS) {
		err = -errno;
		pr_debug("dplane: connect to %s: %s", d->connect_spec, strerror(errno));
		close(fd);
		return err;
	}
	return conn_new(d, fd, true) ? 0 : -ENOMEM;
}

int dplane_connect_more(struct dplane *d, uint64_t now_ns)
{
	int err;

	if (!d->connect_mode || !dplane_connected(d))
		return -ENOTCONN;
	err = try_connect(d, now_ns);
	if (!err)
		d->extra_connects++;
	return err;
}

int dplane_preconnect(const char *spec, int *fds, int n)
{
	struct dplane tmp = {.listen_fd = -1};
	int got = 0;

	if (dplane_connect(&tmp, spec, 0))
		return -EINVAL;
	while (got < n) {
		int fd = socket(tmp.connect_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&tmp.connect_addr, tmp.connect_len)) {
			if (fd >= 0)
				close(fd);
			break;
		}
		fds[got++] = fd;
	}
	return got;
}

void dplane_adopt(struct dplane *d, const int *fds, int n, uint64_t now_ns)
{
	for (int i = 0; i < n; i++) {
		struct dplane_conn *c;

		fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
		set_tcp_nodelay(fds[i]);
		c = conn_new(d, fds[i], false);
		if (!c)
			continue;
		conn_up(d, c, now_ns);
		/* Opened for bfdd's offers in advance: only the last one's being full says more */
		if (i < n - 1)
			c->offered = DPLANE_OFFER_MAX;
	}
}

static void update_events(struct dplane *d, struct dplane_conn *c)
{
	struct epoll_event ev = {.events = EPOLLIN | (c->out_len || c->connecting ? EPOLLOUT : 0),
				 .data.u64 = d->tag_conn | (uint64_t)conn_index(d, c)};

	epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static int flush_out(struct dplane *d, struct dplane_conn *c)
{
	while (c->out_len) {
		ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -errno;
		}
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
		c->tx_bytes += (uint64_t)n;
	}
	update_events(d, c);
	return 0;
}

int dplane_send(struct dplane *d, struct dplane_conn *c, const uint8_t *msg, size_t len)
{
	int err;

	if (c->connecting || c->closed)
		return -ENOTCONN;
	if (c->out_len + len > DPLANE_OUT_MAX) {
		conn_close(d, c, "bfdd stopped reading");
		return -ENOBUFS;
	}
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap * 2 : 4096;
		uint8_t *p;

		while (cap < c->out_len + len)
			cap *= 2;
		p = realloc(c->out, cap);
		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, msg, len);
	c->out_len += len;
	c->tx_msgs++;
	err = flush_out(d, c);
	if (err) {
		conn_close(d, c, strerror(-err));
		return err;
	}
	return 0;
}

static void reply_counters(struct dplane *d, struct dplane_conn *c, uint16_t id, uint32_t lid)
{
	struct bfddp_state_change pad = {0};
	struct bfddp_counters cnt = {0};
	uint8_t buf[2 * BFDDP_STATE_CHANGE_LEN + BFDDP_COUNTERS_LEN];
	size_t n = 0;

	if (d->ops->on_counters)
		d->ops->on_counters(d->ctx, lid, &cnt);
	/*
	 * FRR 8.4.4 consumes counters replies without compacting its 8 KiB input buffer and resets
	 * the connection after about a hundred of them. Two STATE_CHANGEs for lid 0 (which bfdd
	 * drops) in the same write make its wait consume three messages and compact.
	 */
	n += bfddp_encode_state_change(buf + n, &pad);
	n += bfddp_encode_state_change(buf + n, &pad);
	n += bfddp_encode_counters(buf + n, id, lid, &cnt);
	dplane_send(d, c, buf, n);
}

/* Count @lid among the sessions @c was offered; true when that makes DPLANE_OFFER_MAX. */
static bool count_offer(struct dplane_conn *c, uint32_t lid)
{
	if (c->offered >= DPLANE_OFFER_MAX)
		return false;
	for (uint32_t i = 0; i < c->offered; i++)
		if (c->offered_lids[i] == lid)
			return false;
	c->offered_lids[c->offered++] = lid;
	return c->offered == DPLANE_OFFER_MAX;
}

/* Handle one whole message. Return: 0, or -1 when the connection was closed. */
static int dispatch(struct dplane *d, struct dplane_conn *c, const struct bfddp_header *h,
		    const uint8_t *m, uint64_t now_ns)
{
	struct bfddp_session s;
	uint64_t dp_time, bfdd_time;
	uint32_t lid;

	c->rx_msgs++;
	switch (h->type) {
	case BFDDP_ADD_SESSION:
	case BFDDP_DELETE_SESSION:
		if (bfddp_decode_session(m, h->length, &s))
			goto short_msg;
		/* A first offer that filled bfdd's buffer left sessions behind (dplane.h). */
		if (h->type == BFDDP_ADD_SESSION && now_ns - c->up_ns < DPLANE_OFFER_WINDOW_NS &&
		    count_offer(c, s.lid) && d->connect_mode)
			d->connect_more = true;
		if (d->ops->on_session)
			d->ops->on_session(d->ctx, c, h->type, &s);
		return c->closed ? -1 : 0;
	case BFDDP_REQUEST_COUNTERS:
		if (bfddp_decode_counters_request(m, h->length, &lid))
			goto short_msg;
		reply_counters(d, c, h->id, lid);
		return c->closed ? -1 : 0;
	case BFDDP_ECHO_REPLY:
		if (bfddp_decode_echo(m, h->length, &dp_time, &bfdd_time))
			goto short_msg;
		c->echo_replies++;
		c->last_echo_rtt_ns = now_ns - dp_time;
		return 0;
	default:
		if (!c->unknown_types++)
			pr_warn("dplane: skipping message type %u (length %u) from bfdd", h->type,
				h->length);
		return 0;
	}
short_msg:
	pr_err("dplane: message type %u has length %u, too short for its type; closing", h->type,
	       h->length);
	d->malformed++;
	conn_close(d, c, "malformed message");
	return -1;
}

struct dispatch_ctx {
	struct dplane *d;
	struct dplane_conn *c;
	uint64_t now_ns;
};

static int dispatch_one(void *ctx, const struct bfddp_header *h, const uint8_t *msg)
{
	struct dispatch_ctx *x = ctx;

	return dispatch(x->d, x->c, h, msg, x->now_ns);
}

static void conn_read(struct dplane *d, struct dplane_conn *c, uint64_t now_ns)
{
	struct dispatch_ctx x = {d, c, now_ns};
	size_t got = 0;

	/* Level-triggered: what is left after DPLANE_READ_PER_PASS is read on the next pass. */
	while (got < DPLANE_READ_PER_PASS) {
		ssize_t n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
		struct bfddp_header bad = {0};
		long off;

		if (n == 0) {
			conn_close(d, c, "end of stream");
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			conn_close(d, c, strerror(errno));
			return;
		}
		c->in_len += (size_t)n;
		got += (size_t)n;
		c->rx_bytes += (uint64_t)n;
		c->last_rx_ns = now_ns;
		off = bfddp_frame(c->in, c->in_len, dispatch_one, &x, &bad);
		if (c->closed)
			return;
		if (off < 0) {
			pr_err("dplane: bad message from bfdd (version %u, length %u): %s; closing",
			       bad.version, bad.length,
			       off == -EPROTO ? "unsupported protocol version"
					      : "length out of range");
			d->malformed++;
			conn_close(d, c, "malformed stream");
			return;
		}
		memmove(c->in, c->in + off, c->in_len - (size_t)off);
		c->in_len -= (size_t)off;
	}
}

static void handle(struct dplane *d, uint64_t tag, uint32_t events, uint64_t now_ns)
{
	if (tag == d->tag_listen) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct dplane_conn *c;

		if (fd < 0)
			return;
		set_tcp_nodelay(fd);
		c = conn_new(d, fd, false);
		if (c)
			conn_up(d, c, now_ns);
		return;
	}
	int i = (int)(tag & 0xffff);
	struct dplane_conn *c = i < DPLANE_MAX_CONNS ? d->conns[i] : NULL;

	if (!c || c->closed)
		return;
	if (c->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			pr_debug("dplane: connect to %s: %s", d->connect_spec, strerror(err));
			conn_close(d, c, strerror(err));
			return;
		}
		conn_up(d, c, now_ns);
		if (c->closed)
			return;
		update_events(d, c);
	}
	if (events & EPOLLOUT) {
		int err = flush_out(d, c);

		if (err) {
			conn_close(d, c, strerror(-err));
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_read(d, c, now_ns);
}

void dplane_handle(struct dplane *d, uint64_t tag, uint32_t events, uint64_t now_ns)
{
	int err;

	handle(d, tag, events, now_ns);
	reap(d);
	if (!d->connect_more)
		return;
	d->connect_more = false;
	err = dplane_connect_more(d, now_ns);
	if (err)
		pr_warn("dplane: bfdd offered %d sessions at once, all its output buffer holds; "
			"cannot connect once more for the rest: %s",
			DPLANE_OFFER_MAX, strerror(-err));
	else
		pr_info("dplane: bfdd offered %d sessions at once, all its output buffer holds; "
			"connecting once more for the rest",
			DPLANE_OFFER_MAX);
}

int dplane_connected(const struct dplane *d)
{
	int n = 0;

	for (int i = 0; i < DPLANE_MAX_CONNS; i++)
		if (d->conns[i] && !d->conns[i]->connecting && !d->conns[i]->closed)
			n++;
	return n;
}

struct dplane_conn *dplane_conn_by_serial(struct dplane *d, uint32_t serial)
{
	for (int i = 0; i < DPLANE_MAX_CONNS; i++)
		if (d->conns[i] && d->conns[i]->serial == serial && !d->conns[i]->connecting &&
		    !d->conns[i]->closed)
			return d->conns[i];
	return NULL;
}

void dplane_tick(struct dplane *d, uint64_t now_ns)
{
	bool have = false;

	for (int i = 0; i < DPLANE_MAX_CONNS; i++)
		have |= d->conns[i] != NULL;
	if (d->connect_mode && !have && now_ns >= d->next_connect_ns)
		try_connect(d, now_ns);
	if (now_ns < d->next_keepalive_ns)
		return;
	d->next_keepalive_ns = now_ns + DPLANE_KEEPALIVE_NS;
	/* Unsolicited traffic keeps bfdd's read handler running (bfddp bug #3) and shows it lives.
	 */
	for (int i = 0; i < DPLANE_MAX_CONNS; i++) {
		struct dplane_conn *c = d->conns[i];
		uint8_t buf[BFDDP_ECHO_LEN];

		if (!c || c->connecting || c->closed)
			continue;
		c->echo_sent++;
		dplane_send(d, c, buf, bfddp_encode_echo_request(buf, now_ns));
	}
	reap(d);
}

void dplane_close_all(struct dplane *d)
{
	for (int i = 0; i < DPLANE_MAX_CONNS; i++)
		if (d->conns[i] && !d->conns[i]->closed) {
			flush_out(d, d->conns[i]);
			conn_close(d, d->conns[i], "engine stopping");
		}
	reap(d);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	d->listen_fd = -1;
	d->connect_mode = false;
}
