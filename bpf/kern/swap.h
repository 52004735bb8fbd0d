/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * swap.h - the benchmarks' floor: swap a frame's MAC and IPv4 addresses in place, nothing else
 * (no BFD check, no checksum). xdp_swap.bpf.c is this alone; tests/bench/floor adds one
 * primitive at a time on top of it.
 */
#ifndef XDP_BFD_KERN_SWAP_H
#define XDP_BFD_KERN_SWAP_H

/* 1 when the frame is Ethernet + IPv4 and was rewritten, 0 (untouched) otherwise. */
static __always_inline int swap_mac_ipv4(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	__u8 mac[6];
	__be32 a;

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(0x0800))
		return 0;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);
	a = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = a;
	return 1;
}

#endif
