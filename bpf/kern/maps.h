/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern/maps.h - the XDP program's maps and globals (BPF side only; layouts in bfd_shared.h).
 *
 * Session slots are array indices. The engine sizes the arrays (--max-sessions) before load,
 * fills sessions_cfg and the two indexes, and reads sessions_rx and the counters.
 */
#ifndef BFD_KERN_MAPS_H
#define BFD_KERN_MAPS_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__type(key, __u32);
	__type(value, struct bfd_session_cfg);
} sessions_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__type(key, __u32);
	__type(value, struct bfd_session_rx);
} sessions_rx SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__type(key, __u32);
	__type(value, struct bfd_session_expiry);
} sessions_expiry SEC(".maps");

/* The shared transmit clock (bfd_shared.h): mapped by the engine, claimed by both. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct bfd_session_tx);
} sessions_tx SEC(".maps");

/* Our own echo coming back (bfd_shared.h, kern/echo_own.h): the engine maps and reads it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct bfd_session_echo);
} sessions_echo SEC(".maps");

/* Your Discriminator (our local discriminator, host order) -> slot. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__type(key, __u32);
	__type(value, __u32);
} disc_index SEC(".maps");

/* (interface, family, hop type, local, peer) -> slot, for Your Discriminator zero. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BFD_MAX_SESSIONS_DEFAULT);
	__type(key, struct bfd_addr_key);
	__type(value, __u32);
} addr_index SEC(".maps");

/*
 * The sweep's timing wheel (bfd_shared.h, BFD_WHEEL_*): bucket b's group words at
 * [b * slot_words, (b + 1) * slot_words), its top words likewise at b * top_words. Sized by the
 * engine before load; mmapable so the engine marks the armed bucket without a syscall.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, BFD_WHEEL_BUCKETS *BFD_SLOT_WORDS(BFD_MAX_SESSIONS_DEFAULT));
	__type(key, __u32);
	__type(value, __u64);
} wheel_groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, BFD_WHEEL_BUCKETS *BFD_TOP_WORDS(BFD_MAX_SESSIONS_DEFAULT));
	__type(key, __u32);
	__type(value, __u64);
} wheel_tops SEC(".maps");

/* Sized by the engine to hold an event for every session at once (kern.c). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BFD_CNT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bfd_sweep);
} sweep SEC(".maps");

/*
 * --spread-pass: CPU number -> the kernel's per-CPU thread that builds the skb and runs the
 * stack for frames redirected there. The engine fills an entry per online CPU; a frame whose
 * CPU has no entry falls back to XDP_PASS on the receiving CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1); /* sized to the possible CPUs before load */
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} pass_cpus SEC(".maps");

/* Set by the engine before load. */
const volatile struct bfd_settings settings = {
    .deadman_ns = 3000000000ULL,
    .sweep_period_ns = 1000000ULL,
    .pass_unowned = 0,
    .spread_cpus = 0,
    .slot_words = BFD_SLOT_WORDS(BFD_MAX_SESSIONS_DEFAULT),
    .top_words = BFD_TOP_WORDS(BFD_MAX_SESSIONS_DEFAULT),
};

/* Written by the engine while running (mmaped .bss). */
__u64 heartbeat_ns; /* the engine's loop last ran at this time */
__u32 slots_in_use; /* highest slot in use + 1 (the engine's; the sweep needs no bound) */

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

/*
 * The slot of the session keyed by @k: bound to its interface first, then (k->ifindex zeroed)
 * a session bfdd did not bind to one. NULL when neither exists.
 */
static __always_inline __u32 *addr_index_lookup(struct bfd_addr_key *k)
{
	__u32 *slotp = bpf_map_lookup_elem(&addr_index, k);

	if (!slotp) {
		k->ifindex = 0;
		slotp = bpf_map_lookup_elem(&addr_index, k);
	}
	return slotp;
}

#endif /* BFD_KERN_MAPS_H */
