/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gen_bfd_pcap - write a synthetic lab-style capture for bfdcap's benchmark: N BFD sessions
 * (IPv4 and IPv6, 10/50/300 ms x3), each end transmitting with RFC 5880 6.8.7 jitter (75-100 %
 * of the interval), some sessions stalling one end for 1.2 s (detection, Down, recovery), as
 * tcpdump -i any -y LINUX_SLL2 --time-stamp-precision=nano writes it, until P packets.
 *
 *   gen_bfd_pcap OUT.pcap [PACKETS=10000000] [SESSIONS=1000] [SEED=1]
 *
 * Deterministic for a given seed. Not part of bfdcap (lives outside capture/ on purpose).
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0_NS	1800000000000000000LL
#define SLOW_NS 1000000000LL

enum { ADMIN_DOWN, DOWN, INIT, UP };

struct end {
	int64_t next_ns, last_tx_ns, interval_ns, stall_from_ns, stall_to_ns;
	uint32_t my_disc, version;
	uint8_t state, diag, mult, v6;
	uint8_t src[16], dst[16];
	uint16_t sport;
};

struct ev {
	int64_t t;
	uint32_t end, version;
};

static struct end *ends;
static struct ev *heap;
static size_t nheap;
static uint64_t rng = 88172645463325252ull;

static uint64_t xrand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void heap_push(int64_t t, uint32_t e)
{
	size_t i = nheap++;

	heap[i] = (struct ev){t, e, ends[e].version};
	while (i && heap[(i - 1) / 2].t > heap[i].t) {
		struct ev tmp = heap[i];

		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = tmp;
		i = (i - 1) / 2;
	}
}

static struct ev heap_pop(void)
{
	struct ev top = heap[0];
	size_t i = 0;

	heap[0] = heap[--nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < nheap && heap[l].t < heap[m].t)
			m = l;
		if (r < nheap && heap[r].t < heap[m].t)
			m = r;
		if (m == i)
			break;
		struct ev tmp = heap[i];
		heap[i] = heap[m];
		heap[m] = tmp;
		i = m;
	}
	return top;
}

static void schedule(uint32_t e, int64_t t)
{
	ends[e].version++;
	ends[e].next_ns = t;
	heap_push(t, e);
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static size_t build(const struct end *e, uint8_t *p)
{
	uint8_t *ip = p + 20, *udp, *bfd;
	size_t iplen = e->v6 ? 40 : 20, len = 20 + iplen + 8 + 24;
	uint32_t v;

	memset(p, 0, len);
	p[0] = e->v6 ? 0x86 : 0x08; /* SLL2: protocol, reserved, ifindex, hatype, pkttype, ... */
	p[1] = e->v6 ? 0xdd : 0x00;
	p[7] = 3;
	p[9] = 1;
	p[11] = 6;
	if (e->v6) {
		ip[0] = 0x60;
		ip[4] = 0;
		ip[5] = 32;
		ip[6] = 17;
		ip[7] = 255;
		memcpy(ip + 8, e->src, 16);
		memcpy(ip + 24, e->dst, 16);
	} else {
		ip[0] = 0x45;
		ip[3] = 52;
		ip[8] = 255;
		ip[9] = 17;
		memcpy(ip + 12, e->src, 4);
		memcpy(ip + 16, e->dst, 4);
		uint32_t s = 0;
		for (int i = 0; i < 20; i += 2)
			s += (uint32_t)ip[i] << 8 | ip[i + 1];
		uint16_t c = csum_fold(s);
		ip[10] = c >> 8;
		ip[11] = c & 0xff;
	}
	udp = ip + iplen;
	udp[0] = e->sport >> 8;
	udp[1] = e->sport & 0xff;
	udp[2] = 3784 >> 8;
	udp[3] = 3784 & 0xff;
	udp[5] = 32;
	bfd = udp + 8;
	bfd[0] = 1 << 5 | e->diag;
	bfd[1] = (uint8_t)(e->state << 6);
	bfd[2] = e->mult;
	bfd[3] = 24;
	v = htonl(e->my_disc);
	memcpy(bfd + 4, &v, 4);
	v = htonl(e->state == DOWN ? 0 : (e->my_disc ^ 1));
	memcpy(bfd + 8, &v, 4);
	v = htonl(e->state == UP ? (uint32_t)(e->interval_ns / 1000) : 1000000);
	memcpy(bfd + 12, &v, 4);
	v = htonl((uint32_t)(e->interval_ns / 1000));
	memcpy(bfd + 16, &v, 4);
	if (e->v6) { /* IPv6 needs a real UDP checksum */
		uint32_t s = 17 + 32;
		for (int i = 0; i < 32; i += 2)
			s += (uint32_t)ip[8 + i] << 8 | ip[9 + i];
		for (int i = 0; i < 32; i += 2)
			s += (uint32_t)udp[i] << 8 | udp[i + 1];
		uint16_t c = csum_fold(s);
		if (!c)
			c = 0xffff;
		udp[6] = c >> 8;
		udp[7] = c & 0xff;
	}
	return len;
}

int main(int argc, char **argv)
{
	long long want = argc > 2 ? atoll(argv[2]) : 10000000, written = 0;
	long nsess = argc > 3 ? atol(argv[3]) : 1000;
	FILE *f;
	uint8_t pkt[128], hdr[16];

	if (argc < 2 || want <= 0 || nsess <= 0) {
		fprintf(stderr, "usage: gen_bfd_pcap OUT.pcap [PACKETS] [SESSIONS] [SEED]\n");
		return 2;
	}
	if (argc > 4)
		rng ^= (uint64_t)atoll(argv[4]) * 0x9E3779B97F4A7C15ull;
	f = fopen(argv[1], "wb");
	ends = calloc((size_t)nsess * 2, sizeof(*ends));
	heap = calloc((size_t)nsess * 2 * 4 + 16, sizeof(*heap));
	if (!f || !ends || !heap)
		return 1;
	setvbuf(f, NULL, _IOFBF, 1 << 22);
	{
		uint32_t gh[6] = {0xa1b23c4d, 2 | 4 << 16, 0, 0, 262144, 276};
		fwrite(gh, 4, 6, f);
	}
	for (long s = 0; s < nsess; s++) {
		int64_t iv = s % 5 < 2 ? 10000000 : s % 5 < 4 ? 50000000 : 300000000;
		int v6 = s % 5 == 4 || s % 7 == 3;

		for (int k = 0; k < 2; k++) {
			struct end *e = &ends[2 * s + k];

			e->v6 = (uint8_t)v6;
			e->interval_ns = iv;
			e->mult = 3;
			e->state = DOWN;
			e->my_disc = (uint32_t)(0x10000 + 2 * s + k);
			e->sport = (uint16_t)(49152 + (s % 16000));
			e->stall_from_ns = e->stall_to_ns = -1;
			if (v6) {
				e->src[0] = 0xfd;
				e->src[1] = 0x77;
				e->src[12] = (uint8_t)(s >> 8);
				e->src[13] = (uint8_t)s;
				e->src[15] = (uint8_t)(1 + k);
				memcpy(e->dst, e->src, 16);
				e->dst[15] = (uint8_t)(2 - k);
			} else {
				e->src[0] = 10;
				e->src[1] = (uint8_t)(s >> 8);
				e->src[2] = (uint8_t)s;
				e->src[3] = (uint8_t)(1 + k);
				memcpy(e->dst, e->src, 4);
				e->dst[3] = (uint8_t)(2 - k);
			}
			/* every 50th session: end 0 stalls 1.2 s, 20 s in and every 60 s after */
			if (k == 0 && s % 50 == 7) {
				e->stall_from_ns = T0_NS + 20000000000LL + s * 1000000LL;
				e->stall_to_ns = e->stall_from_ns + 1200000000LL;
			}
			schedule((uint32_t)(2 * s + k), T0_NS + (int64_t)(xrand() % 1000000000ull));
		}
	}
	while (written < want && nheap) {
		struct ev ev = heap_pop();
		struct end *e = &ends[ev.end], *p = &ends[ev.end ^ 1];
		int64_t now = ev.t, next;
		uint8_t before;

		if (ev.version != e->version)
			continue;
		if (e->stall_from_ns >= 0 && now >= e->stall_from_ns && now < e->stall_to_ns) {
			schedule(ev.end, e->stall_to_ns);
			continue;
		}
		if (e->stall_from_ns >= 0 && now >= e->stall_to_ns) { /* next stall in 60 s */
			e->stall_from_ns += 60000000000LL;
			e->stall_to_ns += 60000000000LL;
		}
		before = e->state;
		if (e->state == UP && p->last_tx_ns && now - p->last_tx_ns > 3 * p->interval_ns) {
			e->state = DOWN; /* RFC 5880 6.8.4: detection time expired */
			e->diag = 1;
		} else if (e->state == UP && p->state == DOWN && p->last_tx_ns) {
			e->state = DOWN;
			e->diag = 3;
		} else if (e->state == DOWN && p->state == DOWN && p->last_tx_ns) {
			e->state = INIT;
		} else if (e->state == DOWN && p->state == INIT) {
			e->state = UP;
			e->diag = 0;
		} else if (e->state == INIT && (p->state == INIT || p->state == UP)) {
			e->state = UP;
			e->diag = 0;
		}
		size_t len = build(e, pkt);
		uint32_t h[4] = {(uint32_t)(now / 1000000000), (uint32_t)(now % 1000000000),
				 (uint32_t)len, (uint32_t)len};
		memcpy(hdr, h, 16);
		fwrite(hdr, 1, 16, f);
		fwrite(pkt, 1, len, f);
		written++;
		e->last_tx_ns = now;
		if (e->state == UP)
			next = now + e->interval_ns * 3 / 4 +
			       (int64_t)(xrand() % (uint64_t)(e->interval_ns / 4 + 1));
		else
			next = now + SLOW_NS;
		schedule(ev.end, next);
		if (before != e->state && p->next_ns > now + 100000) /* the peer reacts at once */
			schedule(ev.end ^ 1, now + 100000 + (int64_t)(xrand() % 50000));
	}
	if (fclose(f))
		return 1;
	fprintf(stderr, "gen_bfd_pcap: %lld packets, %ld sessions\n", written, nsess);
	return 0;
}
