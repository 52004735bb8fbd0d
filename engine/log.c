// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* log.c - see log.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "log.h"
#include "writer.h"

static FILE *log_fp;
static struct writer *log_writer; /* set: lines go through it (writer.h) */
static enum log_level log_level = LOG_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const char *log_program = "xdp-bfd";

void log_set_program(const char *name)
{
	log_program = name;
}

int log_open(const char *path)
{
	FILE *fp;

	if (!path)
		return 0;
	fp = fopen(path, "a");
	if (!fp)
		return -errno;
	setvbuf(fp, NULL, _IOLBF, 0);
	log_fp = fp;
	return 0;
}

int log_fd(void)
{
	return fileno(log_fp ? log_fp : stderr);
}

void log_set_writer(struct writer *w)
{
	log_writer = w;
}

void log_set_level(enum log_level level)
{
	log_level = level;
}

enum log_level log_get_level(void)
{
	return log_level;
}

static void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int k;

	if (level > log_level || !fmt)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%06ldZ %s[%d] %s: ", ts.tv_nsec / 1000,
			      log_program, (int)getpid(), level_names[level]);
	k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (k < 0)
		k = 0;
	if ((size_t)k >= sizeof(line) - n) {
		/* Cut: a line longer than this is libbpf's verifier log; say it was cut. */
		n = sizeof(line) - 5;
		memcpy(line + n, "...\n", 4);
		n += 4;
	} else {
		n += (size_t)k;
		if (n && line[n - 1] != '\n' && n < sizeof(line) - 1)
			line[n++] = '\n';
	}
	if (log_writer)
		writer_line(log_writer, line, n); /* never blocks; a full queue drops and counts */
	else
		fwrite(line, 1, n, log_fp ? log_fp : stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* libbpf is chatty at info and debug; demote a level so its detail needs --log-level debug.
	 */
	enum log_level l = level == LIBBPF_WARN ? LOG_WARN : LOG_DEBUG;

	log_vmsg(l, fmt, ap);
	return 0;
}

void log_hook_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}
