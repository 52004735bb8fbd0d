// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_bfdpeer.bpf.c - bfdpeer's receive path: every BFD Control datagram (UDP to 3784 or 4784,
 * RFC 5881 section 4, RFC 5883 section 5) that arrives on its interface is checked (IP header and
 * UDP checksums, kern/csum.h) and copied to a ring buffer with its arrival time, then dropped:
 * bfdpeer reads arrivals in batches instead of one recvmsg() each, and the stack never sees them
 * (no ICMP port unreachable, no socket buffer to overflow). Anything else passes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "bfd_shared.h"
#include "kern/parse.h"
#include "kern/csum.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024); /* 13,000 arrivals: 1 s of a 1,024-session 10 ms mesh */
} arrivals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BFDPEER_CNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} peer_counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&peer_counters, &which);

	if (v)
		*v += 1;
}

SEC("xdp")
int xdp_bfdpeer(struct xdp_md *ctx)
{
	struct bfdpeer_arrival *a;
	struct pkt p = {};
	int r = parse_udp(ctx, &p);
	__u32 n;

	if (r == PARSE_NOT_UDP || (p.dport != BFD_PORT_CONTROL && p.dport != BFD_PORT_MULTIHOP)) {
		count(BFDPEER_CNT_PASSED);
		return XDP_PASS;
	}
	if (r == PARSE_MALFORMED) {
		count(BFDPEER_CNT_MALFORMED);
		return XDP_DROP;
	}
	if (verify_checksums(ctx, &p) != BFD_DROP__COUNT) {
		count(BFDPEER_CNT_BAD_CSUM);
		return XDP_DROP;
	}
	a = bpf_ringbuf_reserve(&arrivals, sizeof(*a), 0);
	if (!a) {
		count(BFDPEER_CNT_RING_FULL);
		return XDP_DROP;
	}
	a->ts_ns = bpf_ktime_get_ns();
	__builtin_memset(a->local_addr, 0, sizeof(a->local_addr));
	__builtin_memset(a->peer_addr, 0, sizeof(a->peer_addr));
	__builtin_memset(&a->pkt, 0, sizeof(a->pkt));
	if (pkt_addrs(&p, a->local_addr, a->peer_addr)) {
		bpf_ringbuf_discard(a, 0);
		count(BFDPEER_CNT_MALFORMED);
		return XDP_DROP;
	}
	a->ifindex = ctx->ingress_ifindex;
	a->peer_port = p.sport;
	a->local_port = p.dport;
	a->payload_len = (__u16)p.udp_payload_len;
	a->family = p.family;
	a->ttl = p.ttl;
	n = p.udp_payload_len < BFD_CTRL_LEN ? p.udp_payload_len : BFD_CTRL_LEN;
	/* Shorter than the mandatory section: userspace counts it from payload_len. */
	if (n == BFD_CTRL_LEN && bpf_xdp_load_bytes(ctx, p.l4_off + 8, &a->pkt, BFD_CTRL_LEN)) {
		bpf_ringbuf_discard(a, 0);
		count(BFDPEER_CNT_MALFORMED);
		return XDP_DROP;
	}
	bpf_ringbuf_submit(a, 0);
	count(BFDPEER_CNT_RX);
	return XDP_DROP;
}
