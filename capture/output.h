/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* output.h - the report: JSON (schema "bfdcap/1", docs/bfdcap.md) or a readable table. */
#ifndef BFDCAP_OUTPUT_H
#define BFDCAP_OUTPUT_H

#include <stdio.h>

#include "decode.h"
#include "track.h"

/* Exact decimal ms of @ns ("10.000123"), into @buf (at least 32 bytes). Returns @buf. */
char *output_ms(int64_t ns, char *buf, size_t len);

/* Write @s as a JSON string literal, quotes included. */
void output_json_string(FILE *f, const char *s);

/*
 * output_json() - the whole report as one JSON object and a newline (schema bfdcap/1).
 * @file: the input's name as given. @read_error: NULL, or why reading stopped early.
 * Return: 0, or -ENOMEM / -EIO.
 */
int output_json(FILE *f, const struct tracker *t, const char *file, const char *read_error);

/* output_table() - the same figures as text; @verbose adds one line per end. Return: as above. */
int output_table(FILE *f, const struct tracker *t, const char *file, const char *read_error,
		 int verbose);

/*
 * output_packet_json() - one --packets line for @p (decode result @rc): the decoded fields (also
 * for a packet a receiver would discard, DECODE_INVALID), or ts_ns and "malformed" for a packet
 * that cannot be decoded (DECODE_MALFORMED). Keys: docs/bfdcap.md "--packets".
 */
void output_packet_json(FILE *f, const struct bfdcap_pkt *p, int rc);

#endif /* BFDCAP_OUTPUT_H */
