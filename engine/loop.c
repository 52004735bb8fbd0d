// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * loop.c - the engine's life: its set-up (the session table, the XDP object and the interfaces
 * it runs on) and its one event loop: epoll over the bfdd connections, the ring buffer, a
 * signalfd, the transmit timer (armed for the earliest session userspace clocks) and a tick
 * (10 per second: dead-man heartbeat, bfdd keepalive and reconnect, the end of --dp-hold,
 * detection on the software path, sockets still missing). It sleeps in epoll_wait() with no
 * timeout; nothing here polls a map or walks the sessions waiting for a change. The top of the
 * engine's glue (glue.h).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "engine.h"
#include "fsm.h"
#include "glue.h"

#define TAG(kind) ((uint64_t)(kind) << 32)
enum { T_SIGNAL = 1, T_RING, T_TX, T_TICK, T_DP_LISTEN, T_DP_CONN, T_SW, T_IFMON, T_METRICS };
#define TICK_NS 100000000ULL

int engine_init(struct engine *e)
{
	struct kern_opts ko = {
	    .max_sessions = e->o.max_sessions,
	    .deadman_ns = e->o.deadman_us * 1000ULL,
	    .sweep_period_ns = e->o.sweep_us * 1000ULL,
	    .pass_unowned = e->o.pass_unowned,
	    .spread_pass = e->o.spread_pass,
	    .force_generic = e->o.xdp_generic,
	    .pin_dir = e->o.pin_dir,
	    .on_event = engine_on_event,
	    .ctx = e,
	};
	int err;

	e->start_ns = engine_now_ns();
	echo_socks_init(&e->echo);
	for (int i = 0; i < ENGINE_SW_SOCKS; i++)
		e->sw_fd[i] = -1;
	err = sessions_init(&e->st, e->o.max_sessions);
	if (err)
		return err;
	if (e->o.n_kernel_tx) {
		err = kern_open(&e->kern, &ko);
		if (err)
			return err;
		e->kernel_tx = true;
		if (e->o.deadman_us)
			pr_info("kernel-tx: dead-man gate at %lluus",
				(unsigned long long)e->o.deadman_us);
		kern_heartbeat(&e->kern, engine_now_ns());
		for (int i = 0; i < e->o.n_kernel_tx; i++) {
			err = kern_attach(&e->kern, e->o.kernel_tx[i]);
			if (err)
				return err;
		}
	} else {
		pr_info("kernel-tx: off; every session runs on the software path");
	}
	return 0;
}

void engine_fini(struct engine *e)
{
	if (e->kernel_tx)
		kern_close(&e->kern);
	e->kernel_tx = false;
	sessions_fini(&e->st);
}

static int watch(struct engine *e, int fd, uint64_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};

	return epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int setup(struct engine *e)
{
	struct itimerspec tick = {.it_interval = {0, TICK_NS}, .it_value = {0, TICK_NS}};
	sigset_t set;
	int err;

	e->metrics_fd = -1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	e->tx_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	e->tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (e->epfd < 0 || e->sigfd < 0 || e->tx_timer_fd < 0 || e->tick_fd < 0)
		return -errno;
	if ((err = watch(e, e->sigfd, TAG(T_SIGNAL))) ||
	    (err = watch(e, e->tx_timer_fd, TAG(T_TX))) ||
	    (err = watch(e, e->tick_fd, TAG(T_TICK))))
		return err;
	timerfd_settime(e->tick_fd, 0, &tick, NULL);
	e->tick_due_ns = engine_now_ns() + TICK_NS;
	if (e->kernel_tx && (err = watch(e, kern_ring_fd(&e->kern), TAG(T_RING))))
		return err;
	if (e->o.metrics_file) {
		uint64_t ns = (uint64_t)e->o.metrics_interval_ms * 1000000ULL;
		struct itimerspec its = {
		    .it_interval = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)},
		    .it_value = {(time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL)},
		};

		e->metrics_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (e->metrics_fd < 0)
			return -errno;
		if ((err = watch(e, e->metrics_fd, TAG(T_METRICS))))
			return err;
		timerfd_settime(e->metrics_fd, 0, &its, NULL);
	}
	e->ifmon_fd = ifmon_open();
	if (e->ifmon_fd < 0)
		pr_warn("rtnetlink: %s; interfaces that vanish will not be noticed",
			strerror(-e->ifmon_fd));
	else if ((err = watch(e, e->ifmon_fd, TAG(T_IFMON))))
		return err;
	sw_open(e);
	for (int i = 0; i < ENGINE_SW_SOCKS; i++)
		if (e->sw_fd[i] >= 0 && (err = watch(e, e->sw_fd[i], TAG(T_SW) | (uint64_t)i)))
			return err;
	dplane_init(&e->dp, e->epfd, TAG(T_DP_LISTEN), TAG(T_DP_CONN), &engine_dplane_ops, e);
	return 0;
}

/* bfdd last: after a handover (--pin) the previous engine must have let go of it. */
static int bfdd_start(struct engine *e)
{
	uint64_t now = engine_now_ns();
	int err;

	if (e->o.dplane_listen && (err = dplane_listen(&e->dp, e->o.dplane_listen)))
		return err;
	if (e->o.dplane_connect && (err = dplane_connect(&e->dp, e->o.dplane_connect, now)))
		return err;
	if (e->n_early)
		dplane_adopt(&e->dp, e->early_fds, e->n_early, now); /* engine_preconnect() */
	else if (e->o.dplane_connect)
		dplane_tick(&e->dp, now); /* first attempt now, not a tick from now */
	return 0;
}

static void on_signal(struct engine *e)
{
	struct signalfd_siginfo si;

	while (read(e->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGTERM:
		case SIGINT:
			pr_info("signal %u: sending AdminDown on every session and stopping",
				si.ssi_signo);
			e->stop = true;
			break;
		case SIGUSR2:
			if (!e->o.pin_dir) {
				pr_warn("SIGUSR2 ignored: without --pin leaving would take the "
					"sessions down with this engine");
				break;
			}
			pr_info("signal %u: leaving for the next engine (no AdminDown, pins kept)",
				si.ssi_signo);
			e->leave = e->stop = true;
			e->leave_for = (pid_t)si.ssi_pid;
			e->exit_code = ENGINE_EXIT_HANDED_OVER;
			break;
		case SIGUSR1:
			if (!e->o.stats_dump && !e->o.metrics_file)
				pr_warn("SIGUSR1: no --stats-dump or --metrics-file to write to");
			engine_stats_write(e, true);
			break;
		default:
			pr_info("signal %u ignored", si.ssi_signo);
		}
	}
}

/* Read a timerfd empty. Return: the expirations read (a periodic timer's missed periods). */
static uint64_t drain_timer(int fd)
{
	uint64_t n, all = 0;

	while (read(fd, &n, sizeof(n)) == sizeof(n))
		all += n;
	return all;
}

/* Detection on the software path: the sweep covers only fast-path sessions. */
static void sw_detect(struct engine *e, struct bfd_session *s, uint64_t now_ns)
{
	uint64_t dt = fsm_detect_time_ns(s);

	if (!s->fast_path && dt && now_ns - s->last_rx_ns > dt)
		engine_apply(e, s, fsm_expire(s, now_ns), false, now_ns);
}

/*
 * The tick: the dead-man heartbeat, bfdd keepalive and reconnect, and the chores of the sessions
 * that have any (session_has_chores(): the software path, no socket yet, --dp-hold). It walks
 * only those, kept on their own list, so idle fast-path sessions cost it nothing.
 */
static void tick(struct engine *e, uint64_t now_ns)
{
	uint64_t t0 = engine_now_ns(); /* now_ns is the wake-up's: other events ran since */
	struct bfd_session *s, *next;

	if (e->kernel_tx)
		kern_heartbeat(&e->kern, now_ns);
	dplane_tick(&e->dp, now_ns);
	engine_readd_check(e, now_ns);
	for (s = e->st.chores; s; s = next) {
		next = s->chore_next; /* s may be removed below */
		e->stats.tick_sessions_visited++;
		if (engine_hold_expired(e, s, now_ns))
			continue;
		sw_detect(e, s, now_ns);
		engine_retry_socket(e, s, now_ns, false);
		if (!session_has_chores(s))
			chores_del(&e->st, s);
	}
	e->stats.ticks++;
	e->stats.tick_ns += engine_now_ns() - t0;
}

int engine_run(struct engine *e)
{
	struct epoll_event evs[32];
	int err = setup(e);

	if (err) {
		pr_err("start-up failed: %s", strerror(-err));
		return err;
	}
	if (e->o.pin_dir && e->kernel_tx) {
		engine_adopt_pinned(e);
		engine_handover(e);
	}
	err = bfdd_start(e);
	if (err) {
		pr_err("start-up failed: %s", strerror(-err));
		return err;
	}
	engine_stats_write(e, false); /* the metrics file exists from the start */
	/* Under systemd (Type=notify): ready once attached and listening; a no-op elsewhere. */
	sd_notify(0, "READY=1");
	engine_takeover_say(e, 'R');
	while (!e->stop) {
		/* A stats dump in progress: look for events, then write its next sessions. */
		int n = epoll_wait(e->epfd, evs, 32, e->dump.f ? 0 : -1);
		uint64_t now = engine_now_ns();

		if (n < 0 && errno != EINTR) {
			pr_err("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;

			switch (tag >> 32) {
			case T_SIGNAL:
				on_signal(e);
				break;
			case T_RING:
				kern_ring_consume(&e->kern);
				break;
			case T_TX:
				drain_timer(e->tx_timer_fd);
				engine_note_late(&e->stats, e->tx_timer_due_ns, now);
				engine_tx_due(e, now);
				break;
			case T_TICK: {
				uint64_t n = drain_timer(e->tick_fd);

				/* The latest period due; the ones it overran were later still. */
				if (n) {
					e->tick_due_ns += (n - 1) * TICK_NS;
					engine_note_late(&e->stats, e->tick_due_ns, now);
					e->tick_due_ns += TICK_NS;
				}
				tick(e, now);
				break;
			}
			case T_DP_LISTEN:
			case T_DP_CONN:
				dplane_handle(&e->dp, tag, evs[i].events, now);
				break;
			case T_SW:
				sw_readable(e, (int)(tag & 0xffff), now);
				break;
			case T_IFMON:
				ifmon_readable(e, e->ifmon_fd);
				break;
			case T_METRICS:
				drain_timer(e->metrics_fd);
				engine_stats_write(e, false);
				break;
			}
		}
		/* Writes to bfdd from any handler may have closed a connection: act on it now. */
		dplane_reap(&e->dp);
		engine_stats_dump_step(e);
	}
	engine_stats_dump_abort(e);
	sd_notify(0, "STOPPING=1");
	if (!e->leave) {
		engine_stop_sessions(e);
		if (e->kernel_tx)
			kern_unpin(&e->kern);
	} else if (e->kernel_tx) {
		/*
		 * The program keeps answering while the next engine loads and verifies its object
		 * (seconds): the dead-man gate counts from a heartbeat this far ahead. A
		 * successor's first tick writes a current one.
		 */
		kern_heartbeat(&e->kern, engine_now_ns() + ENGINE_LEAVE_GRACE_NS);
	}
	dplane_close_all(&e->dp);
	if (e->leave)
		engine_tell_successor(e);
	sw_close(e);
	echo_socks_close(&e->echo);
	if (e->ifmon_fd >= 0)
		close(e->ifmon_fd);
	if (e->metrics_fd >= 0)
		close(e->metrics_fd);
	close(e->tick_fd);
	close(e->tx_timer_fd);
	close(e->sigfd);
	close(e->epfd);
	pr_info(e->leave ? "stopped: handed over (exit %d)" : "stopped", e->exit_code);
	return 0;
}
