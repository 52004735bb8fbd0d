// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_floor.bpf.c - what the reply path cannot do without, one primitive at a time, each on top
 * of xdp_swap's rewrite (issue 10 item 6, docs/engine.md "The reply path's cost"). xdp_bfd's
 * reply needs at least: one hash lookup (Your Discriminator -> slot), two spin-lock sections (the
 * session's configuration, written by the engine with BPF_F_LOCK; its receive state, read by the
 * engine with BPF_F_LOCK), one clock read (the arrival time detection runs on) and three
 * per-CPU counters. f_all does exactly those and nothing else: no parsing, no checksum, no check.
 * Run by xdp_floor.c; not part of the product.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "kern/swap.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct locked {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 v[11]; /* 96 bytes, like bfd_session_cfg */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct locked);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} disc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 40);
	__type(key, __u32);
	__type(value, __u64);
} cnt SEC(".maps");

__u64 sink;

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&cnt, &i);

	if (v)
		*v += 1;
}

SEC("xdp")
int f_swap(struct xdp_md *ctx)
{
	return swap_mac_ipv4(ctx) ? XDP_TX : XDP_PASS;
}

SEC("xdp")
int f_clock(struct xdp_md *ctx)
{
	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	sink = bpf_ktime_get_ns();
	return XDP_TX;
}

SEC("xdp")
int f_hash(struct xdp_md *ctx)
{
	__u32 k = 7, *v;

	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	v = bpf_map_lookup_elem(&disc, &k);
	if (!v)
		return XDP_DROP;
	sink = *v;
	return XDP_TX;
}

SEC("xdp")
int f_lock1(struct xdp_md *ctx)
{
	__u32 k = 3;
	struct locked *l;

	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	l = bpf_map_lookup_elem(&arr, &k);
	if (!l)
		return XDP_DROP;
	bpf_spin_lock(&l->lock);
	l->v[0]++;
	bpf_spin_unlock(&l->lock);
	return XDP_TX;
}

SEC("xdp")
int f_lock2(struct xdp_md *ctx)
{
	__u32 k = 3, k2 = 4;
	struct locked *l, *m;

	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	l = bpf_map_lookup_elem(&arr, &k);
	m = bpf_map_lookup_elem(&arr, &k2);
	if (!l || !m)
		return XDP_DROP;
	bpf_spin_lock(&l->lock);
	l->v[0]++;
	bpf_spin_unlock(&l->lock);
	bpf_spin_lock(&m->lock);
	m->v[0]++;
	bpf_spin_unlock(&m->lock);
	return XDP_TX;
}

SEC("xdp")
int f_count3(struct xdp_md *ctx)
{
	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	count(3);
	count(4);
	count(5);
	return XDP_TX;
}

/* The floor: all of the above, in the reply path's order. */
SEC("xdp")
int f_all(struct xdp_md *ctx)
{
	__u32 k = 7, k2 = 4, slot, *v;
	struct locked *l, *m;
	__u64 now;

	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	v = bpf_map_lookup_elem(&disc, &k);
	if (!v)
		return XDP_DROP;
	slot = *v;
	l = bpf_map_lookup_elem(&arr, &slot);
	m = bpf_map_lookup_elem(&arr, &k2);
	if (!l || !m)
		return XDP_DROP;
	bpf_spin_lock(&l->lock);
	sink = l->v[1];
	bpf_spin_unlock(&l->lock);
	now = bpf_ktime_get_ns();
	count(3);
	bpf_spin_lock(&m->lock);
	m->v[0] = now;
	bpf_spin_unlock(&m->lock);
	count(4);
	count(5);
	return XDP_TX;
}

/* The floor with one spin-lock section instead of two. */
SEC("xdp")
int f_all_1lock(struct xdp_md *ctx)
{
	__u32 k = 7, slot, *v;
	struct locked *l;
	__u64 now;

	if (!swap_mac_ipv4(ctx))
		return XDP_PASS;
	v = bpf_map_lookup_elem(&disc, &k);
	if (!v)
		return XDP_DROP;
	slot = *v;
	l = bpf_map_lookup_elem(&arr, &slot);
	if (!l)
		return XDP_DROP;
	now = bpf_ktime_get_ns();
	count(3);
	bpf_spin_lock(&l->lock);
	sink = l->v[1];
	l->v[0] = now;
	bpf_spin_unlock(&l->lock);
	count(4);
	count(5);
	return XDP_TX;
}
