// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * main.c - xdp-bfd: options, process set-up (scheduling, file limit), run the loop.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine.h"
#include "ports.h"
#include "sched_policy.h"
#include "tx.h"

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
    "                             --dp-hold, which it needs), switches the links to its\n"
    "                             program and makes the previous engine leave (exit 75)\n"
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
	OPT_KERNEL_TX,
	OPT_XDP_GENERIC,
	OPT_DEADMAN,
	OPT_SWEEP,
	OPT_MAX_SESSIONS,
	OPT_PASS_UNOWNED,
	OPT_SPREAD_PASS,
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
    {"kernel-tx", required_argument, NULL, OPT_KERNEL_TX},
    {"xdp-generic", no_argument, NULL, OPT_XDP_GENERIC},
    {"deadman-us", required_argument, NULL, OPT_DEADMAN},
    {"sweep-us", required_argument, NULL, OPT_SWEEP},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"pass-unowned", no_argument, NULL, OPT_PASS_UNOWNED},
    {"spread-pass", no_argument, NULL, OPT_SPREAD_PASS},
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

static void raise_nofile(uint32_t max_sessions)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)max_sessions + 256; /* one socket per session, plus the rest */

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want;
	if (rl.rlim_max < want)
		rl.rlim_max = want;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("cannot raise the open-file limit to %llu: %s", (unsigned long long)want,
			strerror(errno));
}

int main(int argc, char **argv)
{
	static struct engine e;
	struct engine_opts *o = &e.o;
	struct sched_opts sched = {.fallback_fifo = SCHED_FALLBACK_FIFO_DEFAULT};
	int c, err;

	o->max_sessions = BFD_MAX_SESSIONS_DEFAULT;
	o->deadman_us = 3000000;
	o->sweep_us = 1000;
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
	err = log_open(o->log_file);
	if (err) {
		fprintf(stderr, "xdp-bfd: cannot open log %s: %s\n", o->log_file, strerror(-err));
		return 1;
	}
	log_set_level(o->log_level);
	log_hook_libbpf();
	pr_info("xdp-bfd %s starting", XDP_BFD_VERSION);
	raise_nofile(o->max_sessions);
	ports_check_source(TX_PORT_FIRST, TX_PORT_LAST);
	err = engine_init(&e);
	/* After loading the object: the verifier's one-off work would eat a 1 ms reservation. */
	if (!err)
		sched_apply(&sched);
	if (!err)
		err = engine_run(&e);
	/* Handed over: the next engine waits for this exit; the pins hold all it needs, and the
	 * kernel frees the rest faster than tearing the object down here would. */
	if (!err && e.leave)
		_exit(e.exit_code);
	engine_fini(&e);
	return err ? 1 : e.exit_code;
}
