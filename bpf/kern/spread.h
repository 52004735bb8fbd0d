/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/spread.h - --spread-pass: hand a frame that is not BFD to the stack on a CPU chosen by
 * its flow (BPF side only).
 *
 * Without it, everything the interface receives besides BFD goes up the stack on the receiving
 * CPU, in the softirq that also runs this program: a flood of other traffic backs up the ring
 * BFD arrives on. Redirected through a cpumap, the frames are turned into skbs and run through
 * the stack by a kernel thread per CPU, so the receiving CPU only runs the program. One flow
 * always lands on one CPU (no reordering inside a flow).
 */
#ifndef BFD_KERN_SPREAD_H
#define BFD_KERN_SPREAD_H

#define IPPROTO_TCP_NUM 6

/* A 32-bit mix of one word into the running hash (the finaliser of a multiplicative hash). */
static __always_inline __u32 mix32(__u32 h, __u32 w)
{
	h ^= w;
	h *= 0x9E3779B1u;
	return h ^ (h >> 15);
}

/*
 * flow_hash() - a hash of the frame's IPv4/IPv6 addresses, protocol and, for TCP and UDP, ports
 * (the first 4 bytes after a fixed IPv4 header without options or the IPv6 header; other frames
 * hash by addresses and protocol). Non-IP frames hash to 0. Never reads past data_end.
 */
static __always_inline __u32 flow_hash(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 h = 0, off = sizeof(*eth);
	__u8 proto;

	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto == ETH_P_IP_BE) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > end)
			return 0;
		h = mix32(mix32(h, ip->saddr), ip->daddr);
		proto = ip->protocol;
		if (ip->ihl != 5 || (ip->frag_off & IP_MF_OFFSET_MASK))
			return mix32(h, proto);
		off += sizeof(*ip);
	} else if (eth->h_proto == ETH_P_IPV6_BE) {
		struct ipv6hdr *ip6 = data + off;
		const __u32 *w = (const __u32 *)&ip6->saddr; /* saddr then daddr: 8 words */

		if ((void *)(ip6 + 1) > end)
			return 0;
		for (int i = 0; i < 8; i++)
			h = mix32(h, w[i]);
		proto = ip6->nexthdr;
		off += sizeof(*ip6);
	} else {
		return 0;
	}
	h = mix32(h, proto);
	if (proto == IPPROTO_TCP_NUM || proto == IPPROTO_UDP_NUM) {
		__u32 *ports = data + off;

		if ((void *)(ports + 1) <= end)
			h = mix32(h, *ports);
	}
	return h;
}

/* What to do with a frame that is not BFD: XDP_PASS here, or a redirect to its flow's CPU. */
static __always_inline int pass_frame(struct xdp_md *ctx)
{
	if (settings.spread_cpus) {
		int r =
		    bpf_redirect_map(&pass_cpus, flow_hash(ctx) % settings.spread_cpus, XDP_PASS);

		if (r == XDP_REDIRECT) {
			count(BFD_CNT_PASS_SPREAD);
			return r;
		}
	}
	count(BFD_CNT_PASS_NON_BFD);
	return XDP_PASS;
}

#endif
