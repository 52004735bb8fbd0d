// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_bfddp.c - the data-plane protocol codec against the byte-exact messages FRR 8.4.4 sent
 * and accepted (the worked example of the shared bfddp reference, section 7), every malformed
 * header, and the connection's framing over a real TCP socket: messages split across reads, many
 * in one read, a bad length closing the connection, counters answered with the request's id.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "bfddp.h"
#include "check.h"
#include "dplane.h"
#include "log.h"

/* ADD captured from 8.4.4: peer 10.255.0.2 local-address 10.255.0.1, 300 ms, no zebra. */
static const uint8_t add_844[140] = {
    0x01,
    0x00,
    0x00,
    0x02,
    0x00,
    0x00,
    0x00,
    0x8c,
    0x00,
    0x00,
    0x00,
    0x00,
    0x0a,
    0xff,
    0x00,
    0x01,
    [16 ... 27] = 0,
    0x0a,
    0xff,
    0x00,
    0x02,
    [32 ... 43] = 0,
    0x58,
    0x71,
    0xb9,
    0xa7,
    0x00,
    0x04,
    0x93,
    0xe0,
    0x00,
    0x04,
    0x93,
    0xe0,
    0x00,
    0x00,
    0xc3,
    0x50,
    0x00,
    0x00,
    0xc3,
    0x50,
    0x00,
    0x00,
    0x00,
    0x00,
    0xff,
    0x03,
    [70 ... 139] = 0,
};

/* STATE_CHANGE that 8.4.4 accepted and showed Up. */
static const uint8_t up_844[36] = {
    0x01, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x24, 0x58, 0x71, 0xb9, 0xa7,
    0x2a, 0x3b, 0x4c, 0x5d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x93, 0xe0,
    0x00, 0x04, 0x93, 0xe0, 0x00, 0x00, 0xc3, 0x50, 0x03, 0x00, 0x03, 0x00,
};

/* The stand-in bfdd's writes: each must go out whole, or the test means nothing. */
static void send_all(int fd, const void *buf, size_t len)
{
	CHECK_EQ(write(fd, buf, len), (ssize_t)len, "the stand-in bfdd's write went out whole");
}

static void test_decode_add(void)
{
	struct bfddp_header h;
	struct bfddp_session s;
	static const uint8_t src[16] = {10, 255, 0, 1}, dst[16] = {10, 255, 0, 2};

	CHECK_EQ(bfddp_decode_header(add_844, sizeof(add_844), &h), 0, "ADD header decodes");
	CHECK_EQ(h.version, 1, "version");
	CHECK_EQ(h.type, BFDDP_ADD_SESSION, "type 2");
	CHECK_EQ(h.id, 0, "id 0");
	CHECK_EQ(h.length, 140, "length 140");
	CHECK_EQ(bfddp_decode_session(add_844, sizeof(add_844), &s), 0, "ADD body decodes");
	CHECK_EQ(s.flags, 0, "flags: IPv4 single hop");
	CHECK(!memcmp(s.src, src, 16), "src 10.255.0.1, rest zero");
	CHECK(!memcmp(s.dst, dst, 16), "dst 10.255.0.2");
	CHECK_EQ(s.lid, 1483848103u, "lid 0x5871b9a7");
	CHECK_EQ(s.min_tx_us, 300000, "Desired Min TX 300 ms");
	CHECK_EQ(s.min_rx_us, 300000, "Required Min RX 300 ms");
	CHECK_EQ(s.min_echo_tx_us, 50000, "echo TX 50 ms");
	CHECK_EQ(s.min_echo_rx_us, 50000, "echo RX 50 ms");
	CHECK_EQ(s.ttl, 255, "TTL 255: single hop");
	CHECK_EQ(s.detect_mult, 3, "Detect Mult 3");
	CHECK_EQ(s.ifindex, 0, "no interface");
	CHECK_EQ(s.ifname[0], 0, "empty ifname");
	CHECK_EQ(bfddp_decode_session(add_844, 139, &s), -EBADMSG, "139 bytes: too short");
}

static void test_encode(void)
{
	struct bfddp_state_change sc = {.lid = 1483848103u,
					.remote_disc = 0x2a3b4c5d,
					.remote_desired_min_tx_us = 300000,
					.remote_required_min_rx_us = 300000,
					.remote_required_min_echo_rx_us = 50000,
					.state = 3,
					.remote_detect_mult = 3};
	struct bfddp_counters c = {.control_input_packets = 0x0102030405060708ULL,
				   .echo_output_bytes = 9};
	struct bfddp_session s;
	uint8_t buf[256];
	static const uint8_t counters_hdr[16] = {0x01, 0x00, 0x00, 0x06, 0x00, 0x01, 0x00, 0x50,
						 0x58, 0x71, 0xb9, 0xa7, 0,    0,    0,	   0};
	static const uint8_t echo_hdr[8] = {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18};

	CHECK_EQ(bfddp_encode_state_change(buf, &sc), 36, "STATE_CHANGE is 36 bytes");
	CHECK(!memcmp(buf, up_844, 36), "STATE_CHANGE equals the one 8.4.4 accepted");
	sc.state = 7;
	bfddp_encode_state_change(buf, &sc);
	CHECK(buf[32] <= 3, "a state above 3 never reaches bfdd");
	CHECK_EQ(bfddp_encode_counters(buf, 1, 1483848103u, &c), 80, "counters reply 80 bytes");
	CHECK(!memcmp(buf, counters_hdr, 16),
	      "counters reply: header with the request id, lid, pad");
	CHECK_EQ(buf[24], 0x01, "control_input_packets big-endian at offset 24");
	CHECK_EQ(buf[31], 0x08, "... to offset 31");
	CHECK_EQ(buf[71], 9, "echo_output_bytes at offset 64..71");
	CHECK_EQ(bfddp_encode_echo_request(buf, 0x1122334455667788ULL), 24, "echo 24 bytes");
	CHECK(!memcmp(buf, echo_hdr, 8), "echo request: type 0, id 0, length 24");
	CHECK_EQ(buf[8], 0x11, "dp_time big-endian");
	CHECK_EQ(bfddp_decode_session(add_844, 140, &s), 0, "decode for the round trip");
	CHECK_EQ(bfddp_encode_session(buf, BFDDP_ADD_SESSION, &s), 140, "ADD re-encoded");
	CHECK(!memcmp(buf, add_844, 140), "decode then encode gives 8.4.4's bytes back");
}

static void test_bad_headers(void)
{
	struct bfddp_header h;
	uint8_t m[8] = {1, 0, 0, 2, 0, 0, 0, 0};

	CHECK_EQ(bfddp_decode_header(m, 8, &h), -EBADMSG, "length 0 (bfdd itself would spin)");
	m[7] = 7;
	CHECK_EQ(bfddp_decode_header(m, 8, &h), -EBADMSG, "length 7");
	m[6] = 0x20;
	m[7] = 0x01;
	CHECK_EQ(bfddp_decode_header(m, 8, &h), -EBADMSG, "length 8193");
	m[6] = 0;
	m[7] = 140;
	m[0] = 2;
	CHECK_EQ(bfddp_decode_header(m, 8, &h), -EPROTO, "version 2");
	m[0] = 1;
	CHECK_EQ(bfddp_decode_header(m, 7, &h), -EBADMSG, "fewer than 8 bytes");
	CHECK_EQ(bfddp_decode_header(m, 8, &h), 0, "a good header");
}

/* --- framing over a real socket --- */

static int sessions_seen, disconnects, counters_asked;
static struct bfddp_session last_session;

static void t_on_session(void *ctx, struct dplane_conn *c, uint16_t type,
			 const struct bfddp_session *s)
{
	(void)ctx;
	(void)c;
	(void)type;
	sessions_seen++;
	last_session = *s;
}

static void t_on_disconnect(void *ctx, struct dplane_conn *c)
{
	(void)ctx;
	(void)c;
	disconnects++;
}

static void t_on_counters(void *ctx, uint32_t lid, struct bfddp_counters *out)
{
	(void)ctx;
	counters_asked++;
	out->control_input_packets = lid == 0x5871b9a7 ? 42 : 0;
}

static const struct dplane_ops ops = {
    .on_session = t_on_session, .on_disconnect = t_on_disconnect, .on_counters = t_on_counters};

/* Run the dplane's side until nothing happens for 50 ms. */
static void pump(struct dplane *d, int epfd)
{
	struct epoll_event ev[8];
	int n;

	while ((n = epoll_wait(epfd, ev, 8, 50)) > 0)
		for (int i = 0; i < n; i++)
			dplane_handle(d, ev[i].data.u64, ev[i].events, 0);
}

static int connect_to(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	return fd;
}

static void test_framing(void)
{
	struct dplane d;
	int epfd = epoll_create1(0), fd;
	uint16_t port = (uint16_t)(40000 + getpid() % 20000);
	char spec[16];
	uint8_t buf[4 * 140], reply[256];
	static const uint8_t req[12] = {1, 0, 0, 5, 0x12, 0x34, 0, 12, 0x58, 0x71, 0xb9, 0xa7};
	ssize_t n;

	snprintf(spec, sizeof(spec), "%u", port);
	dplane_init(&d, epfd, 1ULL << 32, 2ULL << 32, &ops, NULL);
	CHECK_EQ(dplane_listen(&d, spec), 0, "listen on 127.0.0.1:port");
	fd = connect_to(port);
	CHECK(fd >= 0, "a stand-in bfdd connects");
	pump(&d, epfd);
	CHECK_EQ(dplane_connected(&d), 1, "one connection");

	/* One ADD dribbled in three writes. */
	send_all(fd, add_844, 5);
	pump(&d, epfd);
	send_all(fd, add_844 + 5, 100);
	pump(&d, epfd);
	CHECK_EQ(sessions_seen, 0, "nothing before the message is whole");
	send_all(fd, add_844 + 105, 35);
	pump(&d, epfd);
	CHECK_EQ(sessions_seen, 1, "a message split over three reads arrives once");
	CHECK_EQ(last_session.lid, 1483848103u, "with its fields");

	/* Four in one write. */
	for (int i = 0; i < 4; i++)
		memcpy(buf + 140 * i, add_844, 140);
	send_all(fd, buf, sizeof(buf));
	pump(&d, epfd);
	CHECK_EQ(sessions_seen, 5, "four messages in one read arrive as four");

	/* A counters request is answered at once with its id; two lid-0 STATE_CHANGEs first. */
	send_all(fd, req, sizeof(req));
	pump(&d, epfd);
	n = recv(fd, reply, sizeof(reply), MSG_DONTWAIT);
	CHECK_EQ(counters_asked, 1, "counters asked for the lid");
	CHECK_EQ(n, 36 + 36 + 80, "two padding STATE_CHANGEs and the reply, in one write");
	CHECK_EQ(reply[3], BFDDP_STATE_CHANGE, "first: STATE_CHANGE");
	CHECK_EQ(reply[8] | reply[9] | reply[10] | reply[11], 0, "for lid 0, which bfdd drops");
	CHECK_EQ(reply[72 + 3], BFDDP_SESSION_COUNTERS, "then the counters reply");
	CHECK_EQ(reply[72 + 4] << 8 | reply[72 + 5], 0x1234, "carrying the request's id");
	CHECK_EQ(reply[72 + 31], 42, "and the session's packets");

	/* An unknown type is skipped by length; then a zero length closes the connection. */
	{
		uint8_t unk[12] = {1, 0, 0, 99, 0, 0, 0, 12, 0, 0, 0, 0};
		uint8_t bad[8] = {1, 0, 0, 2, 0, 0, 0, 0};

		send_all(fd, unk, sizeof(unk));
		send_all(fd, add_844, 140);
		pump(&d, epfd);
		CHECK_EQ(sessions_seen, 6, "an unknown type is skipped, the next message read");
		send_all(fd, bad, sizeof(bad));
		pump(&d, epfd);
		CHECK_EQ(disconnects, 1, "length 0: logged and the connection closed, no crash");
		CHECK_EQ(dplane_connected(&d), 0, "no connection left");
		CHECK_EQ(d.malformed, 1, "counted as malformed");
	}
	close(fd);
	dplane_close_all(&d);
	close(epfd);
}

/* A stand-in for bfdd 8.4.4 listening on 127.0.0.1:@port: the listening socket, or -1. */
static int bfdd_listening(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8))
		return -1;
	return fd;
}

/* The next connection to @lfd within 200 ms, or -1. */
static int bfdd_accept(int lfd)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};

	return poll(&p, 1, 200) == 1 ? accept(lfd, NULL, NULL) : -1;
}

/*
 * bfdd 8.4.4 offers a new connection at most 58 sessions (8 KiB output buffer, 140-byte ADDs);
 * the rest go to the next connection. A first offer of 58 makes the engine connect once more;
 * a shorter one does not.
 */
static void test_connect_more_after_a_full_offer(void)
{
	uint16_t port = (uint16_t)(40000 + (getpid() + 7) % 20000);
	int epfd = epoll_create1(0), lfd = bfdd_listening(port), a1, a2, a3;
	uint8_t burst[DPLANE_OFFER_MAX * 140];
	struct dplane d;
	char spec[32];

	CHECK(lfd >= 0, "a stand-in bfdd listens");
	snprintf(spec, sizeof(spec), "ipv4:127.0.0.1:%u", port);
	dplane_init(&d, epfd, 1ULL << 32, 2ULL << 32, &ops, NULL);
	CHECK_EQ(dplane_connect(&d, spec, 0), 0, "connect mode");
	dplane_tick(&d, 0);
	a1 = bfdd_accept(lfd);
	pump(&d, epfd);
	CHECK(a1 >= 0 && dplane_connected(&d) == 1, "first connection up");
	CHECK_EQ(DPLANE_OFFER_MAX, 58, "58 ADDs fill bfdd's 8192-byte buffer");

	sessions_seen = 0;
	for (int i = 0; i < DPLANE_OFFER_MAX; i++)
		memcpy(burst + 140 * i, add_844, 140);
	send_all(a1, burst, DPLANE_OFFER_MAX * 140);
	pump(&d, epfd);
	CHECK_EQ(bfdd_accept(lfd), -1, "58 ADDs of one session (updates): no second connection");
	for (int i = 0; i < DPLANE_OFFER_MAX; i++) { /* lids 0x58710000..: 58 other sessions */
		burst[140 * i + 46] = 0;
		burst[140 * i + 47] = (uint8_t)i;
	}
	send_all(a1, burst, 56 * 140);
	pump(&d, epfd);
	CHECK_EQ(bfdd_accept(lfd), -1, "57 sessions (with the first): no second connection yet");
	send_all(a1, burst + 56 * 140, 140);
	pump(&d, epfd);
	CHECK_EQ(sessions_seen, 115, "all handed on");
	a2 = bfdd_accept(lfd);
	pump(&d, epfd);
	CHECK(a2 >= 0, "the 58th session: the engine connects once more for the rest");
	CHECK_EQ(dplane_connected(&d), 2, "both connections kept");
	CHECK_EQ(d.extra_connects, 1, "counted");

	send_all(a2, burst, 10 * 140);
	pump(&d, epfd);
	CHECK_EQ(sessions_seen, 125, "the rest arrive on the second");
	CHECK_EQ(bfdd_accept(lfd), -1, "a short offer: bfdd had no more, no third connection");
	CHECK_EQ(dplane_connect_more(&d, 0), 0, "dplane_connect_more() on request");
	CHECK_EQ(d.extra_connects, 2, "counted too");
	a3 = bfdd_accept(lfd);
	CHECK(a3 >= 0, "and bfdd gets that connection");
	dplane_close_all(&d);
	CHECK_EQ(dplane_connect_more(&d, 0), -ENOTCONN, "not once the engine stops");
	close(a1);
	close(a2);
	close(a3);

	/* Connections opened before the engine can serve, read once it can. */
	{
		int fds[3], acc[3], seen = sessions_seen;

		CHECK_EQ(dplane_preconnect(spec, fds, 3), 3, "three connections opened early");
		for (int i = 0; i < 3; i++)
			acc[i] = bfdd_accept(lfd);
		CHECK(acc[0] >= 0 && acc[1] >= 0 && acc[2] >= 0, "bfdd accepted each");
		send_all(acc[1], add_844, 140);
		dplane_init(&d, epfd, 1ULL << 32, 2ULL << 32, &ops, NULL);
		CHECK_EQ(dplane_connect(&d, spec, 0), 0, "connect mode");
		dplane_adopt(&d, fds, 3, 0);
		CHECK_EQ(dplane_connected(&d), 3, "adopted as three connections");
		pump(&d, epfd);
		CHECK_EQ(sessions_seen, seen + 1, "what bfdd sent meanwhile is read then");
		CHECK_EQ(bfdd_accept(lfd), -1, "and no other connection opened");
		send_all(acc[0], burst, DPLANE_OFFER_MAX * 140);
		pump(&d, epfd);
		CHECK_EQ(bfdd_accept(lfd), -1,
			 "a full offer on an early one but the last: no more");
		send_all(acc[2], burst, DPLANE_OFFER_MAX * 140);
		pump(&d, epfd);
		CHECK_EQ(d.extra_connects, 1, "a full offer on the last: one more connection");
		dplane_close_all(&d);
		for (int i = 0; i < 3; i++)
			close(acc[i]);
	}
	close(lfd);
	close(epfd);
}

static void test_connect_spec(void)
{
	struct dplane d;
	int epfd = epoll_create1(0);

	dplane_init(&d, epfd, 1ULL << 32, 2ULL << 32, &ops, NULL);
	CHECK_EQ(dplane_connect(&d, "ipv4:127.0.0.1:50700", 0), 0, "ipv4:A:P");
	CHECK_EQ(dplane_connect(&d, "ipv4:127.0.0.1", 0), 0, "ipv4:A (port 50700)");
	CHECK_EQ(dplane_connect(&d, "ipv6:[::1]:50700", 0), 0, "ipv6:[A]:P");
	CHECK_EQ(dplane_connect(&d, "unix:/var/run/frr/bfdd_dp.sock", 0), 0, "unix:PATH");
	CHECK_EQ(dplane_connect(&d, "ipv4:[::1]:1", 0), -EINVAL, "ipv4 with an IPv6 address");
	CHECK_EQ(dplane_connect(&d, "ipv4:1.2.3.4:70000", 0), -EINVAL, "port out of range");
	CHECK_EQ(dplane_connect(&d, "tcp:1.2.3.4", 0), -EINVAL, "unknown family");
	CHECK_EQ(dplane_connect(&d, "unix:", 0), -EINVAL, "empty path");
	close(epfd);
}

int main(void)
{
	log_open("/dev/null"); /* the malformed cases log errors by design */
	test_decode_add();
	test_encode();
	test_bad_headers();
	test_framing();
	test_connect_spec();
	test_connect_more_after_a_full_offer();
	return check_done("test_bfddp");
}
