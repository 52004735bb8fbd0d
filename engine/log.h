/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * log.h - the engine's log: one line per event, wall-clock timestamp, to stderr or a file.
 * Operators grep for fixed phrases ("kernel-tx: XDP attached to", "dplane: bfdd connected");
 * keep those words stable.
 */
#ifndef ENGINE_LOG_H
#define ENGINE_LOG_H

enum log_level { LOG_ERR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* log_open() - send the log to @path (appended; NULL = stderr). Return: 0 or -errno. */
int log_open(const char *path);
void log_set_level(enum log_level level);
/* log_set_program() - the name before [pid] on every line (default "xdp-bfd"; bfdpeer's own). */
void log_set_program(const char *name);
enum log_level log_get_level(void);
/* log_fd() - the fd the log goes to (the --log-file's or stderr's). */
int log_fd(void);
/* log_set_writer() - lines go through @w from now on (NULL: written directly again). */
struct writer;
void log_set_writer(struct writer *w);
/* Route libbpf's messages through our log, one level lower than libbpf asks for. */
void log_hook_libbpf(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define pr_warn(...)  log_msg(LOG_WARN, __VA_ARGS__)
#define pr_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define pr_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
