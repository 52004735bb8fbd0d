// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_swap.bpf.c - the benchmark floor: swap MAC and IPv4 addresses, return XDP_TX. No BFD
 * checks, no session, no checksum. prog_test --bench times xdp_bfd against it in the same run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_swap(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u8 mac[6];
	__be32 a;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(0x0800))
		return XDP_PASS;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);
	a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	return XDP_TX;
}
