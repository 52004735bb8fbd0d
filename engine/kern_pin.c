// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * kern_pin.c - the engine's pins in a bpffs directory (--pin), for a live handover: see kern.h.
 * Only the state a newer engine must keep is pinned; the ring buffer, the sweep timer's map
 * (its bpf_timer runs the program that armed it) and the cpumap stay per engine. The prog array
 * the links' entry program tail-calls through is pinned beside the links (DIR/progs): it is
 * what a handover switches, whatever the maps layout.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kern.h"
#include "log.h"
#include "xdp_bfd.skel.h"

#define N_PINNED 8

/* The pinned maps and their file names, in hash order. */
static void pinned(struct xdp_bfd *skel, struct bpf_map *maps[N_PINNED],
		   const char *names[N_PINNED])
{
	/* sessions_tx too: the periodic transmit clock the fast path and the engine share
	 * (RFC 5880 §6.8.7) must not restart at 0 across a handover. */
	static const char *const n[N_PINNED] = {"sessions_cfg", "sessions_rx", "sessions_expiry",
						"sessions_tx",	"disc_index",  "addr_index",
						"counters",	"heartbeat"};
	struct bpf_map *m[N_PINNED] = {skel->maps.sessions_cfg,	   skel->maps.sessions_rx,
				       skel->maps.sessions_expiry, skel->maps.sessions_tx,
				       skel->maps.disc_index,	   skel->maps.addr_index,
				       skel->maps.counters,	   skel->maps.bss};

	for (int i = 0; i < N_PINNED; i++) {
		maps[i] = m[i];
		names[i] = n[i];
	}
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* Remove the files of @path (no subdirectories are made there), then the directory. */
static void remove_dir(const char *path)
{
	char f[600];
	struct dirent *d;
	DIR *dir = opendir(path);

	if (!dir)
		return;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.') {
			snprintf(f, sizeof(f), "%s/%s", path, d->d_name);
			unlink(f);
		}
	closedir(dir);
	rmdir(path);
}

/* Whether the pinned map @fd is what @m will be: type, key and value sizes, entries. */
static bool same_shape(int fd, const struct bpf_map *m)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	return info.type == (__u32)bpf_map__type(m) && info.key_size == bpf_map__key_size(m) &&
	       info.value_size == bpf_map__value_size(m) &&
	       info.max_entries == bpf_map__max_entries(m);
}

/* Reuse every pinned map of k->pin_maps_dir. Return: true if all were there and fit. */
static bool reuse_all(struct kern *k)
{
	struct bpf_map *maps[N_PINNED];
	const char *names[N_PINNED];
	int fds[N_PINNED];
	char path[400];
	bool ok = true;

	pinned(k->skel, maps, names);
	for (int i = 0; i < N_PINNED; i++) {
		snprintf(path, sizeof(path), "%s/%s", k->pin_maps_dir, names[i]);
		fds[i] = bpf_obj_get(path);
		if (fds[i] < 0 || !same_shape(fds[i], maps[i])) {
			pr_warn("pin: %s %s; not adopting the pinned state", path,
				fds[i] < 0 ? strerror(errno) : "has another shape");
			ok = false;
		}
	}
	for (int i = 0; i < N_PINNED && ok; i++)
		if (bpf_map__reuse_fd(maps[i], fds[i])) {
			pr_warn("pin: reusing %s: %s", names[i], strerror(errno));
			ok = false;
		}
	for (int i = 0; i < N_PINNED; i++)
		if (fds[i] >= 0)
			close(fds[i]); /* reuse_fd() holds its own duplicate */
	return ok;
}

static void progs_path(const struct kern *k, char *buf, size_t n)
{
	snprintf(buf, n, "%s/progs", k->pin_dir);
}

/*
 * Reuse DIR/progs, the prog array the pinned links' entry program tail-calls through: then
 * switching its slot 0 switches every interface at once (kern_takeover()). Return: 0 or -errno.
 */
static int progs_reuse(struct kern *k)
{
	struct bpf_map *m = k->skel->maps.xdp_bfd_progs;
	__u32 key = 0, id;
	char path[300];
	int fd, err = 0;

	progs_path(k, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0; /* none: the first engine, or an older one's pins (its links updated) */
	if (!same_shape(fd, m)) {
		pr_warn("pin: %s has another shape; replacing it", path);
		close(fd);
		unlink(path);
		return 0;
	}
	if (bpf_map__reuse_fd(m, fd)) {
		err = -errno;
		pr_err("pin: reusing %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	/* What slot 0 holds keeps running on the links until kern_takeover(). */
	k->progs_pending = !bpf_map_lookup_elem(fd, &key, &id);
	close(fd); /* reuse_fd() holds its own duplicate */
	pr_info("pin: reusing the prog array pinned as %s (slot 0: %s)", path,
		k->progs_pending ? "the previous engine's xdp_bfd until the takeover"
				 : "empty, filled now");
	return 0;
}

int kern_pin_prepare(struct kern *k, const char *dir)
{
	struct bpf_map *maps[N_PINNED];
	const char *names[N_PINNED];
	uint64_t h = 0xcbf29ce484222325ULL;
	uint32_t version = BFD_PIN_LAYOUT_VERSION;
	char ours[40], path[600];
	struct statfs sfs;
	int err;
	struct dirent *d;
	DIR *dd;

	if (statfs(dir, &sfs) || sfs.f_type != BPF_FS_MAGIC) {
		pr_err("pin: %s is not a bpffs directory (mount -t bpf bpf %s)", dir, dir);
		return -ENOTDIR;
	}
	snprintf(k->pin_dir, sizeof(k->pin_dir), "%s", dir);
	err = progs_reuse(k);
	if (err)
		return err;
	h = fnv1a(h, &version, sizeof(version));
	pinned(k->skel, maps, names);
	for (int i = 0; i < N_PINNED; i++) {
		uint32_t shape[5] = {(uint32_t)bpf_map__type(maps[i]), bpf_map__key_size(maps[i]),
				     bpf_map__value_size(maps[i]), bpf_map__max_entries(maps[i]),
				     bpf_map__map_flags(maps[i])};

		h = fnv1a(h, names[i], strlen(names[i]) + 1);
		h = fnv1a(h, shape, sizeof(shape));
	}
	snprintf(ours, sizeof(ours), "maps-%016llx", (unsigned long long)h);
	snprintf(k->pin_maps_dir, sizeof(k->pin_maps_dir), "%s/%s", dir, ours);
	/* State pinned by a build whose maps differ cannot be read by this one. */
	dd = opendir(dir);
	while (dd && (d = readdir(dd)))
		if (!strncmp(d->d_name, "maps-", 5) && strcmp(d->d_name, ours)) {
			snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
			pr_warn("pin: %s has another map layout than this build's (%s): discarding "
				"it, starting fresh",
				path, ours);
			remove_dir(path);
		}
	if (dd)
		closedir(dd);
	if (access(k->pin_maps_dir, F_OK))
		return 0;
	k->adopted = reuse_all(k);
	if (!k->adopted) {
		remove_dir(k->pin_maps_dir);
		pr_warn("pin: discarded %s, starting fresh", k->pin_maps_dir);
	} else {
		pr_info("pin: reusing the maps pinned in %s", k->pin_maps_dir);
	}
	return 0;
}

/* Whether program @fd uses map @map_id; *id_out: its id. */
static bool prog_uses(int fd, __u32 map_id, __u32 *id_out)
{
	struct bpf_prog_info pi;
	__u32 ids[4], len = sizeof(pi);
	bool on = false;

	memset(&pi, 0, sizeof(pi));
	pi.nr_map_ids = 4;
	pi.map_ids = (__u64)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(fd, &pi, &len))
		return false;
	for (__u32 i = 0; i < pi.nr_map_ids && i < 4; i++)
		on |= ids[i] == map_id;
	*id_out = pi.id;
	return on;
}

/*
 * The entry program every link runs: the one pinned as DIR/entry if it tail-calls through our
 * xdp_bfd_progs, else ours (pinned there). One program for every link, whichever engine made
 * it, so a link's program id (bpf_link_info, no CAP_SYS_ADMIN needed, unlike
 * BPF_PROG_GET_FD_BY_ID) says whether it runs on the array. Return: 0 or -errno.
 */
static int entry_pin(struct kern *k)
{
	struct bpf_map_info mi;
	__u32 len = sizeof(mi);
	char path[300];
	int own = bpf_program__fd(k->skel->progs.xdp_bfd_entry), fd;

	memset(&mi, 0, sizeof(mi));
	if (bpf_obj_get_info_by_fd(bpf_map__fd(k->skel->maps.xdp_bfd_progs), &mi, &len))
		return -errno;
	snprintf(path, sizeof(path), "%s/entry", k->pin_dir);
	fd = bpf_obj_get(path);
	if (fd >= 0 && prog_uses(fd, mi.id, &k->entry_id)) {
		k->entry_fd = fd;
		return 0;
	}
	if (fd >= 0) {
		close(fd);
		unlink(path); /* another array's (replaced in progs_reuse()) */
	}
	if (bpf_obj_pin(own, path) || !prog_uses(own, mi.id, &k->entry_id)) {
		pr_err("pin: pinning the entry program as %s failed: %s", path, strerror(errno));
		return -errno;
	}
	k->entry_fd = fcntl(own, F_DUPFD_CLOEXEC, 0);
	return k->entry_fd < 0 ? -errno : 0;
}

int kern_pin_maps(struct kern *k)
{
	struct bpf_map *maps[N_PINNED];
	const char *names[N_PINNED];
	char path[400];
	int err;

	progs_path(k, path, sizeof(path));
	/* EEXIST: the reused one (progs_reuse()) */
	if (bpf_obj_pin(bpf_map__fd(k->skel->maps.xdp_bfd_progs), path) && errno != EEXIST) {
		pr_err("pin: pinning the prog array as %s failed: %s", path, strerror(errno));
		return -errno;
	}
	err = entry_pin(k);
	if (err)
		return err;
	if (k->adopted)
		return 0;
	pinned(k->skel, maps, names);
	if (mkdir(k->pin_maps_dir, 0700) && errno != EEXIST)
		goto fail;
	for (int i = 0; i < N_PINNED; i++) {
		snprintf(path, sizeof(path), "%s/%s", k->pin_maps_dir, names[i]);
		if (bpf_obj_pin(bpf_map__fd(maps[i]), path))
			goto fail;
	}
	pr_info("pin: maps pinned in %s", k->pin_maps_dir);
	return 0;
fail:
	pr_err("pin: pinning in %s failed: %s", k->pin_maps_dir, strerror(errno));
	return -errno;
}

static void link_path(const struct kern *k, int ifindex, char *buf, size_t n)
{
	snprintf(buf, n, "%s/link-%d", k->pin_dir, ifindex); /* bpffs names take no '.' */
}

int kern_pin_link_get(struct kern *k, int ifindex)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	char path[300];
	int fd;

	if (!k->pin_dir[0])
		return -ENOENT;
	link_path(k, ifindex, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -ENOENT;
	memset(&info, 0, sizeof(info));
	/* A link whose device went away (or whose index now names another) is of no use. */
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != BPF_LINK_TYPE_XDP ||
	    info.xdp.ifindex != (__u32)ifindex) {
		pr_info("pin: %s is stale; removing it", path);
		close(fd);
		unlink(path);
		return -ENOENT;
	}
	return fd;
}

bool kern_pin_link_on_entry(struct kern *k, int link_fd)
{
	struct bpf_link_info li;
	__u32 len = sizeof(li);

	memset(&li, 0, sizeof(li));
	return k->entry_id && !bpf_obj_get_info_by_fd(link_fd, &li, &len) &&
	       li.prog_id == k->entry_id;
}

void kern_pin_link(struct kern *k, int ifindex, int link_fd)
{
	char path[300];

	if (!k->pin_dir[0])
		return;
	link_path(k, ifindex, path, sizeof(path));
	if (bpf_obj_pin(link_fd, path))
		pr_warn("pin: pinning the XDP link as %s failed: %s; a handover would detach it",
			path, strerror(errno));
}

void kern_pin_link_drop(struct kern *k, int ifindex)
{
	char path[300];

	if (!k->pin_dir[0])
		return;
	link_path(k, ifindex, path, sizeof(path));
	unlink(path);
}

int kern_takeover(struct kern *k)
{
	int prog_fd = k->entry_fd, err = 0, n_links = 0;
	bool slot = k->progs_pending;

	k->takeover_pending = false;
	/*
	 * One map update for every interface, and no RCU grace period: bpf_link_update() on an XDP
	 * link waits for one (bpf_dispatcher_update()), 5.6-22 ms on the lab's VM. First, so that
	 * links switched below find our xdp_bfd there.
	 */
	if (k->progs_pending) {
		k->progs_pending = false;
		err = kern_progs_fill(k);
		if (err)
			pr_err("pin: putting xdp_bfd in slot 0 of %s/progs failed: %s", k->pin_dir,
			       strerror(-err));
	}
	/* An older engine's links (its xdp_bfd attached directly): once, to our entry program. */
	for (int i = 0; i < k->n_ifaces; i++) {
		struct kern_iface *ifc = &k->ifaces[i];

		if (!ifc->pending)
			continue;
		ifc->pending = false;
		n_links++;
		if (!bpf_link_update(ifc->link_fd, prog_fd, NULL))
			continue;
		if (!err)
			err = -errno;
		pr_err("pin: taking over the XDP link of %s failed: %s", ifc->name,
		       strerror(errno));
	}
	if (slot && n_links)
		snprintf(k->switched, sizeof(k->switched),
			 "prog array slot 0 and bpf_link_update() of %d older links", n_links);
	else if (slot)
		snprintf(k->switched, sizeof(k->switched), "prog array slot 0");
	else if (n_links)
		snprintf(k->switched, sizeof(k->switched), "bpf_link_update() of %d older links",
			 n_links);
	else
		snprintf(k->switched, sizeof(k->switched), "nothing");
	return err;
}

int kern_session_cfg(struct kern *k, uint32_t slot, struct bfd_session_params *out)
{
	struct bfd_session_cfg v;

	if (bpf_map__lookup_elem(k->skel->maps.sessions_cfg, &slot, sizeof(slot), &v, sizeof(v),
				 BPF_F_LOCK))
		return -errno;
	*out = v.p;
	return 0;
}

void kern_unpin(struct kern *k)
{
	char path[300];

	if (!k->pin_dir[0])
		return;
	remove_dir(k->pin_maps_dir);
	progs_path(k, path, sizeof(path));
	unlink(path);
	snprintf(path, sizeof(path), "%s/entry", k->pin_dir);
	unlink(path);
	for (int i = 0; i < k->n_ifaces; i++) {
		link_path(k, k->ifaces[i].ifindex, path, sizeof(path));
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/owner", k->pin_dir);
	unlink(path);
	pr_info("pin: pins in %s removed", k->pin_dir);
}

/*
 * DIR/owner: a one-entry array map (bpffs holds no regular files) with the PID of the engine
 * that owns the pins. Its own shape, whatever the object's layout, so a build with other maps
 * still finds the engine to ask to leave.
 */
static int owner_fd(struct kern *k, bool create)
{
	char path[300];
	int fd;

	snprintf(path, sizeof(path), "%s/owner", k->pin_dir);
	fd = bpf_obj_get(path);
	if (fd >= 0 || !create)
		return fd;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xdp_bfd_owner", sizeof(__u32), sizeof(__u64), 1,
			    NULL);
	if (fd >= 0 && bpf_obj_pin(fd, path)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

pid_t kern_pin_owner(struct kern *k)
{
	__u32 key = 0;
	__u64 pid = 0;
	int fd = owner_fd(k, false);

	if (fd < 0)
		return 0;
	if (bpf_map_lookup_elem(fd, &key, &pid))
		pid = 0;
	close(fd);
	return (pid_t)pid;
}

int kern_pin_set_owner(struct kern *k, pid_t pid)
{
	__u32 key = 0;
	__u64 v = (__u64)pid;
	int fd = owner_fd(k, true), err = 0;

	if (fd < 0 || bpf_map_update_elem(fd, &key, &v, 0))
		err = -errno;
	if (fd >= 0)
		close(fd);
	return err;
}
