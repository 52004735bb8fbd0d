/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/reply.h - turn the peer's Control packet into our reply, in place (BPF side only).
 *
 * Addresses and MACs swapped, our source port, the packet's destination port kept (3784 or 4784),
 * TTL/hop limit 255 (RFC 5881 section 5), our fields from the session copy, the frame trimmed to
 * exactly one 24-byte Control packet. The UDP checksum is computed in full from the bytes we write
 * (csum.h, included first): the received UDP checksum may be absent (zero over IPv4). A UDP
 * checksum that computes to 0 is sent as 0xFFFF (RFC 768; over IPv6 a zero would be discarded, RFC
 * 8200 section 8.1). The IPv4 header checksum is patched for the two words that change (RFC 1624,
 * eqn. 3): verify_checksums() has already found the received one right, and the swapped addresses
 * leave the sum as it was.
 */
#ifndef BFD_KERN_REPLY_H
#define BFD_KERN_REPLY_H

#define L3_OFF_MAX    14 /* untagged Ethernet (parse.h) */
#define REPLY_UDP_LEN (sizeof(struct udphdr) + BFD_CTRL_LEN)
_Static_assert(REPLY_UDP_LEN == CSUM_CTRL_UDP_LEN, "the reply is summed by csum_ctrl_udp()");

struct udp_bfd {
	struct udphdr udp;
	struct bfd_ctrl bfd;
};

/* Fill the UDP header and our Control packet (RFC 5880 section 4.1) from the session copy. */
static __always_inline void fill_reply(struct udp_bfd *r, const struct bfd_session_params *s,
				       __u16 dport, __u8 flags)
{
	r->udp.source = bpf_htons(s->local_port);
	r->udp.dest = bpf_htons(dport);
	r->udp.len = bpf_htons(REPLY_UDP_LEN);
	r->udp.check = 0;
	r->bfd.version_diag = (BFD_VERSION << 5) | (s->local_diag & 0x1f);
	r->bfd.state_flags = (__u8)((s->session_state & 0x3) << 6) | flags;
	r->bfd.detect_mult = s->detect_mult;
	r->bfd.length = BFD_CTRL_LEN;
	r->bfd.my_disc = bpf_htonl(s->local_disc);
	r->bfd.your_disc = bpf_htonl(s->remote_disc);
	r->bfd.desired_min_tx_us = bpf_htonl(s->desired_min_tx_us);
	r->bfd.required_min_rx_us = bpf_htonl(s->required_min_rx_us);
	r->bfd.required_min_echo_rx_us = bpf_htonl(s->required_min_echo_rx_us);
}

/*
 * build_reply() - rewrite the frame described by @p into our reply.
 * @flags: BFD flag bits for the second byte (Final and/or Poll, CPI).
 * Return: 0, or -1 when the frame cannot be rewritten (caller drops it).
 */
static __always_inline int build_reply(struct xdp_md *ctx, const struct pkt *p,
				       const struct bfd_session_params *s, __u8 flags)
{
	__u32 l3 = p->l3_off, l4 = p->l4_off;
	__u32 want = l4 + REPLY_UDP_LEN;
	long have = (long)(p->end - p->data);
	struct udp_bfd *r;
	void *data, *end;
	struct ethhdr *eth;
	__u8 mac[6];
	__u64 sum = 0;

	if (l3 > L3_OFF_MAX)
		return -1;
	/* Trim what follows our 24 bytes: Ethernet padding or payload beyond Length (R09). */
	if (have > want && bpf_xdp_adjust_tail(ctx, -(int)(have - want)))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return -1;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);

	if (p->family == 4) {
		struct iphdr *ip = data + l3;
		__be32 a;

		if ((void *)(ip + 1) > end)
			return -1;
		__u16 *ttl_proto = (__u16 *)&ip->ttl, old_ttl_proto = *ttl_proto;
		__u16 old_len = ip->tot_len;

		a = ip->saddr;
		ip->saddr = ip->daddr;
		ip->daddr = a;
		ip->ttl = BFD_TTL_SINGLE_HOP;
		ip->tot_len = bpf_htons(sizeof(*ip) + REPLY_UDP_LEN);
		/* HC' = ~(~HC + ~m + m') for each changed 16-bit word m (RFC 1624, eqn. 3). */
		ip->check = csum_fold((__u32)(__u16)~ip->check + (__u16)~old_ttl_proto +
				      *ttl_proto + (__u16)~old_len + ip->tot_len);
		sum = csum_words(0, (const __u16 *)&ip->saddr, 4); /* saddr, daddr */
		l4 = l3 + sizeof(*ip);
	} else {
		struct ipv6hdr *ip6 = data + l3;
		struct in6_addr a;

		if ((void *)(ip6 + 1) > end)
			return -1;
		a = ip6->saddr;
		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		ip6->hop_limit = BFD_TTL_SINGLE_HOP;
		ip6->payload_len = bpf_htons(REPLY_UDP_LEN);
		sum = csum_words(0, (const __u16 *)&ip6->saddr, 16); /* saddr, daddr */
		l4 = l3 + sizeof(*ip6);
	}
	if (l4 > L3_OFF_MAX + sizeof(struct ipv6hdr))
		return -1;
	r = data + l4;
	if ((void *)(r + 1) > end)
		return -1;
	/* Written in place (the caller works from its copy of the peer's packet), then summed. */
	fill_reply(r, s, p->dport, flags);
	sum += bpf_htons(IPPROTO_UDP_NUM);
	sum += bpf_htons(REPLY_UDP_LEN);
	sum += csum_ctrl_udp((const __u32 *)r, end);
	r->udp.check = csum_fold(sum);
	if (r->udp.check == 0)
		r->udp.check = 0xffff; /* 0 means "no checksum" (IPv4) and is invalid for IPv6 */
	return 0;
}

#endif /* BFD_KERN_REPLY_H */
