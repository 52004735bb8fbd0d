/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* reader.c - libpcap over a stdio stream, gzip through zlib (see reader.h). */
#include "reader.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct reader {
	pcap_t *pcap;
	int linktype;
};

/* stdio cookie over a gzFile: zlib reads plain files transparently, so stdin needs no peek. */
static ssize_t gz_cookie_read(void *cookie, char *buf, size_t size)
{
	int n;

	if (size > (1u << 30))
		size = 1u << 30;
	n = gzread((gzFile)cookie, buf, (unsigned)size);
	return n < 0 ? -1 : n;
}

static int gz_cookie_close(void *cookie)
{
	return gzclose((gzFile)cookie) == Z_OK ? 0 : -1;
}

static FILE *gz_stream(int fd)
{
	cookie_io_functions_t io = { .read = gz_cookie_read, .close = gz_cookie_close };
	gzFile gz = gzdopen(fd, "rb");
	FILE *f;

	if (!gz)
		return NULL;
	gzbuffer(gz, 1 << 18);
	f = fopencookie(gz, "rb", io);
	if (!f) {
		gzclose(gz);
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 18);
	return f;
}

static int open_stream(FILE *f, struct reader **out, char *err, size_t errlen)
{
	char pcap_err[PCAP_ERRBUF_SIZE] = "";
	struct reader *r;

	r = calloc(1, sizeof(*r));
	if (!r) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	r->pcap = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, pcap_err);
	if (!r->pcap) {
		fclose(f);
		free(r);
		snprintf(err, errlen, "%s", pcap_err[0] ? pcap_err : "not a pcap or pcapng file");
		return -1;
	}
	r->linktype = pcap_datalink(r->pcap);
	*out = r;
	return 0;
}

int reader_open(const char *path, struct reader **out, char *err, size_t errlen)
{
	unsigned char magic[2];
	FILE *f;
	int fd;

	if (strcmp(path, "-") == 0) {
		fd = dup(STDIN_FILENO);
		f = fd < 0 ? NULL : gz_stream(fd);
		if (!f) {
			snprintf(err, errlen, "standard input: %s", strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		return open_stream(f, out, err, errlen);
	}
	f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		fd = dup(fileno(f));
		fclose(f);
		f = NULL;
		if (fd >= 0 && lseek(fd, 0, SEEK_SET) == 0)
			f = gz_stream(fd);
		if (!f) {
			snprintf(err, errlen, "%s: cannot open gzip stream", path);
			if (fd >= 0)
				close(fd);
			return -1;
		}
	} else {
		rewind(f);
		setvbuf(f, NULL, _IOFBF, 1 << 18);
	}
	return open_stream(f, out, err, errlen);
}

int reader_open_memory(const void *buf, size_t len, struct reader **out, char *err,
		       size_t errlen)
{
	FILE *f = fmemopen((void *)buf, len, "rb");

	if (!f) {
		snprintf(err, errlen, "fmemopen: %s", strerror(errno));
		return -1;
	}
	return open_stream(f, out, err, errlen);
}

int reader_next(struct reader *r, struct frame *f, char *err, size_t errlen)
{
	struct pcap_pkthdr *h;
	const u_char *data;
	int rc = pcap_next_ex(r->pcap, &h, &data);

	if (rc == 1) {
		f->ts_ns = (int64_t)h->ts.tv_sec * 1000000000 + (int64_t)h->ts.tv_usec;
		f->data = data;
		f->caplen = h->caplen;
		f->len = h->len;
		f->linktype = r->linktype;
		return 1;
	}
	if (rc == PCAP_ERROR_BREAK)
		return 0;
	snprintf(err, errlen, "%s", pcap_geterr(r->pcap));
	return -1;
}

int reader_linktype(const struct reader *r)
{
	return r->linktype;
}

void reader_close(struct reader *r)
{
	if (!r)
		return;
	pcap_close(r->pcap);
	free(r);
}
