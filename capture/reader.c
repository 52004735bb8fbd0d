/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* reader.c - streaming pcap/pcapng reader over zlib (see reader.h). */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum { FMT_PCAP = 1, FMT_PCAPNG, FMT_LIBPCAP };

#define PCAPNG_SHB 0x0A0D0D0Au
#define PCAPNG_IDB 1u
#define PCAPNG_OPB 2u /* obsolete Packet Block */
#define PCAPNG_SPB 3u
#define PCAPNG_EPB 6u
#define PCAPNG_BOM 0x1A2B3C4Du

struct iface {
	int linktype;
	int res_pow2; /* if_tsresol: 1 when units are 2^-res_exp s, else 10^-res_exp s */
	unsigned res_exp;
	int64_t offset_s; /* if_tsoffset */
};

struct reader {
	int fmt;
	/* input: a gzFile (plain files pass through zlib transparently) or a memory buffer */
	gzFile gz;
	const uint8_t *mem;
	uint8_t *buf;
	size_t cap, pos, end;
	int eof;
	uint64_t offset; /* file offset of buf[pos] */
	/* pcap */
	int swapped, nsec, rec_hdr_len, linktype;
	/* pcapng */
	struct iface *ifs;
	size_t nifs, cap_ifs;
	uint32_t section;
	int64_t last_ts_ns;
	int have_shb;
	/* libpcap */
	pcap_t *pcap;
};

static inline uint32_t get32(const struct reader *r, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return r->swapped ? __builtin_bswap32(v) : v;
}

static inline uint16_t get16(const struct reader *r, const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return r->swapped ? __builtin_bswap16(v) : v;
}

/*
 * Make @n bytes available at buf[pos]. Return: the bytes available (< n only at the end of the
 * input), or -1 on a read error.
 */
static long ensure(struct reader *r, size_t n)
{
	if (r->mem)
		return (long)(r->end - r->pos);
	if (r->end - r->pos >= n || r->eof)
		return (long)(r->end - r->pos);
	if (r->pos) {
		memmove(r->buf, r->buf + r->pos, r->end - r->pos);
		r->end -= r->pos;
		r->pos = 0;
	}
	if (n > r->cap) {
		size_t cap = r->cap;
		uint8_t *b;

		while (cap < n)
			cap *= 2;
		b = realloc(r->buf, cap);
		if (!b)
			return -1;
		r->buf = b;
		r->cap = cap;
	}
	while (r->end < n && !r->eof) {
		int got = gzread(r->gz, r->buf + r->end, (unsigned)(r->cap - r->end));

		if (got < 0)
			return -1;
		if (got == 0)
			r->eof = 1;
		r->end += (size_t)got;
	}
	return (long)(r->end - r->pos);
}

static void consume(struct reader *r, size_t n)
{
	r->pos += n;
	r->offset += n;
}

static int fail(struct reader *r, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s at byte %llu", what, (unsigned long long)r->offset);
	return -1;
}

/* --- pcap --------------------------------------------------------------------------------- */

static int pcap_header(struct reader *r, char *err, size_t errlen)
{
	const uint8_t *h = r->buf + r->pos;

	if (ensure(r, 24) < 24)
		return fail(r, err, errlen, "pcap file header cut short");
	h = r->buf + r->pos;
	r->linktype = (int)(get32(r, h + 20) & 0xffff); /* upper bits: FCS length */
	consume(r, 24);
	return 0;
}

static int pcap_next_frame(struct reader *r, struct frame *f, char *err, size_t errlen)
{
	const uint8_t *h;
	uint32_t caplen, sub;
	long avail = ensure(r, (size_t)r->rec_hdr_len);

	if (avail < 0)
		return fail(r, err, errlen, "read error");
	if (avail == 0)
		return 0;
	if (avail < r->rec_hdr_len)
		return fail(r, err, errlen, "truncated record header");
	h = r->buf + r->pos;
	caplen = get32(r, h + 8);
	if (caplen > READER_MAX_RECORD)
		return fail(r, err, errlen, "record larger than 16 MiB: damaged file");
	avail = ensure(r, (size_t)r->rec_hdr_len + caplen);
	if (avail < 0)
		return fail(r, err, errlen, "read error");
	if ((size_t)avail < (size_t)r->rec_hdr_len + caplen)
		return fail(r, err, errlen, "truncated record");
	h = r->buf + r->pos;
	sub = get32(r, h + 4);
	f->ts_ns = (int64_t)get32(r, h) * 1000000000 + (r->nsec ? sub : (int64_t)sub * 1000);
	f->caplen = caplen;
	f->len = get32(r, h + 12);
	f->data = h + r->rec_hdr_len;
	f->linktype = r->linktype;
	f->interface_id = 0;
	f->section = 0;
	f->no_timestamp = 0;
	consume(r, (size_t)r->rec_hdr_len + caplen);
	return 1;
}

/* --- pcapng ------------------------------------------------------------------------------- */

/* Interface options: if_tsresol (9) and if_tsoffset (14). @p, @len: the options area. */
static void idb_options(struct reader *r, const uint8_t *p, size_t len, struct iface *ifc)
{
	while (len >= 4) {
		uint16_t code = get16(r, p), olen = get16(r, p + 2);
		size_t padded = ((size_t)olen + 3) & ~(size_t)3;

		if (code == 0 || 4 + padded > len)
			break;
		if (code == 9 && olen >= 1) {
			ifc->res_pow2 = p[4] >> 7;
			ifc->res_exp = p[4] & 0x7f;
		} else if (code == 14 && olen >= 8) {
			uint64_t v;

			memcpy(&v, p + 4, 8);
			if (r->swapped)
				v = __builtin_bswap64(v);
			ifc->offset_s = (int64_t)v;
		}
		p += 4 + padded;
		len -= 4 + padded;
	}
}

/* Timestamp units of @ifc to ns since the epoch (saturating far outside int64). */
static int64_t units_to_ns(const struct iface *ifc, uint64_t units)
{
	unsigned __int128 ns;

	if (ifc->res_pow2) {
		if (ifc->res_exp >= 64)
			ns = 0;
		else
			ns = ((unsigned __int128)units * 1000000000u) >> ifc->res_exp;
	} else if (ifc->res_exp <= 9) {
		uint64_t mul = 1;

		for (unsigned i = ifc->res_exp; i < 9; i++)
			mul *= 10;
		ns = (unsigned __int128)units * mul;
	} else {
		unsigned __int128 div = 1;

		for (unsigned i = 9; i < ifc->res_exp && i < 40; i++)
			div *= 10;
		ns = units / div;
	}
	/* Add if_tsoffset; a damaged file may hold anything: saturate instead of overflowing. */
	{
		__int128 v =
		    (__int128)(ns > (unsigned __int128)INT64_MAX ? INT64_MAX : (int64_t)ns) +
		    (__int128)ifc->offset_s * 1000000000;

		if (v > INT64_MAX)
			return INT64_MAX;
		if (v <= INT64_MIN)
			return INT64_MIN + 1; /* INT64_MIN means "none" in track.h */
		return (int64_t)v;
	}
}

/* The Section Header Block at buf[pos]: its byte order sets the section's. */
static int pcapng_shb(struct reader *r, uint32_t *blen, char *err, size_t errlen)
{
	const uint8_t *h = r->buf + r->pos;
	uint32_t bom;

	if (ensure(r, 12) < 12)
		return fail(r, err, errlen, "truncated section header");
	h = r->buf + r->pos;
	memcpy(&bom, h + 8, 4);
	if (bom == PCAPNG_BOM)
		r->swapped = 0;
	else if (bom == __builtin_bswap32(PCAPNG_BOM))
		r->swapped = 1;
	else
		return fail(r, err, errlen, "bad pcapng byte-order magic");
	*blen = get32(r, h + 4);
	if (r->have_shb)
		r->section++;
	r->have_shb = 1;
	r->nifs = 0;
	return 0;
}

static int pcapng_next_frame(struct reader *r, struct frame *f, char *err, size_t errlen)
{
	for (;;) {
		const uint8_t *b;
		uint32_t type, blen, body;
		long avail = ensure(r, 8);

		if (avail < 0)
			return fail(r, err, errlen, "read error");
		if (avail == 0)
			return 0;
		if (avail < 8)
			return fail(r, err, errlen, "truncated block header");
		b = r->buf + r->pos;
		memcpy(&type, b, 4); /* the SHB type reads the same in both orders */
		if (type == PCAPNG_SHB) {
			if (pcapng_shb(r, &blen, err, errlen))
				return -1;
		} else {
			type = get32(r, b);
			blen = get32(r, b + 4);
		}
		if (blen < 12 || blen > READER_MAX_RECORD)
			return fail(r, err, errlen, "bad pcapng block length");
		avail = ensure(r, blen);
		if (avail < 0)
			return fail(r, err, errlen, "read error");
		if ((size_t)avail < blen)
			return fail(r, err, errlen, "truncated block");
		b = r->buf + r->pos;
		if (get32(r, b + blen - 4) != blen)
			return fail(r, err, errlen,
				    "pcapng block trailer does not match its length");
		body = blen - 12;
		b += 8;

		if (type == PCAPNG_IDB) {
			struct iface ifc = {.res_exp = 6}; /* default resolution: microseconds */

			if (body < 8)
				return fail(r, err, errlen, "short interface description block");
			ifc.linktype = get16(r, b);
			idb_options(r, b + 8, body - 8, &ifc);
			if (r->nifs == r->cap_ifs) {
				size_t cap = r->cap_ifs ? r->cap_ifs * 2 : 4;
				struct iface *v = realloc(r->ifs, cap * sizeof(*v));

				if (!v)
					return fail(r, err, errlen, "out of memory");
				r->ifs = v;
				r->cap_ifs = cap;
			}
			r->ifs[r->nifs++] = ifc;
		} else if (type == PCAPNG_EPB || type == PCAPNG_OPB) {
			uint32_t ifid, caplen, len;
			uint64_t units;

			if (body < 20)
				return fail(r, err, errlen, "short packet block");
			ifid = type == PCAPNG_EPB ? get32(r, b) : get16(r, b);
			units = (uint64_t)get32(r, b + 4) << 32 | get32(r, b + 8);
			caplen = get32(r, b + 12);
			len = get32(r, b + 16);
			if (ifid >= r->nifs)
				return fail(r, err, errlen,
					    "packet names an undescribed interface");
			if (caplen > body - 20)
				return fail(r, err, errlen,
					    "packet block shorter than its captured length");
			f->ts_ns = units_to_ns(&r->ifs[ifid], units);
			f->data = b + 20;
			f->caplen = caplen;
			f->len = len;
			f->linktype = r->ifs[ifid].linktype;
			f->interface_id = ifid;
			f->section = r->section;
			f->no_timestamp = 0;
			r->last_ts_ns = f->ts_ns;
			consume(r, blen);
			return 1;
		} else if (type == PCAPNG_SPB) {
			uint32_t len;

			if (body < 4)
				return fail(r, err, errlen, "short simple packet block");
			if (r->nifs == 0)
				return fail(r, err, errlen,
					    "packet names an undescribed interface");
			len = get32(r, b);
			f->ts_ns = r->last_ts_ns;
			f->data = b + 4;
			f->caplen = len < body - 4 ? len : body - 4;
			f->len = len;
			f->linktype = r->ifs[0].linktype;
			f->interface_id = 0;
			f->section = r->section;
			f->no_timestamp = 1;
			consume(r, blen);
			return 1;
		}
		consume(r, blen); /* SHB, statistics, name resolution, custom...: nothing for us */
	}
}

/* --- opening ------------------------------------------------------------------------------ */

static int detect_format(struct reader *r, char *err, size_t errlen)
{
	uint32_t magic;
	long avail = ensure(r, 4);

	if (avail < 0)
		return fail(r, err, errlen, "read error");
	if (avail < 4) {
		snprintf(err, errlen, "not a pcap or pcapng file (%ld bytes)", avail);
		return -1;
	}
	memcpy(&magic, r->buf + r->pos, 4);
	r->rec_hdr_len = 16;
	switch (magic) {
	case 0xa1b2c3d4:
	case 0xa1b23c4d:
	case 0xa1b2cd34:
		r->swapped = 0;
		break;
	case 0xd4c3b2a1:
	case 0x4d3cb2a1:
	case 0x34cdb2a1:
		r->swapped = 1;
		magic = __builtin_bswap32(magic);
		break;
	case PCAPNG_SHB:
		r->fmt = FMT_PCAPNG;
		return 0;
	default:
		snprintf(err, errlen, "not a pcap or pcapng file (magic 0x%08x)", magic);
		return -1;
	}
	r->fmt = FMT_PCAP;
	r->nsec = magic == 0xa1b23c4d;
	if (magic == 0xa1b2cd34) /* Kuznetsov's patched pcap: 8 more bytes per record */
		r->rec_hdr_len = 24;
	return pcap_header(r, err, errlen);
}

static struct reader *reader_new(void)
{
	struct reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->cap = 1u << 20;
	r->buf = malloc(r->cap);
	if (!r->buf) {
		free(r);
		return NULL;
	}
	return r;
}

int reader_open(const char *path, struct reader **out, char *err, size_t errlen)
{
	struct reader *r;
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(STDIN_FILENO);

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	r = reader_new();
	if (r)
		r->gz = gzdopen(fd, "rb");
	if (!r || !r->gz) {
		snprintf(err, errlen, "%s: out of memory", path);
		if (r)
			free(r->buf);
		free(r);
		close(fd);
		return -1;
	}
	gzbuffer(r->gz, 1u << 18);
	if (detect_format(r, err, errlen)) {
		reader_close(r);
		return -1;
	}
	*out = r;
	return 0;
}

int reader_open_memory(const void *buf, size_t len, struct reader **out, char *err, size_t errlen)
{
	struct reader *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->mem = buf;
	r->buf = (uint8_t *)buf; /* read only: ensure() never writes to a memory input */
	r->end = len;
	r->eof = 1;
	if (detect_format(r, err, errlen)) {
		reader_close(r);
		return -1;
	}
	*out = r;
	return 0;
}

int reader_open_libpcap(const char *path, struct reader **out, char *err, size_t errlen)
{
	char pcap_err[PCAP_ERRBUF_SIZE] = "";
	struct reader *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->fmt = FMT_LIBPCAP;
	r->pcap =
	    pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, pcap_err);
	if (!r->pcap) {
		snprintf(err, errlen, "%s", pcap_err);
		free(r);
		return -1;
	}
	r->linktype = pcap_datalink(r->pcap);
	*out = r;
	return 0;
}

static int libpcap_next(struct reader *r, struct frame *f, char *err, size_t errlen)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	int rc = pcap_next_ex(r->pcap, &h, &data);

	if (rc == PCAP_ERROR_BREAK)
		return 0;
	if (rc != 1) {
		snprintf(err, errlen, "%s", pcap_geterr(r->pcap));
		return -1;
	}
	memset(f, 0, sizeof(*f));
	f->ts_ns = (int64_t)h->ts.tv_sec * 1000000000 + (int64_t)h->ts.tv_usec;
	f->data = data;
	f->caplen = h->caplen;
	f->len = h->len;
	f->linktype = r->linktype;
	return 1;
}

int reader_next(struct reader *r, struct frame *f, char *err, size_t errlen)
{
	switch (r->fmt) {
	case FMT_PCAP:
		return pcap_next_frame(r, f, err, errlen);
	case FMT_PCAPNG:
		return pcapng_next_frame(r, f, err, errlen);
	default:
		return libpcap_next(r, f, err, errlen);
	}
}

const char *reader_format(const struct reader *r)
{
	return r->fmt == FMT_PCAP ? "pcap" : r->fmt == FMT_PCAPNG ? "pcapng" : "libpcap";
}

void reader_close(struct reader *r)
{
	if (!r)
		return;
	if (r->pcap)
		pcap_close(r->pcap);
	if (r->gz)
		gzclose(r->gz);
	if (!r->mem)
		free(r->buf);
	free(r->ifs);
	free(r);
}
