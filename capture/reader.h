/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * reader.h - frames out of a capture file, one at a time (streaming, constant memory).
 *
 * Reads pcap and pcapng (libpcap), at nanosecond or microsecond resolution, per-interface
 * timestamp resolution and offsets of pcapng included; gzip-compressed files and standard input
 * ("-") are read through zlib. Timestamps are returned in ns, as written (host or hardware).
 */
#ifndef BFDCAP_READER_H
#define BFDCAP_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct reader;

struct frame {
	int64_t ts_ns; /* capture timestamp, ns since the epoch */
	const uint8_t *data; /* valid until the next reader_next() */
	size_t caplen; /* bytes captured */
	size_t len; /* bytes on the wire */
	int linktype; /* DLT_* */
};

/*
 * reader_open() - open @path ("-" for standard input), gzip or not.
 * Return: 0 with *@out set, or -1 with a message in @err (at most @errlen bytes).
 */
int reader_open(const char *path, struct reader **out, char *err, size_t errlen);

/*
 * reader_open_memory() - read a capture held in memory (tests and fuzzing). @buf must outlive
 * the reader. Return: as reader_open().
 */
int reader_open_memory(const void *buf, size_t len, struct reader **out, char *err,
		       size_t errlen);

/*
 * reader_next() - the next frame.
 * Return: 1 with @f filled, 0 at the end of the file, -1 when the file is damaged or cannot be
 * read (message in @err); frames read before stay valid results.
 */
int reader_next(struct reader *r, struct frame *f, char *err, size_t errlen);

/* Link type of the file (DLT_*). */
int reader_linktype(const struct reader *r);

void reader_close(struct reader *r);

#endif /* BFDCAP_READER_H */
