// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* writer.c - see writer.h. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "writer.h"

int write_file_atomic(const char *path, const char *buf, size_t len)
{
	char tmp[4096];
	struct stat st;
	bool in_place = !stat(path, &st) && !S_ISREG(st.st_mode);
	int fd, err = 0;

	/* A FIFO, /dev/stdout, a device: write into it; renaming over it would replace it. */
	if (!in_place && (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(in_place ? path : tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t off = 0; off < len && !err;) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EINTR)
			err = -errno;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!in_place && !err && rename(tmp, path))
		err = -errno;
	if (!in_place && err)
		unlink(tmp);
	return err;
}

int writer_init(struct writer *w, int fd, size_t ring_bytes)
{
	pthread_mutexattr_t ma;

	memset(w, 0, sizeof(*w));
	w->ring = malloc(ring_bytes);
	if (!w->ring)
		return -ENOMEM;
	w->cap = ring_bytes;
	w->fd = fd;
	pthread_mutexattr_init(&ma);
	/* The loop may run SCHED_DEADLINE/FIFO and this thread SCHED_OTHER: inheriting lends the
	 * thread the loop's priority for the few copies it does under the lock. */
	pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&w->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
	return 0;
}

/* Anything to write. Called with mu held. */
static bool has_work(const struct writer *w)
{
	if (w->head != w->tail)
		return true;
	for (int i = 0; i < WRITER_FILES; i++)
		if (w->files[i].pending)
			return true;
	return false;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The queued log bytes up to the ring's end, written with mu released. Called with mu held. */
static void flush_lines(struct writer *w)
{
	uint64_t t = w->tail;
	size_t off = (size_t)(t % w->cap), n = (size_t)(w->head - t);
	uint64_t lines = 0;
	int err;

	if (n > w->cap - off)
		n = w->cap - off;
	pthread_mutex_unlock(&w->mu);
	err = write_all(w->fd, w->ring + off, n); /* the loop never writes over [tail, head) */
	for (size_t i = 0; i < n; i++)
		lines += w->ring[off + i] == '\n';
	pthread_mutex_lock(&w->mu);
	w->tail = t + n;
	w->st.lines += lines;
	w->st.write_errors += err != 0;
}

/* One pending snapshot, written with mu released. Called with mu held. */
static void flush_file(struct writer *w, struct writer_file *f)
{
	static const char *const what[WRITER_FILES] = {"metrics", "stats"}; /* stable phrases */
	const char *name = what[f - w->files];
	char *buf = f->pending;
	const char *path = f->path;
	bool was_failing = f->failing;
	int err;

	f->pending = NULL;
	pthread_mutex_unlock(&w->mu);
	err = write_file_atomic(path, buf, f->len);
	free(buf);
	/* A period would repeat a failure every few seconds: say when it starts and ends. */
	if (err && !was_failing)
		pr_err("%s: writing %s failed: %s (said once until it works again)", name, path,
		       strerror(-err));
	else if (!err && was_failing)
		pr_info("%s: writing %s works again", name, path);
	pthread_mutex_lock(&w->mu);
	f->failing = err != 0;
	w->st.dumps += !err;
	w->st.dumps_failed += err != 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!has_work(w) && !w->stopping)
			pthread_cond_wait(&w->wake, &w->mu);
		if (!has_work(w))
			break;
		w->busy = true;
		if (w->head != w->tail)
			flush_lines(w);
		for (int i = 0; i < WRITER_FILES; i++)
			if (w->files[i].pending)
				flush_file(w, &w->files[i]);
		w->busy = false;
		if (!has_work(w))
			pthread_cond_broadcast(&w->idle);
	}
	pthread_cond_broadcast(&w->idle);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int writer_start(struct writer *w)
{
	struct sched_param sp = {0};
	sigset_t all, old;
	pthread_attr_t a;
	int err;

	pthread_attr_init(&a);
	/* SCHED_OTHER on purpose: writing is not time-critical, and a thread blocked on writeback
	 * gains nothing from a real-time policy; starved, it drops lines, not the loop's timers. */
	pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&a, SCHED_OTHER);
	pthread_attr_setschedparam(&a, &sp);
	/* Every signal blocked in the thread: the loop's signalfd must receive them, and an
	 * unblocked SIGUSR1 delivered here would end the process (its default action). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&w->thread, &a, writer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (err)
		return -err;
	pthread_setname_np(w->thread, "xdp-bfd-writer");
	w->running = true;
	return 0;
}

bool writer_line(struct writer *w, const char *buf, size_t len)
{
	bool ok;

	pthread_mutex_lock(&w->mu);
	ok = len <= w->cap - (size_t)(w->head - w->tail);
	if (ok) {
		size_t off = (size_t)(w->head % w->cap), first = w->cap - off;

		if (first > len)
			first = len;
		memcpy(w->ring + off, buf, first);
		memcpy(w->ring, buf + first, len - first);
		w->head += len;
		pthread_cond_signal(&w->wake);
	} else {
		w->st.lines_dropped++;
	}
	pthread_mutex_unlock(&w->mu);
	return ok;
}

void writer_snapshot(struct writer *w, int file, const char *path, char *buf, size_t len)
{
	struct writer_file *f = &w->files[file];
	char *old;

	pthread_mutex_lock(&w->mu);
	old = f->pending;
	w->st.dumps_coalesced += old != NULL;
	f->pending = buf;
	f->len = len;
	f->path = path;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	free(old); /* outside the lock: the thread may want it */
}

int writer_stop(struct writer *w, unsigned timeout_ms)
{
	struct timespec dl;
	bool left;
	int err = 0;

	if (!w->running)
		return 0;
	clock_gettime(CLOCK_REALTIME, &dl); /* the condition variable's clock */
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	w->stopping = true;
	pthread_cond_signal(&w->wake);
	while ((has_work(w) || w->busy) && !err)
		err = pthread_cond_timedwait(&w->idle, &w->mu, &dl);
	left = has_work(w) || w->busy;
	pthread_mutex_unlock(&w->mu);
	if (left)
		return -ETIMEDOUT; /* blocked in a write: not joined, exit() ends it */
	pthread_join(w->thread, NULL);
	w->running = false;
	return 0;
}

void writer_get_stats(struct writer *w, struct writer_stats *out)
{
	pthread_mutex_lock(&w->mu);
	*out = w->st;
	pthread_mutex_unlock(&w->mu);
}

void writer_fini(struct writer *w)
{
	if (w->running)
		return; /* the thread may still use it */
	for (int i = 0; i < WRITER_FILES; i++)
		free(w->files[i].pending);
	free(w->ring);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->mu);
	memset(w, 0, sizeof(*w));
}
