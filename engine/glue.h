/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * glue.h - what the engine's glue files hand each other; the rest of the engine sees only
 * engine.h. Each file calls only those below it:
 *   loop.c           set-up, the event loop and its tick
 *   bfdd_sessions.c  sessions from bfdd: ADD, DELETE, counters, --dp-hold and adoption
 *   paths.c          which path serves a session; ring events, the software path's packets,
 *                    interfaces and addresses coming and going
 *   actions.c        carrying out the state machine's actions; the transmit timer
 * Times are CLOCK_MONOTONIC ns (engine_now_ns()); none of these fails to its caller: what goes
 * wrong is logged or counted in struct engine_stats.
 */
#ifndef ENGINE_GLUE_H
#define ENGINE_GLUE_H

#include <stdbool.h>
#include <stdint.h>

struct bfd_addr_key;
struct bfd_session;
struct bfd_session_tx;
struct engine;

/* --- actions.c --- */

/*
 * engine_addr_key() - @s's key in the fast path's address index (interface, family, hop type,
 * local and peer address): how a packet with Your Discriminator 0 finds it (RFC 5880 6.8.6).
 */
void engine_addr_key(const struct bfd_session *s, struct bfd_addr_key *k);

/*
 * engine_arm_tx_timer() - arm the transmit timerfd for the session due first (absolute time),
 * or disarm it when the queue is empty; nothing when it is armed for that time already.
 */
void engine_arm_tx_timer(struct engine *e);

/*
 * engine_publish() - write @s's parameters (fsm_params()) to its slot in the fast path and
 * bump its cfg_gen; nothing without the XDP object. A failed write is logged.
 */
void engine_publish(struct engine *e, struct bfd_session *s);

/*
 * engine_tx_clock() - @s's transmit clock: its slot in the map shared with the fast path, or
 * its own when the XDP object is not loaded.
 */
struct bfd_session_tx *engine_tx_clock(struct engine *e, struct bfd_session *s);

/*
 * engine_send_control() - send one BFD Control packet for @s from userspace now, with the Final
 * (F) bit when @final (RFC 5880 6.8.7). Anything but a Final (a state change, our Poll) goes at
 * once and sets the transmit clock to when it was sent (the clock read again: @now_ns, the loop's,
 * may be stale), so the fast path's next periodic packet waits for it. A failed send is counted
 * in tx_errors, not retried.
 */
void engine_send_control(struct engine *e, struct bfd_session *s, bool final, uint64_t now_ns);

/*
 * engine_send_periodic() - a periodic packet for @s, if at least @gap_ns (ns) have passed since
 * the last one, whoever sent it: claim the transmit clock (bfd_tx_claim()) at the time read now
 * (@now_ns, the loop's, may be stale), send, then move the clock to when the send returned.
 * Return: whether it was sent (false: too soon, or the fast path claimed it first).
 */
bool engine_send_periodic(struct engine *e, struct bfd_session *s, uint64_t gap_ns,
			  uint64_t now_ns);

/*
 * engine_apply() - carry out @acts (FSM_* from fsm.h) for @s: publish, send (a Final only if the
 * fast path has not sent it, @final_sent), pick the next periodic send (RFC 5880 6.8.7 jitter),
 * tell bfdd of a change in state or, while Up, in the peer's parameters; re-arm the timer.
 */
void engine_apply(struct engine *e, struct bfd_session *s, unsigned acts, bool final_sent,
		  uint64_t now_ns);

/* --- paths.c --- */

/*
 * engine_place_session() - whether the fast path serves @s: its interface (or the one holding
 * its local address, loopback aside) runs the XDP program, attached now if need be. Sets
 * s->fast_path and s->xdp_ifindex; publishes nothing.
 */
void engine_place_session(struct engine *e, struct bfd_session *s);
/*
 * engine_ifaddrs_hold() - @on: engine_place_session() reads the namespace's addresses afresh at
 * its next call (it keeps one hashed list, read again after any interface or address event), for
 * a batch placed with no event handled in between (a handover adopting its sessions); !@on: no-op.
 */
void engine_ifaddrs_hold(bool on);

/*
 * engine_retry_socket() - @s has no socket (its source address or route was missing): try to
 * open one, at most once per TX_RETRY_NS (s->tx_retry_ns against @now_ns). With @repick, the
 * source the route picked is gone: drop the socket and that source, and let the route pick
 * again, at once. The fast-path index and the published cfg follow the new source.
 */
void engine_retry_socket(struct engine *e, struct bfd_session *s, uint64_t now_ns, bool repick);

/* --- bfdd_sessions.c --- */

/*
 * engine_hold_expired() - if @s was kept on the wire after its bfdd went away (--dp-hold) and
 * the hold has run out by @now_ns, remove it (AdminDown first, RFC 5880 6.8.16).
 * Return: true if @s is gone (the caller must not touch it again).
 */
bool engine_hold_expired(struct engine *e, struct bfd_session *s, uint64_t now_ns);

#endif
