// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats.c - the statistics snapshot (see stats.h) and writing its renderings: SIGUSR1 writes the
 * JSON dump (--stats-dump) and the Prometheus file (--metrics-file) from one snapshot; the
 * metrics period writes the Prometheus file alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine.h"
#include "fsm.h"
#include "stats.h"

const struct stats_field stats_engine_fields[] = {
    {"events_rx", "events_rx_total", "packet events from the fast path acted on"},
    {"events_expired", "events_expired_total", "detection-time expiries acted on"},
    {"events_expired_stale", "events_expired_stale_total",
     "expiries a later state change or a longer Detection Time had made moot"},
    {"events_quiet", "events_quiet_total",
     "rx-clocked sessions whose peer went quiet: one packet sent from userspace"},
    {"events_stale", "events_stale_total", "events for a slot that had changed hands"},
    {"tx_packets", "sent_packets_total", "packets sent from userspace"},
    {"tx_errors", "send_errors_total", "userspace sends that failed"},
    {"sw_rx", "software_received_packets_total", "packets accepted on the software path"},
    {"bfdd_adds", "bfdd_adds_total", "sessions bfdd added"},
    {"bfdd_updates", "bfdd_updates_total", "session updates from bfdd"},
    {"bfdd_deletes", "bfdd_deletes_total", "sessions bfdd deleted"},
    {"bfdd_rejected", "bfdd_rejected_total", "bfdd messages refused (logged)"},
    {"state_changes_sent", "state_changes_sent_total", "state changes reported to bfdd"},
};
const unsigned stats_engine_n_fields = sizeof(stats_engine_fields) / sizeof(stats_engine_fields[0]);
_Static_assert(sizeof(stats_engine_fields) / sizeof(stats_engine_fields[0]) <=
		   sizeof(((struct stats_snapshot *)0)->engine) / sizeof(uint64_t),
	       "room for every engine field");

static void engine_values(const struct engine_stats *st, uint64_t *out)
{
	const uint64_t v[] = {st->events_rx,	     st->events_expired, st->events_expired_stale,
			      st->events_quiet,	     st->events_stale,	 st->tx_packets,
			      st->tx_errors,	     st->sw_rx,		 st->bfdd_adds,
			      st->bfdd_updates,	     st->bfdd_deletes,	 st->bfdd_rejected,
			      st->state_changes_sent};

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
	o->up_events = s->up_events;
	o->down_events = s->down_events;
}

int stats_collect(struct engine *e, struct stats_snapshot *out)
{
	uint64_t cnt[BFD_CNT__COUNT] = {0}, now = engine_now_ns();
	struct bfd_sweep sw;
	bool native = e->kernel_tx && e->kern.n_ifaces;

	memset(out, 0, sizeof(*out));
	out->sessions = calloc(e->st.count ? e->st.count : 1, sizeof(*out->sessions));
	if (!out->sessions)
		return -ENOMEM;
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
	engine_values(&e->stats, out->engine);
	out->sweep_period_us = e->o.sweep_us;
	out->sweep_runs = sw.runs;
	out->sweep_last_scan_ns = sw.last_scan_ns;
	out->sweep_max_scan_ns = sw.max_scan_ns;
	out->sweep_total_scan_ns = sw.total_scan_ns;
	out->sweep_last_visited = sw.last_visited;
	out->sweep_max_visited = sw.max_visited;
	out->sweep_total_visited = sw.total_visited;
	for (uint32_t i = 0; i < e->st.slots_in_use && out->n_sessions < e->st.count; i++) {
		const struct bfd_session *s = e->st.by_slot[i];

		if (!s)
			continue;
		out->sessions_up += s->session_state == BFD_STATE_UP;
		collect_session(e, s, now, &out->sessions[out->n_sessions++]);
	}
	return 0;
}

void stats_release(struct stats_snapshot *s)
{
	free(s->sessions);
	s->sessions = NULL;
}

int stats_write(const char *path, void (*render)(FILE *, const struct stats_snapshot *),
		const struct stats_snapshot *s)
{
	char tmp[4096];
	struct stat st;
	FILE *f;

	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		/* A FIFO, /dev/stdout, a device: write into it; renaming over it would replace it.
		 */
		f = fopen(path, "w");
		if (!f)
			return -errno;
		render(f, s);
		return fclose(f) ? -errno : 0;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	render(f, s);
	if (fclose(f) || rename(tmp, path)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}

void engine_stats_write(struct engine *e, bool json)
{
	const char *prom = e->o.metrics_file;
	struct stats_snapshot s;
	int err;

	json = json && e->o.stats_dump;
	if (!json && !prom)
		return;
	err = stats_collect(e, &s);
	if (err) {
		pr_err("stats: %s", strerror(-err));
		return;
	}
	if (json && (err = stats_write(e->o.stats_dump, stats_render_json, &s)))
		pr_err("stats: writing %s failed: %s", e->o.stats_dump, strerror(-err));
	if (prom) {
		err = stats_write(prom, stats_render_prom, &s);
		/* The period would repeat a failure every few seconds: say when it starts and ends.
		 */
		if (err && !e->metrics_failing)
			pr_err("metrics: writing %s failed: %s (said once until it works again)",
			       prom, strerror(-err));
		else if (!err && e->metrics_failing)
			pr_info("metrics: writing %s works again", prom);
		e->metrics_failing = err != 0;
	}
	stats_release(&s);
}
