// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats_prom.c - the statistics snapshot in the Prometheus text exposition format (0.0.4), for
 * node_exporter's textfile collector. Names follow that ecosystem's conventions: prefix xdp_bfd_,
 * base units in the name (_seconds; times are converted exactly from the integer microseconds
 * or nanoseconds the JSON dump shows), _total for counters, labels for what a series is about
 * (a session's lid, local discriminator, addresses and interface; a drop's reason). Each family
 * is written whole (HELP, TYPE, then its samples), as the format requires.
 */
#include <stddef.h>
#include "codec.h"
#include "stats.h"

#define P "xdp_bfd_"

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP " P "%s %s\n# TYPE " P "%s %s\n", name, help, name, type);
}

/* A label value, escaped as the format asks (backslash, double quote, newline). */
static void put_label(FILE *f, const char *key, const char *v, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", key);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputc('"', f);
}

/* @v in units of 10^-@places as an exact decimal (places 0: an integer). */
static void put_value(FILE *f, uint64_t v, int places)
{
	uint64_t div = 1;

	for (int i = 0; i < places; i++)
		div *= 10;
	if (places)
		fprintf(f, " %llu.%0*llu\n", (unsigned long long)(v / div), places,
			(unsigned long long)(v % div));
	else
		fprintf(f, " %llu\n", (unsigned long long)v);
}

static void scalar(FILE *f, const char *name, const char *type, const char *help, uint64_t v,
		   int places)
{
	family(f, name, type, help);
	fputs(P, f);
	fputs(name, f);
	put_value(f, v, places);
}

static void session_labels(FILE *f, const struct stats_session *s)
{
	char n[16];

	snprintf(n, sizeof(n), "%u", s->lid);
	put_label(f, "lid", n, true);
	snprintf(n, sizeof(n), "%u", s->local_disc);
	put_label(f, "local_discriminator", n, false);
	put_label(f, "local", s->local, false);
	put_label(f, "peer", s->peer, false);
	put_label(f, "interface", s->ifname, false);
}

enum kind { K_U8, K_U32, K_U64, K_BOOL };

/* One per-session family: a field of struct stats_session, scaled by 10^-places. */
static const struct session_family {
	const char *name, *type, *help;
	size_t off;
	enum kind kind;
	int places;
} session_families[] = {
#define F(name, type, help, field, kind, places)                                                   \
	{                                                                                          \
		name, type, help, offsetof(struct stats_session, field), kind, places              \
	}
    F("session_up", "gauge", "1 while the session is Up", state, K_U8, -1),
    F("session_state", "gauge",
      "bfd.SessionState (RFC 5880 4.1): 0 AdminDown, 1 Down, 2 Init, 3 Up", state, K_U8, 0),
    F("session_remote_state", "gauge", "bfd.RemoteSessionState, as session_state", remote_state,
      K_U8, 0),
    F("session_local_diagnostic", "gauge", "bfd.LocalDiag (RFC 5880 4.1)", local_diag, K_U8, 0),
    F("session_remote_diagnostic", "gauge", "the peer's last Diagnostic", remote_diag, K_U8, 0),
    F("session_state_age_seconds", "gauge", "time since the last state change", state_age_us, K_U64,
      6),
    F("session_fast_path", "gauge", "1 while the XDP program serves the session", fast_path, K_BOOL,
      0),
    F("session_rx_clocked", "gauge", "1 while the peer's packets clock our replies in XDP",
      rx_clocked, K_BOOL, 0),
    F("session_poll_active", "gauge", "1 while our Poll Sequence is open (RFC 5880 6.5)",
      poll_active, K_BOOL, 0),
    F("session_desired_min_tx_seconds", "gauge", "bfd.DesiredMinTxInterval", desired_min_tx_us,
      K_U32, 6),
    F("session_required_min_rx_seconds", "gauge", "bfd.RequiredMinRxInterval", required_min_rx_us,
      K_U32, 6),
    F("session_detect_multiplier", "gauge", "bfd.DetectMult", detect_mult, K_U32, 0),
    F("session_remote_desired_min_tx_seconds", "gauge", "the peer's Desired Min TX Interval",
      remote_desired_min_tx_us, K_U32, 6),
    F("session_remote_required_min_rx_seconds", "gauge", "bfd.RemoteMinRxInterval",
      remote_min_rx_us, K_U32, 6),
    F("session_remote_detect_multiplier", "gauge", "the peer's Detect Mult", remote_detect_mult,
      K_U32, 0),
    F("session_tx_interval_seconds", "gauge", "our negotiated transmit interval (RFC 5880 6.8.7)",
      tx_interval_us, K_U32, 6),
    F("session_detection_time_seconds", "gauge", "the Detection Time (RFC 5880 6.8.4)",
      detect_time_us, K_U64, 6),
    F("session_up_events_total", "counter", "transitions to Up", up_events, K_U64, 0),
    F("session_down_events_total", "counter", "transitions from Up to Down", down_events, K_U64, 0),
#undef F
};

static uint64_t field(const struct stats_session *s, const struct session_family *d)
{
	const char *p = (const char *)s + d->off;

	switch (d->kind) {
	case K_U8:
		return *(const uint8_t *)p;
	case K_U32:
		return *(const uint32_t *)p;
	case K_BOOL:
		return *(const bool *)p;
	default:
		return *(const uint64_t *)p;
	}
}

static void sessions(FILE *f, const struct stats_snapshot *s)
{
	char n[16];

	family(f, "session_info", "gauge",
	       "one per session: its identity, source port and the peer's discriminator");
	for (uint32_t i = 0; i < s->n_sessions; i++) {
		const struct stats_session *x = &s->sessions[i];

		fputs(P "session_info{", f);
		session_labels(f, x);
		put_label(f, "multihop", x->multihop ? "true" : "false", false);
		snprintf(n, sizeof(n), "%u", x->local_port);
		put_label(f, "source_port", n, false);
		snprintf(n, sizeof(n), "%u", x->remote_disc);
		put_label(f, "remote_discriminator", n, false);
		fputs("} 1\n", f);
	}
	for (size_t d = 0; d < sizeof(session_families) / sizeof(session_families[0]); d++) {
		const struct session_family *sf = &session_families[d];

		family(f, sf->name, sf->type, sf->help);
		for (uint32_t i = 0; i < s->n_sessions; i++) {
			uint64_t v = field(&s->sessions[i], sf);

			fprintf(f, P "%s{", sf->name);
			session_labels(f, &s->sessions[i]);
			fputc('}', f);
			if (sf->places < 0) /* session_up: from the state */
				put_value(f, v == BFD_STATE_UP, 0);
			else
				put_value(f, v, sf->places);
		}
	}
	family(f, "session_received_packets_total", "counter",
	       "Control packets accepted, by the path they came in on");
	for (uint32_t i = 0; i < s->n_sessions; i++)
		for (int path = 0; path < 2; path++) {
			fputs(P "session_received_packets_total{", f);
			session_labels(f, &s->sessions[i]);
			put_label(f, "path", path ? "software" : "xdp", false);
			fputc('}', f);
			put_value(
			    f, path ? s->sessions[i].sw_rx_packets : s->sessions[i].xdp_rx_packets,
			    0);
		}
	family(f, "session_sent_packets_total", "counter",
	       "Control packets sent, by who sent them (XDP replies, userspace)");
	for (uint32_t i = 0; i < s->n_sessions; i++)
		for (int path = 0; path < 2; path++) {
			fputs(P "session_sent_packets_total{", f);
			session_labels(f, &s->sessions[i]);
			put_label(f, "path", path ? "userspace" : "xdp", false);
			fputc('}', f);
			put_value(f,
				  path ? s->sessions[i].user_tx_packets
				       : s->sessions[i].xdp_tx_packets,
				  0);
		}
}

static void dplane(FILE *f, const struct stats_snapshot *s)
{
	static const struct {
		const char *name, *type, *help;
		size_t off;
		int places;
	} conn_families[] = {
	    {"dplane_received_messages_total", "counter", "messages from bfdd",
	     offsetof(struct stats_conn, rx_msgs), 0},
	    {"dplane_sent_messages_total", "counter", "messages to bfdd",
	     offsetof(struct stats_conn, tx_msgs), 0},
	    {"dplane_echo_requests_total", "counter", "keepalive ECHO_REQUESTs sent",
	     offsetof(struct stats_conn, echo_sent), 0},
	    {"dplane_echo_replies_total", "counter", "ECHO_REPLYs received",
	     offsetof(struct stats_conn, echo_replies), 0},
	    {"dplane_echo_rtt_seconds", "gauge", "round trip of the last ECHO_REQUEST",
	     offsetof(struct stats_conn, echo_rtt_ns), 9},
	};
	char n[16];

	scalar(f, "dplane_connections", "gauge", "live bfdd connections",
	       (uint64_t)s->dplane_connections, 0);
	scalar(f, "dplane_malformed_streams_total", "counter",
	       "bfdd connections closed for a malformed stream", s->dplane_malformed, 0);
	for (size_t d = 0; d < sizeof(conn_families) / sizeof(conn_families[0]); d++) {
		family(f, conn_families[d].name, conn_families[d].type, conn_families[d].help);
		for (int i = 0; i < s->n_conns; i++) {
			snprintf(n, sizeof(n), "%u", s->conns[i].serial);
			fprintf(f, P "%s{", conn_families[d].name);
			put_label(f, "connection", n, true);
			fputc('}', f);
			put_value(
			    f,
			    *(const uint64_t *)((const char *)&s->conns[i] + conn_families[d].off),
			    conn_families[d].places);
		}
	}
}

/* The loop's lateness as a Prometheus histogram (cumulative buckets, le in seconds). */
static void loop_late(FILE *f, const struct stats_snapshot *s)
{
	uint64_t cum = 0;
	char le[32];

	family(f, "loop_lateness_seconds", "histogram",
	       "how long after a timer was due (transmit timer, tick) the engine's loop ran it");
	for (unsigned i = 0; i < ENGINE_LOOP_LATE_BUCKETS; i++) {
		cum += s->loop_late[i];
		if (i < ENGINE_LOOP_LATE_BUCKETS - 1)
			snprintf(le, sizeof(le), "%u.%06u", stats_loop_late_le_us[i] / 1000000,
				 stats_loop_late_le_us[i] % 1000000);
		else
			snprintf(le, sizeof(le), "+Inf");
		fputs(P "loop_lateness_seconds_bucket{", f);
		put_label(f, "le", le, true);
		fputc('}', f);
		put_value(f, cum, 0);
	}
	fputs(P "loop_lateness_seconds_sum", f);
	put_value(f, s->loop_late_sum_ns, 9);
	fputs(P "loop_lateness_seconds_count", f);
	put_value(f, s->loop_wakeups, 0);
	scalar(f, "loop_lateness_max_seconds", "gauge", "the loop's latest timer wake-up so far",
	       s->loop_late_max_ns, 9);
}

static const char *const counter_help[] = {
#define HELP(name, text) text,
    BFD_COUNTERS(HELP)
#undef HELP
};

void stats_render_prom(FILE *f, const struct stats_snapshot *s)
{
	char name[96];

	scalar(f, "uptime_seconds", "gauge", "time since the engine started", s->uptime_ms, 3);
	scalar(f, "kernel_tx", "gauge", "1 when the XDP object is loaded (--kernel-tx)",
	       s->kernel_tx, 0);
	family(f, "xdp_mode_info", "gauge",
	       "the XDP mode over all interfaces: native, generic, none (no interface yet) or off");
	fputs(P "xdp_mode_info{", f);
	put_label(f, "mode", s->xdp_mode, true);
	fputs("} 1\n", f);
	family(f, "interface_info", "gauge", "interfaces running the XDP program");
	for (int i = 0; i < s->n_ifaces; i++) {
		snprintf(name, sizeof(name), "%d", s->ifaces[i].ifindex);
		fputs(P "interface_info{", f);
		put_label(f, "interface", s->ifaces[i].name, true);
		put_label(f, "ifindex", name, false);
		put_label(f, "mode", s->ifaces[i].native ? "native" : "generic", false);
		fputs("} 1\n", f);
	}
	dplane(f, s);
	scalar(f, "sessions_configured", "gauge", "sessions bfdd has given the engine",
	       s->sessions_configured, 0);
	scalar(f, "sessions_up", "gauge", "sessions Up", s->sessions_up, 0);
	for (unsigned i = 0; i < BFD_CNT_DROP_BASE; i++) {
		snprintf(name, sizeof(name), "fastpath_%s_total", bfd_counter_name(i));
		scalar(f, name, "counter", counter_help[i], s->counters[i], 0);
	}
	family(f, "dropped_packets_total", "counter",
	       "BFD packets discarded, fast path and software path, by reason (docs/engine.md)");
	for (unsigned i = 0; i < BFD_DROP__COUNT; i++) {
		fputs(P "dropped_packets_total{", f);
		put_label(f, "reason", bfd_drop_name(i), true);
		fputc('}', f);
		put_value(f, s->drops[i], 0);
	}
	for (unsigned i = 0; i < stats_engine_n_fields; i++) {
		snprintf(name, sizeof(name), "engine_%s", stats_engine_fields[i].prom);
		scalar(f, name, "counter", stats_engine_fields[i].help, s->engine[i],
		       stats_engine_fields[i].places);
	}
	scalar(f, "sweep_period_seconds", "gauge", "the detection sweep's period (--sweep-us)",
	       s->sweep_period_us, 6);
	scalar(f, "sweep_runs_total", "counter", "detection sweeps run", s->sweep_runs, 0);
	scalar(f, "sweep_last_scan_seconds", "gauge", "how long the last sweep took",
	       s->sweep_last_scan_ns, 9);
	scalar(f, "sweep_max_scan_seconds", "gauge", "the longest sweep", s->sweep_max_scan_ns, 9);
	scalar(f, "sweep_scan_seconds_total", "counter", "time spent sweeping, all sweeps",
	       s->sweep_total_scan_ns, 9);
	scalar(f, "sweep_last_slots_visited", "gauge",
	       "slots the last sweep read from its timing wheel", s->sweep_last_visited, 0);
	scalar(f, "sweep_max_slots_visited", "gauge", "the most slots one sweep read",
	       s->sweep_max_visited, 0);
	scalar(f, "sweep_slots_visited_total", "counter", "slots read by the sweep, all sweeps",
	       s->sweep_total_visited, 0);
	loop_late(f, s);
	sessions(f, s);
}
