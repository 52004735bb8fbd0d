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
	bool demand;		 /* bfd.DemandMode (6.6): bfdd's DEMAND flag or --demand */
	uint32_t demand_poll_us; /* Demand mode verifies the path this often; 0: never */
	/* Echo (RFC 5880 6.4): bfdd's ECHO flag, its echo transmit interval and Required Min
	 * Echo RX (us). */
	bool echo;
	uint32_t echo_tx_us;
	uint32_t echo_rx_us;
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
 * Demand mode (6.6), once both ends are Up with our D bit set: the peer may stop its periodic
 * packets, so detection is a Poll Sequence we start every fsm_demand_poll_ns() (s->demand_poll_us,
 * never more often than the Detection Time: one Poll at a time) and that must see its Final
 * within a Detection Time of its first P (6.8.4).
 * fsm_demand_poll_ns() - that period in ns; 0 = never verify (--demand-poll-us 0).
 * fsm_next_demand_ns() - when fsm_demand_due() acts next (CLOCK_MONOTONIC ns): the open Poll's
 * deadline, else the next Poll; 0 = nothing to do (Demand mode not active, or never verify).
 * fsm_demand_due() - at @now_ns: Down with diag 1 if the open Poll's deadline passed, else start
 * the next Poll: its first P on the periodic packet due at @next_periodic_ns (fsm_next_tx_ns(),
 * the peer not in Demand mode; its deadline counts from then), or at once (FSM_SEND) when
 * that is 0. Return: FSM_* actions, 0 when not yet due.
 */
uint64_t fsm_demand_poll_ns(const struct bfd_session *s);
uint64_t fsm_next_demand_ns(const struct bfd_session *s);
unsigned fsm_demand_due(struct bfd_session *s, uint64_t now_ns, uint64_t next_periodic_ns);

/* fsm_may_send() - false while we take the Passive role and know no peer (6.8.7). */
bool fsm_may_send(const struct bfd_session *s);
/*
 * fsm_forget() - 6.8.1: a session not Up or Init that heard nothing for a Detection Time
 * forgets the peer's discriminator (Your Discriminator goes back to 0).
 */
void fsm_forget(struct bfd_session *s, uint64_t now_ns);

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
/*
 * Detection Time in ns (6.8.4) for detection by silence; 0 while not Init or Up, before the
 * peer's multiplier is known, or while Demand mode is active (fsm_demand_due() detects).
 */
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
 * bfd_tx_jitter_ns() (6.8.7); for an rx-clocked session's backstop, what the program could not
 * send (s->tx_owed) or the end of the peer's window, whichever rule fsm.c explains. Never sooner
 * than 75 % of the interval after @last_periodic_ns. Return: CLOCK_MONOTONIC ns; 0 = userspace
 * does not clock @s now (no periodic packets, or the fast path clocks them and no backstop is
 * wanted).
 */
uint64_t fsm_next_tx_ns(const struct bfd_session *s, uint64_t last_periodic_ns);
/*
 * fsm_echo_rx_us() - the Required Min Echo RX we advertise (RFC 5880 4.1, 6.8.9): bfdd's value
 * when it asked for echo on a single-hop session the fast path serves (only XDP returns echo,
 * kern/echo.h), else 0: we return no echo we have not said we would.
 */
uint32_t fsm_echo_rx_us(const struct bfd_session *s);

/*
 * Our own echo (RFC 5880 6.4, 6.8.9; RFC 5881 section 4), sent by userspace and recognised
 * coming back by the XDP program (kern/echo_own.h).
 * fsm_echo_tx_us() - the interval (us) at which we send it now: max(bfdd's echo transmit
 * interval, the peer's Required Min Echo RX), 6.8.9; 0 = none: bfdd did not ask, the session
 * is multihop (RFC 5883 3) or not on the fast path (only XDP sees it come back), not Up (6.8.9:
 * never while not Up), or the peer advertises Required Min Echo RX 0 (6.8.9: MUST NOT).
 * fsm_echo_detect_ns() - how long without one back before the session goes down (6.8.5 and
 * 6.8.8 leave it to us): our Detect Mult times that interval, as for Control (6.8.4); 0 = none.
 * fsm_echo_sync() - call after anything that can change fsm_echo_tx_us() (@now_ns: now): it
 * starts echo (the first one due at once), stops it, or restarts it at a new interval, so that
 * detection never counts from before the current interval began.
 * fsm_next_echo_ns() - when fsm_echo_due() acts next: the next echo or the detection deadline,
 * whichever is first; 0 = echo not running. Echo gaps are 75-100 % of the interval (6.8.9's
 * jitter, 75-90 % with Detect Mult 1) but never under the peer's Required Min Echo RX.
 * fsm_echo_due() - at @now_ns, @rx_ns being the last arrival of our echo that the fast path
 * recorded (0: none): Down with diag 2 if the detection time passed since the later of that and
 * the start (6.8.5), else *@send when the next echo is due (the caller sends it and calls
 * fsm_echo_sent()). Return: FSM_* actions (only when the session went down).
 */
uint32_t fsm_echo_tx_us(const struct bfd_session *s);
uint64_t fsm_echo_detect_ns(const struct bfd_session *s);
void fsm_echo_sync(struct bfd_session *s, uint64_t now_ns);
uint64_t fsm_next_echo_ns(const struct bfd_session *s);
unsigned fsm_echo_due(struct bfd_session *s, uint64_t now_ns, uint64_t rx_ns, bool *send);
/* fsm_echo_sent() - the echo due at @now_ns went (or could not: it is not retried sooner). */
void fsm_echo_sent(struct bfd_session *s, uint64_t now_ns);

/*
 * fsm_params() - the image of @s the XDP program reads (struct bfd_session_params), with
 * generation s->cfg_gen (the caller bumps it for every write).
 */
void fsm_params(const struct bfd_session *s, struct bfd_session_params *p);

#endif
