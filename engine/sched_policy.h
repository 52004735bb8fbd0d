/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sched_policy.h - the engine's scheduling policy and the one privilege it needs only for that.
 *
 * The loop (detection, bfdd, the dead-man heartbeat, packets the fast path cannot clock) must run
 * under real-time load. A SCHED_DEADLINE reservation runs ahead of every SCHED_FIFO priority; where
 * the kernel refuses one the engine says why and takes SCHED_FIFO at a fixed priority instead
 * (above threaded interrupt handlers, 50). Once the policy is settled CAP_SYS_NICE is dropped
 * from the effective and permitted sets (libcap), so nothing later in the process can change it.
 */
#ifndef ENGINE_SCHED_POLICY_H
#define ENGINE_SCHED_POLICY_H

#include <stdint.h>

#define SCHED_FALLBACK_FIFO_DEFAULT 60

struct sched_opts {
	uint32_t runtime_us, period_us; /* --sched-deadline R/P; 0 = no reservation asked */
	uint32_t fallback_fifo;		/* --sched-fallback-fifo PRIO (1..99); 0 = stay as is */
};

/*
 * sched_apply() - take the reservation, or the SCHED_FIFO fallback when it is refused, logging
 * one of:
 *   "sched: SCHED_DEADLINE R us every P us"
 *   "sched: SCHED_DEADLINE R/P us refused: ERRNO (CAUSE)" then
 *   "sched: fell back to SCHED_FIFO PRIO" or "sched: SCHED_FIFO PRIO refused too: ERRNO (CAUSE);
 *   staying at POLICY"
 * then drops CAP_SYS_NICE ("sched: CAP_SYS_NICE dropped (policy POLICY)"). Without a
 * reservation asked for, the policy is left as the caller (systemd, chrt) set it.
 * Return: 0, or -errno when CAP_SYS_NICE could not be dropped (the caller decides; the engine
 * logs it and goes on).
 */
int sched_apply(const struct sched_opts *o);

/* sched_policy_str() - "SCHED_DEADLINE", "SCHED_FIFO 60", "SCHED_OTHER", ... for @pid (0: self). */
const char *sched_policy_str(int pid, char *buf, unsigned len);

#endif
