/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * codec.h - BFD Control packets in userspace: decode with the session-independent reception
 * checks of RFC 5880 section 6.8.6, encode our own (section 4.1), and the names of states,
 * diagnostics, discard reasons and counters shared with the XDP program (bfd_shared.h).
 */
#ifndef ENGINE_CODEC_H
#define ENGINE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include "bfd_shared.h"

/* A Control packet's mandatory section, decoded to host order. */
struct bfd_pkt {
	uint8_t version;
	uint8_t diag;  /* enum bfd_diag */
	uint8_t state; /* enum bfd_session_state */
	uint8_t flags; /* BFD_FLAG_* */
	uint8_t detect_mult;
	uint8_t length;
	uint32_t my_disc;
	uint32_t your_disc;
	uint32_t desired_min_tx_us;
	uint32_t required_min_rx_us;
	uint32_t required_min_echo_rx_us;
};

/* Returned by codec_decode() for a packet that passed every check. */
#define BFD_DROP_NONE BFD_DROP__COUNT

/*
 * codec_decode() - decode and check one Control packet (RFC 5880 4.1, 6.8.6).
 * @buf: the UDP payload, network byte order; @payload_len: its length in bytes.
 * Checks version, Length (24, or 26 with A; not beyond the payload), Detect Mult, M, My
 * Discriminator, Your Discriminator zero outside Down/AdminDown, and Poll with Final.
 * Return: BFD_DROP_NONE with @out filled, or the first failed check's reason (@out is then
 * filled as far as the bytes allow).
 */
enum bfd_drop_reason codec_decode(const void *buf, size_t payload_len, struct bfd_pkt *out);

/* codec_encode() - write @p as the 24-byte mandatory section at @buf (network order). */
void codec_encode(const struct bfd_pkt *p, void *buf);

/* codec_from_wire() - host-order view of a struct bfd_ctrl as carried in ring-buffer events. */
void codec_from_wire(const struct bfd_ctrl *c, struct bfd_pkt *out);

/* Names: "AdminDown", "Down", "Init", "Up"; out-of-range values give "?". */
const char *bfd_state_name(unsigned state);
/* Snake-case names of enum bfd_drop_reason ("bad_version", ...) and enum bfd_counter. */
const char *bfd_drop_name(unsigned reason);
const char *bfd_counter_name(unsigned counter);

#endif
