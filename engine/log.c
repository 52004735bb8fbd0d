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

static FILE *log_fp;
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
	FILE *fp = log_fp ? log_fp : stderr;
	struct timespec ts;
	struct tm tm;
	char stamp[32];

	if (level > log_level || !fmt)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(fp, "%s.%06ldZ %s[%d] %s: ", stamp, ts.tv_nsec / 1000, log_program, (int)getpid(),
		level_names[level]);
	vfprintf(fp, fmt, ap);
	if (fmt[0] && fmt[strlen(fmt) - 1] != '\n')
		fputc('\n', fp);
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
