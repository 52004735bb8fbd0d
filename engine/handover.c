// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * handover.c - a live handover between two engines (--pin): see engine.h. Everything that costs
 * time (loading and verifying the object, reading the pinned sessions, opening their sockets,
 * connecting to bfdd) is done before the links are switched, so the handover itself is the
 * bpf_link_update() calls and one signal.
 */
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
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
	s->heard = rx->rx_packets || s->session_state != BFD_STATE_DOWN;
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
	kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
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

/* Wait up to @timeout_ms for the process behind @pidfd to exit. Return: true if it did. */
static bool gone(int pidfd, int timeout_ms)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	return poll(&p, 1, timeout_ms) == 1;
}

void engine_handover(struct engine *e)
{
	pid_t old = running_engine(kern_pin_owner(&e->kern));
	int pidfd = old ? (int)syscall(SYS_pidfd_open, old, 0) : -1;
	uint64_t t0 = engine_now_ns(), t1;
	bool links = false, left = true;

	for (int i = 0; i < e->kern.n_ifaces; i++)
		links |= e->kern.ifaces[i].pending;
	/* The program the links switch to gates its replies on a fresh heartbeat. */
	kern_heartbeat(&e->kern, t0);
	kern_takeover(&e->kern);
	if (old && kill(old, SIGUSR2))
		pr_warn("pin: asking engine PID %d to leave: %s", (int)old, strerror(errno));
	if (kern_pin_set_owner(&e->kern, getpid()))
		pr_warn("pin: writing %s/owner failed: %s; the next engine cannot ask this one to "
			"leave",
			e->o.pin_dir, strerror(errno));
	/*
	 * bfdd (8.4.4) offers a new data-plane connection only the sessions no connection holds:
	 * connect once the old engine's connection is closed, i.e. once it has exited.
	 */
	if (pidfd >= 0) {
		left = gone(pidfd, HANDOVER_WAIT_MS);
		close(pidfd);
		/* Its close reached bfdd with its exit: let bfdd read that before our connect. */
		usleep(HANDOVER_BFDD_SETTLE_US);
	}
	t1 = engine_now_ns();
	if (!left)
		pr_warn("pin: engine PID %d has not left after %d ms; going on", (int)old,
			HANDOVER_WAIT_MS);
	if (!links && !old) {
		pr_info("pin: no previous engine in %s; state pinned for the next one",
			e->o.pin_dir);
		return;
	}
	pr_info("handover: %.3f ms (XDP links switched, engine PID %d asked to leave); %u sessions "
		"adopted, %u Up; prepared in %.1f ms since start",
		(double)(t1 - t0) / 1e6, (int)old, e->adopted, e->adopted_up,
		(double)(t0 - e->start_ns) / 1e6);
}
