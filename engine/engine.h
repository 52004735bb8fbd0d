/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * engine.h - the engine as a whole: options, the parts (kern, sessions, dplane), and the glue
 * that turns bfdd's messages, ring-buffer events, received packets and timers into state
 * machine events and carries out the actions (bfdd_sessions.c, paths.c, actions.c; what they
 * and loop.c share among themselves is in glue.h), the set-up and event loop (loop.c), the
 * software receive path (sw.c) and the statistics (stats.c: JSON dump and Prometheus file).
 */
#ifndef ENGINE_ENGINE_H
#define ENGINE_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include "bfd_shared.h"
#include "dplane.h"
#include "kern.h"
#include "log.h"
#include "session.h"

struct engine_opts {
	const char *dplane_listen;		/* --dplane [ADDR:]PORT */
	const char *dplane_connect;		/* --dplane-connect SPEC */
	const char *kernel_tx[KERN_MAX_IFACES]; /* --kernel-tx IFACE (repeatable) */
	int n_kernel_tx;
	const char *stats_dump;	      /* --stats-dump PATH */
	const char *metrics_file;     /* --metrics-file PATH (Prometheus text) */
	uint32_t metrics_interval_ms; /* --metrics-interval-ms */
	const char *log_file;
	enum log_level log_level;
	uint32_t max_sessions;
	uint64_t deadman_us;
	uint64_t sweep_us;
	uint32_t dp_hold_s;  /* keep sessions this long after bfdd goes away */
	const char *pin_dir; /* --pin DIR (bpffs): live handover; needs --dp-hold and --kernel-tx */
	int takeover_fd;     /* --takeover: pipe to the waiting command ('M', then 'R'), else -1 */
	bool pass_unowned;
	bool spread_pass; /* --spread-pass */
	bool xdp_generic;
};

/* Engine-side counters (the XDP program's are in the counters map). */
struct engine_stats {
	uint64_t events_rx;	       /* ring-buffer packet events */
	uint64_t events_expired;       /* sweep expiries acted on */
	uint64_t events_expired_stale; /* expiries a later packet had overtaken */
	uint64_t events_quiet; /* rx-clocked sessions whose peer went quiet: sent from userspace */
	uint64_t events_stale; /* events for a slot that changed hands */
	uint64_t tx_packets;   /* userspace sends */
	uint64_t tx_errors;
	uint64_t sw_rx; /* packets on the software path */
	uint64_t sw_drops[BFD_DROP__COUNT];
	uint64_t bfdd_adds, bfdd_updates, bfdd_deletes, bfdd_rejected;
	uint64_t state_changes_sent;
};

#define ENGINE_SW_SOCKS 4

struct engine {
	struct engine_opts o;
	struct kern kern;
	bool kernel_tx; /* the XDP object is loaded */
	struct session_table st;
	uint32_t incarnations; /* sessions created so far: the last one's incarnation */
	struct dplane dp;
	int epfd, sigfd, tx_timer_fd, tick_fd, ifmon_fd, metrics_fd;
	bool metrics_failing;	    /* the last metrics write failed (logged once) */
	int sw_fd[ENGINE_SW_SOCKS]; /* software receive: v4/v6 x 3784/4784 */
	uint64_t tx_timer_armed_ns;
	uint64_t start_ns;
	int exit_code;
	bool stop;
	bool leave; /* SIGUSR2 or a newer engine: exit 75, no AdminDown, pins kept */
	uint32_t adopted, adopted_up; /* sessions taken from the pinned maps, and of those Up */
	struct engine_stats stats;
};

/* What each file offers the others. Return 0 or -errno where int. */

/* loop.c: set-up, the event loop (until SIGTERM/SIGINT), teardown. */
int engine_init(struct engine *e);
int engine_run(struct engine *e);
void engine_fini(struct engine *e);

/* bfdd_sessions.c: sessions from bfdd. */
extern const struct dplane_ops engine_dplane_ops;
void engine_stop_sessions(struct engine *e); /* AdminDown on every session, then drop them */

/* paths.c: what arrives on the fast and the software path. */
int engine_on_event(void *ctx, void *data, size_t size); /* ring-buffer record */
/* engine_rx_packet() - a packet the software path received, already decoded and checked. */
struct bfd_pkt;
void engine_rx_packet(struct engine *e, const struct bfd_pkt *p, uint8_t family, bool multihop,
		      const uint8_t local[16], const uint8_t peer[16], uint32_t ifindex,
		      uint8_t ttl, uint64_t now_ns);

/* actions.c */
uint64_t engine_now_ns(void); /* CLOCK_MONOTONIC, the clock bpf_ktime_get_ns() reads */
void engine_tx_due(struct engine *e, uint64_t now_ns); /* the transmit timer fired */

/* ifmon.c: interfaces through rtnetlink; paths.c acts on what it reports. */
int ifmon_open(void); /* Return: the socket, or -errno */
void ifmon_readable(struct engine *e, int fd);
/* @ifindex was deleted: its sessions leave the fast path (path down, diag 5). */
void engine_iface_gone(struct engine *e, uint32_t ifindex, const char *name);
/* An interface or address appeared or changed (@ifindex 0: re-examine everything). */
void engine_iface_changed(struct engine *e, uint32_t ifindex, const char *name);

/*
 * handover.c: --pin. engine_adopt_pinned() makes a session of each active slot of the pinned
 * maps (slot, discriminators, state and the peer's parameters kept), held as under --dp-hold
 * until bfdd adds it again, with its socket open and its schedule set; engine_handover() then
 * switches the pinned XDP links to this engine's program, asks the engine named in DIR/owner to
 * leave (SIGUSR2), names this one there and waits for the old one to exit (bfdd is connected
 * after that), logging how long it took.
 */
#define ENGINE_EXIT_HANDED_OVER 75 /* EX_TEMPFAIL: a supervisor restarts on it */
/* A leaving engine's heartbeat is this far ahead: the dead-man gate waits for its successor. */
#define ENGINE_LEAVE_GRACE_NS 10000000000ULL
void engine_adopt_pinned(struct engine *e);
void engine_handover(struct engine *e);
/* engine_pin_running() - the PID of the running xdp-bfd that DIR/owner names, else 0. */
pid_t engine_pin_running(const char *pin_dir);
/*
 * engine_takeover_say() - tell the --takeover command how far this engine is: 'M' once it is
 * systemd's main process (MAINPID= sent), 'R' once it serves (READY=1 sent; closes the pipe).
 * A no-op without --takeover.
 */
void engine_takeover_say(struct engine *e, char what);

/* sw.c: receive sockets on 3784/4784 for sessions without the fast path. */
int sw_open(struct engine *e);
void sw_close(struct engine *e);
void sw_readable(struct engine *e, int idx, uint64_t now_ns);

/*
 * stats.c: take one snapshot and write it to --metrics-file (Prometheus text) and, when @json, to
 * --stats-dump (JSON), each atomically. Failures are logged.
 */
void engine_stats_write(struct engine *e, bool json);

#endif
