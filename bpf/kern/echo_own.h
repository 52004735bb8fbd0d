/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/echo_own.h - our own BFD Echo packets coming back (RFC 5880 sections 6.4, 6.8.5; RFC 5881
 * section 4), BPF side only. Included by kern/echo.h, which asks it first about every UDP 3785
 * datagram.
 *
 * The engine sends each echo addressed to itself (source = destination = the session's local
 * address) straight to the neighbour's MAC, with the payload of struct bfd_echo_payload; the
 * neighbour forwards it back (one hop: TTL / hop limit 254). It is ours when the payload has
 * the magic, its discriminator names an active single-hop session whose local address is the
 * destination, of the same family, on the session's interface if it has one. Then its arrival
 * is recorded in sessions_echo for the engine (which detects loss, RFC 5880 6.8.5) and it is
 * dropped: nobody else wants it (the stack would call it a martian). Any TTL is accepted: the
 * TTL rule of Control packets does not apply to echo (C11d). A damaged one (bad checksum) is
 * dropped and counted as any other. An echo from another engine carries the magic too, but its
 * destination is that engine's address, not ours: it is the peer's, returned by echo.h.
 */
#ifndef BFD_KERN_ECHO_OWN_H
#define BFD_KERN_ECHO_OWN_H

/* Whether the destination of @p's IP header is @a (16 bytes; IPv4 in the first 4). */
static __always_inline int echo_dst_is(const struct pkt *p, const __u8 *a)
{
	if (p->family == 4) {
		struct iphdr *ip = p->data + p->l3_off;

		return (void *)(ip + 1) <= p->end && ip->daddr == *(const __u32 *)a;
	}
	struct ipv6hdr *ip6 = p->data + p->l3_off;

	return (void *)(ip6 + 1) <= p->end && addr_eq((const __u8 *)&ip6->daddr, a);
}

/*
 * One UDP 3785 datagram. Return: the XDP verdict if it is our echo (or damaged), -1 if it is
 * not ours (the caller treats it as the peer's).
 */
static __always_inline int echo_own(struct xdp_md *ctx, struct pkt *p)
{
	struct bfd_echo_payload *w = p->data + p->l4_off + sizeof(struct udphdr);
	struct bfd_session_cfg *cfg;
	struct bfd_session_echo *rec;
	__u32 disc, slot, *slotp;
	int r, ours;

	if ((void *)(w + 1) > p->end || p->udp_payload_len < sizeof(*w) ||
	    w->magic != bpf_htonl(BFD_ECHO_MAGIC))
		return -1;
	disc = bpf_ntohl(w->my_disc);
	slotp = bpf_map_lookup_elem(&disc_index, &disc);
	if (!slotp)
		return -1;
	slot = *slotp;
	cfg = bpf_map_lookup_elem(&sessions_cfg, &slot);
	rec = bpf_map_lookup_elem(&sessions_echo, &slot);
	if (!cfg || !rec)
		return -1;
	/* Compared in place under the lock: no copy of the session on the stack. */
	bpf_spin_lock(&cfg->lock);
	ours = (cfg->p.session_flags & BFD_SF_ACTIVE) &&
	       !(cfg->p.session_flags & BFD_SF_MULTIHOP) && cfg->p.local_disc == disc &&
	       !!(cfg->p.session_flags & BFD_SF_IPV6) == (p->family == 6) &&
	       (!cfg->p.ifindex || cfg->p.ifindex == ctx->ingress_ifindex) &&
	       echo_dst_is(p, cfg->p.local_addr);
	bpf_spin_unlock(&cfg->lock);
	if (!ours)
		return -1;
	r = verify_checksums(ctx, p);
	if (r != BFD_DROP__COUNT)
		return drop(r);
	/* Pointers are fresh after the global function verify_checksums() may have run. */
	w = (void *)(long)ctx->data + p->l4_off + sizeof(struct udphdr);
	if ((void *)(w + 1) > (void *)(long)ctx->data_end)
		return drop(BFD_DROP_MALFORMED_IP);
	rec->last_tx_ns = bpf_be64_to_cpu(w->tx_ns);
	rec->last_seq = bpf_ntohl(w->seq);
	rec->last_rx_ns = bpf_ktime_get_ns();
	__sync_fetch_and_add(&rec->rx_packets, 1);
	count(BFD_CNT_ECHO_OWN_RX);
	return XDP_DROP;
}

#endif /* BFD_KERN_ECHO_OWN_H */
