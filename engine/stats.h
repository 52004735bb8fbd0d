/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * stats.h - the engine's statistics: one snapshot of the numbers (stats.c), two renderings of
 * it, the JSON dump (stats_json.c, --stats-dump) and the Prometheus text format for
 * node_exporter's textfile collector (stats_prom.c, --metrics-file). A file written on the same
 * occasion (SIGUSR1) comes from the same snapshot, so the two agree exactly.
 */
#ifndef ENGINE_STATS_H
#define ENGINE_STATS_H

#include <arpa/inet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bfd_shared.h"
#include "dplane.h"
#include "engine.h"
#include "kern.h"

struct engine;

struct stats_session {
	uint32_t lid, local_disc, remote_disc;
	char local[INET6_ADDRSTRLEN], peer[INET6_ADDRSTRLEN], ifname[IF_NAMESIZE];
	bool multihop, fast_path, rx_clocked, poll_active, demand;
	uint16_t local_port;
	uint8_t state, remote_state, local_diag, remote_diag; /* RFC 5880 4.1 codes */
	uint64_t state_age_us;				      /* since the last state change */
	uint32_t desired_min_tx_us, required_min_rx_us, detect_mult;
	uint32_t remote_desired_min_tx_us, remote_min_rx_us, remote_detect_mult;
	uint32_t tx_interval_us;
	uint64_t detect_time_us;
	uint64_t xdp_rx_packets, sw_rx_packets;	  /* received: fast path, software path */
	uint64_t xdp_tx_packets, user_tx_packets; /* sent: XDP replies, userspace */
	uint64_t up_events, down_events;
	uint32_t echo_interval_us;		   /* our own echo's, 0: not running */
	uint64_t echo_tx_packets, echo_rx_packets; /* our own echo: sent, back */
};

struct stats_conn {
	uint32_t serial;
	uint64_t rx_msgs, tx_msgs, echo_sent, echo_replies, echo_rtt_ns;
};

struct stats_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	bool native;
};

struct stats_snapshot {
	int pid;
	uint64_t uptime_ms;
	bool kernel_tx;
	const char *xdp_mode; /* "native", "generic", "none" (no interface yet), "off" */
	int n_ifaces;
	struct stats_iface ifaces[KERN_MAX_IFACES];
	int dplane_connections; /* live bfdd connections */
	uint64_t dplane_malformed;
	int n_conns;
	struct stats_conn conns[DPLANE_MAX_CONNS];
	uint32_t sessions_configured, sessions_up;
	uint64_t counters[BFD_CNT_DROP_BASE]; /* the XDP program's, summed over CPUs */
	uint64_t drops[BFD_DROP__COUNT];      /* fast path and software path together */
	uint64_t engine[32];		      /* by stats_engine_fields[] */
	uint64_t sweep_period_us, sweep_runs, sweep_last_scan_ns, sweep_max_scan_ns,
	    sweep_total_scan_ns;
	/* Slots the sweep read from its wheel: the last sweep, the most, all sweeps. */
	uint64_t sweep_last_visited, sweep_max_visited, sweep_total_visited;
	/* The loop's lateness (struct engine_stats): wake-ups, sum, most, per bucket. */
	uint64_t loop_wakeups, loop_late_sum_ns, loop_late_max_ns;
	uint64_t loop_late[ENGINE_LOOP_LATE_BUCKETS];
	/* The wake-ups later than 1 ms kept, oldest first, at_ns as uptime; how many in all. */
	struct engine_late_rec loop_log[ENGINE_LOOP_LOG];
	unsigned n_loop_log;
	uint64_t loop_log_n;
	uint32_t n_sessions;
	struct stats_session *sessions;
};

/* The engine's own counters (struct engine_stats), named once for both renderings. */
struct stats_field {
	const char *json; /* key in the JSON dump's "engine" object */
	const char *prom; /* metric name after "xdp_bfd_engine_" */
	const char *help;
	int places; /* the metric is the value scaled by 10^-places (ns -> seconds: 9) */
};
extern const struct stats_field stats_engine_fields[];
extern const unsigned stats_engine_n_fields;
/* The loop's lateness buckets' upper bounds (µs); the last bucket has none (+Inf). */
extern const uint32_t stats_loop_late_le_us[ENGINE_LOOP_LATE_BUCKETS - 1];

/*
 * stats_collect() - read everything once (maps included); with @sessions false, the engine-wide
 * part alone (sessions_up still counted, n_sessions 0). Return: 0 or -ENOMEM.
 */
int stats_collect(struct engine *e, struct stats_snapshot *out, bool sessions);
void stats_release(struct stats_snapshot *s);

/* The renderings: JSON (schema "xdp-bfd-stats/1", docs/engine.md) and Prometheus text 0.0.4. */
/* The JSON dump in three parts, so that it can be written a few sessions at a time: the
 * engine-wide part up to the sessions array's "[", one session, and the end. */
void stats_render_json_head(FILE *f, const struct stats_snapshot *s);
void stats_render_json_session(FILE *f, const struct stats_session *s);
void stats_render_json_tail(FILE *f);
void stats_render_prom(FILE *f, const struct stats_snapshot *s);

#endif
