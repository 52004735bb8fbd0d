// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_pass.bpf.c - XDP_PASS for every frame. The lab puts it on the far end of each veth whose
 * near end runs xdp_bfd: a veth delivers XDP_TX frames only to a peer with a native XDP program.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
