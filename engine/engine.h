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
#include <stdio.h>
#include <stdint.h>
#include "bfd_shared.h"
#include "dplane.h"
#include "echo.h"
#include "kern.h"
#include "log.h"
#include "session.h"

#define ENGINE_DEMAND_PEERS_MAX 64

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
	/* --demand: Demand mode (RFC 5880 6.6) for every session, or for these peers only. */
	bool demand_all;
	int n_demand_peers;
	struct engine_demand_peer {
		uint8_t family; /* 4 or 6 */
		uint8_t addr[16];
	} demand_peers[ENGINE_DEMAND_PEERS_MAX];
	uint32_t demand_poll_us; /* --demand-poll-us: 0 never verifies */
};

/* Engine-side counters (the XDP program's are in the counters map). */
#define ENGINE_LOOP_LATE_BUCKETS 17
#define ENGINE_LOOP_LOG		 64 /* the latest wake-ups later than 1 ms, with their time */

struct engine_late_rec {
	uint64_t at_ns, late_ns; /* CLOCK_MONOTONIC wake-up, how late */
};

struct engine_stats {
	uint64_t events_rx;	       /* ring-buffer packet events */
	uint64_t events_expired;       /* sweep expiries acted on */
	uint64_t events_expired_stale; /* expiries a later packet had overtaken */
	uint64_t events_quiet; /* rx-clocked sessions whose peer went quiet: sent from userspace */
	uint64_t events_stale; /* events for a slot that changed hands */
	/* rx-clocked packets too early after ours for the fast path to answer (BFD_EVF_TX_EARLY) */
	uint64_t events_tx_early;
	uint64_t tx_packets; /* userspace sends */
	uint64_t tx_errors;
	uint64_t sw_rx; /* packets on the software path */
	uint64_t sw_drops[BFD_DROP__COUNT];
	uint64_t bfdd_adds, bfdd_updates, bfdd_deletes, bfdd_rejected;
	uint64_t state_changes_sent;
	/* Our own echo (echo.h): packets sent, sends that failed, neighbour-table looks that found
	 * no usable MAC (each asked the kernel to resolve it), sessions taken Down by its loss. */
	uint64_t echo_tx, echo_tx_errors, echo_no_neigh, echo_failed;
	/* The userspace tick (loop.c): how many, their total time (ns), sessions looked at. */
	uint64_t ticks, tick_ns, tick_sessions_visited;
	/*
	 * The loop's lateness (issue 9 item 5): how long after a timer was due (the transmit timer,
	 * the tick) the loop ran it: the wake-ups measured, their sum and most (ns), and a count
	 * per bucket of stats_loop_late_le_us[] (the last: beyond 1 s).
	 */
	uint64_t loop_wakeups, loop_late_sum_ns, loop_late_max_ns;
	uint64_t loop_late[ENGINE_LOOP_LATE_BUCKETS];
	/* Those over 1 ms, each kept (a ring of the latest; loop_log_n written in all), so a
	 * reader can find the exact maximum of any window it knows the bounds of. */
	struct engine_late_rec loop_log[ENGINE_LOOP_LOG];
	uint64_t loop_log_n;
	uint64_t dumps_unrendered; /* snapshots not rendered (no memory) */
};

#define ENGINE_SW_SOCKS 4

struct engine {
	struct engine_opts o;
	struct kern kern;
	struct writer *wr; /* the file writes' thread (writer.h); NULL: written in place */
	bool kernel_tx;	   /* the XDP object is loaded */
	struct session_table st;
	struct echo_socks echo; /* our own echo's sockets (echo.h) */
	uint32_t incarnations;	/* sessions created so far: the last one's incarnation */
	struct dplane dp;
	int epfd, sigfd, tx_timer_fd, tick_fd, ifmon_fd, metrics_fd;
	int sw_fd[ENGINE_SW_SOCKS]; /* software receive: v4/v6 x 3784/4784 */
	uint64_t tx_timer_armed_ns;
	uint64_t tx_timer_due_ns; /* the later of that and when it was armed: for its lateness */
	uint64_t tick_due_ns;	  /* when the tick is next due (its lateness, engine_note_late()) */
	uint64_t start_ns;
	int exit_code;
	bool stop;
	bool leave;	 /* SIGUSR2 or a newer engine: exit 75, no AdminDown, pins kept */
	pid_t leave_for; /* who sent that SIGUSR2 */
	int early_fds[DPLANE_MAX_CONNS]; /* engine_preconnect()'s bfdd connections */
	int n_early;
	uint32_t adopted, adopted_up; /* sessions taken from the pinned maps, and of those Up */
	uint64_t last_add_ns;	      /* bfdd's last ADD, or a connection's start */
	uint32_t readd_probes;	      /* connections opened for adopted sessions bfdd held back */
	struct engine_stats stats;
	/* A JSON stats dump being written a few sessions per loop pass (stats.c). */
	struct {
		FILE *f; /* open_memstream() over buf */
		char *buf;
		size_t len;
		uint32_t next_slot; /* the next slot to write; active while f */
		uint32_t written;   /* sessions written so far */
	} dump;
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
 * leave (SIGUSR2), names this one there and waits for the old one to let bfdd go (its SIGCONT,
 * engine_tell_successor(), or its exit; bfdd is connected after that), logging how long it took.
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
/*
 * engine_tell_successor() - a leaving engine whose bfdd connections are closed sends SIGCONT to
 * the engine that asked it to leave (if that is a running xdp-bfd): it may connect to bfdd now
 * rather than at this process's exit, which at 1,024 sessions ends some 15 ms later.
 */
void engine_tell_successor(struct engine *e);
/*
 * engine_preconnect() - (before the object is loaded) when DIR/owner names an engine that no
 * longer runs (it left on SIGUSR2 or died), bfdd 8.4.4 runs the pinned sessions on its own
 * fallback timers, with no receive socket, and sends Down once its Detection Time passes: open
 * the bfdd connections now (dplane_preconnect(), one per 58 of --max-sessions), so bfdd stops
 * those timers; their ADDs are read once the sessions are adopted.
 */
void engine_preconnect(struct engine *e);
/*
 * engine_readd_check() - (each tick) sessions adopted from the pins that bfdd has not added
 * again ENGINE_READD_QUIET_NS after its last ADD: bfdd offers a connection only the sessions
 * no connection holds, so those a leaving engine's connection still held when this one
 * connected wait for another connection. Opens one, at most ENGINE_READD_PROBES times.
 */
#define ENGINE_READD_QUIET_NS 500000000ULL
#define ENGINE_READD_PROBES   4
void engine_readd_check(struct engine *e, uint64_t now_ns);

/* sw.c: receive sockets on 3784/4784 for sessions without the fast path. */
int sw_open(struct engine *e);
void sw_close(struct engine *e);
void sw_readable(struct engine *e, int idx, uint64_t now_ns);

/*
 * stats.c: write --metrics-file (Prometheus text) and, when @json, --stats-dump (JSON), each
 * atomically once whole. The JSON dump alone is written a step per loop pass: its engine-wide
 * part now, its sessions STATS_DUMP_STEP at a time (engine_stats_dump_step()), so that a dump of
 * 65,536 sessions does not hold the loop for seconds under its SCHED_DEADLINE budget; a
 * request while one is being written is served by it. With --metrics-file too, both files
 * come from one snapshot taken at once (they agree exactly). Failures are logged.
 */
void engine_stats_write(struct engine *e, bool json);
/* engine_stats_dump_step() - write the next sessions of the dump in progress, and the file once
 * the last is in. Return: whether a dump is still in progress (the loop must not sleep). */
bool engine_stats_dump_step(struct engine *e);
/* engine_stats_dump_abort() - drop a dump in progress (the engine is stopping). */
void engine_stats_dump_abort(struct engine *e);
/* engine_note_late() - count one timer wake-up at @now_ns for a timer due at @due_ns (both
 * CLOCK_MONOTONIC ns) in the loop's lateness figures; none when it is not yet due. */
void engine_note_late(struct engine_stats *st, uint64_t due_ns, uint64_t now_ns);

#endif
