// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_pin.c - the engine's pins for a live handover (kern_pin.c) with the kernel's real BPF,
 * no interface: two loads of the object on one private bpffs. The second reuses the first's
 * maps (a session written by one is read by the other, the .bss heartbeat is shared), DIR/owner
 * holds a PID, another --max-sessions is another layout (the pins discarded, a fresh start),
 * and kern_unpin() leaves nothing behind. Needs root (bpffs, BPF): skipped otherwise, saying so.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>
#include "check.h"
#include "kern.h"
#include "log.h"
#include "xdp_bfd.skel.h"

static char dir[] = "/tmp/xdp-bfd-test-pin-XXXXXX";

static int no_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	(void)data;
	(void)size;
	return 0;
}

/* Entries of the pin directory, not counting the bpffs's own *.debug files. */
static int entries(void)
{
	struct dirent *d;
	DIR *dd = opendir(dir);
	int n = 0;

	while (dd && (d = readdir(dd)))
		n += d->d_name[0] != '.' && !strstr(d->d_name, ".debug");
	if (dd)
		closedir(dd);
	return n;
}

int main(void)
{
	struct kern_opts o = {.max_sessions = 64,
			      .deadman_ns = 3000000000ULL,
			      .sweep_period_ns = 1000000,
			      .on_event = no_event,
			      .pin_dir = dir};
	struct bfd_session_params p = {0}, q = {0};
	struct kern a, b, c;

	if (geteuid()) {
		printf("test_pin: skipped: needs root (bpffs mount, BPF maps)\n");
		return 0;
	}
	if (!mkdtemp(dir) || mount("bpf", dir, "bpf", 0, NULL)) {
		perror("test_pin: bpffs");
		return 1;
	}
	log_set_level(LOG_WARN);
	CHECK_EQ(kern_open(&a, &o), 0, "first load");
	CHECK_EQ(a.adopted, 0, "nothing to adopt at first");
	p.session_flags = BFD_SF_ACTIVE;
	p.local_disc = 0x1234;
	p.session_state = BFD_STATE_UP;
	p.incarnation = 7;
	CHECK_EQ(kern_session_write(&a, 5, &p), 0, "session written by the first");
	kern_heartbeat(&a, 12345);
	CHECK_EQ(kern_pin_set_owner(&a, 4242), 0, "owner written");

	CHECK_EQ(kern_open(&b, &o), 0, "second load, same layout");
	CHECK_EQ(b.adopted, 1, "the pinned maps are reused");
	CHECK_EQ(kern_session_cfg(&b, 5, &q), 0, "slot 5 read by the second");
	CHECK_EQ(q.local_disc, 0x1234, "its discriminator");
	CHECK_EQ(q.session_state, BFD_STATE_UP, "its state");
	CHECK_EQ(q.incarnation, 7, "its incarnation");
	CHECK_EQ(b.skel->bss->heartbeat_ns, 12345, "the heartbeat is shared");
	kern_heartbeat(&b, 999);
	CHECK_EQ(a.skel->bss->heartbeat_ns, 999, "both ways");
	CHECK_EQ(kern_pin_owner(&b), 4242, "the owner's PID");

	o.max_sessions = 128; /* other map sizes: another layout */
	CHECK_EQ(kern_open(&c, &o), 0, "third load, other layout");
	CHECK_EQ(c.adopted, 0, "another layout is not adopted");
	memset(&q, 0xff, sizeof(q));
	CHECK_EQ(kern_session_cfg(&c, 5, &q), 0, "slot 5 of the fresh maps");
	CHECK_EQ(q.session_flags, 0, "empty");
	CHECK(strcmp(c.pin_maps_dir, b.pin_maps_dir), "another maps directory");
	CHECK(access(b.pin_maps_dir, F_OK), "the old layout's pins are gone");
	CHECK_EQ(kern_pin_owner(&c), 4242, "the owner survives a layout change");
	CHECK_EQ(entries(), 2, "maps directory and owner");

	kern_unpin(&c);
	CHECK_EQ(entries(), 0, "kern_unpin leaves nothing");
	kern_close(&a);
	kern_close(&b);
	kern_close(&c);
	umount(dir);
	rmdir(dir);
	return check_done("test_pin");
}
