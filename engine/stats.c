// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats.c - the statistics dump (SIGUSR1 with --stats-dump PATH): one JSON object, written to
 * PATH.tmp and renamed over PATH so a reader never sees half a file (a PATH that exists and is
 * not a regular file, a FIFO or /dev/stdout, is written in place). Keys carry their units.
 * Schema (documented in docs/engine.md): kernel_tx, xdp_mode, interfaces[], dplane{},
 * sessions_configured, sessions_up, counters{} (fast path, by name), drops{} (by reason, fast
 * path plus software path), engine{}, sweep{}, sessions[].
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "codec.h"
#include "engine.h"
#include "fsm.h"

static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void put_session(FILE *f, struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	struct bfd_session_rx rx = {0};
	char a[64];

	if (e->kernel_tx && s->fast_path)
		kern_session_rx(&e->kern, s->slot, &rx);
	fprintf(f, "{\"lid\":%u,\"local_disc\":%u,\"remote_disc\":%u,", s->lid, s->local_disc,
		s->remote_disc);
	fputs("\"local\":", f);
	put_str(f, session_addr_str(s->family, s->local_addr, a, sizeof(a)));
	fputs(",\"peer\":", f);
	put_str(f, session_addr_str(s->family, s->peer_addr, a, sizeof(a)));
	fputs(",\"ifname\":", f);
	put_str(f, s->ifname);
	fprintf(f,
		",\"multihop\":%s,\"fast_path\":%s,\"rx_clocked\":%s,\"local_port\":%u,"
		"\"state\":\"%s\",\"remote_state\":\"%s\",\"local_diag\":%u,\"remote_diag\":%u,"
		"\"state_age_ms\":%.1f,"
		"\"desired_min_tx_us\":%u,\"required_min_rx_us\":%u,\"detect_mult\":%u,"
		"\"remote_desired_min_tx_us\":%u,\"remote_min_rx_us\":%u,\"remote_detect_mult\":%u,"
		"\"tx_interval_us\":%u,\"detect_time_us\":%llu,\"poll_active\":%s,",
		s->multihop ? "true" : "false", s->fast_path ? "true" : "false",
		fsm_rx_clocked(s) ? "true" : "false", s->local_port,
		bfd_state_name(s->session_state), bfd_state_name(s->remote_session_state),
		s->local_diag, s->remote_diag, (double)(now_ns - s->state_since_ns) / 1e6,
		s->desired_min_tx_us, s->required_min_rx_us, s->cfg_detect_mult,
		s->remote_desired_min_tx_us, s->remote_min_rx_us, s->remote_detect_mult,
		fsm_tx_interval_us(s), (unsigned long long)(fsm_detect_time_ns(s) / 1000),
		s->poll_active ? "true" : "false");
	fprintf(f,
		"\"rx_packets\":%llu,\"tx_packets\":%llu,\"xdp_rx_packets\":%llu,"
		"\"xdp_tx_packets\":%llu,\"user_tx_packets\":%llu,\"sw_rx_packets\":%llu,"
		"\"up_events\":%llu,\"down_events\":%llu}",
		(unsigned long long)(rx.rx_packets + s->sw_rx_packets),
		(unsigned long long)(rx.tx_packets + s->user_tx_packets),
		(unsigned long long)rx.rx_packets, (unsigned long long)rx.tx_packets,
		(unsigned long long)s->user_tx_packets, (unsigned long long)s->sw_rx_packets,
		(unsigned long long)s->up_events, (unsigned long long)s->down_events);
}

static void put_json(FILE *f, struct engine *e)
{
	uint64_t cnt[BFD_CNT__COUNT] = {0}, now = engine_now_ns();
	struct bfd_sweep sw;
	uint32_t up = 0, n = 0;
	bool native = e->kernel_tx && e->kern.n_ifaces;

	if (e->kernel_tx) {
		kern_counters(&e->kern, cnt);
	}
	memset(&sw, 0, sizeof(sw));
	if (e->kernel_tx)
		kern_sweep_stats(&e->kern, &sw);
	for (int i = 0; i < e->kern.n_ifaces; i++)
		native &= e->kern.ifaces[i].native;
	for (uint32_t i = 0; i < e->st.slots_in_use; i++)
		if (e->st.by_slot[i] && e->st.by_slot[i]->session_state == BFD_STATE_UP)
			up++;
	fprintf(f, "{\"schema\":\"xdp-bfd-stats/1\",\"pid\":%d,\"uptime_s\":%.3f,", (int)getpid(),
		(double)(now - e->start_ns) / 1e9);
	fprintf(f, "\"kernel_tx\":%s,\"xdp_mode\":\"%s\",\"interfaces\":[",
		e->kernel_tx ? "true" : "false",
		!e->kernel_tx	   ? "off"
		: native	   ? "native"
		: e->kern.n_ifaces ? "generic"
				   : "none");
	for (int i = 0; i < e->kern.n_ifaces; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		put_str(f, e->kern.ifaces[i].name);
		fprintf(f, ",\"ifindex\":%d,\"mode\":\"%s\"}", e->kern.ifaces[i].ifindex,
			e->kern.ifaces[i].native ? "native" : "generic");
	}
	fprintf(f, "],\"dplane_connected\":%s,\"dplane\":{\"connections\":%d,\"malformed\":%llu",
		dplane_connected(&e->dp) ? "true" : "false", dplane_connected(&e->dp),
		(unsigned long long)e->dp.malformed);
	for (int i = 0; i < DPLANE_MAX_CONNS; i++) {
		struct dplane_conn *c = e->dp.conns[i];

		if (c && !c->connecting && !c->closed)
			fprintf(f,
				",\"rx_msgs\":%llu,\"tx_msgs\":%llu,\"echo_sent\":%llu,"
				"\"echo_replies\":%llu,\"echo_rtt_us\":%.1f",
				(unsigned long long)c->rx_msgs, (unsigned long long)c->tx_msgs,
				(unsigned long long)c->echo_sent,
				(unsigned long long)c->echo_replies,
				(double)c->last_echo_rtt_ns / 1e3);
	}
	fprintf(f, "},\"sessions_configured\":%u,\"sessions_up\":%u,\"counters\":{", e->st.count,
		up);
	for (unsigned i = 0; i < BFD_CNT_DROP_BASE; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", bfd_counter_name(i),
			(unsigned long long)cnt[i]);
	fputs("},\"drops\":{", f);
	for (unsigned i = 0; i < BFD_DROP__COUNT; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", bfd_drop_name(i),
			(unsigned long long)(cnt[BFD_CNT_DROP_BASE + i] + e->stats.sw_drops[i]));
	fprintf(f,
		"},\"engine\":{\"events_rx\":%llu,\"events_expired\":%llu,"
		"\"events_expired_stale\":%llu,\"events_quiet\":%llu,\"events_stale\":%llu,"
		"\"tx_packets\":%llu,"
		"\"tx_errors\":%llu,\"sw_rx\":%llu,\"bfdd_adds\":%llu,\"bfdd_updates\":%llu,"
		"\"bfdd_deletes\":%llu,\"bfdd_rejected\":%llu,\"state_changes_sent\":%llu},",
		(unsigned long long)e->stats.events_rx, (unsigned long long)e->stats.events_expired,
		(unsigned long long)e->stats.events_expired_stale,
		(unsigned long long)e->stats.events_quiet,
		(unsigned long long)e->stats.events_stale, (unsigned long long)e->stats.tx_packets,
		(unsigned long long)e->stats.tx_errors, (unsigned long long)e->stats.sw_rx,
		(unsigned long long)e->stats.bfdd_adds, (unsigned long long)e->stats.bfdd_updates,
		(unsigned long long)e->stats.bfdd_deletes,
		(unsigned long long)e->stats.bfdd_rejected,
		(unsigned long long)e->stats.state_changes_sent);
	fprintf(f,
		"\"sweep\":{\"period_us\":%llu,\"runs\":%llu,\"last_scan_ns\":%llu,"
		"\"max_scan_ns\":%llu,\"total_scan_ns\":%llu},\"sessions\":[",
		(unsigned long long)e->o.sweep_us, (unsigned long long)sw.runs,
		(unsigned long long)sw.last_scan_ns, (unsigned long long)sw.max_scan_ns,
		(unsigned long long)sw.total_scan_ns);
	for (uint32_t i = 0; i < e->st.slots_in_use; i++) {
		if (!e->st.by_slot[i])
			continue;
		if (n++)
			fputc(',', f);
		put_session(f, e, e->st.by_slot[i], now);
	}
	fputs("]}\n", f);
}

int engine_stats_dump(struct engine *e, const char *path)
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
		put_json(f, e);
		return fclose(f) ? -errno : 0;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	put_json(f, e);
	if (fclose(f) || rename(tmp, path)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}
