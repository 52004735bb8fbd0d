// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats.c - the statistics snapshot (see stats.h) and writing its renderings: SIGUSR1 writes the
 * JSON dump (--stats-dump), its sessions a step per loop pass, and the Prometheus file
 * (--metrics-file) from one snapshot; the metrics period writes the Prometheus file alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine.h"
#include "fsm.h"
#include "stats.h"
#include "writer.h"

const struct stats_field stats_engine_fields[] = {
    {"events_rx", "events_rx_total", "packet events from the fast path acted on", 0},
    {"events_expired", "events_expired_total", "detection-time expiries acted on", 0},
    {"events_expired_stale", "events_expired_stale_total",
     "expiries a later state change or a longer Detection Time had made moot", 0},
    {"events_quiet", "events_quiet_total",
     "rx-clocked sessions whose peer went quiet: one packet sent from userspace", 0},
    {"events_stale", "events_stale_total", "events for a slot that had changed hands", 0},
    {"events_tx_early", "events_tx_early_total",
     "rx-clocked packets too early after ours for the fast path to answer", 0},
    {"tx_packets", "sent_packets_total", "packets sent from userspace", 0},
    {"tx_errors", "send_errors_total", "userspace sends that failed", 0},
    {"sw_rx", "software_received_packets_total", "packets accepted on the software path", 0},
    {"bfdd_adds", "bfdd_adds_total", "sessions bfdd added", 0},
    {"bfdd_updates", "bfdd_updates_total", "session updates from bfdd", 0},
    {"bfdd_deletes", "bfdd_deletes_total", "sessions bfdd deleted", 0},
    {"bfdd_rejected", "bfdd_rejected_total", "bfdd messages refused (logged)", 0},
    {"state_changes_sent", "state_changes_sent_total", "state changes reported to bfdd", 0},
    {"echo_tx", "echo_sent_packets_total", "our own echo packets sent (RFC 5880 6.8.9)", 0},
    {"echo_tx_errors", "echo_send_errors_total", "our own echo packets whose send failed", 0},
    {"echo_no_neigh", "echo_no_neighbour_total",
     "neighbour-table looks for our echo that found no usable MAC (resolution asked)", 0},
    {"echo_failed", "echo_failed_total", "sessions taken Down by the loss of our echo (diag 2)", 0},
    {"ticks", "ticks_total", "userspace ticks run (10 a second)", 0},
    {"tick_ns", "tick_seconds_total", "time spent in the userspace tick", 9},
    {"tick_sessions_visited", "tick_sessions_visited_total",
     "sessions the tick looked at (software path, no socket yet, --dp-hold)", 0},
    {"log_lines", "log_lines_total", "log lines the writer thread wrote", 0},
    {"log_lines_dropped", "log_lines_dropped_total",
     "log lines dropped: the writer's queue was full (the loop never waits for it)", 0},
    {"log_write_errors", "log_write_errors_total", "log writes that failed", 0},
    {"dumps", "dumps_total", "stats and metrics files written", 0},
    {"dumps_coalesced", "dumps_coalesced_total",
     "stats and metrics snapshots replaced by a newer one before written", 0},
    {"dumps_failed", "dumps_failed_total", "stats and metrics snapshots that failed", 0},
};
const unsigned stats_engine_n_fields = sizeof(stats_engine_fields) / sizeof(stats_engine_fields[0]);
_Static_assert(sizeof(stats_engine_fields) / sizeof(stats_engine_fields[0]) <=
		   sizeof(((struct stats_snapshot *)0)->engine) / sizeof(uint64_t),
	       "room for every engine field");

/* Upper bounds of the loop's lateness buckets (µs), 1-2-5 steps; the last bucket is beyond. */
const uint32_t stats_loop_late_le_us[ENGINE_LOOP_LATE_BUCKETS - 1] = {
    10,	  20,	 50,	100,   200,    500,    1000,   2000,
    5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000};

void engine_note_late(struct engine_stats *st, uint64_t due_ns, uint64_t now_ns)
{
	uint64_t late = now_ns - due_ns;
	unsigned b = 0;

	if (!due_ns || now_ns < due_ns)
		return;
	while (b < ENGINE_LOOP_LATE_BUCKETS - 1 && late > stats_loop_late_le_us[b] * 1000ULL)
		b++;
	st->loop_late[b]++;
	st->loop_wakeups++;
	st->loop_late_sum_ns += late;
	if (late > st->loop_late_max_ns)
		st->loop_late_max_ns = late;
	if (late > 1000000)
		st->loop_log[st->loop_log_n++ % ENGINE_LOOP_LOG] =
		    (struct engine_late_rec){.at_ns = now_ns, .late_ns = late};
}

static void engine_values(const struct engine_stats *st, const struct writer_stats *ws,
			  uint64_t *out)
{
	const uint64_t v[] = {st->events_rx,
			      st->events_expired,
			      st->events_expired_stale,
			      st->events_quiet,
			      st->events_stale,
			      st->events_tx_early,
			      st->tx_packets,
			      st->tx_errors,
			      st->sw_rx,
			      st->bfdd_adds,
			      st->bfdd_updates,
			      st->bfdd_deletes,
			      st->bfdd_rejected,
			      st->state_changes_sent,
			      st->echo_tx,
			      st->echo_tx_errors,
			      st->echo_no_neigh,
			      st->echo_failed,
			      st->ticks,
			      st->tick_ns,
			      st->tick_sessions_visited,
			      ws->lines,
			      ws->lines_dropped,
			      ws->write_errors,
			      ws->dumps,
			      ws->dumps_coalesced,
			      ws->dumps_failed + st->dumps_unrendered};

	_Static_assert(sizeof(v) / sizeof(v[0]) ==
			   sizeof(stats_engine_fields) / sizeof(stats_engine_fields[0]),
		       "one value per engine field");
	memcpy(out, v, sizeof(v));
}

static void collect_session(struct engine *e, const struct bfd_session *s, uint64_t now_ns,
			    struct stats_session *o)
{
	struct bfd_session_rx rx = {0};

	if (e->kernel_tx && s->fast_path)
		kern_session_rx(&e->kern, s->slot, &rx);
	o->lid = s->lid;
	o->local_disc = s->local_disc;
	o->remote_disc = s->remote_disc;
	session_addr_str(s->family, s->local_addr, o->local, sizeof(o->local));
	session_addr_str(s->family, s->peer_addr, o->peer, sizeof(o->peer));
	snprintf(o->ifname, sizeof(o->ifname), "%s", s->ifname);
	o->multihop = s->multihop;
	o->fast_path = s->fast_path;
	o->rx_clocked = fsm_rx_clocked(s);
	o->poll_active = s->poll_active;
	o->demand = s->demand_mode;
	o->local_port = s->local_port;
	o->state = s->session_state;
	o->remote_state = s->remote_session_state;
	o->local_diag = s->local_diag;
	o->remote_diag = s->remote_diag;
	o->state_age_us = (now_ns - s->state_since_ns) / 1000;
	o->desired_min_tx_us = s->desired_min_tx_us;
	o->required_min_rx_us = s->required_min_rx_us;
	o->detect_mult = s->cfg_detect_mult;
	o->remote_desired_min_tx_us = s->remote_desired_min_tx_us;
	o->remote_min_rx_us = s->remote_min_rx_us;
	o->remote_detect_mult = s->remote_detect_mult;
	o->tx_interval_us = fsm_tx_interval_us(s);
	o->detect_time_us = fsm_detect_time_ns(s) / 1000;
	o->xdp_rx_packets = rx.rx_packets;
	o->sw_rx_packets = s->sw_rx_packets;
	o->xdp_tx_packets = rx.tx_packets;
	o->user_tx_packets = s->user_tx_packets;
	o->echo_interval_us = s->echo_since_ns ? s->echo_iv_us : 0;
	o->echo_tx_packets = s->echo_tx_packets;
	o->echo_rx_packets =
	    e->kernel_tx && kern_echo_rec(&e->kern, s->slot)
		? __atomic_load_n(&kern_echo_rec(&e->kern, s->slot)->rx_packets, __ATOMIC_RELAXED)
		: 0;
	o->up_events = s->up_events;
	o->down_events = s->down_events;
}

int stats_collect(struct engine *e, struct stats_snapshot *out, bool sessions)
{
	uint64_t cnt[BFD_CNT__COUNT] = {0}, now = engine_now_ns();
	struct writer_stats ws = {0};
	struct bfd_sweep sw;
	bool native = e->kernel_tx && e->kern.n_ifaces;

	memset(out, 0, sizeof(*out));
	if (sessions) {
		out->sessions = calloc(e->st.count ? e->st.count : 1, sizeof(*out->sessions));
		if (!out->sessions)
			return -ENOMEM;
	}
	memset(&sw, 0, sizeof(sw));
	if (e->kernel_tx) {
		kern_counters(&e->kern, cnt);
		kern_sweep_stats(&e->kern, &sw);
	}
	out->pid = (int)getpid();
	out->uptime_ms = (now - e->start_ns) / 1000000;
	out->kernel_tx = e->kernel_tx;
	out->n_ifaces = e->kern.n_ifaces;
	for (int i = 0; i < e->kern.n_ifaces; i++) {
		native &= e->kern.ifaces[i].native;
		snprintf(out->ifaces[i].name, sizeof(out->ifaces[i].name), "%s",
			 e->kern.ifaces[i].name);
		out->ifaces[i].ifindex = e->kern.ifaces[i].ifindex;
		out->ifaces[i].native = e->kern.ifaces[i].native;
	}
	out->xdp_mode = !e->kernel_tx	   ? "off"
			: native	   ? "native"
			: e->kern.n_ifaces ? "generic"
					   : "none";
	out->dplane_connections = dplane_connected(&e->dp);
	out->dplane_malformed = e->dp.malformed;
	for (int i = 0; i < DPLANE_MAX_CONNS; i++) {
		struct dplane_conn *c = e->dp.conns[i];

		if (!c || c->connecting || c->closed)
			continue;
		out->conns[out->n_conns++] = (struct stats_conn){
		    .serial = c->serial,
		    .rx_msgs = c->rx_msgs,
		    .tx_msgs = c->tx_msgs,
		    .echo_sent = c->echo_sent,
		    .echo_replies = c->echo_replies,
		    .echo_rtt_ns = c->last_echo_rtt_ns,
		};
	}
	out->sessions_configured = e->st.count;
	memcpy(out->counters, cnt, sizeof(out->counters));
	for (unsigned i = 0; i < BFD_DROP__COUNT; i++)
		out->drops[i] = cnt[BFD_CNT_DROP_BASE + i] + e->stats.sw_drops[i];
	if (e->wr)
		writer_get_stats(e->wr, &ws);
	engine_values(&e->stats, &ws, out->engine);
	out->loop_wakeups = e->stats.loop_wakeups;
	out->loop_late_sum_ns = e->stats.loop_late_sum_ns;
	out->loop_late_max_ns = e->stats.loop_late_max_ns;
	memcpy(out->loop_late, e->stats.loop_late, sizeof(out->loop_late));
	/* The ring oldest first, its times as uptime (the dump's own clock). */
	out->loop_log_n = e->stats.loop_log_n;
	out->n_loop_log = 0;
	for (uint64_t i =
		 e->stats.loop_log_n > ENGINE_LOOP_LOG ? e->stats.loop_log_n - ENGINE_LOOP_LOG : 0;
	     i < e->stats.loop_log_n; i++) {
		const struct engine_late_rec *r = &e->stats.loop_log[i % ENGINE_LOOP_LOG];

		out->loop_log[out->n_loop_log++] = (struct engine_late_rec){
		    .at_ns = r->at_ns - e->start_ns, .late_ns = r->late_ns};
	}
	out->sweep_period_us = e->o.sweep_us;
	out->sweep_runs = sw.runs;
	out->sweep_last_scan_ns = sw.last_scan_ns;
	out->sweep_max_scan_ns = sw.max_scan_ns;
	out->sweep_total_scan_ns = sw.total_scan_ns;
	out->sweep_last_visited = sw.last_visited;
	out->sweep_max_visited = sw.max_visited;
	out->sweep_total_visited = sw.total_visited;
	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		const struct bfd_session *s = e->st.by_slot[i];

		if (!s)
			continue;
		out->sessions_up += s->session_state == BFD_STATE_UP;
		if (sessions && out->n_sessions < e->st.count)
			collect_session(e, s, now, &out->sessions[out->n_sessions++]);
	}
	return 0;
}

void stats_release(struct stats_snapshot *s)
{
	free(s->sessions);
	s->sessions = NULL;
}

/* @render's output in a malloc'd buffer (no I/O: open_memstream). Return: it, or NULL. */
static char *render_buf(void (*render)(FILE *, const struct stats_snapshot *),
			const struct stats_snapshot *s, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	render(f, s);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Hand a rendered file to the writer thread, or write it here without one. Takes @buf. */
static void write_out(struct engine *e, int file, const char *path, char *buf, size_t len)
{
	int err;

	if (e->wr) {
		writer_snapshot(e->wr, file, path, buf, len);
		return;
	}
	err = write_file_atomic(path, buf, len);
	free(buf);
	if (err)
		pr_err("stats: writing %s failed: %s", path, strerror(-err));
}

/*
 * Sessions per pass of a JSON dump: about 5 us each here (a map read and the rendering), so a
 * pass stays well inside the packaged SCHED_DEADLINE runtime of 1 ms.
 */
#define STATS_DUMP_STEP 128

static void dump_start(struct engine *e)
{
	struct stats_snapshot s;
	int err;

	if (e->dump.f)
		return; /* the dump in progress answers this request too */
	err = stats_collect(e, &s, false);
	if (err) {
		pr_err("stats: %s", strerror(-err));
		return;
	}
	e->dump.buf = NULL;
	e->dump.f = open_memstream(&e->dump.buf, &e->dump.len);
	if (!e->dump.f) {
		e->stats.dumps_unrendered++;
		return;
	}
	stats_render_json_head(e->dump.f, &s);
	e->dump.next_slot = 0;
	e->dump.written = 0;
	engine_stats_dump_step(e);
}

bool engine_stats_dump_step(struct engine *e)
{
	uint64_t now = engine_now_ns();
	unsigned n = 0;

	if (!e->dump.f)
		return false;
	for (; e->dump.next_slot < e->st.slots_in_use && n < STATS_DUMP_STEP; e->dump.next_slot++) {
		const struct bfd_session *s = e->st.by_slot[e->dump.next_slot];
		struct stats_session o;

		if (!s)
			continue;
		collect_session(e, s, now, &o);
		if (e->dump.written++)
			fputc(',', e->dump.f);
		stats_render_json_session(e->dump.f, &o);
		n++;
	}
	if (e->dump.next_slot < e->st.slots_in_use)
		return true;
	stats_render_json_tail(e->dump.f);
	if (fclose(e->dump.f)) {
		e->dump.f = NULL;
		free(e->dump.buf);
		e->stats.dumps_unrendered++;
		return false;
	}
	e->dump.f = NULL;
	write_out(e, WRITER_STATS_JSON, e->o.stats_dump, e->dump.buf, e->dump.len);
	e->dump.buf = NULL;
	return false;
}

void engine_stats_dump_abort(struct engine *e)
{
	if (!e->dump.f)
		return;
	fclose(e->dump.f);
	free(e->dump.buf);
	e->dump.f = NULL;
	e->dump.buf = NULL;
}

/* The JSON dump of a whole snapshot, in the dump's three parts. */
static void render_json(FILE *f, const struct stats_snapshot *s)
{
	stats_render_json_head(f, s);
	for (uint32_t i = 0; i < s->n_sessions; i++) {
		if (i)
			fputc(',', f);
		stats_render_json_session(f, &s->sessions[i]);
	}
	stats_render_json_tail(f);
}

void engine_stats_write(struct engine *e, bool json)
{
	const char *prom = e->o.metrics_file;
	const char *dump = json ? e->o.stats_dump : NULL;
	const struct {
		const char *path;
		int file;
		void (*render)(FILE *, const struct stats_snapshot *);
	} out[] = {
	    {prom, WRITER_METRICS, stats_render_prom},
	    {dump, WRITER_STATS_JSON, render_json},
	};
	struct stats_snapshot s;
	int err;

	/* The JSON dump alone: a step per loop pass. With the metrics file as well, both come
	 * from one snapshot taken now (they agree exactly; the loop waits for it). */
	if (dump && !prom) {
		dump_start(e);
		return;
	}
	if (!prom && !dump)
		return;
	err = stats_collect(e, &s, true);
	if (err) {
		pr_err("stats: %s", strerror(-err));
		return;
	}
	for (unsigned i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		size_t len;
		char *buf;

		if (!out[i].path)
			continue;
		buf = render_buf(out[i].render, &s, &len);
		if (!buf)
			e->stats.dumps_unrendered++;
		else
			write_out(e, out[i].file, out[i].path, buf, len);
	}
	stats_release(&s);
}
