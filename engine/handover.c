// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * handover.c - a live handover between two engines (--pin): see engine.h. Everything that costs
 * time (loading and verifying the object, reading the pinned sessions, opening their sockets,
 * connecting to bfdd) is done before the program is switched, so the handover itself is one
 * map update (kern_takeover(): slot 0 of the pinned prog array) and one signal.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include "engine.h"
#include "fsm.h"
#include "glue.h"
#include "tx.h"

#define HANDOVER_WAIT_MS	5000 /* for the old engine to exit before bfdd is connected */
#define HANDOVER_BFDD_SETTLE_US 1000

/* The session state a previous engine published, back into an engine session. */
static void restore(struct engine *e, struct bfd_session *s, const struct bfd_session_params *p,
		    const struct bfd_session_rx *rx, uint64_t now_ns)
{
	s->incarnation = p->incarnation;
	if (p->incarnation > e->incarnations)
		e->incarnations = p->incarnation;
	s->local_disc = p->local_disc;
	s->family = (p->session_flags & BFD_SF_IPV6) ? 6 : 4;
	s->multihop = !!(p->session_flags & BFD_SF_MULTIHOP);
	s->min_ttl = p->min_ttl;
	memcpy(s->local_addr, p->local_addr, 16);
	memcpy(s->peer_addr, p->peer_addr, 16);
	s->ifindex = p->ifindex;
	if (s->ifindex && !if_indextoname(s->ifindex, s->ifname))
		s->ifindex = 0;
	snprintf(s->cfg_ifname, sizeof(s->cfg_ifname), "%s", s->ifname);
	s->local_port = p->local_port;
	s->cfg_gen = p->cfg_gen;
	s->from_pin = true;
	s->sw_fed = !!(p->session_flags & BFD_SF_SOFTWARE);

	s->session_state = p->session_state;
	s->local_diag = p->local_diag;
	s->cfg_detect_mult = p->detect_mult;
	s->cpi = !!(p->session_flags & BFD_SF_CPI);
	/* bfdd's ADD brings its configuration; until then, what was on the wire. */
	s->cfg_desired_min_tx_us = p->desired_min_tx_us;
	s->cfg_required_min_rx_us = p->required_min_rx_us;
	s->desired_min_tx_us = p->desired_min_tx_us;
	s->required_min_rx_us = p->required_min_rx_us;
	s->remote_disc = p->remote_disc;
	s->poll_seq = p->poll_seq;
	s->poll_active = !!(p->session_flags & BFD_SF_POLL);
	s->tx_in_force_us = p->tx_in_force_us;
	s->rx_in_force_us = p->required_min_rx_us;

	s->remote_session_state = rx->remote_state;
	s->remote_diag = rx->remote_diag;
	s->remote_flags = rx->remote_flags;
	s->remote_detect_mult = rx->remote_detect_mult;
	s->remote_desired_min_tx_us = rx->remote_desired_min_tx_us;
	s->remote_min_rx_us = rx->remote_required_min_rx_us ? rx->remote_required_min_rx_us : 1;
	s->remote_min_echo_rx_us = rx->remote_required_min_echo_rx_us;
	s->remote_demand_mode = !!(rx->remote_flags & BFD_FLAG_DEMAND);
	s->last_rx_ns = rx->last_rx_ns;
	s->state_since_ns = now_ns;

	/* bfdd marks a session Down when it offers it to a new connection: report it at its ADD. */
	s->reported = false;
	s->hold_until_ns = now_ns + (uint64_t)e->o.dp_hold_s * 1000000000ULL;
}

void engine_adopt_pinned(struct engine *e)
{
	uint64_t now = engine_now_ns();
	uint32_t max = e->o.max_sessions;
	char b[128];

	if (!e->kernel_tx || !e->kern.adopted)
		return;
	engine_ifaddrs_hold(true); /* one address list for all: no address changes meanwhile */
	for (uint32_t slot = 0; slot < max; slot++) {
		struct bfd_session_params p;
		struct bfd_session_rx rx = {0};
		struct bfd_session *s;
		int err;

		if (kern_session_cfg(&e->kern, slot, &p) || !(p.session_flags & BFD_SF_ACTIVE))
			continue;
		kern_session_rx(&e->kern, slot, &rx);
		s = sessions_add_at(&e->st, p.local_disc, slot);
		if (!s) {
			pr_err("pin: slot %u (discriminator %u): no room; not adopted", slot,
			       p.local_disc);
			continue;
		}
		restore(e, s, &p, &rx, now);
		sessions_file_addr(&e->st, s);
		/* Same slot, same first port: SO_REUSEADDR shares it with the leaving engine. */
		err = tx_open(s);
		if (err) {
			pr_err("session %s: no socket to send from: %s (retried each second)",
			       session_str(s, b, sizeof(b)), strerror(-err));
			s->tx_retry_ns = now + TX_RETRY_NS;
		}
		if (!s->sw_fed)
			engine_place_session(e, s);
		/* This engine's sweep wheel is new: the next sweep schedules the slot again. */
		kern_session_arm(&e->kern, slot);
		engine_apply(e, s, FSM_SCHEDULE, false, now);
		e->adopted++;
		if (s->session_state == BFD_STATE_UP)
			e->adopted_up++;
		pr_debug("session %s: adopted from the pins (%s)", session_str(s, b, sizeof(b)),
			 bfd_state_name(s->session_state));
	}
	engine_ifaddrs_hold(false);
	kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
	pr_info("pin: %u sessions adopted in %.1f ms", e->adopted,
		(double)(engine_now_ns() - now) / 1e6);
}

/* @pid if it is another running xdp-bfd (DIR/owner may name a PID reused since), else 0. */
static pid_t running_engine(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	if (pid <= 0 || pid == getpid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return strncmp(comm, "xdp-bfd", 7) ? 0 : pid;
}

void engine_preconnect(struct engine *e)
{
	struct kern k = {0};
	int n = (int)((e->o.max_sessions + DPLANE_OFFER_MAX - 1) / DPLANE_OFFER_MAX);
	pid_t owner;

	if (!e->o.pin_dir || !e->o.dplane_connect || e->o.takeover_fd >= 0)
		return;
	snprintf(k.pin_dir, sizeof(k.pin_dir), "%s", e->o.pin_dir);
	owner = kern_pin_owner(&k);
	if (!owner || running_engine(owner))
		return; /* no pinned sessions, or their engine serves bfdd until it is asked */
	n = n < DPLANE_MAX_CONNS - 1 ? n : DPLANE_MAX_CONNS - 1;
	e->n_early = dplane_preconnect(e->o.dplane_connect, e->early_fds, n);
	if (e->n_early < 0)
		e->n_early = 0;
	pr_info("pin: engine PID %d no longer runs: %d connections to bfdd opened before loading, "
		"so bfdd stops its own timers for the pinned sessions",
		(int)owner, e->n_early);
}

pid_t engine_pin_running(const char *pin_dir)
{
	struct kern k = {0};

	snprintf(k.pin_dir, sizeof(k.pin_dir), "%s", pin_dir);
	return running_engine(kern_pin_owner(&k));
}

void engine_takeover_say(struct engine *e, char what)
{
	if (e->o.takeover_fd < 0)
		return;
	/* The command may have given up (timeout) and gone: EPIPE is not this engine's error. */
	if (write(e->o.takeover_fd, &what, 1) != 1)
		pr_warn("takeover: telling the waiting command '%c': %s", what, strerror(errno));
	if (what == 'R') {
		close(e->o.takeover_fd);
		e->o.takeover_fd = -1;
	}
}

void engine_tell_successor(struct engine *e)
{
	if (running_engine(e->leave_for) && kill(e->leave_for, SIGCONT))
		pr_warn("pin: telling engine PID %d that bfdd is let go: %s", (int)e->leave_for,
			strerror(errno));
}

/*
 * Wait up to @timeout_ms for the old engine to let bfdd go. Return: "said so" (its SIGCONT on
 * @sigfd, engine_tell_successor()), "exited" (@pidfd), or NULL when neither came.
 */
static const char *let_go(int pidfd, int sigfd, int timeout_ms)
{
	struct pollfd p[2] = {{.fd = sigfd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};

	if (poll(p, 2, timeout_ms) <= 0)
		return NULL;
	return (p[0].revents & POLLIN) ? "said so" : "exited";
}

/* Ask @old to leave (SIGUSR2); its SIGCONT will come on the returned signalfd (or -1). */
static int ask_to_leave(pid_t old, sigset_t *cont)
{
	int sigfd;

	/* Blocked before asking, so its answer cannot come first and be lost. */
	sigaddset(cont, SIGCONT);
	sigprocmask(SIG_BLOCK, cont, NULL);
	sigfd = signalfd(-1, cont, SFD_CLOEXEC);
	if (kill(old, SIGUSR2))
		pr_warn("pin: asking engine PID %d to leave: %s", (int)old, strerror(errno));
	return sigfd;
}

void engine_handover(struct engine *e)
{
	pid_t old = running_engine(kern_pin_owner(&e->kern));
	int pidfd = old ? (int)syscall(SYS_pidfd_open, old, 0) : -1, sigfd = -1;
	uint64_t t0, t_sw, t_links, t_gone, t1;
	const char *how = "exited";
	bool links;
	sigset_t cont;

	/*
	 * Under --sched-deadline the start-up (sockets, adoption) has spent this period's runtime:
	 * woken by the old engine's SIGCONT, this engine then waited for its next period (the old
	 * engine answered within 0.6 ms, this one saw it 13-29 ms later in run 20261203T121011Z,
	 * 1,024 sessions at 1 ms every 10 ms). sched_yield() gives up the rest (throttled to the
	 * period's end, at most 10 ms more of the old engine serving), so the handover starts with
	 * the whole runtime.
	 */
	if (sched_getscheduler(0) == SCHED_DEADLINE)
		sched_yield();
	t0 = engine_now_ns();
	sigemptyset(&cont);
	links = e->kern.progs_pending;
	for (int i = 0; i < e->kern.n_ifaces; i++)
		links |= e->kern.ifaces[i].pending;
	/* The program the links switch to gates its replies on a fresh heartbeat. */
	kern_heartbeat(&e->kern, t0);
	if (old) {
		/*
		 * Under systemd this engine becomes the main process before the old one leaves, so
		 * the old one's exit is not the service's (NotifyAccess=all lets a process that
		 * systemd did not start say so). A no-op without NOTIFY_SOCKET.
		 */
		sd_notifyf(0, "MAINPID=%d", (int)getpid());
		engine_takeover_say(e, 'M');
	}
	/*
	 * Switched before the old engine is asked to leave: asked first (run 20261202T054617Z),
	 * the switch took 7.7-11.4 ms beside its leaving on the 2-core VM, 0.8-2.0 ms without.
	 */
	t_sw = engine_now_ns();
	kern_takeover(&e->kern);
	t_links = engine_now_ns();
	if (old)
		sigfd = ask_to_leave(old, &cont);
	if (kern_pin_set_owner(&e->kern, getpid()))
		pr_warn("pin: writing %s/owner failed: %s; the next engine cannot ask this one to "
			"leave",
			e->o.pin_dir, strerror(errno));
	/*
	 * bfdd (8.4.4) offers a new data-plane connection only the sessions no connection holds:
	 * connect once the old engine's connections are closed (it says so, or it has exited).
	 */
	if (pidfd >= 0) {
		how = let_go(pidfd, sigfd, HANDOVER_WAIT_MS);
		t_gone = engine_now_ns();
		close(pidfd);
		/* Let bfdd read the closes before we connect (engine_readd_check(): a miss). */
		usleep(HANDOVER_BFDD_SETTLE_US);
	}
	if (sigfd >= 0)
		close(sigfd);
	sigprocmask(SIG_UNBLOCK, &cont, NULL);
	t1 = engine_now_ns();
	if (pidfd < 0)
		t_gone = t1;
	if (!how)
		pr_warn("pin: engine PID %d has not left after %d ms; going on", (int)old,
			HANDOVER_WAIT_MS);
	if (!links && !old) {
		pr_info("pin: no previous engine in %s; state pinned for the next one",
			e->o.pin_dir);
		return;
	}
	pr_info(
	    "handover: %.3f ms (XDP program switched, engine PID %d asked to leave); %u sessions "
	    "adopted, %u Up; switch: %s, %.3f ms; old engine %s %.3f ms later; prepared in "
	    "%.1f ms since start",
	    (double)(t1 - t0) / 1e6, (int)old, e->adopted, e->adopted_up, e->kern.switched,
	    (double)(t_links - t_sw) / 1e6, old ? (how ? how : "still running") : "none",
	    (double)(t_gone - t_links) / 1e6, (double)(t0 - e->start_ns) / 1e6);
}

void engine_readd_check(struct engine *e, uint64_t now_ns)
{
	uint32_t waiting = 0;
	int err;

	if (!e->adopted || e->readd_probes >= ENGINE_READD_PROBES || !dplane_connected(&e->dp) ||
	    now_ns - e->last_add_ns < ENGINE_READD_QUIET_NS)
		return;
	for (uint32_t i = 0; i < e->st.slots_in_use; i++)
		waiting += e->st.by_slot[i] && e->st.by_slot[i]->from_pin;
	if (!waiting) {
		e->readd_probes = ENGINE_READD_PROBES; /* all back: nothing more to ask for */
		return;
	}
	e->readd_probes++;
	e->last_add_ns = now_ns;
	err = dplane_connect_more(&e->dp, now_ns);
	pr_info("pin: %u adopted sessions not added again by bfdd %llu ms after its last ADD; %s%s",
		waiting, ENGINE_READD_QUIET_NS / 1000000ULL,
		err ? "cannot connect once more: " : "connecting once more (held until then)",
		err ? strerror(-err) : "");
}
