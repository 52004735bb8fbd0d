/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/parse.h - find the UDP payload of an Ethernet frame (BPF side only).
 *
 * Untagged Ethernet, IPv4 without options and not fragmented, IPv6 with UDP as the next header.
 * A frame with an 802.1Q/802.1ad tag belongs to the VLAN device above this one, not to a session
 * on this one: it goes to the stack, and a session bound to the VLAN device is served by the
 * program attached there (it sees the frame untagged). Every read is bounded by data_end first:
 * the verifier insists.
 */
#ifndef BFD_KERN_PARSE_H
#define BFD_KERN_PARSE_H

#define ETH_P_IP_BE	  bpf_htons(0x0800)
#define ETH_P_IPV6_BE	  bpf_htons(0x86DD)
#define ETH_P_8021Q_BE	  bpf_htons(0x8100)
#define ETH_P_8021AD_BE	  bpf_htons(0x88A8)
#define IPPROTO_UDP_NUM	  17
#define IP_MF_OFFSET_MASK bpf_htons(0x3fff) /* More Fragments + fragment offset */

/* Where the headers of one frame are, once parse_udp() has said it is UDP. */
struct pkt {
	void *data;
	void *end;
	__u32 l3_off;	       /* IP header offset */
	__u32 l4_off;	       /* UDP header offset */
	__u8 family;	       /* 4 or 6 */
	__u8 ttl;	       /* TTL or hop limit */
	__u16 dport;	       /* host order */
	__u16 sport;	       /* host order */
	__u32 udp_payload_len; /* from the UDP length field, checked against IP and the frame */
};

enum parse_result {
	PARSE_NOT_UDP = 0, /* not ours to look at: pass */
	PARSE_UDP = 1,
	PARSE_MALFORMED = 2, /* a UDP datagram whose headers disagree */
};

static __always_inline int parse_udp(struct xdp_md *ctx, struct pkt *p)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u32 off = sizeof(*eth);
	__be16 proto;
	__u32 ip_payload;

	p->data = data;
	p->end = end;
	if ((void *)(eth + 1) > end)
		return PARSE_NOT_UDP;
	proto = eth->h_proto;
	if (proto == ETH_P_8021Q_BE || proto == ETH_P_8021AD_BE)
		return PARSE_NOT_UDP;
	p->l3_off = off;
	if (proto == ETH_P_IP_BE) {
		struct iphdr *ip = data + off;

		if ((void *)(ip + 1) > end)
			return PARSE_NOT_UDP;
		/* Options would have to be echoed or stripped in a reply; BFD never carries them.
		 */
		if (ip->version != 4 || ip->ihl != 5 || ip->protocol != IPPROTO_UDP_NUM)
			return PARSE_NOT_UDP;
		if (ip->frag_off & IP_MF_OFFSET_MASK)
			return PARSE_NOT_UDP;
		if (bpf_ntohs(ip->tot_len) < sizeof(*ip) + sizeof(struct udphdr))
			return PARSE_MALFORMED;
		ip_payload = bpf_ntohs(ip->tot_len) - sizeof(*ip);
		p->family = 4;
		p->ttl = ip->ttl;
		off += sizeof(*ip);
	} else if (proto == ETH_P_IPV6_BE) {
		struct ipv6hdr *ip6 = data + off;

		if ((void *)(ip6 + 1) > end)
			return PARSE_NOT_UDP;
		if (ip6->nexthdr != IPPROTO_UDP_NUM)
			return PARSE_NOT_UDP;
		ip_payload = bpf_ntohs(ip6->payload_len);
		p->family = 6;
		p->ttl = ip6->hop_limit;
		off += sizeof(*ip6);
	} else {
		return PARSE_NOT_UDP;
	}
	p->l4_off = off;
	udp = data + off;
	if ((void *)(udp + 1) > end)
		return PARSE_NOT_UDP;
	p->dport = bpf_ntohs(udp->dest);
	p->sport = bpf_ntohs(udp->source);
	if (bpf_ntohs(udp->len) < sizeof(*udp) || bpf_ntohs(udp->len) > ip_payload ||
	    data + off + bpf_ntohs(udp->len) > end)
		return PARSE_MALFORMED;
	p->udp_payload_len = bpf_ntohs(udp->len) - sizeof(*udp);
	return PARSE_UDP;
}

/*
 * Point @src and @dst at the frame's peer (source) and local (destination) addresses: 4 bytes
 * each for IPv4, 16 for IPv6. Return: 0, or -1 when the header is not within the frame.
 */
static __always_inline int pkt_addr_ptrs(const struct pkt *p, const __u32 **src, const __u32 **dst)
{
	if (p->family == 4) {
		struct iphdr *ip = p->data + p->l3_off;

		if ((void *)(ip + 1) > p->end)
			return -1;
		*src = &ip->saddr;
		*dst = &ip->daddr;
	} else {
		struct ipv6hdr *ip6 = p->data + p->l3_off;

		if ((void *)(ip6 + 1) > p->end)
			return -1;
		*src = (const __u32 *)&ip6->saddr;
		*dst = (const __u32 *)&ip6->daddr;
	}
	return 0;
}

/*
 * Copy the frame's local (destination) and peer (source) addresses into 16-byte fields (IPv4 in
 * the first 4 bytes, the rest left as it was). Return: 0, or -1 when the header is not within
 * the frame.
 */
static __always_inline int pkt_addrs(const struct pkt *p, __u8 local[16], __u8 peer[16])
{
	const __u32 *src, *dst;

	if (pkt_addr_ptrs(p, &src, &dst))
		return -1;
	if (p->family == 4) {
		__builtin_memcpy(local, dst, 4);
		__builtin_memcpy(peer, src, 4);
	} else {
		__builtin_memcpy(local, dst, 16);
		__builtin_memcpy(peer, src, 16);
	}
	return 0;
}

#endif /* BFD_KERN_PARSE_H */
