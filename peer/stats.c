// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* stats.c - bfdpeer's stats JSON (docs/bfdpeer.md, "Stats"). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include "bfdpeer.h"
#include "codec.h"

static const char *status_name(uint8_t state)
{
	static const char *const names[] = {"admin-down", "down", "init", "up"};

	return state < 4 ? names[state] : "?";
}

static json_t *session_json(const struct bfd_session *s)
{
	char l[48], p[48];

	return json_pack(
	    "{s:s, s:s, s:b, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
	    " s:I, s:I, s:b}",
	    "local", session_addr_str(s->family, s->local_addr, l, sizeof(l)), "peer",
	    session_addr_str(s->family, s->peer_addr, p, sizeof(p)), "multihop", s->multihop,
	    "status", status_name(s->session_state), "diag", (json_int_t)s->local_diag, "my_disc",
	    (json_int_t)s->local_disc, "your_disc", (json_int_t)s->remote_disc, "remote_diag",
	    (json_int_t)s->remote_diag, "tx_interval_us",
	    (json_int_t)(s->remote_min_rx_us > s->tx_in_force_us ? s->remote_min_rx_us
								 : s->tx_in_force_us),
	    "remote_desired_min_tx_us", (json_int_t)s->remote_desired_min_tx_us,
	    "remote_required_min_rx_us", (json_int_t)s->remote_min_rx_us, "remote_detect_mult",
	    (json_int_t)s->remote_detect_mult, "rx_packets", (json_int_t)s->sw_rx_packets,
	    "tx_packets", (json_int_t)s->user_tx_packets, "up_events", (json_int_t)s->up_events,
	    "down_events", (json_int_t)s->down_events, "poll_active", s->poll_active);
}

int peer_stats_write(const char *path, const struct peer_stats *st,
		     struct bfd_session *const *by_slot, uint32_t n, uint64_t started_ns,
		     uint64_t now_ns)
{
	static const char *const xdp_names[BFDPEER_CNT__COUNT] = {"rx", "ring_full", "bad_checksum",
								  "malformed", "passed"};
	json_t *doc = json_object(), *sessions = json_array(), *drops = json_object();
	json_t *xdp = json_object();
	uint32_t i, up = 0;
	char tmp[4096];
	int err = 0;
	unsigned r;

	for (i = 0; i < n; i++) {
		if (!by_slot[i])
			continue;
		up += by_slot[i]->session_state == BFD_STATE_UP;
		json_array_append_new(sessions, session_json(by_slot[i]));
	}
	for (r = 0; r < BFD_DROP__COUNT; r++)
		if (st->rx_dropped[r])
			json_object_set_new(drops, bfd_drop_name(r),
					    json_integer((json_int_t)st->rx_dropped[r]));
	for (r = 0; r < BFDPEER_CNT__COUNT; r++)
		json_object_set_new(xdp, xdp_names[r], json_integer((json_int_t)st->xdp[r]));
	json_object_set_new(doc, "uptime_ms",
			    json_integer((json_int_t)((now_ns - started_ns) / 1000000)));
	json_object_set_new(doc, "sessions_configured", json_integer(n));
	json_object_set_new(doc, "sessions_up", json_integer(up));
	json_object_set_new(doc, "rx_packets", json_integer((json_int_t)st->rx_packets));
	json_object_set_new(doc, "rx_accepted", json_integer((json_int_t)st->rx_accepted));
	json_object_set_new(doc, "rx_no_session", json_integer((json_int_t)st->rx_no_session));
	json_object_set_new(doc, "rx_bad_ttl", json_integer((json_int_t)st->rx_bad_ttl));
	json_object_set_new(doc, "rx_dropped", drops);
	json_object_set_new(doc, "rx_delay_max_us",
			    json_integer((json_int_t)(st->rx_delay_max_ns / 1000)));
	json_object_set_new(doc, "tx_packets", json_integer((json_int_t)st->tx_packets));
	json_object_set_new(doc, "tx_errors", json_integer((json_int_t)st->tx_errors));
	json_object_set_new(doc, "tx_batches", json_integer((json_int_t)st->tx_batches));
	json_object_set_new(doc, "tx_finals", json_integer((json_int_t)st->tx_finals));
	json_object_set_new(doc, "tx_late_max_us",
			    json_integer((json_int_t)(st->tx_late_max_ns / 1000)));
	json_object_set_new(doc, "tx_late_over_1ms",
			    json_integer((json_int_t)st->tx_late_over_1ms));
	json_object_set_new(doc, "tx_late_over_5ms",
			    json_integer((json_int_t)st->tx_late_over_5ms));
	json_object_set_new(doc, "detections", json_integer((json_int_t)st->detections));
	json_object_set_new(doc, "xdp", xdp);
	json_object_set_new(doc, "sessions", sessions);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (json_dump_file(doc, tmp, JSON_INDENT(1)) || rename(tmp, path))
		err = errno ? -errno : -EIO;
	json_decref(doc);
	return err;
}
