/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/csum.h - Internet checksums in the XDP program (BPF side only): verify what arrives, and
 * the primitives the reply builder (reply.h) computes its own with.
 *
 * XDP runs before the kernel has verified anything: a frame with a broken IPv4 header or UDP
 * checksum reaches the program as it came off the wire, and the stack would have dropped it. So
 * the program checks both itself before acting on a Control packet: RFC 791 (IPv4 header),
 * RFC 768 (UDP; zero over IPv4 means "no checksum" and is accepted), RFC 8200 section 8.1 (zero
 * over IPv6 is discarded). Sums are kept in memory order (the 16-bit words as loaded): the
 * one's-complement sum is byte-order independent, so no swapping is needed.
 *
 * A sender on a veth with transmit checksum offload on (the default) leaves CHECKSUM_PARTIAL
 * datagrams: the field holds the pseudo-header sum only, and the program sees exactly that. Such
 * packets are counted as bad_udp_checksum: turn the offload off on the sending veth
 * (../shared/docs/platform.md section 6; docs/engine.md).
 */
#ifndef BFD_KERN_CSUM_H
#define BFD_KERN_CSUM_H

/* The longest UDP datagram the program checksums (a Control packet is at most 8 + 255 bytes). */
#define CSUM_MAX_UDP_LEN 512

/* Add @nwords 16-bit words at @w (memory order) to @sum. @nwords must be a constant. */
static __always_inline __u32 csum_words(__u32 sum, const __u16 *w, int nwords)
{
#pragma unroll
	for (int i = 0; i < nwords; i++)
		sum += w[i];
	return sum;
}

/* Fold a sum of 16-bit words kept in memory order; the result is in memory order too. */
static __always_inline __u16 csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

/*
 * bfd_csum_udp_bytes() - the one's-complement sum of the UDP datagram at @l4_off in @ctx's
 * frame, @len bytes (8 <= @len <= CSUM_MAX_UDP_LEN, within the frame: parse_udp() checked it),
 * as 32-bit words and a 0-3 byte tail.
 *
 * A global (not inlined) function, so the verifier checks its loop once, on its own: inlined
 * into the program, the loop's 128 bounded iterations were walked again for every path that
 * reaches them, and the program took 913,662 verified instructions of the kernel's 1,000,000
 * (docs/engine.md, "Verifier budget"). Global functions take the context and scalars, not
 * packet pointers: it reads the frame from @ctx itself.
 * Return: the unfolded sum, or ~0ULL if a read would leave the frame (never for a parsed frame;
 * the verifier wants the check).
 */
__attribute__((noinline)) __u64 bfd_csum_udp_bytes(struct xdp_md *ctx, __u32 l4_off, __u32 len)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 words = len / 4, i;
	__u8 *udp, *tail;
	__u64 sum = 0;

	if (l4_off > 14 + 40 || len > CSUM_MAX_UDP_LEN) /* untagged Ethernet + IPv6 (parse.h) */
		return ~0ULL;
	udp = data + l4_off;
	for (i = 0; i < CSUM_MAX_UDP_LEN / 4; i++) {
		__u32 *w = (__u32 *)(udp + i * 4);

		if (i >= words)
			break;
		if ((void *)(w + 1) > end)
			return ~0ULL;
		sum += *w;
	}
	tail = udp + (len & (CSUM_MAX_UDP_LEN - 4)); /* len & ~3, bounded for the verifier */
	if (len & 2) {
		if ((void *)(tail + 2) > end)
			return ~0ULL;
		sum += *(__u16 *)tail;
		tail += 2;
	}
	if (len & 1) {
		if ((void *)(tail + 1) > end)
			return ~0ULL;
		sum += *tail; /* the odd byte, padded with a zero byte after it (RFC 768) */
	}
	return sum;
}

/* The UDP length of a Control packet without authentication: header and 24 bytes. */
#define CSUM_CTRL_UDP_LEN 32

/*
 * The sum of the @CSUM_CTRL_UDP_LEN bytes at @udp, or ~0ULL past @end. Every Control packet the
 * program answers has this length (no authentication is offloaded): eight loads behind one
 * bounds check, where bfd_csum_udp_bytes() pays a call and a check per word for any length.
 */
static __always_inline __u64 csum_ctrl_udp(const __u32 *udp, const void *end)
{
	__u64 sum = 0;

	if ((const void *)(udp + CSUM_CTRL_UDP_LEN / 4) > end)
		return ~0ULL;
#pragma unroll
	for (int i = 0; i < CSUM_CTRL_UDP_LEN / 4; i++)
		sum += udp[i];
	return sum;
}

/*
 * verify_checksums() - the IPv4 header checksum and the UDP checksum of the datagram parse_udp()
 * found in @p (the frame of @ctx). Return: BFD_DROP__COUNT when both hold (or IPv4 carries no
 * UDP checksum), else the discard reason: BFD_DROP_BAD_IP_CHECKSUM,
 * BFD_DROP_ZERO_UDP_CHECKSUM_IPV6, BFD_DROP_BAD_UDP_CHECKSUM, or BFD_DROP_BAD_LENGTH for a datagram
 * longer than CSUM_MAX_UDP_LEN (no Control packet is: it would be trailing bytes the program cannot
 * vouch for).
 */
static __always_inline int verify_checksums(struct xdp_md *ctx, const struct pkt *p)
{
	__u32 len = p->udp_payload_len + sizeof(struct udphdr);
	struct udphdr *udp = p->data + p->l4_off;
	__u64 sum = 0, body;

	if ((void *)(udp + 1) > p->end)
		return BFD_DROP_MALFORMED_IP;
	if (p->family == 4) {
		struct iphdr *ip = p->data + p->l3_off;

		if ((void *)(ip + 1) > p->end)
			return BFD_DROP_MALFORMED_IP;
		if (csum_fold(csum_words(0, (const __u16 *)ip, sizeof(*ip) / 2)))
			return BFD_DROP_BAD_IP_CHECKSUM;
		if (!udp->check)
			return BFD_DROP__COUNT; /* RFC 768: the sender computed none */
		sum = csum_words(0, (const __u16 *)&ip->saddr, 4);
	} else {
		struct ipv6hdr *ip6 = p->data + p->l3_off;

		if ((void *)(ip6 + 1) > p->end)
			return BFD_DROP_MALFORMED_IP;
		if (!udp->check)
			return BFD_DROP_ZERO_UDP_CHECKSUM_IPV6; /* RFC 8200 section 8.1 */
		sum = csum_words(0, (const __u16 *)&ip6->saddr, 16);
	}
	if (len > CSUM_MAX_UDP_LEN)
		return BFD_DROP_BAD_LENGTH;
	/* Pseudo-header: addresses (above), protocol and UDP length, as 16-bit words. */
	sum += bpf_htons(IPPROTO_UDP_NUM) + bpf_htons((__u16)len);
	if (len == CSUM_CTRL_UDP_LEN)
		body = csum_ctrl_udp((const __u32 *)udp, p->end);
	else
		body = bfd_csum_udp_bytes(ctx, p->l4_off, len);
	if (body == ~0ULL)
		return BFD_DROP_MALFORMED_IP;
	/* Over everything, the checksum field included, a right sum folds to all ones. */
	return csum_fold(sum + body) ? BFD_DROP_BAD_UDP_CHECKSUM : BFD_DROP__COUNT;
}

#endif /* BFD_KERN_CSUM_H */
