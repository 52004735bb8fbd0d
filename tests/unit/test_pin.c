// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test_pin.c - the engine's pins for a live handover (kern_pin.c) with the kernel's real BPF,
 * no interface: two loads of the object on one private bpffs. The second reuses the first's
 * maps (a session written by one is read by the other, the .bss heartbeat is shared), DIR/owner
 * holds a PID, another --max-sessions is another layout (the pins discarded, a fresh start),
 * the prog array DIR/progs is reused by every load, whatever the layout, and kern_takeover()
 * switches its slot 0 to the loader's xdp_bfd, and kern_unpin() leaves nothing behind. Needs root
 * (bpffs, BPF): skipped otherwise, saying so.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
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

/* The id of @k's xdp_bfd, and of the program in slot 0 of @k's xdp_bfd_progs (0: empty). */
static __u32 own_id(struct kern *k)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(k->skel->progs.xdp_bfd), &info, &len))
		return 0;
	return info.id;
}

static __u32 slot_id(struct kern *k)
{
	__u32 key = 0, id = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.xdp_bfd_progs), &key, &id))
		return 0;
	return id;
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
	CHECK_EQ(a.progs_pending, 0, "a new prog array is filled at load");
	CHECK(own_id(&a) && slot_id(&a) == own_id(&a), "slot 0 holds the first's xdp_bfd");
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
	CHECK_EQ(b.progs_pending, 1, "the pinned prog array is reused");
	CHECK_EQ(slot_id(&b), own_id(&a), "the first's xdp_bfd runs until the takeover");
	CHECK_EQ(kern_takeover(&b), 0, "takeover");
	CHECK_EQ(slot_id(&a), own_id(&b), "one map update: slot 0 holds the second's xdp_bfd");
	CHECK(!strcmp(b.switched, "prog array slot 0"), "the switch named");

	o.max_sessions = 128; /* other map sizes: another layout */
	CHECK_EQ(kern_open(&c, &o), 0, "third load, other layout");
	CHECK_EQ(c.adopted, 0, "another layout is not adopted");
	memset(&q, 0xff, sizeof(q));
	CHECK_EQ(kern_session_cfg(&c, 5, &q), 0, "slot 5 of the fresh maps");
	CHECK_EQ(q.session_flags, 0, "empty");
	CHECK(strcmp(c.pin_maps_dir, b.pin_maps_dir), "another maps directory");
	CHECK(access(b.pin_maps_dir, F_OK), "the old layout's pins are gone");
	CHECK_EQ(kern_pin_owner(&c), 4242, "the owner survives a layout change");
	CHECK_EQ(c.progs_pending, 1, "another layout still hands over through the prog array");
	CHECK_EQ(kern_takeover(&c), 0, "takeover, other layout");
	CHECK_EQ(slot_id(&b), own_id(&c), "slot 0 holds the third's xdp_bfd");
	CHECK_EQ(entries(), 4, "maps directory, prog array, entry program and owner");
	CHECK(a.entry_id && b.entry_id == a.entry_id && c.entry_id == a.entry_id,
	      "one entry program for every link: the first's, pinned");

	kern_unpin(&c);
	CHECK_EQ(entries(), 0, "kern_unpin leaves nothing");
	kern_close(&a);
	kern_close(&b);
	kern_close(&c);
	umount(dir);
	rmdir(dir);
	return check_done("test_pin");
}
