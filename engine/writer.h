/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * writer.h - the engine's file writes, off its event loop. The loop formats (a log line, a whole
 * stats or metrics rendering) and hands it over without ever waiting; one thread of its own
 * writes: log lines appended in order to one fd, each snapshot into PATH.tmp renamed over PATH.
 * Why: a write()/rename() on ext4 can block for hundreds of ms on writeback whose kernel threads
 * real-time load starves, and no scheduling policy helps a blocked task (docs/engine.md "Writer").
 * When full, a line is dropped and counted; a snapshot replaces the one still pending for its
 * file (coalesced, counted): the newest is what a reader wants.
 */
#ifndef ENGINE_WRITER_H
#define ENGINE_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WRITER_FILES 2 /* snapshot files: the JSON dump and the metrics file */
/* Written in this order: the metrics file of a SIGUSR1 is in place once its JSON dump is. */
enum { WRITER_METRICS = 0, WRITER_STATS_JSON = 1 };

struct writer_stats {
	uint64_t lines, lines_dropped;	     /* log lines written, dropped (the queue was full) */
	uint64_t dumps, dumps_coalesced;     /* snapshots written, replaced before written */
	uint64_t dumps_failed, write_errors; /* snapshots that failed, failed log writes */
};

struct writer_file {
	const char *path;
	char *pending; /* malloc'd, owned here until the thread takes it */
	size_t len;
	bool failing; /* said once until it works again */
};

struct writer {
	pthread_mutex_t
	    mu; /* priority-inheriting: the loop never waits behind a preempted thread */
	pthread_cond_t wake, idle;
	char *ring; /* log bytes, whole lines, head - tail of them queued */
	size_t cap;
	uint64_t head, tail;
	int fd; /* where log lines go */
	struct writer_file files[WRITER_FILES];
	struct writer_stats st;
	bool running, stopping, busy;
	pthread_t thread;
};

/* writer_init() - @ring_bytes of queue for log lines going to @fd (not started: see
 * writer_start()). Return: 0 or -errno. */
int writer_init(struct writer *w, int fd, size_t ring_bytes);
/* writer_start() - the writer thread, SCHED_OTHER whatever the caller's policy (call it before
 * a SCHED_DEADLINE policy is applied: such a task cannot clone). Return: 0 or -errno. */
int writer_start(struct writer *w);
/* writer_line() - queue @len bytes (one or more whole lines). Never blocks. Return: false if
 * dropped (counted in lines_dropped). */
bool writer_line(struct writer *w, const char *buf, size_t len);
/* writer_snapshot() - take @buf (malloc'd, @len bytes) to write to @path as file @file; replaces
 * (frees) a pending one. Never blocks on I/O. */
void writer_snapshot(struct writer *w, int file, const char *path, char *buf, size_t len);
/* writer_stop() - write what is queued, waiting at most @timeout_ms, and end the thread.
 * Return: 0, or -ETIMEDOUT (the rest is lost; the thread is left to the process's exit). */
int writer_stop(struct writer *w, unsigned timeout_ms);
/* writer_get_stats() - a copy of the counters. */
void writer_get_stats(struct writer *w, struct writer_stats *out);
void writer_fini(struct writer *w);

/* write_file_atomic() - @len bytes into PATH.tmp, renamed over @path; a @path that exists and is
 * not a regular file (a FIFO, /dev/stdout) is written in place. Return: 0 or -errno. */
int write_file_atomic(const char *path, const char *buf, size_t len);

#endif
