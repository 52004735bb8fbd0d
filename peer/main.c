// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * main.c - bfdpeer: options, the XDP receive ring, batched sends and the event loop.
 *
 * One thread. Each pass: send every periodic packet that is due (one sendmmsg() per socket for
 * the lot), once per --scan-us look at the sessions whose detection is due (a time queue), sleep
 * in epoll until the next of those or an arrival, then drain the ring in one go. The state machine
 * is the engine's (engine/fsm.c) with every session clocked from userspace.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include "bfdpeer.h"
#include "codec.h"
#include "fsm.h"
#include "log.h"
#include "session.h"
#include "xdp_bfdpeer.skel.h"

#define NS_PER_US	1000ULL
#define NS_PER_MS	1000000ULL
#define ADDR_BUCKET	4096
#define PEER_MAX_IFACES 4

struct peer {
	struct session_table st;
	/* When each session's detection must be looked at next: its Detection Time running out
	 * (RFC 5880 6.8.4) or its Demand mode's next step (6.6). Kept lazily: an arrival that
	 * pushes the deadline later leaves the entry where it is, and the check, finding time
	 * left, files it again; only a deadline that moves earlier moves the entry. A check then
	 * costs the sessions due, not a walk of every session each --scan-us. */
	struct timeq detq;
	struct bfd_session **addr_buckets; /* by addresses, for Your Discriminator zero */
	struct bfd_session **addr_next;	   /* chain, by slot */
	struct peer_tx tx;
	struct peer_stats stats;
	struct xdp_bfdpeer *skel;
	struct ring_buffer *ring;
	/* The interfaces XDP is attached to: the first is the link-local scope; more receive
	 * what reaches this namespace another way (multihop through a router's own link). */
	int ifindex[PEER_MAX_IFACES];
	int n_ifaces;
	uint64_t started_ns;
	uint32_t rand_state;
	const char *stats_path;
	FILE *dump;	    /* a stats dump in progress (SIGUSR1), written in steps */
	uint32_t dump_next; /* the next slot it writes */
};

#define DUMP_STEP 64 /* sessions per step of a stats dump: about 0.2 ms here */

static uint32_t rand32(struct peer *p)
{
	uint32_t x = p->rand_state; /* xorshift32: jitter needs spread, not secrecy */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return p->rand_state = x;
}

static uint32_t addr_hash(uint8_t family, bool multihop, const uint8_t local[16],
			  const uint8_t peer[16])
{
	uint32_t h = 2166136261u ^ family ^ (multihop ? 0x100 : 0);
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ local[i]) * 16777619u;
	for (i = 0; i < 16; i++)
		h = (h ^ peer[i]) * 16777619u;
	return h & (ADDR_BUCKET - 1);
}

static struct bfd_session *by_addr(struct peer *p, uint8_t family, bool multihop,
				   const uint8_t local[16], const uint8_t peer[16])
{
	struct bfd_session *s = p->addr_buckets[addr_hash(family, multihop, local, peer)];

	for (; s; s = p->addr_next[s->slot])
		if (s->family == family && s->multihop == multihop &&
		    !memcmp(s->local_addr, local, 16) && !memcmp(s->peer_addr, peer, 16))
			return s;
	return NULL;
}

/* When check_detection() must look at @s next (CLOCK_MONOTONIC ns), 0 for never. */
static uint64_t detect_check_ns(const struct bfd_session *s)
{
	uint64_t dt = fsm_detect_time_ns(s), demand_ns = fsm_next_demand_ns(s);
	uint64_t expiry_ns = dt ? s->last_rx_ns + dt + 1 : 0; /* expired once past last + dt */

	if (!expiry_ns || (demand_ns && demand_ns < expiry_ns))
		return demand_ns;
	return expiry_ns;
}

/*
 * File @s in the detection queue if its next check is now sooner than the queue has it; never
 * at or before @t_ns, so a check pass at @t_ns ends.
 */
static void detq_refresh(struct peer *p, const struct bfd_session *s, uint64_t t_ns)
{
	uint64_t at_ns = detect_check_ns(s), queued_ns = timeq_at(&p->detq, s->slot);

	if (at_ns && at_ns <= t_ns)
		at_ns = t_ns + 1;
	if (at_ns && (!queued_ns || at_ns < queued_ns))
		timeq_set(&p->detq, s->slot, at_ns);
}

/* Carry out the state machine's actions (fsm.h); there is no fast path to publish to. */
static void apply(struct peer *p, struct bfd_session *s, unsigned acts, uint64_t t_ns)
{
	/* Any state machine call may have shortened the Detection Time or started one. */
	detq_refresh(p, s, t_ns);
	if (acts & (FSM_SEND | FSM_FINAL)) {
		peer_tx_queue(&p->tx, s, acts & FSM_FINAL, t_ns);
		if ((acts & FSM_FINAL) && (acts & FSM_SEND) && s->poll_active)
			peer_tx_queue(&p->tx, s, false, t_ns); /* our own Poll must still go out */
	}
	/* A Final alone goes out off the periodic schedule (RFC 5880 6.8.7): keep it. */
	if (acts & FSM_SEND)
		peer_tx_schedule_after_flush(&p->tx, s, t_ns);
	else if (acts & FSM_SCHEDULE)
		peer_tx_schedule(&p->tx, s, t_ns);
}

static void send_due(struct peer *p, uint64_t t_ns)
{
	struct bfd_session *s;
	uint64_t late;

	while ((s = txq_first(&p->st)) && s->next_tx_ns <= t_ns) {
		late = t_ns - s->next_tx_ns;
		if (late > p->stats.tx_late_max_ns)
			p->stats.tx_late_max_ns = late;
		p->stats.tx_late_over_1ms += late > NS_PER_MS;
		p->stats.tx_late_over_5ms += late > 5 * NS_PER_MS;
		peer_tx_queue(&p->tx, s, false, t_ns);
		peer_tx_schedule_after_flush(&p->tx, s, t_ns);
	}
	peer_tx_flush(&p->tx);
}

/*
 * RFC 5880 6.8.4: Down with diag 1 once a Detection Time passes without a packet; in Demand
 * mode (6.6), the periodic Poll begins, or Down once one went a Detection Time unanswered.
 */
static void check_detection(struct peer *p, uint64_t t_ns)
{
	const struct timeq_entry *e;

	while ((e = timeq_first(&p->detq)) && e->at_ns <= t_ns) {
		struct bfd_session *s = p->st.by_slot[e->slot];
		uint8_t was = s ? s->session_state : 0;
		unsigned acts;
		uint64_t dt;

		timeq_set(&p->detq, e->slot, 0);
		if (!s)
			continue;
		/* bfdpeer's Demand runs against a peer in Demand mode: no periodic packet to ride
		 */
		if ((acts = fsm_demand_due(s, t_ns, 0))) {
			p->stats.detections += was == BFD_STATE_UP && s->session_state != was;
			apply(p, s, acts, t_ns);
		} else if ((dt = fsm_detect_time_ns(s)) && t_ns - s->last_rx_ns > dt) {
			p->stats.detections++;
			apply(p, s, fsm_expire(s, t_ns), t_ns);
		}
		detq_refresh(p, s, t_ns); /* its next check (apply() may have filed it already) */
	}
}

/* --- receiving --- */

static int on_arrival(void *ctx, void *data, size_t size)
{
	struct peer *p = ctx;
	const struct bfdpeer_arrival *a = data;
	enum bfd_drop_reason why;
	struct bfd_session *s;
	struct bfd_pkt pkt;
	bool multihop;
	uint64_t t_ns = peer_now_ns(), delay;

	if (size < sizeof(*a))
		return 0;
	p->stats.rx_packets++;
	delay = t_ns > a->ts_ns ? t_ns - a->ts_ns : 0;
	if (delay > p->stats.rx_delay_max_ns)
		p->stats.rx_delay_max_ns = delay;
	why = codec_decode(&a->pkt, a->payload_len, &pkt);
	if (why != BFD_DROP_NONE) {
		p->stats.rx_dropped[why]++;
		return 0;
	}
	multihop = a->local_port == BFD_PORT_MULTIHOP;
	s = pkt.your_disc ? sessions_by_lid(&p->st, pkt.your_disc)
			  : by_addr(p, a->family, multihop, a->local_addr, a->peer_addr);
	if (!s || s->multihop != multihop || s->family != a->family ||
	    memcmp(s->peer_addr, a->peer_addr, 16)) {
		p->stats.rx_no_session++;
		return 0;
	}
	if (a->ttl < s->min_ttl) {
		p->stats.rx_bad_ttl++;
		return 0;
	}
	p->stats.rx_accepted++;
	s->sw_rx_packets++;
	/* Time the arrival by the XDP stamp: detection counts from when it arrived. */
	apply(p, s, fsm_rx(s, &pkt, a->ts_ns < t_ns ? a->ts_ns : t_ns), t_ns);
	return 0;
}

static void read_xdp_counters(struct peer *p)
{
	int fd = bpf_map__fd(p->skel->maps.peer_counters), ncpu = libbpf_num_possible_cpus();
	uint64_t vals[256];
	uint32_t k;
	int c;

	if (ncpu <= 0 || ncpu > 256)
		return;
	for (k = 0; k < BFDPEER_CNT__COUNT; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			continue;
		p->stats.xdp[k] = 0;
		for (c = 0; c < ncpu; c++)
			p->stats.xdp[k] += vals[c];
	}
}

/* Start a stats dump (SIGUSR1); dump_step() writes it DUMP_STEP sessions per loop pass. */
static void dump_start(struct peer *p)
{
	if (!p->stats_path || p->dump)
		return; /* one at a time: the one in progress answers this request too */
	read_xdp_counters(p);
	p->dump = peer_stats_begin(p->stats_path, &p->stats, p->st.by_slot, p->st.slots_in_use,
				   p->started_ns, peer_now_ns());
	p->dump_next = 0;
	if (!p->dump)
		pr_err("stats: writing %s.tmp failed: %s", p->stats_path, strerror(errno));
}

/* Return: whether the dump still has sessions to write. */
static bool dump_step(struct peer *p, uint32_t count)
{
	uint32_t end = p->dump_next + count;
	int err;

	if (!p->dump)
		return false;
	if (end > p->st.slots_in_use)
		end = p->st.slots_in_use;
	p->dump_next = peer_stats_sessions(p->dump, p->st.by_slot, p->dump_next, end);
	if (p->dump_next < p->st.slots_in_use)
		return true;
	err = peer_stats_end(p->dump, p->stats_path);
	p->dump = NULL;
	if (err)
		pr_err("stats: writing %s failed: %s", p->stats_path, strerror(-err));
	return false;
}

/* The last dump, all at once (exit). */
static void dump_now(struct peer *p)
{
	if (p->dump)
		dump_step(p, UINT32_MAX);
	dump_start(p);
	dump_step(p, UINT32_MAX);
}

/* --- set-up --- */

static int add_sessions(struct peer *p, const struct peer_session_cfg *cfgs, int n,
			uint32_t disc_base)
{
	uint64_t t_ns = peer_now_ns();
	int i;

	if (sessions_init(&p->st, (uint32_t)n) || timeq_init(&p->detq, (uint32_t)n))
		return -ENOMEM;
	p->addr_buckets = calloc(ADDR_BUCKET, sizeof(*p->addr_buckets));
	p->addr_next = calloc((size_t)n, sizeof(*p->addr_next));
	if (!p->addr_buckets || !p->addr_next ||
	    peer_tx_init(&p->tx, &p->st, &p->stats, (uint32_t)n))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct peer_session_cfg *c = &cfgs[i];
		uint32_t disc = c->my_disc ? c->my_disc : disc_base + (uint32_t)i;
		struct fsm_config fc = {
		    .desired_min_tx_us = c->desired_min_tx_us,
		    .required_min_rx_us = c->required_min_rx_us,
		    .detect_mult = c->detect_mult,
		    .passive = c->passive,
		    .shutdown = c->admin_down,
		    .demand = c->demand,
		    .demand_poll_us = c->demand_poll_us,
		};
		struct bfd_session *s;
		uint32_t h;

		if (!disc || sessions_by_lid(&p->st, disc)) {
			pr_err("sessions[%d]: discriminator %u is zero or taken", i, disc);
			return -EINVAL;
		}
		s = sessions_add(&p->st, disc);
		if (!s)
			return -ENOMEM;
		s->local_disc = disc;
		s->family = c->family;
		s->multihop = c->multihop;
		s->min_ttl = c->min_ttl;
		memcpy(s->local_addr, c->local_addr, 16);
		memcpy(s->peer_addr, c->peer_addr, 16);
		h = addr_hash(s->family, s->multihop, s->local_addr, s->peer_addr);
		p->addr_next[s->slot] = p->addr_buckets[h];
		p->addr_buckets[h] = s;
		fsm_start(s, &fc, t_ns);
		/* 6.8.7: the first packet of each session at a random point of its interval,
		 * so a long list does not start as one burst. */
		s->next_tx_ns = fsm_next_tx_ns(s, t_ns);
		if (s->next_tx_ns)
			s->next_tx_ns = t_ns + (s->next_tx_ns - t_ns) * (rand32(p) % 1000) / 1000;
		txq_update(&p->st, s);
	}
	return 0;
}

static int attach_xdp(struct peer *p, const char *const *ifnames, int n_ifnames,
		      uint32_t ring_bytes)
{
	int err, i;

	p->skel = xdp_bfdpeer__open();
	if (!p->skel)
		return -errno;
	if (ring_bytes)
		bpf_map__set_max_entries(p->skel->maps.arrivals, ring_bytes);
	err = xdp_bfdpeer__load(p->skel);
	if (err) {
		pr_err("loading the XDP program failed: %s", strerror(-err));
		return err;
	}
	/* One program and one arrival ring for every interface: arrivals are matched by
	 * addresses and discriminators, wherever they came in. */
	for (i = 0; i < n_ifnames; i++) {
		int ifindex = (int)if_nametoindex(ifnames[i]);

		if (!ifindex) {
			pr_err("interface %s: %s", ifnames[i], strerror(errno));
			return -ENODEV;
		}
		/* Native mode only: bfdpeer's point is to see arrivals before the stack does. */
		err = bpf_xdp_attach(ifindex, bpf_program__fd(p->skel->progs.xdp_bfdpeer),
				     XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL);
		if (err) {
			pr_err("attaching XDP to %s (native mode) failed: %s", ifnames[i],
			       strerror(-err));
			return err;
		}
		p->ifindex[p->n_ifaces++] = ifindex;
		pr_info("bfdpeer: XDP attached to %s (ifindex %d)", ifnames[i], ifindex);
	}
	p->ring = ring_buffer__new(bpf_map__fd(p->skel->maps.arrivals), on_arrival, p, NULL);
	return p->ring ? 0 : -errno;
}

static void detach_xdp(struct peer *p)
{
	int i;

	if (p->ring)
		ring_buffer__free(p->ring);
	for (i = 0; i < p->n_ifaces; i++)
		bpf_xdp_detach(p->ifindex[i], XDP_FLAGS_DRV_MODE, NULL);
	if (p->skel)
		xdp_bfdpeer__destroy(p->skel);
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: bfdpeer --interface IFNAME [--interface IFNAME...] --sessions FILE.json "
	    "[options]\n"
	    "A BFD session emulator (RFC 5880, 5881 single hop, 5883 multihop; IPv4 and IPv6).\n"
	    "\n"
	    "  -i, --interface IFNAME   receive on IFNAME through an XDP program (native mode);\n"
	    "                           every BFD Control datagram arriving there is ours;\n"
	    "                           up to 4 (the first scopes link-local destinations;\n"
	    "                           more: multihop arriving through a router's link)\n"
	    "  -s, --sessions FILE      the session list: {\"sessions\": [{\"local\": ADDR,\n"
	    "                           \"peer\": ADDR, \"interval_ms\": N, ...}]} "
	    "(docs/bfdpeer.md;\n"
	    "                           python3 -m lab peer-sessions TOPOLOGY writes one)\n"
	    "  -S, --stats FILE         write the stats JSON here on SIGUSR1 and at exit\n"
	    "  -l, --log-file FILE      log here (appended) instead of stderr\n"
	    "  -q, --quiet              log warnings and errors only (no state changes)\n"
	    "      --src-port PORT      UDP source port of single-hop sessions (multihop: "
	    "PORT+1);\n"
	    "                           49152..65534 (RFC 5881 section 4), default 49152\n"
	    "      --disc-base N        My Discriminator of session i is N+i unless the list\n"
	    "                           gives my_disc; default from the clock (restarts differ)\n"
	    "      --scan-us N          detection check period in us (RFC 5880 6.8.4), default "
	    "1000\n"
	    "      --ring-kib N         XDP arrival ring in KiB (power of two), default 1024\n"
	    "  -h, --help               this text\n"
	    "\n"
	    "SIGUSR1 writes the stats; SIGTERM or SIGINT sends AdminDown (diag 7) on every\n"
	    "session, writes the stats and exits 0. Exit 2: bad options or session list;\n"
	    "1: set-up failed (interface, XDP, sockets).\n");
}

static int parse_ulong(const char *opt, const char *text, unsigned long lo, unsigned long hi,
		       unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(text, &end, 0);
	if (errno || *end || !*text || *out < lo || *out > hi) {
		fprintf(stderr, "bfdpeer: %s: %s is not a number in %lu..%lu\n", opt, text, lo, hi);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"interface", required_argument, NULL, 'i'},
	    {"sessions", required_argument, NULL, 's'},
	    {"stats", required_argument, NULL, 'S'},
	    {"log-file", required_argument, NULL, 'l'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"src-port", required_argument, NULL, 'P'},
	    {"disc-base", required_argument, NULL, 'D'},
	    {"scan-us", required_argument, NULL, 'T'},
	    {"ring-kib", required_argument, NULL, 'R'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *ifnames[PEER_MAX_IFACES], *sessions_path = NULL, *log_path = NULL;
	unsigned long src_port = 49152, disc_base = 0, scan_us = 1000, ring_kib = 1024;
	struct peer_session_cfg *cfgs = NULL;
	static struct peer p;
	struct epoll_event ev, evs[4];
	int opt, n, i, epfd, sfd, n_ifnames = 0, rc = 1;
	uint64_t next_scan_ns, t_ns;
	char err[512];
	sigset_t mask;
	bool quiet = false, stop = false;

	while ((opt = getopt_long(argc, argv, "i:s:S:l:qh", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (n_ifnames == PEER_MAX_IFACES) {
				fprintf(stderr, "bfdpeer: --interface: at most %d\n",
					PEER_MAX_IFACES);
				return 2;
			}
			ifnames[n_ifnames++] = optarg;
			break;
		case 's':
			sessions_path = optarg;
			break;
		case 'S':
			p.stats_path = optarg;
			break;
		case 'l':
			log_path = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'P':
			if (parse_ulong("--src-port", optarg, 49152, 65534, &src_port))
				return 2;
			break;
		case 'D':
			if (parse_ulong("--disc-base", optarg, 1, 0xfff00000ul, &disc_base))
				return 2;
			break;
		case 'T':
			if (parse_ulong("--scan-us", optarg, 50, 100000, &scan_us))
				return 2;
			break;
		case 'R':
			if (parse_ulong("--ring-kib", optarg, 4, 1 << 20, &ring_kib) ||
			    (ring_kib & (ring_kib - 1))) {
				fprintf(stderr, "bfdpeer: --ring-kib must be a power of two\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !n_ifnames || !sessions_path) {
		fprintf(stderr, "bfdpeer: --interface and --sessions are required\n");
		usage(stderr);
		return 2;
	}
	n = peer_sessions_load(sessions_path, &cfgs, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "bfdpeer: %s\n", err);
		return 2;
	}
	if (log_path && log_open(log_path)) {
		fprintf(stderr, "bfdpeer: --log-file %s: %s\n", log_path, strerror(errno));
		return 2;
	}
	log_set_program("bfdpeer");
	log_set_level(quiet ? LOG_WARN : LOG_INFO);
	log_hook_libbpf();
	prctl(PR_SET_TIMERSLACK, 1UL); /* wake on time: 10 ms sessions have 2.5 ms of jitter */

	p.started_ns = peer_now_ns();
	p.rand_state = (uint32_t)p.started_ns | 1;
	if (!disc_base)
		disc_base = 1 + ((uint32_t)(p.started_ns / 1000) & 0x7fffffff) % 0x7ff00000u;
	if (add_sessions(&p, cfgs, n, (uint32_t)disc_base))
		goto out;
	for (i = 0; i < PEER_TX_SOCKS; i++) {
		p.tx.q[i].fd = peer_tx_open_socket(i >= 2 ? 6 : 4, (uint16_t)(src_port + (i & 1)));
		if (p.tx.q[i].fd < 0) {
			pr_err("UDP socket for port %lu: %s", src_port + (i & 1),
			       strerror(-p.tx.q[i].fd));
			goto out;
		}
	}
	if (attach_xdp(&p, ifnames, n_ifnames, (uint32_t)ring_kib * 1024))
		goto out;
	p.tx.ifindex = p.ifindex[0];

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || epfd < 0)
		goto out;
	ev.events = EPOLLIN;
	ev.data.u32 = 0;
	epoll_ctl(epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(p.ring), &ev);
	ev.data.u32 = 1;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
	pr_info("bfdpeer: %d sessions from %s; source ports %lu/%lu", n, sessions_path, src_port,
		src_port + 1);

	next_scan_ns = peer_now_ns() + scan_us * NS_PER_US;
	while (!stop) {
		struct bfd_session *first;
		uint64_t wake_ns;
		struct timespec to;
		int k, m;

		t_ns = peer_now_ns();
		send_due(&p, t_ns);
		if (t_ns >= next_scan_ns) {
			check_detection(&p, t_ns);
			peer_tx_flush(&p.tx);
			next_scan_ns = t_ns + scan_us * NS_PER_US;
		}
		first = txq_first(&p.st);
		wake_ns =
		    first && first->next_tx_ns < next_scan_ns ? first->next_tx_ns : next_scan_ns;
		t_ns = peer_now_ns();
		wake_ns = wake_ns > t_ns ? wake_ns - t_ns : 0;
		if (dump_step(&p, DUMP_STEP))
			wake_ns = 0; /* more to write: only look for arrivals and signals */
		to.tv_sec = (time_t)(wake_ns / 1000000000ULL);
		to.tv_nsec = (long)(wake_ns % 1000000000ULL);
		m = epoll_pwait2(epfd, evs, 4, &to, NULL);
		for (k = 0; k < m; k++) {
			struct signalfd_siginfo si;

			if (evs[k].data.u32 != 1)
				continue;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGUSR1)
					dump_start(&p);
				else
					stop = true;
			}
		}
		ring_buffer__consume(p.ring);
		peer_tx_flush(&p.tx);
	}
	/* RFC 5880 6.8.16: tell every peer we are going away on purpose. */
	t_ns = peer_now_ns();
	for (i = 0; i < (int)p.st.slots_in_use; i++)
		if (p.st.by_slot[i])
			apply(&p, p.st.by_slot[i], fsm_admin_down(p.st.by_slot[i], t_ns), t_ns);
	peer_tx_flush(&p.tx);
	dump_now(&p);
	pr_info("bfdpeer: stopped: %llu packets sent, %llu received",
		(unsigned long long)p.stats.tx_packets, (unsigned long long)p.stats.rx_packets);
	rc = 0;
out:
	detach_xdp(&p);
	free(cfgs);
	return rc;
}
