// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats_json.c - the statistics snapshot as one JSON object ("schema": "xdp-bfd-stats/1", keys
 * documented in docs/engine.md). Keys carry their units; fractions are printed exactly from the
 * integers the snapshot holds, so the Prometheus rendering of the same snapshot matches to the
 * digit.
 */
#include "codec.h"
#include "stats.h"

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

/* @v thousandths as a decimal with three places. */
static void put_milli(FILE *f, uint64_t v)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(v / 1000), (unsigned long long)(v % 1000));
}

static const char *tf(bool b)
{
	return b ? "true" : "false";
}

void stats_render_json_session(FILE *f, const struct stats_session *s)
{
	fprintf(f, "{\"lid\":%u,\"local_disc\":%u,\"remote_disc\":%u,\"local\":", s->lid,
		s->local_disc, s->remote_disc);
	put_str(f, s->local);
	fputs(",\"peer\":", f);
	put_str(f, s->peer);
	fputs(",\"ifname\":", f);
	put_str(f, s->ifname);
	fprintf(f,
		",\"multihop\":%s,\"fast_path\":%s,\"rx_clocked\":%s,\"local_port\":%u,"
		"\"state\":\"%s\",\"remote_state\":\"%s\",\"local_diag\":%u,\"remote_diag\":%u,"
		"\"state_age_ms\":",
		tf(s->multihop), tf(s->fast_path), tf(s->rx_clocked), s->local_port,
		bfd_state_name(s->state), bfd_state_name(s->remote_state), s->local_diag,
		s->remote_diag);
	put_milli(f, s->state_age_us);
	fprintf(f,
		",\"desired_min_tx_us\":%u,\"required_min_rx_us\":%u,\"detect_mult\":%u,"
		"\"remote_desired_min_tx_us\":%u,\"remote_min_rx_us\":%u,\"remote_detect_mult\":%u,"
		"\"tx_interval_us\":%u,\"detect_time_us\":%llu,\"poll_active\":%s,\"demand\":%s,",
		s->desired_min_tx_us, s->required_min_rx_us, s->detect_mult,
		s->remote_desired_min_tx_us, s->remote_min_rx_us, s->remote_detect_mult,
		s->tx_interval_us, (unsigned long long)s->detect_time_us, tf(s->poll_active),
		tf(s->demand));
	fprintf(f,
		"\"rx_packets\":%llu,\"tx_packets\":%llu,\"xdp_rx_packets\":%llu,"
		"\"xdp_tx_packets\":%llu,\"user_tx_packets\":%llu,\"sw_rx_packets\":%llu,"
		"\"up_events\":%llu,\"down_events\":%llu,\"echo_interval_us\":%u,"
		"\"echo_tx_packets\":%llu,\"echo_rx_packets\":%llu}",
		(unsigned long long)(s->xdp_rx_packets + s->sw_rx_packets),
		(unsigned long long)(s->xdp_tx_packets + s->user_tx_packets),
		(unsigned long long)s->xdp_rx_packets, (unsigned long long)s->xdp_tx_packets,
		(unsigned long long)s->user_tx_packets, (unsigned long long)s->sw_rx_packets,
		(unsigned long long)s->up_events, (unsigned long long)s->down_events,
		s->echo_interval_us, (unsigned long long)s->echo_tx_packets,
		(unsigned long long)s->echo_rx_packets);
}

void stats_render_json_head(FILE *f, const struct stats_snapshot *s)
{
	fprintf(f, "{\"schema\":\"xdp-bfd-stats/1\",\"pid\":%d,\"uptime_s\":", s->pid);
	put_milli(f, s->uptime_ms);
	fprintf(f, ",\"kernel_tx\":%s,\"xdp_mode\":\"%s\",\"interfaces\":[", tf(s->kernel_tx),
		s->xdp_mode);
	for (int i = 0; i < s->n_ifaces; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		put_str(f, s->ifaces[i].name);
		fprintf(f, ",\"ifindex\":%d,\"mode\":\"%s\"}", s->ifaces[i].ifindex,
			s->ifaces[i].native ? "native" : "generic");
	}
	fprintf(f, "],\"dplane_connected\":%s,\"dplane\":{\"connections\":%d,\"malformed\":%llu",
		tf(s->dplane_connections), s->dplane_connections,
		(unsigned long long)s->dplane_malformed);
	/* One live connection is the rule; with more, the last one's numbers stand here. */
	for (int i = 0; i < s->n_conns; i++) {
		const struct stats_conn *c = &s->conns[i];

		fprintf(f,
			",\"rx_msgs\":%llu,\"tx_msgs\":%llu,\"echo_sent\":%llu,"
			"\"echo_replies\":%llu,\"echo_rtt_us\":",
			(unsigned long long)c->rx_msgs, (unsigned long long)c->tx_msgs,
			(unsigned long long)c->echo_sent, (unsigned long long)c->echo_replies);
		put_milli(f, c->echo_rtt_ns);
	}
	fprintf(f, "},\"sessions_configured\":%u,\"sessions_up\":%u,\"counters\":{",
		s->sessions_configured, s->sessions_up);
	for (unsigned i = 0; i < BFD_CNT_DROP_BASE; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", bfd_counter_name(i),
			(unsigned long long)s->counters[i]);
	fputs("},\"drops\":{", f);
	for (unsigned i = 0; i < BFD_DROP__COUNT; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", bfd_drop_name(i),
			(unsigned long long)s->drops[i]);
	fputs("},\"engine\":{", f);
	for (unsigned i = 0; i < stats_engine_n_fields; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", stats_engine_fields[i].json,
			(unsigned long long)s->engine[i]);
	fprintf(f,
		"},\"sweep\":{\"period_us\":%llu,\"runs\":%llu,\"last_scan_ns\":%llu,"
		"\"max_scan_ns\":%llu,\"total_scan_ns\":%llu,\"last_slots_visited\":%llu,"
		"\"max_slots_visited\":%llu,\"slots_visited\":%llu},",
		(unsigned long long)s->sweep_period_us, (unsigned long long)s->sweep_runs,
		(unsigned long long)s->sweep_last_scan_ns, (unsigned long long)s->sweep_max_scan_ns,
		(unsigned long long)s->sweep_total_scan_ns,
		(unsigned long long)s->sweep_last_visited, (unsigned long long)s->sweep_max_visited,
		(unsigned long long)s->sweep_total_visited);
	fprintf(f,
		"\"loop\":{\"wakeups\":%llu,\"late_sum_ns\":%llu,\"late_max_ns\":%llu,"
		"\"late_le_us\":[",
		(unsigned long long)s->loop_wakeups, (unsigned long long)s->loop_late_sum_ns,
		(unsigned long long)s->loop_late_max_ns);
	for (unsigned i = 0; i < ENGINE_LOOP_LATE_BUCKETS - 1; i++)
		fprintf(f, "%s%u", i ? "," : "", stats_loop_late_le_us[i]);
	fputs("],\"late_counts\":[", f);
	for (unsigned i = 0; i < ENGINE_LOOP_LATE_BUCKETS; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)s->loop_late[i]);
	fprintf(f, "],\"late_over_1ms_logged\":%llu,\"late_over_1ms\":[",
		(unsigned long long)s->loop_log_n);
	for (unsigned i = 0; i < s->n_loop_log; i++)
		fprintf(f, "%s[%llu,%llu]", i ? "," : "",
			(unsigned long long)(s->loop_log[i].at_ns / 1000),
			(unsigned long long)s->loop_log[i].late_ns);
	fputs("]},\"sessions\":[", f);
}

void stats_render_json_tail(FILE *f)
{
	fputs("]}\n", f);
}
