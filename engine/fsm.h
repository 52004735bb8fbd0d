/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fsm.h - the RFC 5880 state machine, without sockets or maps: it takes events (a received
 * packet, a detection timeout, configuration from bfdd) and returns actions for the caller to
 * carry out. Times are CLOCK_MONOTONIC ns; intervals microseconds, as on the wire.
 */
#ifndef ENGINE_FSM_H
#define ENGINE_FSM_H

#include <stdbool.h>
#include <stdint.h>
#include "bfd_shared.h"
#include "codec.h"
#include "session.h"

/* What the caller must do after an event; a bit set of these. */
enum fsm_action {
	FSM_PUBLISH = 1 << 0,  /* what the XDP program reads changed: write the session's cfg */
	FSM_NOTIFY = 1 << 1,   /* tell bfdd (BFD_STATE_CHANGE) if the report differs */
	FSM_SEND = 1 << 2,     /* send one packet now (the state changed) */
	FSM_FINAL = 1 << 3,    /* a Poll arrived: send a Final now unless the fast path did */
	FSM_SCHEDULE = 1 << 4, /* the periodic transmit schedule changed */
};

/* Configuration from bfdd, in RFC 5880 terms. */
struct fsm_config {
	uint32_t desired_min_tx_us;
	uint32_t required_min_rx_us;
	uint8_t detect_mult;
	bool passive;
	bool shutdown;
	bool cpi;
};

/* fsm_start() - first configuration of a new session: Down (AdminDown if shut down). */
unsigned fsm_start(struct bfd_session *s, const struct fsm_config *c, uint64_t now_ns);
/* fsm_configure() - bfdd changed the session (RFC 5880 6.8.3 Poll rules, 6.8.16 AdminDown). */
unsigned fsm_configure(struct bfd_session *s, const struct fsm_config *c, uint64_t now_ns);
/*
 * fsm_rx() - a packet that passed codec_decode() and the session's own checks
 * (RFC 5880 6.8.6 from "Set bfd.RemoteDiscr" on). A session in AdminDown ignores it (return 0).
 */
unsigned fsm_rx(struct bfd_session *s, const struct bfd_pkt *p, uint64_t now_ns);
/* fsm_expire() - the Detection Time passed without a packet (RFC 5880 6.8.4). */
unsigned fsm_expire(struct bfd_session *s, uint64_t now_ns);
/* fsm_path_down() - the session's interface went away: Down with diag 5 (RFC 5880 4.1). */
unsigned fsm_path_down(struct bfd_session *s, uint64_t now_ns);
/* fsm_admin_down() - the engine is stopping or the session is deleted: AdminDown, diag 7. */
unsigned fsm_admin_down(struct bfd_session *s, uint64_t now_ns);

/*
 * fsm_packet() - our next packet (RFC 5880 6.8.7). @final: answer a Poll. Before building, a
 * session that has been Down for a Detection Time forgets the remote discriminator (6.8.1).
 */
void fsm_packet(struct bfd_session *s, bool final, uint64_t now_ns, struct bfd_pkt *out);

/* Our transmit interval in us (6.8.2, 6.8.7): max(Desired Min TX, RemoteMinRxInterval); 0 = none.
 */
uint32_t fsm_tx_interval_us(const struct bfd_session *s);
/* The peer's transmit interval towards us: max(its Desired Min TX, our Required Min RX). */
uint32_t fsm_peer_interval_us(const struct bfd_session *s);
/* Detection Time in ns (6.8.4); 0 while not Init or Up or before the peer's multiplier is known. */
uint64_t fsm_detect_time_ns(const struct bfd_session *s);
/*
 * fsm_rx_clocked() - whether the XDP program clocks our periodic packets off the peer's: Up on
 * the fast path, the peer at exactly our interval, jittering (not s->peer_steady), and our
 * Detect Mult above 1 (its 75-90 % bound is ours alone to keep). Its packets then carry the
 * jitter ours need (6.8.7). Otherwise userspace clocks them. The program decides the same per
 * packet (xdp_bfd.bpf.c).
 */
bool fsm_rx_clocked(const struct bfd_session *s);
/*
 * fsm_next_tx_ns() - when userspace sends the next periodic packet: @last_periodic_ns (the
 * shared transmit clock: our last periodic packet, whoever sent it) plus the jittered interval,
 * bfd_tx_jitter_ns() (6.8.7). Return: CLOCK_MONOTONIC ns; 0 = userspace does not clock @s now
 * (no periodic packets, or the fast path clocks them and no backstop is wanted).
 */
uint64_t fsm_next_tx_ns(const struct bfd_session *s, uint64_t last_periodic_ns);
/*
 * fsm_params() - the image of @s the XDP program reads (struct bfd_session_params), with
 * generation s->cfg_gen (the caller bumps it for every write).
 */
void fsm_params(const struct bfd_session *s, struct bfd_session_params *p);

#endif
