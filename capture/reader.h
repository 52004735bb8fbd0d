/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * reader.h - frames out of a capture file, one at a time (streaming, constant memory).
 *
 * bfdcap's own reader handles pcap (microsecond, nanosecond, either byte order, and the
 * Kuznetsov variant) and pcapng (several sections and interfaces, each interface with its own
 * link type, if_tsresol, power-of-ten or power-of-two, and if_tsoffset), read through zlib so
 * that gzip-compressed files and standard input ("-") work alike. Timestamps come out in ns since
 * the epoch, as written: host or hardware clocks alike.
 *
 * Why not libpcap's reader: libpcap 1.10 refuses pcapng files whose interfaces have different
 * link types and does not say which interface a packet came from. It stays available as
 * reader_open_libpcap(), so tests can check the two readers against each other.
 */
#ifndef BFDCAP_READER_H
#define BFDCAP_READER_H

#include <stddef.h>
#include <stdint.h>

struct reader;

struct frame {
	int64_t ts_ns;	       /* capture timestamp, ns since the epoch */
	const uint8_t *data;   /* valid until the next reader_next() */
	size_t caplen;	       /* bytes captured */
	size_t len;	       /* bytes on the wire */
	int linktype;	       /* LINKTYPE_* as in the file (libpcap path: DLT_*) */
	uint32_t interface_id; /* pcapng: interface within its section; pcap: 0 */
	uint32_t section;      /* pcapng: 0-based section number; pcap: 0 */
	int no_timestamp;      /* pcapng Simple Packet Block: ts_ns is the previous frame's */
};

/* The largest record accepted; bigger ones are taken as a damaged file (bytes). */
#define READER_MAX_RECORD (16u << 20)

/*
 * reader_open() - open @path ("-" for standard input), gzip-compressed or not, pcap or pcapng.
 * Return: 0 with *@out set, or -1 with a message in @err (at most @errlen bytes).
 */
int reader_open(const char *path, struct reader **out, char *err, size_t errlen);

/*
 * reader_open_memory() - the same over a capture held in memory (tests, fuzzing); @buf must
 * outlive the reader. Return: as reader_open().
 */
int reader_open_memory(const void *buf, size_t len, struct reader **out, char *err, size_t errlen);

/*
 * reader_open_libpcap() - read @path with libpcap instead (uncompressed files only): the
 * reference the tests compare bfdcap's reader with. Return: as reader_open().
 */
int reader_open_libpcap(const char *path, struct reader **out, char *err, size_t errlen);

/*
 * reader_next() - the next frame.
 * Return: 1 with @f filled, 0 at the end of the file, -1 when the file is damaged or cannot be
 * read (message in @err; frames read before stay valid results).
 */
int reader_next(struct reader *r, struct frame *f, char *err, size_t errlen);

/* "pcap", "pcapng" or "libpcap". */
const char *reader_format(const struct reader *r);

void reader_close(struct reader *r);

#endif /* BFDCAP_READER_H */
