/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/echo.h - return the peer's BFD Echo packets (RFC 5880 sections 6.4, 6.8.9; RFC 5881
 * section 4), BPF side only. Included by xdp_bfd.bpf.c after its helpers (drop, addr_eq).
 *
 * An Echo packet is the sender's own business: we do not read its payload, we only send it back
 * the way a forwarder would (MACs swapped, TTL / hop limit less one, out of the interface it came
 * in on). Two forms arrive on UDP 3785:
 *   - self-addressed (source = destination = the peer), as RFC 5881 section 4 has it and as FRR
 *     sends IPv4 echo: returned with its addresses as they are, so the peer receives its own;
 *   - addressed to us (source = the peer, destination = our address), as FRR sends IPv6 echo:
 *     the addresses are swapped too, so it comes back to the peer whatever our forwarding
 *     settings (a forwarder would have delivered it locally and dropped it). FRR 8.4.4 sends it
 *     from the source its route picks, not the session's local address (measured: two sessions
 *     fd00::a4d:103 and :104 to us, every echo from :104), so the source names the peer host
 *     and the destination may be any of our addresses: it is not checked against the session's.
 * The UDP checksum holds across both rewrites (the pseudo-header sums the two addresses, whose
 * order does not matter; TTL is not in it), so only the IPv4 header checksum is redone.
 *
 * The session is found by the peer's address alone (the self-addressed form carries none of
 * ours): the engine files each single-hop session in addr_index a second time, under
 * BFD_ADDR_ECHO with the local address zeroed (engine/kern.c, kern_index_add()).
 *
 * Returned only when all of these hold, else dropped and counted (echo_refused, echo_ttl):
 *   - self-addressed: the session is Up and not expired (RFC 5880 6.8.9: echo runs only over an
 *     Up session; the peer must not send it otherwise, 6.4). Addressed to us, the session found
 *     by the source may be another of the peer host's: FRR's echo of a session that is Up
 *     arrives from the address of one still coming up (slow start staggers them by up to a
 *     second), and refusing it failed the Up session's echo (a CI run: FRR "echo function
 *     failed", one down event on v6echo-frr). So the state is not checked for that form;
 *   - we advertise a non-zero Required Min Echo RX (6.8.9 / 4.1: zero means "I do not return
 *     echo"; the engine advertises it only when bfdd asked for echo on a fast-path session);
 *   - single hop (RFC 5883 section 3: no echo over multihop sessions);
 *   - TTL / hop limit 255: it was sent by the neighbour itself and not forwarded yet. A packet
 *     already returned once (254) is never returned again, so two reflectors cannot loop one
 *     packet between them, and nobody further away can use us as a reflector (GTSM's reasoning,
 *     RFC 5881 section 5).
 * Our own echo coming back is told apart first (kern/echo_own.h): recorded and dropped.
 * Echo of no session of ours goes to the stack as before (a host that forwards may return it).
 * The dead-man gate does not apply: echo tests the forwarding path, which is alive; a dead
 * engine is found by the peer's Control detection, whose replies the gate withholds.
 */
#ifndef BFD_KERN_ECHO_H
#define BFD_KERN_ECHO_H

#include "echo_own.h" /* our own echo coming back, asked first */

/*
 * Rewrite the frame of @ctx (family @family, untagged: parse.h) into the returned echo. @to_us:
 * swap the addresses. Pointers are taken afresh from @ctx (a global function ran since parsing).
 * Return: 0 or -1.
 */
static __always_inline int echo_rewrite(struct xdp_md *ctx, __u8 family, int to_us)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u8 mac[6];

	if ((void *)(eth + 1) > end)
		return -1;
	__builtin_memcpy(mac, eth->h_dest, 6);
	__builtin_memcpy(eth->h_dest, eth->h_source, 6);
	__builtin_memcpy(eth->h_source, mac, 6);
	if (family == 4) {
		struct iphdr *ip = data + sizeof(*eth);
		__be32 a;

		if ((void *)(ip + 1) > end)
			return -1;
		if (to_us) {
			a = ip->saddr;
			ip->saddr = ip->daddr;
			ip->daddr = a;
		}
		ip->ttl--;
		ip->check = 0;
		ip->check = csum_fold(csum_words(0, (const __u16 *)ip, sizeof(*ip) / 2));
	} else {
		struct ipv6hdr *ip6 = data + sizeof(*eth);
		struct in6_addr a;

		if ((void *)(ip6 + 1) > end)
			return -1;
		if (to_us) {
			a = ip6->saddr;
			ip6->saddr = ip6->daddr;
			ip6->daddr = a;
		}
		ip6->hop_limit--;
	}
	return 0;
}

/* One UDP 3785 datagram (parse_udp() said UDP). Return: the XDP verdict. */
static __always_inline int bfd_echo(struct xdp_md *ctx, struct pkt *p)
{
	struct bfd_addr_key k = {
	    .ifindex = ctx->ingress_ifindex, .family = p->family, .multihop = BFD_ADDR_ECHO};
	__u8 local[16] = {}, peer[16] = {};
	struct bfd_session_params s;
	struct bfd_session_cfg *cfg;
	struct bfd_session_expiry *ex;
	__u32 slot, *slotp;
	int self, r;

	r = echo_own(ctx, p);
	if (r >= 0)
		return r;
	if (pkt_addrs(p, local, peer))
		return drop(BFD_DROP_MALFORMED_IP);
	__builtin_memcpy(k.peer_addr, peer, 16);
	slotp = addr_index_lookup(&k);
	if (!slotp)
		goto unowned;
	slot = *slotp;
	cfg = bpf_map_lookup_elem(&sessions_cfg, &slot);
	ex = bpf_map_lookup_elem(&sessions_expiry, &slot);
	if (!cfg || !ex)
		goto unowned;
	bpf_spin_lock(&cfg->lock);
	s = cfg->p;
	bpf_spin_unlock(&cfg->lock);
	self = addr_eq(local, peer);
	/* From the session's peer, on the session's interface (its destination: see above). */
	if (!(s.session_flags & BFD_SF_ACTIVE) ||
	    !!(s.session_flags & BFD_SF_IPV6) != (p->family == 6) || !addr_eq(s.peer_addr, peer) ||
	    (s.ifindex && s.ifindex != ctx->ingress_ifindex))
		goto unowned;
	/* Addressed to us, the source names the peer host, not the session (see above): the state
	 * of the session found by it says nothing of the echo's own session. */
	if ((s.session_flags & BFD_SF_MULTIHOP) || !s.required_min_echo_rx_us ||
	    (self && (s.session_state != BFD_STATE_UP ||
		      (ex->expired && ex->expired_cfg_gen == s.cfg_gen)))) {
		count(BFD_CNT_ECHO_REFUSED);
		return XDP_DROP;
	}
	if (p->ttl != BFD_TTL_SINGLE_HOP) {
		count(BFD_CNT_ECHO_TTL);
		return XDP_DROP;
	}
	/* What the stack would have verified: a damaged packet is not returned. */
	r = verify_checksums(ctx, p);
	if (r != BFD_DROP__COUNT)
		return drop(r);
	if (echo_rewrite(ctx, p->family, !self))
		return drop(BFD_DROP_MALFORMED_IP);
	count(BFD_CNT_TX_ECHO);
	return XDP_TX;
unowned:
	count(BFD_CNT_ECHO_UNOWNED);
	return pass_frame(ctx);
}

#endif /* BFD_KERN_ECHO_H */
