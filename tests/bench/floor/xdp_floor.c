// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xdp_floor.c - time each program of xdp_floor.bpf.o as prog_test --bench times xdp_bfd: 100,000
 * BPF_PROG_TEST_RUN calls of one fresh 66-byte IPv4 frame each (repeat = 1), the mean duration
 * the kernel reports, median of 5 rounds; with STATS=1 also the kernel's own run time per run
 * (BPF_ENABLE_STATS, which leaves the test runner out but adds its clock reads). Built and run
 * by `make bench-floor` (root, under the lab lock; docs/engine.md "The reply path's cost"):
 *   flock /tmp/xdp-bfd-lab.lock make bench-floor
 */
#include <stdio.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* Ethernet, IPv4 (TTL 255, UDP), UDP 5000 -> 3784, the first bytes of a Control packet. */
static const unsigned char frame[66] = {
    0,	1, 2, 3,  4, 5, 6, 7,  8, 9, 10, 11,   0x08, 0x00, 0x45, 0, 0,	52, 0, 1,    0,	   0, 255,
    17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,	 0x13, 0x88, 0x0e, 0xc8, 0, 32, 0,  0, 0x20, 0xe0, 3, 24};

static double ns_per_run(int fd)
{
	unsigned char buf[512];
	double r[5];

	for (int k = 0; k < 5; k++) {
		unsigned long long sum = 0;

		for (int i = 0; i < 100000; i++) {
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame,
				    .data_size_in = sizeof(frame), .data_out = buf,
				    .data_size_out = sizeof(buf), .repeat = 1);

			if (bpf_prog_test_run_opts(fd, &o) || o.retval != 3 /* XDP_TX */) {
				fprintf(stderr, "xdp_floor: run failed (retval %u)\n", o.retval);
				exit(1);
			}
			sum += o.duration;
		}
		r[k] = (double)sum / 100000;
	}
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (r[j] < r[i]) {
				double t = r[i];

				r[i] = r[j];
				r[j] = t;
			}
	return r[2];
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *p;
	double swap_ns = 0;
	__u32 k = 7, v = 5;

	if (argc < 2) {
		fprintf(stderr, "usage: xdp_floor xdp_floor.bpf.o\n");
		return 2;
	}
	if (getenv("STATS") && bpf_enable_stats(BPF_STATS_RUN_TIME) < 0) {
		perror("xdp_floor: BPF_ENABLE_STATS");
		return 1;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "xdp_floor: cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "disc"), &k, &v, 0);
	printf("BPF_PROG_TEST_RUN, 100,000 runs of one fresh frame each, median of 5 rounds:\n");
	bpf_object__for_each_program(p, obj)
	{
		struct bpf_prog_info a = {0}, b = {0};
		__u32 len = sizeof(a);
		int fd = bpf_program__fd(p);
		double t, stat_ns;

		bpf_obj_get_info_by_fd(fd, &a, &len);
		t = ns_per_run(fd);
		len = sizeof(b);
		bpf_obj_get_info_by_fd(fd, &b, &len);
		if (!swap_ns)
			swap_ns = t; /* f_swap comes first */
		stat_ns = b.run_cnt > a.run_cnt ? (double)(b.run_time_ns - a.run_time_ns) /
						      (double)(b.run_cnt - a.run_cnt)
						: 0;
		printf("  %-12s %7.1f ns  %.2fx f_swap", bpf_program__name(p), t, t / swap_ns);
		if (getenv("STATS"))
			printf("  (kernel stats: %.1f ns per run)", stat_ns);
		printf("\n");
	}
	bpf_object__close(obj);
	return 0;
}
