/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * fuzz_bfdcap.c - libFuzzer target over bfdcap's file reader, packet decoder, session tracking
 * and report writers. Built by tests/capture/test_fuzz.py:
 *   clang -fsanitize=fuzzer,address,undefined -Ibpf -Icapture capture/{all but main}.c this.c \
 *     -lpcap -ljansson -lz
 * Input: a whole capture file (pcap or pcapng); its first byte also picks a link type under
 * which the rest is decoded as one bare frame, so the decoder sees every link type directly.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classes.h"
#include "config.h"
#include "decode.h"
#include "output.h"
#include "reader.h"
#include "track.h"

static const int linktypes[] = {
    BFDCAP_DLT_EN10MB,
    BFDCAP_DLT_LINUX_SLL,
    BFDCAP_DLT_LINUX_SLL2,
    BFDCAP_DLT_RAW,
    BFDCAP_LINKTYPE_RAW,
    BFDCAP_DLT_IPV4,
    BFDCAP_DLT_IPV6,
    BFDCAP_DLT_NULL,
    BFDCAP_DLT_LOOP,
    BFDCAP_DLT_RAW_BSD,
    9999,
};

static void decode_bare(const uint8_t *data, size_t size, struct tracker *t)
{
	struct bfdcap_pkt p = {.ts_ns = 1};
	int rc;

	if (size < 1)
		return;
	rc = decode_frame(linktypes[data[0] % (sizeof(linktypes) / sizeof(linktypes[0]))], data + 1,
			  size - 1, &p);
	if (rc == DECODE_OK)
		track_packet(t, &p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tag_rule tags[2];
	static int tags_ready;
	struct window win[3] = {
	    {.name = "all", .start_ns = INT64_MIN, .end_ns = INT64_MAX},
	    {.name = "early", .start_ns = 0, .end_ns = 1600000000000000000},
	    {.name = "late", .start_ns = 1600000000000000000, .end_ns = INT64_MAX},
	};
	char err[256], *buf = NULL;
	size_t len = 0;
	struct reader *r;
	struct tracker t;
	struct frame f;
	FILE *out;
	int rc;

	if (!tags_ready) {
		tag_rule_parse("v4=0.0.0.0/1", &tags[0]);
		tag_rule_parse("v6=::/0>2001:db8::/32", &tags[1]);
		tags_ready = 1;
	}
	if (track_init(&t, win, 3, tags, 2))
		return 0;
	decode_bare(data, size, &t);
	if (reader_open_memory(data, size, &r, err, sizeof(err)) == 0) {
		int n = 0;

		while ((rc = reader_next(r, &f, err, sizeof(err))) == 1 && n++ < 100000) {
			struct bfdcap_pkt p = {.ts_ns = f.ts_ns};

			if (decode_frame(f.linktype, f.data, f.caplen, &p) == DECODE_OK)
				track_packet(&t, &p);
		}
		reader_close(r);
	}
	track_finish(&t);
	out = open_memstream(&buf, &len);
	if (out) {
		output_json(out, &t, "fuzz", NULL);
		output_table(out, &t, "fuzz", NULL, 1);
		fclose(out);
		free(buf);
	}
	track_free(&t);
	return 0;
}
