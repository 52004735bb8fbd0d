/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bfdcap - BFD wire-capture analyser: one pass over a pcap/pcapng file, per session end gaps,
 * budgets, transitions and down events, per tag and class, per window. docs/bfdcap.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "decode.h"
#include "output.h"
#include "reader.h"
#include "track.h"

static void usage(FILE *f)
{
	fputs(
	    "usage: bfdcap [options] FILE      (FILE may be gzip-compressed; - reads stdin)\n"
	    "  --json                 JSON report (schema bfdcap/1, docs/bfdcap.md)\n"
	    "  --tag NAME=SRC[>DST]   tag ends whose sender is in prefix SRC (and receiver in\n"
	    "                         DST); repeatable, first match wins; rules of one NAME\n"
	    "                         are one tag\n"
	    "  --phases FILE          JSON [{\"name\", \"start_ns\", \"end_ns\"}, ...]: per-phase\n"
	    "                         class tables\n"
	    "  --from NS, --to NS     main window [from, to), ns since the epoch; packets at or\n"
	    "                         after --to are not read\n"
	    "  --packets              one JSON line per BFD packet (decode only)\n"
	    "  --csv-gaps FILE        every counted gap of the main window as CSV (- for stdout):\n"
	    "                         ts_ns,session,src,dst,tag,gap_ns,budget_ns\n"
	    "  --gaps-bin FILE        the same gaps as fixed 32-byte records (docs/bfdcap.md)\n"
	    "  --reader libpcap       read with libpcap instead of bfdcap's reader (checks)\n"
	    "  -v, --verbose          table: one line per end too\n"
	    "  -h, --help\n",
	    f);
}

static int parse_ns(const char *s, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

enum {
	OPT_JSON = 256,
	OPT_TAG,
	OPT_PHASES,
	OPT_FROM,
	OPT_TO,
	OPT_PACKETS,
	OPT_READER,
	OPT_CSV_GAPS,
	OPT_GAPS_BIN
};

/* Flush standard output when it is the whole result: 0, or 1 with a line on stderr. */
static int stdout_done(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "bfdcap: write error\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, OPT_JSON},
	    {"tag", required_argument, NULL, OPT_TAG},
	    {"phases", required_argument, NULL, OPT_PHASES},
	    {"from", required_argument, NULL, OPT_FROM},
	    {"to", required_argument, NULL, OPT_TO},
	    {"packets", no_argument, NULL, OPT_PACKETS},
	    {"reader", required_argument, NULL, OPT_READER},
	    {"csv-gaps", required_argument, NULL, OPT_CSV_GAPS},
	    {"gaps-bin", required_argument, NULL, OPT_GAPS_BIN},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct window *phases = NULL, *win = NULL;
	struct tag_rule *tags = NULL;
	int ntags = 0, nphases = 0, json = 0, packets = 0, verbose = 0, c, rc, ret = 1;
	int64_t from_ns = INT64_MIN, to_ns = INT64_MAX;
	const char *phases_path = NULL, *csv_path = NULL, *bin_path = NULL, *path;
	FILE *csv = NULL, *bin = NULL;
	char err[512] = "", *read_error = NULL;
	struct reader *r = NULL;
	struct tracker t;
	struct frame f;
	int tracker_ready = 0, use_libpcap = 0;

	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = 1;
			break;
		case OPT_TAG: {
			struct tag_rule *v = realloc(tags, (size_t)(ntags + 1) * sizeof(*v));

			if (!v)
				goto out;
			tags = v;
			if (tag_rule_parse(optarg, &tags[ntags])) {
				fprintf(stderr,
					"bfdcap: bad --tag '%s' (want NAME=PREFIX[>PREFIX])\n",
					optarg);
				ret = 2;
				goto out;
			}
			ntags++;
			break;
		}
		case OPT_PHASES:
			phases_path = optarg;
			break;
		case OPT_FROM:
		case OPT_TO:
			if (parse_ns(optarg, c == OPT_FROM ? &from_ns : &to_ns)) {
				fprintf(stderr, "bfdcap: bad time '%s' (want integer ns)\n",
					optarg);
				ret = 2;
				goto out;
			}
			break;
		case OPT_PACKETS:
			packets = 1;
			break;
		case OPT_CSV_GAPS:
			csv_path = optarg;
			break;
		case OPT_GAPS_BIN:
			bin_path = optarg;
			break;
		case OPT_READER:
			if (strcmp(optarg, "libpcap") && strcmp(optarg, "bfdcap")) {
				fprintf(stderr, "bfdcap: --reader is libpcap or bfdcap\n");
				ret = 2;
				goto out;
			}
			use_libpcap = !strcmp(optarg, "libpcap");
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			ret = 0;
			goto out;
		default:
			usage(stderr);
			ret = 2;
			goto out;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		ret = 2;
		goto out;
	}
	path = argv[optind];
	if (from_ns > to_ns) {
		fprintf(stderr, "bfdcap: --from is after --to: the window would be empty\n");
		ret = 2;
		goto out;
	}
	if (phases_path) {
		nphases = phases_load(phases_path, &phases, err, sizeof(err));
		if (nphases < 0) {
			fprintf(stderr, "bfdcap: %s\n", err);
			goto out;
		}
	}
	win = calloc((size_t)nphases + 1, sizeof(*win));
	if (!win)
		goto out;
	win[0] = (struct window){.name = "all", .start_ns = from_ns, .end_ns = to_ns};
	for (int i = 0; i < nphases; i++)
		win[i + 1] = phases[i];
	if ((use_libpcap ? reader_open_libpcap : reader_open)(path, &r, err, sizeof(err))) {
		fprintf(stderr, "bfdcap: %s\n", err);
		goto out;
	}
	if (track_init(&t, win, nphases + 1, tags, ntags)) {
		fprintf(stderr, "bfdcap: out of memory\n");
		goto out;
	}
	tracker_ready = 1;
	if (csv_path) {
		csv = strcmp(csv_path, "-") ? fopen(csv_path, "w") : stdout;
		if (!csv) {
			fprintf(stderr, "bfdcap: %s: %s\n", csv_path, strerror(errno));
			goto out;
		}
		fputs("ts_ns,session,src,dst,tag,gap_ns,budget_ns\n", csv);
		t.csv = csv;
	}
	if (bin_path) {
		bin = fopen(bin_path, "wb");
		if (!bin) {
			fprintf(stderr, "bfdcap: %s: %s\n", bin_path, strerror(errno));
			goto out;
		}
		t.gaps_bin = bin;
	}

	while ((rc = reader_next(r, &f, err, sizeof(err))) == 1) {
		struct bfdcap_pkt p;
		int in_main;

		if (f.ts_ns >= to_ns)
			continue;
		in_main = f.ts_ns >= from_ns;
		if (in_main && f.no_timestamp) {
			t.frames++; /* a Simple Packet Block: no time to span the capture with */
		} else if (in_main) {
			t.frames++;
			if (t.first_ts_ns == TRACK_NONE)
				t.first_ts_ns = f.ts_ns;
			else if (f.ts_ns < t.last_ts_ns)
				t.ts_backwards++; /* -i any merges CPUs: tiny reorderings happen */
			t.last_ts_ns = f.ts_ns;
		}
		p.ts_ns = f.ts_ns;
		rc = decode_frame(f.linktype, f.data, f.caplen, &p);
		if (rc == DECODE_NOT_BFD)
			continue;
		if (f.no_timestamp && rc != DECODE_MALFORMED) {
			p.malformed = BFDCAP_M_NO_TIMESTAMP;
			rc = DECODE_MALFORMED;
		}
		if (in_main)
			t.checksums[p.checksum]++;
		if (packets) {
			if (in_main)
				output_packet_json(stdout, &p, rc);
			continue;
		}
		if (rc == DECODE_OK)
			track_packet(&t, &p);
		else if (in_main)
			t.malformed[p.malformed]++;
	}
	if (rc < 0) {
		t.malformed[BFDCAP_M_READ_ERROR]++;
		read_error = err;
		if (packets || csv == stdout) /* no report to carry it: say it here */
			fprintf(stderr, "bfdcap: %s\n", err);
	}
	if (packets) {
		ret = stdout_done();
		goto out;
	}
	track_finish(&t);
	if (csv && csv != stdout) {
		rc = fclose(csv);
		csv = NULL;
		if (rc) {
			fprintf(stderr, "bfdcap: %s: write error\n", csv_path);
			goto out;
		}
	}
	if (bin) {
		rc = ferror(bin) | fclose(bin);
		bin = NULL;
		if (rc) {
			fprintf(stderr, "bfdcap: %s: write error\n", bin_path);
			goto out;
		}
	}
	if (csv == stdout) { /* the CSV is the output */
		ret = stdout_done();
		goto out;
	}
	rc = json ? output_json(stdout, &t, path, read_error)
		  : output_table(stdout, &t, path, read_error, verbose);
	if (fflush(stdout) || rc) {
		fprintf(stderr, "bfdcap: %s\n", rc == -ENOMEM ? "out of memory" : "write error");
		goto out;
	}
	ret = 0;
out:
	if (csv && csv != stdout)
		fclose(csv);
	if (bin)
		fclose(bin);
	if (tracker_ready)
		track_free(&t);
	reader_close(r);
	for (int i = 0; i < nphases; i++)
		free(phases[i].name);
	free(phases);
	free(win);
	for (int i = 0; i < ntags; i++)
		free(tags[i].name);
	free(tags);
	return ret;
}
