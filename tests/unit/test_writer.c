// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_writer.c - the writer thread's queue (engine/writer.c), on real files in a temporary
 * directory: log lines keep their order, a full queue drops and counts without waiting, a newer
 * snapshot replaces the pending one of its file, and stop writes everything queued.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "writer.h"

static char dir[] = "/tmp/test_writer.XXXXXX";

static char *slurp(const char *path, size_t *len)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	*len = 0;
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	*len = n > 0 ? (size_t)n : 0;
	buf[*len] = 0;
	return buf;
}

static int open_log(const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", dir, name);
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
}

/* 2,000 lines through a ring of 4 KiB, started first: each in order, none dropped or lost. */
static void test_order_and_flush(void)
{
	struct writer w;
	struct writer_stats st;
	char path[256], line[64];
	int fd = open_log("order.log", path, sizeof(path));
	size_t len, off = 0, want = 0;
	unsigned bad = 0;
	char *got;

	CHECK_EQ(writer_init(&w, fd, 4096), 0, "init");
	CHECK_EQ(writer_start(&w), 0, "start");
	for (int i = 0; i < 2000; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);

		want += (size_t)n;
		/* The thread keeps up with a 4 KiB ring only if we let it: retry a full queue. */
		while (!writer_line(&w, line, (size_t)n))
			usleep(100);
	}
	CHECK_EQ(writer_stop(&w, 1000), 0, "stop flushed within 1 s");
	writer_get_stats(&w, &st);
	got = slurp(path, &len);
	CHECK_EQ(len, want, "every byte written");
	for (int i = 0; i < 2000 && got; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);

		bad += strncmp(got + off, line, (size_t)n) != 0;
		off += (size_t)n;
	}
	CHECK_EQ(bad, 0, "lines out of order");
	CHECK_EQ(st.lines, 2000, "lines counted written");
	close(fd);
	writer_fini(&w);
}

/* Not started: a 64-byte ring takes three 20-byte lines, drops the rest whole, and never waits;
 * started and stopped, exactly those three are written. */
static void test_drop_when_full(void)
{
	const char *l20 = "0123456789abcdefghi\n";
	struct writer w;
	struct writer_stats st;
	char path[256];
	int fd = open_log("drop.log", path, sizeof(path));
	int taken = 0;
	size_t len;
	char *got;

	CHECK_EQ(writer_init(&w, fd, 64), 0, "init");
	for (int i = 0; i < 10; i++)
		taken += writer_line(&w, l20, 20);
	CHECK_EQ(taken, 3, "lines taken by a 64-byte ring");
	writer_get_stats(&w, &st);
	CHECK_EQ(st.lines_dropped, 7, "lines dropped and counted");
	CHECK_EQ(writer_start(&w), 0, "start");
	CHECK_EQ(writer_stop(&w, 1000), 0, "stop");
	writer_get_stats(&w, &st);
	got = slurp(path, &len);
	CHECK_EQ(len, 60, "three lines written");
	CHECK(got && !strncmp(got + 40, l20, 20), "the third line last");
	CHECK_EQ(st.lines, 3, "lines written");
	close(fd);
	writer_fini(&w);
}

/* Three snapshots of one file before the thread runs: only the newest is written, renamed into
 * place (no .tmp left), two counted coalesced; the other file's one written too. */
static void test_coalesce(void)
{
	struct writer w;
	struct writer_stats st;
	char json[256], prom[256], tmp[300];
	size_t len;
	char *got;

	snprintf(json, sizeof(json), "%s/stats.json", dir);
	snprintf(prom, sizeof(prom), "%s/metrics.prom", dir);
	CHECK_EQ(writer_init(&w, -1, 64), 0, "init");
	for (int i = 1; i <= 3; i++) {
		char *b = malloc(32);

		snprintf(b, 32, "{\"n\":%d}\n", i);
		writer_snapshot(&w, WRITER_STATS_JSON, json, b, strlen(b));
	}
	writer_snapshot(&w, WRITER_METRICS, prom, strdup("m 1\n"), 4);
	writer_get_stats(&w, &st);
	CHECK_EQ(st.dumps_coalesced, 2, "snapshots replaced while pending");
	CHECK_EQ(writer_start(&w), 0, "start");
	CHECK_EQ(writer_stop(&w, 1000), 0, "stop");
	writer_get_stats(&w, &st);
	got = slurp(json, &len);
	CHECK(got && !strcmp(got, "{\"n\":3}\n"), "the newest snapshot written");
	got = slurp(prom, &len);
	CHECK(got && !strcmp(got, "m 1\n"), "the metrics file written");
	CHECK_EQ(st.dumps, 2, "files written");
	CHECK_EQ(st.dumps_failed, 0, "none failed");
	snprintf(tmp, sizeof(tmp), "%s.tmp", json);
	CHECK_EQ(access(tmp, F_OK), -1, "no temporary file left");
	unlink(json);
	unlink(prom);
	writer_fini(&w);
}

/* A snapshot into a directory that does not exist: counted failed, not retried forever. */
static void test_failure_counted(void)
{
	struct writer w;
	struct writer_stats st;
	char path[256];

	snprintf(path, sizeof(path), "%s/absent/stats.json", dir);
	CHECK_EQ(writer_init(&w, -1, 64), 0, "init");
	CHECK_EQ(writer_start(&w), 0, "start");
	writer_snapshot(&w, WRITER_STATS_JSON, path, strdup("{}\n"), 3);
	CHECK_EQ(writer_stop(&w, 1000), 0, "stop");
	writer_get_stats(&w, &st);
	CHECK_EQ(st.dumps_failed, 1, "the failed snapshot counted");
	CHECK_EQ(st.dumps, 0, "nothing written");
	writer_fini(&w);
}

int main(void)
{
	char path[300];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_order_and_flush();
	test_drop_when_full();
	test_coalesce();
	test_failure_counted();
	snprintf(path, sizeof(path), "%s/order.log", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/drop.log", dir);
	unlink(path);
	rmdir(dir);
	return check_done("test_writer");
}
