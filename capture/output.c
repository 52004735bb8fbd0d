/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* output.c - JSON and table reports (see output.h). */
#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "classes.h"

char *output_ms(int64_t ns, char *buf, size_t len)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	snprintf(buf, len, "%s%" PRIu64 ".%06" PRIu64, ns < 0 ? "-" : "", a / 1000000, a % 1000000);
	return buf;
}

void output_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_us(FILE *f, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	fprintf(f, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000, a % 1000);
}

static void json_ms(FILE *f, int64_t ns)
{
	char b[32];

	fputs(output_ms(ns, b, sizeof(b)), f);
}

/* Shortest decimal that reads back as the same double (as Python's repr); null if !@has. */
static void json_ratio(FILE *f, int has, double r)
{
	char buf[40];

	if (!has) {
		fputs("null", f);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, r);
		if (strtod(buf, NULL) == r)
			break;
	}
	fputs(buf, f);
}

static void json_gaps(FILE *f, const struct gap_summary *g)
{
	if (!g->n) {
		fputs("\"gap_ms\": {\"n\": 0, \"p50\": null, \"p90\": null, \"p99\": null, "
		      "\"p99_9\": null, \"max\": null}, \"gap_ns\": {\"n\": 0, \"p50\": null, "
		      "\"p90\": null, \"p99\": null, \"p99_9\": null, \"max\": null}",
		      f);
		return;
	}
	fprintf(f, "\"gap_ms\": {\"n\": %zu, \"p50\": ", g->n);
	json_ms(f, g->p50_ns);
	fputs(", \"p90\": ", f);
	json_ms(f, g->p90_ns);
	fputs(", \"p99\": ", f);
	json_ms(f, g->p99_ns);
	fputs(", \"p99_9\": ", f);
	json_ms(f, g->p99_9_ns);
	fputs(", \"max\": ", f);
	json_ms(f, g->max_ns);
	fprintf(f,
		"}, \"gap_ns\": {\"n\": %zu, \"p50\": %" PRId64 ", \"p90\": %" PRId64
		", \"p99\": %" PRId64 ", \"p99_9\": %" PRId64 ", \"max\": %" PRId64 "}",
		g->n, g->p50_ns, g->p90_ns, g->p99_ns, g->p99_9_ns, g->max_ns);
}

/* "reply_us": nearest-rank figures of reply latencies, in us (exact decimals of the ns). */
static void json_reply(FILE *f, const struct gap_summary *g)
{
	if (!g->n) {
		fputs("\"reply_us\": {\"n\": 0, \"p50\": null, \"p90\": null, \"p99\": null, "
		      "\"p99_9\": null, \"max\": null}",
		      f);
		return;
	}
	fprintf(f, "\"reply_us\": {\"n\": %zu, \"p50\": ", g->n);
	json_us(f, g->p50_ns);
	fputs(", \"p90\": ", f);
	json_us(f, g->p90_ns);
	fputs(", \"p99\": ", f);
	json_us(f, g->p99_ns);
	fputs(", \"p99_9\": ", f);
	json_us(f, g->p99_9_ns);
	fputs(", \"max\": ", f);
	json_us(f, g->max_ns);
	fputc('}', f);
}

/* Jitter, detection, Poll and restart figures shared by ends and classes. */
static void json_events(FILE *f, const struct class_stats *c)
{
	fprintf(f,
		", \"jitter\": {\"checked\": %" PRIu64 ", \"early\": %" PRIu64
		", \"late\": %" PRIu64 "}",
		c->jitter_checked, c->jitter_early, c->jitter_late);
	fprintf(f, ", \"detection\": {\"n\": %zu, \"early\": %zu", c->detections,
		c->detections_early);
	if (c->detections) {
		fputs(", \"min_ms\": ", f);
		json_ms(f, c->detect_min_ns);
		fputs(", \"max_ms\": ", f);
		json_ms(f, c->detect_max_ns);
		fputs(", \"max_overshoot_ms\": ", f);
		json_ms(f, c->overshoot_max_ns);
		fputc('}', f);
	} else {
		fputs(", \"min_ms\": null, \"max_ms\": null, \"max_overshoot_ms\": null}", f);
	}
	fprintf(f, ", \"polls\": {\"n\": %zu, \"answered\": %zu, \"max_wait_ms\": ", c->polls,
		c->polls_answered);
	if (c->poll_wait_max_ns < 0)
		fputs("null", f);
	else
		json_ms(f, c->poll_wait_max_ns);
	fprintf(f, "}, \"restarts\": %zu", c->restarts);
}

static const char *tag_name(const struct tracker *t, int tag)
{
	return tag >= 0 && tag < t->ntags ? t->tags[tag].name : "";
}

static int json_classes(FILE *f, const struct tracker *t, int w)
{
	struct class_stats *cs;
	int n = classes_compute(t, w, &cs);

	if (n < 0)
		return n;
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		const struct class_stats *c = &cs[i];

		fputs(i ? ",\n    {" : "\n    {", f);
		fputs("\"tag\": ", f);
		output_json_string(f, tag_name(t, c->tag));
		fputs(", \"class\": ", f);
		output_json_string(f, c->name);
		if (c->ever_up) {
			fputs(", \"interval_ms\": ", f);
			json_ms(f, (int64_t)c->interval_us * 1000);
			fprintf(f, ", \"detect_mult\": %u, \"budget_ms\": ", c->detect_mult);
			json_ms(f, (int64_t)c->interval_us * 1000 * c->detect_mult);
		} else {
			fputs(", \"interval_ms\": null, \"detect_mult\": null, \"budget_ms\": null",
			      f);
		}
		fprintf(f, ", \"ends\": %zu, \"sessions\": %zu, \"packets\": %" PRIu64 ", ",
			c->ends, c->sessions, c->packets);
		json_gaps(f, &c->gaps);
		fputs(", \"max_over_budget\": ", f);
		json_ratio(f, c->has_ratio, c->max_over_budget);
		fprintf(f,
			", \"gaps_over_budget\": %" PRIu64 ", \"down_events\": %" PRIu64
			", \"session_down_events\": %" PRIu64 ", \"ends_up_at_end\": %zu, ",
			c->gaps_over_budget, c->down_events, c->session_down_events,
			c->ends_up_at_end);
		json_reply(f, &c->reply);
		json_events(f, c);
		fputc('}', f);
	}
	fputs(n ? "\n  ]" : "]", f);
	free(cs);
	return 0;
}

static void json_end(FILE *f, const struct tracker *t, struct session *s, int k)
{
	struct end *e = &s->ends[k];
	struct end_win *ew = &e->win[0];
	struct gap_summary g;
	char a[64], cls[48];

	stats_summarise(&ew->gaps, &g);
	track_class_name(e, cls, sizeof(cls));
	fputs("\n      {\"src\": ", f);
	output_json_string(f, decode_addr_str(s->family, e->src, a, sizeof(a)));
	fputs(", \"dst\": ", f);
	output_json_string(f, decode_addr_str(s->family, e->dst, a, sizeof(a)));
	fprintf(f, ", \"sport\": %u, \"tag\": ", e->sport);
	output_json_string(f, tag_name(t, e->tag));
	fputs(", \"class\": ", f);
	output_json_string(f, cls);
	fprintf(f, ", \"my_disc\": %" PRIu32 ", \"packets\": %" PRIu64 ", ", e->last.my_disc,
		ew->packets);
	json_gaps(f, &g);
	fputs(", \"interval_ms\": ", f);
	json_ms(f, (int64_t)track_interval_us(s, k) * 1000);
	fprintf(f, ", \"detect_mult\": %u, \"budget_ms\": ", e->last.detect_mult);
	json_ms(f, track_budget_ns(s, k));
	fputs(", \"max_over_budget\": ", f);
	json_ratio(f, ew->worst_budget_ns != 0, track_win_ratio(ew));
	fprintf(f, ", \"gaps_over_budget\": %" PRIu64 ", \"transitions\": [", ew->gaps_over_budget);
	for (size_t i = 0; i < e->ntr; i++)
		fprintf(
		    f, "%s{\"ts_ns\": %" PRId64 ", \"from\": \"%s\", \"to\": \"%s\", \"diag\": %u}",
		    i ? ", " : "", e->tr[i].ts_ns, decode_state_name(e->tr[i].from),
		    decode_state_name(e->tr[i].to), e->tr[i].diag);
	fprintf(f, "], \"down_events\": %" PRIu64 ", \"not_up_ms\": ", ew->down_events);
	json_ms(f, e->not_up_ns);
	fprintf(f, ", \"last_state\": \"%s\", \"last_diag\": %u, \"last_ts_ns\": %" PRId64 ", ",
		decode_state_name(e->last.state), e->last.diag, e->last.ts_ns);
	stats_summarise(&ew->reply_ns, &g);
	json_reply(f, &g);
	{
		struct class_stats c = {.poll_wait_max_ns = -1};

		c.jitter_checked = ew->jitter_checked;
		c.jitter_early = ew->jitter_early;
		c.jitter_late = ew->jitter_late;
		classes_add_end_events(&c, e, &t->win[0]);
		json_events(f, &c);
	}
	fputs(", \"detections\": [", f);
	for (size_t i = 0, n = 0; i < e->ndet; i++) {
		const struct detection *d = &e->det[i];

		if (!track_in_window(&t->win[0], d->ts_ns))
			continue;
		fprintf(f, "%s{\"ts_ns\": %" PRId64 ", \"detect_ms\": ", n++ ? ", " : "", d->ts_ns);
		json_ms(f, d->detect_ns);
		fputs(", \"budget_ms\": ", f);
		json_ms(f, d->budget_ns);
		fputc('}', f);
	}
	fprintf(f, "], \"final_without_poll\": %" PRIu64 ", \"incarnations\": [",
		e->final_without_poll);
	for (size_t i = 0; i < e->ninc; i++)
		fprintf(f,
			"%s{\"my_disc\": %" PRIu32 ", \"first_ts_ns\": %" PRId64
			", \"packets\": %" PRIu64 "}",
			i ? ", " : "", e->inc[i].my_disc, e->inc[i].first_ts_ns, e->inc[i].packets);
	fputs("]}", f);
}

static void json_session(FILE *f, const struct tracker *t, struct session *s, int first)
{
	char a[64], b[64];
	int k, n = 0;

	decode_addr_str(s->family, s->a, a, sizeof(a));
	decode_addr_str(s->family, s->b, b, sizeof(b));
	fputs(first ? "\n    {\"key\": " : ",\n    {\"key\": ", f);
	fprintf(f, s->family == 6 ? "\"[%s]-[%s]:%u\"" : "\"%s-%s:%u\"", a, b, s->port);
	fputs(", \"addr_a\": ", f);
	output_json_string(f, a);
	fputs(", \"addr_b\": ", f);
	output_json_string(f, b);
	fprintf(f,
		", \"family\": %u, \"port\": %u, \"down_events\": %" PRIu64 ", \"up_at_end\": %s",
		s->family, s->port, s->win_down[0], s->up ? "true" : "false");
	fputs(", \"episodes\": [", f);
	for (size_t i = 0; i < s->nep; i++) {
		const struct episode *ep = &s->ep[i];

		if (!track_in_window(&t->win[0], ep->start_ns))
			continue;
		fprintf(f, "%s{\"start_ns\": %" PRId64 ", \"end_ns\": ", n++ ? ", " : "",
			ep->start_ns);
		if (ep->end_ns == TRACK_NONE)
			fputs("null", f);
		else
			fprintf(f, "%" PRId64, ep->end_ns);
		fputs(", \"src\": ", f);
		output_json_string(
		    f, decode_addr_str(s->family, s->ends[ep->end_idx].src, a, sizeof(a)));
		fprintf(f, ", \"diag\": %u, \"last_gap_ms\": ", ep->diag);
		if (ep->last_gap_ns == TRACK_NONE)
			fputs("null", f);
		else
			json_ms(f, ep->last_gap_ns);
		fputc('}', f);
	}
	fputs("], \"ends\": [", f);
	for (k = 0, n = 0; k < 2; k++) {
		if (!s->ends[k].has_last)
			continue;
		if (n++)
			fputc(',', f);
		json_end(f, t, s, k);
	}
	fputs("]}", f);
}

int output_json(FILE *f, const struct tracker *t, const char *file, const char *read_error)
{
	int first = 1, rc;

	fputs("{\"schema\": \"bfdcap/1\", \"file\": ", f);
	output_json_string(f, file);
	fprintf(f,
		", \"frames\": %" PRIu64 ", \"bfd_packets\": %" PRIu64
		", \"echo_packets\": %" PRIu64 ", \"first_ts_ns\": ",
		t->frames, t->bfd_packets, t->echo_packets);
	if (t->first_ts_ns == TRACK_NONE)
		fputs("null, \"last_ts_ns\": null", f);
	else
		fprintf(f, "%" PRId64 ", \"last_ts_ns\": %" PRId64, t->first_ts_ns, t->last_ts_ns);
	fputs(", \"window\": {\"start_ns\": ", f);
	fprintf(f, "%" PRId64 ", \"end_ns\": %" PRId64 "}", t->win[0].start_ns, t->win[0].end_ns);
	fputs(", \"read_error\": ", f);
	if (read_error)
		output_json_string(f, read_error);
	else
		fputs("null", f);
	fprintf(f, ", \"incomplete\": %s, \"ts_backwards\": %" PRIu64, t->oom ? "true" : "false",
		t->ts_backwards);
	fputs(", \"tags\": [", f);
	for (int i = 0; i < t->ntags; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", f);
		output_json_string(f, t->tags[i].name);
		fputs(", \"spec\": ", f);
		output_json_string(f, t->tags[i].spec);
		fputc('}', f);
	}
	fputc(']', f);
	fputs(", \"malformed\": {", f);
	for (int r = 0; r < BFDCAP_M__COUNT; r++) {
		if (!t->malformed[r])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", decode_malformed_name(r),
			t->malformed[r]);
		first = 0;
	}
	fputs("}, \"checksums\": {", f);
	first = 1;
	for (int c = 0; c < BFDCAP_CSUM__COUNT; c++) {
		if (!decode_checksum_failed(c) || !t->checksums[c])
			continue;
		fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", decode_checksum_name(c),
			t->checksums[c]);
		first = 0;
	}
	fputs("},\n  \"sessions\": [", f);
	for (size_t i = 0; i < t->nsessions; i++)
		json_session(f, t, t->sessions[i], i == 0);
	fputs(t->nsessions ? "\n  ],\n  \"classes\": " : "],\n  \"classes\": ", f);
	rc = json_classes(f, t, 0);
	if (rc)
		return rc;
	fputs(",\n  \"phases\": [", f);
	for (int w = 1; w < t->nwin; w++) {
		fputs(w > 1 ? ",\n   {\"name\": " : "\n   {\"name\": ", f);
		output_json_string(f, t->win[w].name);
		fprintf(f, ", \"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64 ", \"classes\": ",
			t->win[w].start_ns, t->win[w].end_ns);
		rc = json_classes(f, t, w);
		if (rc)
			return rc;
		fputc('}', f);
	}
	fputs(t->nwin > 1 ? "\n  ]}\n" : "]}\n", f);
	return ferror(f) ? -EIO : 0;
}

static const char *fmt_opt_ms(const struct gap_summary *g, int64_t v, char *buf, size_t len)
{
	if (!g->n)
		return "-";
	snprintf(buf, len, "%.3f", v / 1e6);
	return buf;
}

static int table_classes(FILE *f, const struct tracker *t, int w)
{
	struct class_stats *cs;
	int n = classes_compute(t, w, &cs);

	if (n < 0)
		return n;
	fprintf(f, "  %-10s %-13s %5s %5s %9s %9s %8s %8s %8s %9s %9s %7s %5s %5s %5s %6s\n", "tag",
		"class", "ends", "sess", "packets", "gaps", "p50_ms", "p99_ms", "p99.9", "max_ms",
		"budget", "max/bud", "over", "down", "sdown", "up_end");
	for (int i = 0; i < n; i++) {
		const struct class_stats *c = &cs[i];
		char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];

		if (c->ever_up)
			snprintf(b5, sizeof(b5), "%.3f",
				 c->interval_us * (double)c->detect_mult / 1000.0);
		else
			snprintf(b5, sizeof(b5), "-");
		if (c->has_ratio)
			snprintf(b6, sizeof(b6), "%.3f", c->max_over_budget);
		else
			snprintf(b6, sizeof(b6), "-");
		fprintf(
		    f,
		    "  %-10s %-13s %5zu %5zu %9" PRIu64 " %9zu %8s %8s %8s %9s %9s %7s %5" PRIu64
		    " %5" PRIu64 " %5" PRIu64 " %6zu\n",
		    tag_name(t, c->tag)[0] ? tag_name(t, c->tag) : "-", c->name, c->ends,
		    c->sessions, c->packets, c->gaps.n,
		    fmt_opt_ms(&c->gaps, c->gaps.p50_ns, b1, sizeof(b1)),
		    fmt_opt_ms(&c->gaps, c->gaps.p99_ns, b2, sizeof(b2)),
		    fmt_opt_ms(&c->gaps, c->gaps.p99_9_ns, b3, sizeof(b3)),
		    fmt_opt_ms(&c->gaps, c->gaps.max_ns, b4, sizeof(b4)), b5, b6,
		    c->gaps_over_budget, c->down_events, c->session_down_events, c->ends_up_at_end);
	}
	/* The same classes: jitter (6.8.7), detection (6.8.4), replies, Poll Sequences (6.5). */
	fprintf(f, "  %-10s %-13s %9s %6s %6s %5s %9s %5s %8s %9s %9s %5s %5s %5s\n", "", "",
		"jit_check", "early", "late", "det", "det_max", "early", "replies", "rep50_us",
		"rep99_us", "polls", "final", "rstrt");
	for (int i = 0; i < n; i++) {
		const struct class_stats *c = &cs[i];
		char b1[32] = "-", b2[32] = "-", b3[32] = "-";

		if (c->detections)
			snprintf(b1, sizeof(b1), "%.3f", c->detect_max_ns / 1e6);
		if (c->reply.n) {
			snprintf(b2, sizeof(b2), "%.1f", c->reply.p50_ns / 1e3);
			snprintf(b3, sizeof(b3), "%.1f", c->reply.p99_ns / 1e3);
		}
		fprintf(f,
			"  %-10s %-13s %9" PRIu64 " %6" PRIu64 " %6" PRIu64
			" %5zu %9s %5zu %8zu %9s %9s %5zu %5zu %5zu\n",
			tag_name(t, c->tag)[0] ? tag_name(t, c->tag) : "-", c->name,
			c->jitter_checked, c->jitter_early, c->jitter_late, c->detections, b1,
			c->detections_early, c->reply.n, b2, b3, c->polls, c->polls_answered,
			c->restarts);
	}
	free(cs);
	return 0;
}

int output_table(FILE *f, const struct tracker *t, const char *file, const char *read_error,
		 int verbose)
{
	int rc;

	fprintf(f,
		"%s: %" PRIu64 " frames, %" PRIu64 " BFD control packets, %" PRIu64
		" echo, %zu sessions",
		file, t->frames, t->bfd_packets, t->echo_packets, t->nsessions);
	if (t->first_ts_ns != TRACK_NONE)
		fprintf(f, ", %.3f s", ((double)t->last_ts_ns - (double)t->first_ts_ns) / 1e9);
	fputc('\n', f);
	if (read_error)
		fprintf(f, "read stopped early: %s\n", read_error);
	for (int r = 0; r < BFDCAP_M__COUNT; r++)
		if (t->malformed[r])
			fprintf(f, "malformed %s: %" PRIu64 "\n", decode_malformed_name(r),
				t->malformed[r]);
	for (int c = 0; c < BFDCAP_CSUM__COUNT; c++)
		if (decode_checksum_failed(c) && t->checksums[c])
			fprintf(
			    f, "checksum %s: %" PRIu64 " (kept; a verifying receiver drops them)\n",
			    decode_checksum_name(c), t->checksums[c]);
	fputs("\nclasses (gaps in ms; budget = Detect Mult x interval, RFC 5880 6.8.4)\n", f);
	rc = table_classes(f, t, 0);
	if (rc)
		return rc;
	for (int w = 1; w < t->nwin; w++) {
		fprintf(f, "\nphase %s [%" PRId64 ", %" PRId64 ")\n", t->win[w].name,
			t->win[w].start_ns, t->win[w].end_ns);
		rc = table_classes(f, t, w);
		if (rc)
			return rc;
	}
	if (verbose) {
		fprintf(f, "\nends\n  %-40s %-13s %8s %7s %8s %8s %9s %7s %5s %5s %10s %s\n",
			"src > dst:port", "class", "packets", "gaps", "p50_ms", "p99_ms", "max_ms",
			"max/bud", "trans", "down", "not_up_ms", "last");
		for (size_t i = 0; i < t->nsessions; i++) {
			struct session *s = t->sessions[i];

			for (int k = 0; k < 2; k++) {
				struct end *e = &s->ends[k];
				struct gap_summary g;
				char a[64], b[64], ab[140], cls[48], b1[32], b2[32], b3[32], b4[32];

				if (!e->has_last)
					continue;
				stats_summarise(&e->win[0].gaps, &g);
				track_class_name(e, cls, sizeof(cls));
				snprintf(ab, sizeof(ab), "%s > %s:%u",
					 decode_addr_str(s->family, e->src, a, sizeof(a)),
					 decode_addr_str(s->family, e->dst, b, sizeof(b)), s->port);
				if (e->win[0].worst_budget_ns)
					snprintf(b4, sizeof(b4), "%.3f",
						 track_win_ratio(&e->win[0]));
				else
					snprintf(b4, sizeof(b4), "-");
				fprintf(f,
					"  %-40s %-13s %8" PRIu64
					" %7zu %8s %8s %9s %7s %5zu %5" PRIu64 " %10.3f %s\n",
					ab, cls, e->win[0].packets, g.n,
					fmt_opt_ms(&g, g.p50_ns, b1, sizeof(b1)),
					fmt_opt_ms(&g, g.p99_ns, b2, sizeof(b2)),
					fmt_opt_ms(&g, g.max_ns, b3, sizeof(b3)), b4, e->ntr,
					e->win[0].down_events, e->not_up_ns / 1e6,
					decode_state_name(e->last.state));
			}
		}
	}
	return ferror(f) ? -EIO : 0;
}

void output_packet_json(FILE *f, const struct bfdcap_pkt *p, int rc)
{
	char a[64];

	fprintf(f, "{\"ts_ns\": %" PRId64, p->ts_ns);
	if (rc == DECODE_MALFORMED) {
		fprintf(f, ", \"malformed\": \"%s\"}\n", decode_malformed_name(p->malformed));
		return;
	}
	fputs(", \"src\": ", f);
	output_json_string(f, decode_addr_str(p->family, p->src, a, sizeof(a)));
	fputs(", \"dst\": ", f);
	output_json_string(f, decode_addr_str(p->family, p->dst, a, sizeof(a)));
	fprintf(f, ", \"sport\": %u, \"dport\": %u, \"ttl\": %u", p->sport, p->dport, p->ttl);
	if (p->kind == BFDCAP_KIND_ECHO) {
		fprintf(f, ", \"echo\": true, \"length\": %u", p->payload_len);
		if (decode_checksum_failed(p->checksum))
			fprintf(f, ", \"checksum\": \"%s\"", decode_checksum_name(p->checksum));
		fputs("}\n", f);
		return;
	}
#define B(flag) ((p->flags & (flag)) ? "true" : "false")
	fprintf(f,
		", \"version\": %u, \"diag\": %u, \"state\": %u, \"poll\": %s, \"final\": %s"
		", \"cpi\": %s, \"auth\": %s, \"demand\": %s, \"multipoint\": %s"
		", \"detect_mult\": %u, \"length\": %u, \"my_disc\": %" PRIu32
		", \"your_disc\": %" PRIu32 ", \"desired_min_tx_us\": %" PRIu32
		", \"required_min_rx_us\": %" PRIu32 ", \"required_min_echo_rx_us\": %" PRIu32,
		p->version, p->diag, p->state, B(BFD_FLAG_POLL), B(BFD_FLAG_FINAL), B(BFD_FLAG_CPI),
		B(BFD_FLAG_AUTH), B(BFD_FLAG_DEMAND), B(BFD_FLAG_MULTIPOINT), p->detect_mult,
		p->length, p->my_disc, p->your_disc, p->desired_min_tx_us, p->required_min_rx_us,
		p->required_min_echo_rx_us);
#undef B
	if (p->has_auth) {
		fprintf(f, ", \"auth_type\": %u, \"auth_key_id\": %u", p->auth_type,
			p->auth_key_id);
		if (p->has_auth_seq)
			fprintf(f, ", \"auth_seq\": %" PRIu32, p->auth_seq);
	}
	/* A 6.8.6 discard (rc DECODE_INVALID) is decodable: its fields say why. */
	if (decode_checksum_failed(p->checksum))
		fprintf(f, ", \"checksum\": \"%s\"", decode_checksum_name(p->checksum));
	fputs("}\n", f);
}
