// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stats.c - bfdpeer's stats JSON (docs/bfdpeer.md, "Stats"). Written with stdio, one line per
 * session: the dump runs inside the event loop, and building a jansson tree of 2,048 sessions
 * took 25-100 ms here (a 10 ms session's packets would wait that long); this takes about 1 ms.
 * Every string written is an address or a fixed name: nothing needs escaping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "bfdpeer.h"
#include "codec.h"

static const char *status_name(uint8_t state)
{
	static const char *const names[] = {"admin-down", "down", "init", "up"};

	return state < 4 ? names[state] : "?";
}

/* Whether a session line went into the dump in progress (one dump at a time); @reset clears. */
static bool peer_stats_wrote_one(FILE *f, bool reset)
{
	static bool wrote;
	bool was = wrote;

	(void)f;
	wrote = reset ? false : true;
	return reset ? false : was;
}

static void session_line(FILE *f, const struct bfd_session *s, bool first)
{
	uint32_t tx_us =
	    s->remote_min_rx_us > s->tx_in_force_us ? s->remote_min_rx_us : s->tx_in_force_us;
	char l[48], p[48];

	fprintf(
	    f,
	    "%s\n  {\"local\": \"%s\", \"peer\": \"%s\", \"multihop\": %s, \"status\": \"%s\", "
	    "\"diag\": %u, \"my_disc\": %" PRIu32 ", \"your_disc\": %" PRIu32
	    ", \"remote_diag\": %u, \"tx_interval_us\": %" PRIu32
	    ", \"remote_desired_min_tx_us\": %" PRIu32 ", \"remote_required_min_rx_us\": %" PRIu32
	    ", \"remote_detect_mult\": %u, \"rx_packets\": %" PRIu64 ", \"tx_packets\": %" PRIu64
	    ", \"up_events\": %" PRIu64 ", \"down_events\": %" PRIu64 ", \"poll_active\": %s}",
	    first ? "" : ",", session_addr_str(s->family, s->local_addr, l, sizeof(l)),
	    session_addr_str(s->family, s->peer_addr, p, sizeof(p)), s->multihop ? "true" : "false",
	    status_name(s->session_state), s->local_diag, s->local_disc, s->remote_disc,
	    s->remote_diag, tx_us, s->remote_desired_min_tx_us, s->remote_min_rx_us,
	    s->remote_detect_mult, s->sw_rx_packets, s->user_tx_packets, s->up_events,
	    s->down_events, s->poll_active ? "true" : "false");
}

FILE *peer_stats_begin(const char *path, const struct peer_stats *st,
		       struct bfd_session *const *by_slot, uint32_t n, uint64_t started_ns,
		       uint64_t now_ns)
{
	static const char *const xdp_names[BFDPEER_CNT__COUNT] = {"rx", "ring_full", "bad_checksum",
								  "malformed", "passed"};
	uint32_t i, up = 0, configured = 0;
	bool first = true;
	char tmp[4096];
	unsigned r;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return NULL;
	peer_stats_wrote_one(f, true);
	for (i = 0; i < n; i++)
		if (by_slot[i]) {
			configured++;
			up += by_slot[i]->session_state == BFD_STATE_UP;
		}
	fprintf(f,
		"{\"uptime_ms\": %" PRIu64 ", \"sessions_configured\": %" PRIu32
		", \"sessions_up\": %" PRIu32 ",\n",
		(now_ns - started_ns) / 1000000, configured, up);
	fprintf(f,
		"\"rx_packets\": %" PRIu64 ", \"rx_accepted\": %" PRIu64
		", \"rx_no_session\": %" PRIu64 ", \"rx_bad_ttl\": %" PRIu64
		", \"rx_delay_max_us\": %" PRIu64 ",\n",
		st->rx_packets, st->rx_accepted, st->rx_no_session, st->rx_bad_ttl,
		st->rx_delay_max_ns / 1000);
	fprintf(f, "\"rx_dropped\": {");
	for (r = 0; r < BFD_DROP__COUNT; r++)
		if (st->rx_dropped[r]) {
			fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", bfd_drop_name(r),
				st->rx_dropped[r]);
			first = false;
		}
	fprintf(f,
		"},\n\"tx_packets\": %" PRIu64 ", \"tx_errors\": %" PRIu64
		", \"tx_batches\": %" PRIu64 ", \"tx_finals\": %" PRIu64
		",\n\"tx_late_max_us\": %" PRIu64 ", \"tx_late_over_1ms\": %" PRIu64
		", \"tx_late_over_5ms\": %" PRIu64 ", \"detections\": %" PRIu64 ",\n\"xdp\": {",
		st->tx_packets, st->tx_errors, st->tx_batches, st->tx_finals,
		st->tx_late_max_ns / 1000, st->tx_late_over_1ms, st->tx_late_over_5ms,
		st->detections);
	for (r = 0; r < BFDPEER_CNT__COUNT; r++)
		fprintf(f, "%s\"%s\": %" PRIu64, r ? ", " : "", xdp_names[r], st->xdp[r]);
	fprintf(f, "},\n\"sessions\": [");
	return f;
}

uint32_t peer_stats_sessions(FILE *f, struct bfd_session *const *by_slot, uint32_t from,
			     uint32_t to)
{
	uint32_t i;

	for (i = from; i < to; i++)
		if (by_slot[i])
			session_line(f, by_slot[i], !peer_stats_wrote_one(f, false));
	return to;
}

int peer_stats_end(FILE *f, const char *path)
{
	char tmp[4096];
	int err = 0;

	peer_stats_wrote_one(f, true);
	fprintf(f, "\n]}\n");
	if (ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!err && rename(tmp, path))
		err = -errno;
	return err;
}

int peer_stats_write(const char *path, const struct peer_stats *st,
		     struct bfd_session *const *by_slot, uint32_t n, uint64_t started_ns,
		     uint64_t now_ns)
{
	FILE *f = peer_stats_begin(path, st, by_slot, n, started_ns, now_ns);

	if (!f)
		return -errno;
	peer_stats_sessions(f, by_slot, 0, n);
	return peer_stats_end(f, path);
}
