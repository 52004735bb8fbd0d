// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sched_policy.c - see sched_policy.h. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "log.h"
#include "sched_policy.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* The kernel's struct sched_attr, first version (48 bytes): glibc 2.36 has no wrapper. */
struct sched_attr_v1 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

const char *sched_policy_str(int pid, char *buf, unsigned len)
{
	struct sched_attr_v1 a = {0};

	if (syscall(SYS_sched_getattr, pid, &a, sizeof(a), 0)) {
		snprintf(buf, len, "unknown (%s)", strerror(errno));
		return buf;
	}
	switch (a.sched_policy) {
	case SCHED_DEADLINE:
		snprintf(buf, len, "SCHED_DEADLINE %llu/%llu us",
			 (unsigned long long)a.sched_runtime / 1000,
			 (unsigned long long)a.sched_period / 1000);
		break;
	case SCHED_FIFO:
	case SCHED_RR:
		snprintf(buf, len, "%s %u",
			 a.sched_policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_RR",
			 a.sched_priority);
		break;
	case SCHED_BATCH:
		snprintf(buf, len, "SCHED_BATCH");
		break;
	case SCHED_IDLE:
		snprintf(buf, len, "SCHED_IDLE");
		break;
	default:
		snprintf(buf, len, "SCHED_OTHER");
	}
	return buf;
}

/* A whole number from a one-line file, or -1. */
static long long read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A kernel CPU list ("0-3,6") from @path into @set (empty when the file is missing or empty). */
static void read_cpulist(const char *path, cpu_set_t *set)
{
	char line[1024], *p, *tok, *save;
	FILE *f = fopen(path, "r");

	CPU_ZERO(set);
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		for (p = line; (tok = strtok_r(p, ",\n", &save)); p = NULL) {
			unsigned a, b;
			int n = sscanf(tok, "%u-%u", &a, &b);

			if (n == 1)
				b = a;
			if (n < 1 || b < a || b >= CPU_SETSIZE)
				continue;
			for (unsigned c = a; c <= b; c++)
				CPU_SET(c, set);
		}
	}
	fclose(f);
}

static void cpulist_str(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && off < len; c++) {
		int end = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		off += (size_t)snprintf(buf + off, len - off, off ? ",%d" : "%d", c);
		if (end > c && off < len)
			off += (size_t)snprintf(buf + off, len - off, "-%d", end);
		c = end;
	}
}

static bool has_cap(cap_value_t cap, cap_flag_t set)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return false;
	cap_get_flag(caps, cap, set, &v);
	cap_free(caps);
	return v == CAP_SET;
}

/*
 * The real-time runtime of this process's cgroup v1 cpu controller group (cpu.rt_runtime_us),
 * or -1 when there is none to read: a group with 0 refuses SCHED_FIFO (RT group scheduling).
 */
static long long cgroup_rt_runtime_us(void)
{
	static const char *const roots[] = {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"};
	char line[512], path[1024];
	long long v = -1;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return -1;
	while (v < 0 && fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *grp;

		if (!ctrl || !(grp = strchr(ctrl + 1, ':')))
			continue;
		*grp++ = 0;
		grp[strcspn(grp, "\n")] = 0;
		if (strcmp(ctrl + 1, "cpu") && strcmp(ctrl + 1, "cpu,cpuacct") &&
		    strcmp(ctrl + 1, "cpuacct,cpu"))
			continue;
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]) && v < 0; i++) {
			snprintf(path, sizeof(path), "%s%s/cpu.rt_runtime_us", roots[i],
				 strcmp(grp, "/") ? grp : "");
			v = read_number(path);
		}
	}
	fclose(f);
	return v;
}

/*
 * Why the kernel refused a SCHED_DEADLINE reservation (sched(7), sched_setattr(2)), from what it
 * checks: the capability, the affinity against the root domain, the global bandwidth, admission
 * control, the period bounds.
 */
static void deadline_cause(int err, char *buf, size_t len)
{
	cpu_set_t mine, domain, isolated;
	char a[128], d[128];

	switch (err) {
	case EPERM:
		if (!has_cap(CAP_SYS_NICE, CAP_EFFECTIVE)) {
			snprintf(buf, len, "no CAP_SYS_NICE: run as root or with that capability");
			return;
		}
		read_cpulist("/sys/devices/system/cpu/online", &domain);
		read_cpulist("/sys/devices/system/cpu/isolated", &isolated);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &isolated)) /* isolcpus sit in no shared domain */
				CPU_CLR(c, &domain);
		if (!sched_getaffinity(0, sizeof(mine), &mine) && CPU_COUNT(&domain)) {
			cpu_set_t both;

			CPU_AND(&both, &mine, &domain);
			if (!CPU_EQUAL(&both, &domain)) {
				cpulist_str(&mine, a, sizeof(a));
				cpulist_str(&domain, d, sizeof(d));
				snprintf(
				    buf, len,
				    "the CPU affinity (%s) does not cover the root domain (%s): "
				    "a deadline task must be allowed on all of its CPUs "
				    "(taskset, CPUAffinity=, a cpuset)",
				    a, d);
				return;
			}
		}
		if (read_number("/proc/sys/kernel/sched_rt_runtime_us") == 0) {
			snprintf(buf, len,
				 "kernel.sched_rt_runtime_us is 0: no deadline bandwidth");
			return;
		}
		snprintf(buf, len,
			 "not the capability, the affinity or the bandwidth: a security "
			 "module or a cgroup may refuse it");
		return;
	case EBUSY:
		snprintf(
		    buf, len,
		    "admission control: the deadline bandwidth of the root domain "
		    "(kernel.sched_rt_runtime_us %lld of every %lld us, on each CPU) is taken by "
		    "other SCHED_DEADLINE tasks and the kernel's own (fair servers)",
		    read_number("/proc/sys/kernel/sched_rt_runtime_us"),
		    read_number("/proc/sys/kernel/sched_rt_period_us"));
		return;
	case EINVAL:
		snprintf(buf, len,
			 "the kernel rejects these parameters (period bounds "
			 "kernel.sched_deadline_period_min_us..max_us: %lld..%lld)",
			 read_number("/proc/sys/kernel/sched_deadline_period_min_us"),
			 read_number("/proc/sys/kernel/sched_deadline_period_max_us"));
		return;
	default:
		snprintf(buf, len, "no known cause for this error");
	}
}

/* Why SCHED_FIFO @prio was refused (sched_setscheduler(2)). */
static void fifo_cause(int err, uint32_t prio, char *buf, size_t len)
{
	struct rlimit rl;
	long long rt = cgroup_rt_runtime_us();

	if (err == EPERM && rt == 0)
		snprintf(buf, len,
			 "the process's cpu cgroup has cpu.rt_runtime_us 0 (RT group scheduling "
			 "admits no real-time task there)");
	else if (err == EPERM && !has_cap(CAP_SYS_NICE, CAP_EFFECTIVE) &&
		 !getrlimit(RLIMIT_RTPRIO, &rl) && rl.rlim_cur < prio)
		snprintf(buf, len, "no CAP_SYS_NICE and RLIMIT_RTPRIO %llu is below %u",
			 (unsigned long long)rl.rlim_cur, prio);
	else if (err == EPERM)
		snprintf(buf, len, "a security module or a cgroup may refuse it");
	else
		snprintf(buf, len, "no known cause for this error");
}

static int drop_sys_nice(void)
{
	cap_value_t nice = CAP_SYS_NICE;
	cap_t caps = cap_get_proc();
	int err = 0;

	if (!caps)
		return -errno;
	if (cap_set_flag(caps, CAP_EFFECTIVE, 1, &nice, CAP_CLEAR) ||
	    cap_set_flag(caps, CAP_PERMITTED, 1, &nice, CAP_CLEAR) ||
	    cap_set_flag(caps, CAP_INHERITABLE, 1, &nice, CAP_CLEAR) || cap_set_proc(caps))
		err = -errno;
	cap_free(caps);
	return err;
}

int sched_apply(const struct sched_opts *o)
{
	struct sched_attr_v1 a = {
	    .size = sizeof(a),
	    .sched_policy = SCHED_DEADLINE,
	    .sched_runtime = (uint64_t)o->runtime_us * 1000,
	    .sched_deadline = (uint64_t)o->period_us * 1000,
	    .sched_period = (uint64_t)o->period_us * 1000,
	};
	char why[768], pol[64];
	int err;

	if (o->runtime_us && !syscall(SYS_sched_setattr, 0, &a, 0)) {
		pr_info("sched: SCHED_DEADLINE %u us every %u us", o->runtime_us, o->period_us);
	} else if (o->runtime_us) {
		err = errno;
		deadline_cause(err, why, sizeof(why));
		pr_warn("sched: SCHED_DEADLINE %u/%u us refused: %s (%s)", o->runtime_us,
			o->period_us, strerror(err), why);
		if (o->fallback_fifo) {
			struct sched_param sp = {.sched_priority = (int)o->fallback_fifo};

			if (!sched_setscheduler(0, SCHED_FIFO, &sp)) {
				pr_warn("sched: fell back to SCHED_FIFO %u", o->fallback_fifo);
			} else {
				err = errno;
				fifo_cause(err, o->fallback_fifo, why, sizeof(why));
				pr_warn("sched: SCHED_FIFO %u refused too: %s (%s); staying at %s",
					o->fallback_fifo, strerror(err), why,
					sched_policy_str(0, pol, sizeof(pol)));
			}
		} else {
			pr_warn("sched: staying at %s (--sched-fallback-fifo 0)",
				sched_policy_str(0, pol, sizeof(pol)));
		}
	}
	if (!has_cap(CAP_SYS_NICE, CAP_PERMITTED))
		return 0;
	err = drop_sys_nice();
	if (err)
		pr_warn("sched: cannot drop CAP_SYS_NICE: %s", strerror(-err));
	else
		pr_info("sched: CAP_SYS_NICE dropped (policy %s)",
			sched_policy_str(0, pol, sizeof(pol)));
	return err;
}
