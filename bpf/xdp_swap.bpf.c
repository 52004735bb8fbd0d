// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_swap.bpf.c - the benchmark floor: swap MAC and IPv4 addresses, return XDP_TX. No BFD
 * checks, no session, no checksum. prog_test --bench times xdp_bfd against it in the same run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "kern/swap.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_swap(struct xdp_md *ctx)
{
	return swap_mac_ipv4(ctx) ? XDP_TX : XDP_PASS;
}
