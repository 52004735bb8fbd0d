// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * main.c - xdp-bfd: options, process set-up (scheduling, file limit), run the loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "engine.h"
#include "ports.h"
#include "sched_policy.h"
#include "tx.h"
#include "writer.h"

/* Log bytes queued for the writer: about 1,500 lines of 170 bytes. */
#define WRITER_RING_BYTES (256 * 1024)

static const char usage[] =
    "Usage: xdp-bfd [OPTIONS]\n"
    "Run FRR bfdd's BFD sessions (RFC 5880/5881/5883) with replies sent from XDP.\n"
    "\n"
    "bfdd connection (one of them, or both):\n"
    "  --dplane [ADDR:]PORT       listen for bfdd started with --dplaneaddr ipv4c:ADDR:PORT\n"
    "                             (FRR 10.3 and later); ADDR defaults to 127.0.0.1\n"
    "  --dplane-connect SPEC      connect to a bfdd listening with --dplaneaddr SPEC:\n"
    "                             ipv4:A.B.C.D[:PORT], ipv6:[X::Y][:PORT] or unix:PATH\n"
    "                             (needed with FRR 8.4.4, whose client mode is broken)\n"
    "  --dp-hold SECONDS          keep sessions on the wire this long when bfdd goes away,\n"
    "                             adopting them again by address (default 0: AdminDown)\n"
    "  --pin DIR                  live handover through DIR, a bpffs directory: session maps,\n"
    "                             counters, heartbeat and XDP links pinned there; an engine\n"
    "                             started with the same options adopts them (held as under\n"
    "                             --dp-hold, which it needs), switches the XDP program\n"
    "                             (one prog array slot for every link) and makes the\n"
    "                             previous engine leave (exit 75)\n"
    "  --takeover                 with --pin, the reload command (systemd's ExecReload=): a\n"
    "                             new engine with these options is started in the background\n"
    "                             and takes over from the running one; exit 0 once it serves\n"
    "                             bfdd, 1 with the reason if there is no engine to take over\n"
    "                             from, the new one failed or did not serve within 60 s\n"
    "Fast path:\n"
    "  --kernel-tx IFACE          attach XDP to IFACE (repeatable; native mode, else generic);\n"
    "                             interfaces of later sessions are attached as they come.\n"
    "                             Without it every session runs in software\n"
    "  --xdp-generic              attach in generic (skb) mode only\n"
    "  --deadman-us USEC          stop answering in XDP when the engine's loop has not run\n"
    "                             for USEC (default 3000000; 0 disables)\n"
    "  --sweep-us USEC            detection sweep period (default 1000; 100..1000000)\n"
    "  --max-sessions N           session slots (default 1024; at most 65536)\n"
    "  --pass-unowned             hand BFD packets for unknown sessions to the stack\n"
    "                             instead of dropping them (and counting either way)\n"
    "  --spread-pass              hand traffic that is not BFD to the stack on every CPU\n"
    "                             through a cpumap, by flow, so the receiving CPU runs only\n"
    "                             the program (changes the whole interface's receive path)\n"
    "Sessions:\n"
    "  --demand all|PEER[,PEER]   Demand mode (RFC 5880 6.6) for every session, or for the\n"
    "                             sessions to these peer addresses (IPv4 or IPv6, at most\n"
    "                             64; repeatable): once both ends are Up we set D and the\n"
    "                             peer stops its periodic packets\n"
    "  --demand-poll-us USEC      in Demand mode, verify the path with a Poll Sequence this\n"
    "                             often, never more often than the Detection Time; Down\n"
    "                             (diag 1) when a Poll goes a Detection Time unanswered\n"
    "                             (default 1000000; 0: never verify, as stock bfdd)\n"
    "Process:\n"
    "  --sched-deadline R/P       SCHED_DEADLINE reservation: R us of CPU every P us\n"
    "                             (e.g. 1000/10000), taken once the object is loaded; if the\n"
    "                             kernel refuses it, log why and take SCHED_FIFO (below).\n"
    "                             Then CAP_SYS_NICE is dropped, reservation or not\n"
    "  --sched-fallback-fifo PRIO SCHED_FIFO priority when the reservation is refused\n"
    "                             (default 60, above threaded IRQs at 50; 0: stay as is)\n"
    "  --stats-dump PATH          write JSON statistics to PATH on SIGUSR1\n"
    "  --metrics-file PATH        write the statistics in the Prometheus text format to PATH\n"
    "                             (node_exporter's textfile collector: end it in .prom) at\n"
    "                             start, every --metrics-interval-ms and on SIGUSR1\n"
    "  --metrics-interval-ms MS   its period (default 10000; 100..3600000)\n"
    "  --log-file PATH            log there instead of stderr\n"
    "  --log-level LEVEL          error, warn, info (default) or debug\n"
    "  -h, --help                 this text\n"
    "  --version                  print the version and exit\n"
    "\n"
    "Signals: SIGTERM/SIGINT send AdminDown on every session, remove the pins and exit 0;\n"
    "SIGUSR1 writes the statistics (--stats-dump and --metrics-file); SIGUSR2 (with --pin)\n"
    "leaves the sessions to the next engine: no AdminDown, pins kept, exit 75.\n";

enum {
	OPT_DPLANE = 256,
	OPT_DPLANE_CONNECT,
	OPT_DP_HOLD,
	OPT_PIN,
	OPT_TAKEOVER,
	OPT_KERNEL_TX,
	OPT_XDP_GENERIC,
	OPT_DEADMAN,
	OPT_SWEEP,
	OPT_MAX_SESSIONS,
	OPT_PASS_UNOWNED,
	OPT_SPREAD_PASS,
	OPT_DEMAND,
	OPT_DEMAND_POLL,
	OPT_SCHED_DEADLINE,
	OPT_SCHED_FALLBACK_FIFO,
	OPT_STATS_DUMP,
	OPT_METRICS_FILE,
	OPT_METRICS_INTERVAL,
	OPT_LOG_FILE,
	OPT_LOG_LEVEL,
	OPT_VERSION,
};

static const struct option longopts[] = {
    {"dplane", required_argument, NULL, OPT_DPLANE},
    {"dplane-connect", required_argument, NULL, OPT_DPLANE_CONNECT},
    {"dp-hold", required_argument, NULL, OPT_DP_HOLD},
    {"pin", required_argument, NULL, OPT_PIN},
    {"takeover", no_argument, NULL, OPT_TAKEOVER},
    {"kernel-tx", required_argument, NULL, OPT_KERNEL_TX},
    {"xdp-generic", no_argument, NULL, OPT_XDP_GENERIC},
    {"deadman-us", required_argument, NULL, OPT_DEADMAN},
    {"sweep-us", required_argument, NULL, OPT_SWEEP},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"pass-unowned", no_argument, NULL, OPT_PASS_UNOWNED},
    {"spread-pass", no_argument, NULL, OPT_SPREAD_PASS},
    {"demand", required_argument, NULL, OPT_DEMAND},
    {"demand-poll-us", required_argument, NULL, OPT_DEMAND_POLL},
    {"sched-deadline", required_argument, NULL, OPT_SCHED_DEADLINE},
    {"sched-fallback-fifo", required_argument, NULL, OPT_SCHED_FALLBACK_FIFO},
    {"stats-dump", required_argument, NULL, OPT_STATS_DUMP},
    {"metrics-file", required_argument, NULL, OPT_METRICS_FILE},
    {"metrics-interval-ms", required_argument, NULL, OPT_METRICS_INTERVAL},
    {"log-file", required_argument, NULL, OPT_LOG_FILE},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* A whole decimal number in [lo, hi], or exit 2 naming the option. */
static uint64_t number(const char *opt, const char *arg, uint64_t lo, uint64_t hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "xdp-bfd: --%s wants a whole number from %llu to %llu, not '%s'\n",
			opt, (unsigned long long)lo, (unsigned long long)hi, arg);
		exit(2);
	}
	return v;
}

/* --demand all|PEER[,PEER...]: into @o, or exit 2 naming what is wrong. */
static void demand_peers(struct engine_opts *o, const char *arg)
{
	char buf[1024], *save = NULL, *tok;

	if (!strcmp(arg, "all")) {
		o->demand_all = true;
		return;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct engine_demand_peer *d = &o->demand_peers[o->n_demand_peers];

		if (o->n_demand_peers >= ENGINE_DEMAND_PEERS_MAX) {
			fprintf(stderr, "xdp-bfd: --demand: at most %d peers (or 'all')\n",
				ENGINE_DEMAND_PEERS_MAX);
			exit(2);
		}
		memset(d->addr, 0, sizeof(d->addr));
		if (inet_pton(AF_INET, tok, d->addr) == 1) {
			d->family = 4;
		} else if (inet_pton(AF_INET6, tok, d->addr) == 1) {
			d->family = 6;
		} else {
			fprintf(stderr,
				"xdp-bfd: --demand wants 'all' or peer addresses separated by "
				"commas, not '%s'\n",
				tok);
			exit(2);
		}
		o->n_demand_peers++;
	}
}

static void raise_nofile(uint32_t max_sessions)
{
	struct rlimit rl;
	/* The shared send sockets (tx.h: one per port, family and interface), plus the rest. */
	rlim_t want =
	    (rlim_t)(max_sessions < 2 * TX_PORT_SPAN ? max_sessions : 2 * TX_PORT_SPAN) + 256;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want;
	if (rl.rlim_max < want)
		rl.rlim_max = want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("cannot raise the open-file limit to %llu: %s", (unsigned long long)want,
			strerror(errno));
}

#define TAKEOVER_TIMEOUT_MS 60000 /* below systemd's 90 s default for a reload */

/*
 * The new engine has not said 'R' and the pipe is closed: it exited. It is not our child (see
 * takeover()), so its status is in its log, not here. Return: 1.
 */
static int takeover_died(pid_t child)
{
	fprintf(stderr,
		"xdp-bfd: --takeover: the new engine (PID %d) exited before serving; see its log\n",
		(int)child);
	return 1;
}

/*
 * The --takeover command waits on @fd for the new engine @child: 'M' it is the main process
 * (the old engine @old was asked to leave), 'R' it serves. Return: the exit status, 0 on 'R'.
 * On timeout before 'M' nothing was switched: the new engine is killed, the old one serves on.
 * After 'M' the new engine owns the sessions: it is left running.
 */
static int takeover_wait(int fd, pid_t child, pid_t old)
{
	struct timespec t0, t;
	bool main_pid = false;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		long left_ms;
		char c;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left_ms = TAKEOVER_TIMEOUT_MS -
			  ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left_ms <= 0 || poll(&p, 1, (int)left_ms) == 0)
			break;
		n = read(fd, &c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return takeover_died(child);
		if (c == 'M')
			main_pid = true;
		if (c == 'R') {
			printf("xdp-bfd: engine PID %d took over from engine PID %d and serves\n",
			       (int)child, (int)old);
			return 0;
		}
	}
	if (main_pid) {
		fprintf(stderr,
			"xdp-bfd: --takeover: the new engine (PID %d) holds the sessions "
			"but does not serve bfdd after %d ms; left running, see its log\n",
			(int)child, TAKEOVER_TIMEOUT_MS);
		return 1;
	}
	kill(child, SIGKILL);
	fprintf(stderr,
		"xdp-bfd: --takeover: the new engine (PID %d) was not ready to take over "
		"after %d ms and was killed; engine PID %d serves on\n",
		(int)child, TAKEOVER_TIMEOUT_MS, (int)old);
	return 1;
}

/*
 * The engine --takeover forked must not hold the command's output open: whoever reads it
 * (a shell's $(...), a test) would wait for the engine's end. stderr stays (the journal under
 * systemd) when the engine logs there, i.e. without --log-file.
 */
static void detach_stdio(bool stderr_too)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	if (stderr_too)
		dup2(fd, STDERR_FILENO);
	close(fd);
}

/*
 * --takeover: fork twice. The grandchild returns -1 and goes on as the new engine (the --pin
 * handover); the parent, systemd's ExecReload= command, returns its exit status once it serves,
 * so a reload is synchronous. The engine names itself main process (MAINPID=) before the old
 * engine leaves: systemd never sees its main process exit. The middle process exits at once,
 * so the engine is PID 1's child by then: systemd supervises a main process that is not its
 * child only loosely, and on stop sends it SIGKILL without waiting for its AdminDown (seen in
 * the package's container test, tests/lab/test_pkg_container.py).
 */
static int takeover(struct engine_opts *o)
{
	pid_t old = engine_pin_running(o->pin_dir), middle, child = 0;
	int p[2], st;

	if (!old) {
		fprintf(stderr,
			"xdp-bfd: --takeover: no running engine owns the pins in %s: "
			"nothing to take over (start the engine instead)\n",
			o->pin_dir);
		return 1;
	}
	if (pipe2(p, O_CLOEXEC)) {
		fprintf(stderr, "xdp-bfd: --takeover: pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(NULL);
	middle = fork();
	if (middle < 0) {
		fprintf(stderr, "xdp-bfd: --takeover: fork: %s\n", strerror(errno));
		return 1;
	}
	if (!middle) {
		close(p[0]);
		/* Out of the command's session: a terminal's hang-up is not the engine's. */
		setsid();
		child = fork();
		if (child)
			_exit(child < 0); /* leave the engine to PID 1 */
		/* Tell the command who the engine is, first on the pipe, before 'M' and 'R'. */
		child = getpid();
		if (write(p[1], &child, sizeof(child)) != sizeof(child))
			_exit(1);
		o->takeover_fd = p[1];
		return -1;
	}
	close(p[1]);
	signal(SIGPIPE, SIG_IGN);
	if (waitpid(middle, &st, 0) != middle || !WIFEXITED(st) || WEXITSTATUS(st) ||
	    read(p[0], &child, sizeof(child)) != sizeof(child) || child <= 0) {
		fprintf(stderr, "xdp-bfd: --takeover: starting the new engine failed\n");
		return 1;
	}
	return takeover_wait(p[0], child, old);
}

/* Log lines and stats files off the event loop (writer.h); without it they are written there. */
static void start_writer(struct engine *e)
{
	static struct writer wr;
	int err = writer_init(&wr, log_fd(), WRITER_RING_BYTES);

	if (!err && (err = writer_start(&wr)))
		writer_fini(&wr);
	if (err) {
		pr_warn("writer: %s; log and stats written from the event loop", strerror(-err));
		return;
	}
	e->wr = &wr;
	log_set_writer(&wr);
}

/* What is queued is written before the exit (SIGTERM, handover's 75), 1 s at most. */
static void stop_writer(struct engine *e)
{
	if (!e->wr)
		return;
	if (writer_stop(e->wr, 1000)) {
		log_set_writer(NULL);
		pr_warn("writer: blocked for 1 s at exit; the rest of the log is lost");
		return;
	}
	log_set_writer(NULL);
	writer_fini(e->wr);
	e->wr = NULL;
}

int main(int argc, char **argv)
{
	static struct engine e;
	struct engine_opts *o = &e.o;
	struct sched_opts sched = {.fallback_fifo = SCHED_FALLBACK_FIFO_DEFAULT};
	bool takeover_cmd = false;
	int c, err;

	o->takeover_fd = -1;
	o->max_sessions = BFD_MAX_SESSIONS_DEFAULT;
	o->deadman_us = 3000000;
	o->sweep_us = 1000;
	o->demand_poll_us = 1000000;
	o->metrics_interval_ms = 10000;
	o->log_level = LOG_INFO;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_DPLANE:
			o->dplane_listen = optarg;
			break;
		case OPT_DPLANE_CONNECT:
			o->dplane_connect = optarg;
			break;
		case OPT_DP_HOLD:
			o->dp_hold_s = (uint32_t)number("dp-hold", optarg, 0, 86400);
			break;
		case OPT_PIN:
			o->pin_dir = optarg;
			break;
		case OPT_TAKEOVER:
			takeover_cmd = true;
			break;
		case OPT_KERNEL_TX:
			if (o->n_kernel_tx >= KERN_MAX_IFACES) {
				fprintf(stderr, "xdp-bfd: at most %d --kernel-tx interfaces\n",
					KERN_MAX_IFACES);
				return 2;
			}
			o->kernel_tx[o->n_kernel_tx++] = optarg;
			break;
		case OPT_XDP_GENERIC:
			o->xdp_generic = true;
			break;
		case OPT_DEADMAN:
			o->deadman_us = number("deadman-us", optarg, 0, 3600000000ULL);
			break;
		case OPT_SWEEP:
			o->sweep_us = number("sweep-us", optarg, 100, 1000000);
			break;
		case OPT_MAX_SESSIONS:
			o->max_sessions =
			    (uint32_t)number("max-sessions", optarg, 1, BFD_MAX_SESSIONS_LIMIT);
			break;
		case OPT_PASS_UNOWNED:
			o->pass_unowned = true;
			break;
		case OPT_SPREAD_PASS:
			o->spread_pass = true;
			break;
		case OPT_DEMAND:
			demand_peers(o, optarg);
			break;
		case OPT_DEMAND_POLL:
			o->demand_poll_us =
			    (uint32_t)number("demand-poll-us", optarg, 0, 3600000000ULL);
			break;
		case OPT_SCHED_DEADLINE: {
			unsigned r, p;
			char tail;

			if (sscanf(optarg, "%u/%u%c", &r, &p, &tail) != 2 || !r || r > p ||
			    p > 1000000) {
				fprintf(stderr,
					"xdp-bfd: --sched-deadline wants RUNTIME_US/PERIOD_US with "
					"0 < runtime <= period <= 1000000, not '%s'\n",
					optarg);
				return 2;
			}
			sched.runtime_us = r;
			sched.period_us = p;
			break;
		}
		case OPT_SCHED_FALLBACK_FIFO:
			sched.fallback_fifo =
			    (uint32_t)number("sched-fallback-fifo", optarg, 0, 99);
			break;
		case OPT_STATS_DUMP:
			o->stats_dump = optarg;
			break;
		case OPT_METRICS_FILE:
			o->metrics_file = optarg;
			break;
		case OPT_METRICS_INTERVAL:
			o->metrics_interval_ms =
			    (uint32_t)number("metrics-interval-ms", optarg, 100, 3600000);
			break;
		case OPT_LOG_FILE:
			o->log_file = optarg;
			break;
		case OPT_LOG_LEVEL:
			if (!strcmp(optarg, "error"))
				o->log_level = LOG_ERR;
			else if (!strcmp(optarg, "warn"))
				o->log_level = LOG_WARN;
			else if (!strcmp(optarg, "info"))
				o->log_level = LOG_INFO;
			else if (!strcmp(optarg, "debug"))
				o->log_level = LOG_DEBUG;
			else {
				fprintf(stderr,
					"xdp-bfd: --log-level is error, warn, info or debug\n");
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case OPT_VERSION:
			printf("xdp-bfd %s\n", XDP_BFD_VERSION);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "xdp-bfd: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (!o->dplane_listen && !o->dplane_connect) {
		fprintf(stderr, "xdp-bfd: give --dplane or --dplane-connect: without bfdd there is "
				"nothing to run\n");
		return 2;
	}
	if (o->pin_dir && (!o->dp_hold_s || !o->n_kernel_tx)) {
		fprintf(stderr, "xdp-bfd: --pin needs --dp-hold (adopted sessions are held until "
				"bfdd adds them again) and --kernel-tx (there is nothing to pin "
				"without the XDP object)\n");
		return 2;
	}
	if (o->pin_dir && strlen(o->pin_dir) > 200) {
		fprintf(stderr, "xdp-bfd: --pin: directory name longer than 200 bytes\n");
		return 2;
	}
	if (takeover_cmd && !o->pin_dir) {
		fprintf(stderr, "xdp-bfd: --takeover needs --pin: the running engine is found, and "
				"its sessions taken, through the pins\n");
		return 2;
	}
	if (takeover_cmd) {
		int rc = takeover(o);

		if (rc >= 0)
			return rc;
	}
	err = log_open(o->log_file);
	if (err) {
		fprintf(stderr, "xdp-bfd: cannot open log %s: %s\n", o->log_file, strerror(-err));
		return 1;
	}
	if (o->takeover_fd >= 0)
		detach_stdio(o->log_file != NULL);
	log_set_level(o->log_level);
	log_hook_libbpf();
	pr_info("xdp-bfd %s starting", XDP_BFD_VERSION);
	raise_nofile(o->max_sessions);
	ports_check_source(TX_PORT_FIRST, TX_PORT_LAST);
	engine_preconnect(&e);
	err = engine_init(&e);
	/* The loading's lines are written directly; the loop's go through the writer, started
	 * before the policy: a SCHED_DEADLINE task cannot start a thread. */
	if (!err)
		start_writer(&e);
	/* After loading the object: the verifier's one-off work would eat a 1 ms reservation. */
	if (!err)
		sched_apply(&sched);
	if (!err)
		err = engine_run(&e);
	stop_writer(&e);
	/* Handed over: the next engine waits for this exit; the pins hold all it needs, and the
	 * kernel frees the rest faster than tearing the object down here would. */
	if (!err && e.leave)
		_exit(e.exit_code);
	engine_fini(&e);
	return err ? 1 : e.exit_code;
}
