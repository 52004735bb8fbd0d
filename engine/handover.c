// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * handover.c - a live handover between two engines (--pin): see engine.h. Everything that costs
 * time (loading and verifying the object, reading the pinned sessions, opening their sockets,
 * connecting to bfdd) is done before the links are switched, so the handover itself is the
 * bpf_link_update() calls and one signal.
 */
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine.h"
#include "fsm.h"
#include "glue.h"
#include "tx.h"

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

	/* bfdd (still running) already has this state: nothing to report until it changes. */
	s->reported = true;
	s->reported_state = s->session_state;
	s->reported_remote_disc = s->remote_disc;
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
		engine_apply(e, s, FSM_SCHEDULE, false, now);
		e->adopted++;
		if (s->session_state == BFD_STATE_UP)
			e->adopted_up++;
		pr_debug("session %s: adopted from the pins (%s)", session_str(s, b, sizeof(b)),
			 bfd_state_name(s->session_state));
	}
	kern_set_slots_in_use(&e->kern, e->st.slots_in_use);
}

/* The PID in DIR/engine.pid if it is another running xdp-bfd, else 0. */
static pid_t previous_engine(const char *dir)
{
	char path[300], comm[32] = "";
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/engine.pid", dir);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	fclose(f);
	if (pid <= 0 || pid == getpid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return strncmp(comm, "xdp-bfd", 7) ? 0 : (pid_t)pid;
}

static void write_pid(const char *dir)
{
	char path[300], tmp[310];
	FILE *f;

	snprintf(path, sizeof(path), "%s/engine.pid", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) || rename(tmp, path))
		pr_warn("pin: writing %s failed: %s; the next engine cannot ask this one to leave",
			path, strerror(errno));
}

void engine_handover(struct engine *e)
{
	pid_t old = previous_engine(e->o.pin_dir);
	uint64_t t0 = engine_now_ns(), t1;
	bool links = false;

	for (int i = 0; i < e->kern.n_ifaces; i++)
		links |= e->kern.ifaces[i].pending;
	/* The program the links switch to gates its replies on a fresh heartbeat. */
	kern_heartbeat(&e->kern, t0);
	kern_takeover(&e->kern);
	if (old && kill(old, SIGUSR2))
		pr_warn("pin: asking engine PID %d to leave: %s", (int)old, strerror(errno));
	write_pid(e->o.pin_dir);
	t1 = engine_now_ns();
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
