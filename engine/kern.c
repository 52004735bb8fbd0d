// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* kern.c - see kern.h. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include "kern.h"
#include "log.h"
#include "xdp_bfd.skel.h"

/*
 * One cpumap entry per CPU that takes one (offline CPUs refuse it: their frames stay on the
 * receiving CPU, XDP_PASS). The queue holds SPREAD_QSIZE frames per CPU before the kernel drops
 * (counted by the kernel's xdp_cpumap_enqueue tracepoint, not by us).
 */
#define SPREAD_QSIZE 2048
static int spread_fill(struct kern *k)
{
	struct bpf_cpumap_val v = {.qsize = SPREAD_QSIZE};
	int fd = bpf_map__fd(k->skel->maps.pass_cpus), err = 0;

	for (uint32_t cpu = 0; cpu < (uint32_t)k->ncpus; cpu++) {
		if (bpf_map_update_elem(fd, &cpu, &v, 0) == 0)
			k->spread_cpus++;
		else
			err = -errno;
	}
	if (!k->spread_cpus) {
		pr_err("kernel-tx: --spread-pass: no CPU took a cpumap entry: %s", strerror(-err));
		return err ? err : -ENODEV;
	}
	pr_info("kernel-tx: --spread-pass: other traffic goes to %d of %d CPUs by flow (cpumap, "
		"queue %d frames)",
		k->spread_cpus, k->ncpus, SPREAD_QSIZE);
	return 0;
}

/*
 * The ring holds an event for every session at once (a burst of expiries at the limit, 72 bytes
 * each with the ring's header), at least the 256 KiB it always had; a power of two, as the kernel
 * wants.
 */
static uint32_t ring_bytes(uint32_t max_sessions)
{
	uint64_t want = (uint64_t)max_sessions * (sizeof(struct bfd_event) + 8);
	uint32_t sz = 256 * 1024;

	while (sz < want)
		sz <<= 1;
	return sz;
}

/* Map the armed bucket of the timing wheel (its last slot_words group words, its top words). */
static int wheel_map(struct kern *k)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t g_len = (size_t)BFD_WHEEL_BUCKETS * k->slot_words * sizeof(uint64_t);
	size_t t_len = (size_t)BFD_WHEEL_BUCKETS * k->top_words * sizeof(uint64_t);
	void *g, *t;

	k->wheel_groups_len = (g_len + page - 1) / page * page;
	k->wheel_tops_len = (t_len + page - 1) / page * page;
	g = mmap(NULL, k->wheel_groups_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(k->skel->maps.wheel_groups), 0);
	if (g == MAP_FAILED)
		return -errno;
	t = mmap(NULL, k->wheel_tops_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 bpf_map__fd(k->skel->maps.wheel_tops), 0);
	if (t == MAP_FAILED) {
		int err = -errno;

		munmap(g, k->wheel_groups_len);
		return err;
	}
	k->wheel_groups = g;
	k->wheel_tops = t;
	return 0;
}

int kern_open(struct kern *k, const struct kern_opts *o)
{
	LIBBPF_OPTS(bpf_test_run_opts, run);
	struct xdp_bfd *skel;
	int err;

	memset(k, 0, sizeof(*k));
	k->entry_fd = -1;
	k->force_generic = o->force_generic;
	k->ncpus = libbpf_num_possible_cpus();
	if (k->ncpus <= 0)
		return k->ncpus ? k->ncpus : -EINVAL;
	skel = xdp_bfd__open();
	if (!skel)
		return -errno;
	k->skel = skel;
	skel->rodata->settings.deadman_ns = o->deadman_ns;
	skel->rodata->settings.sweep_period_ns = o->sweep_period_ns;
	skel->rodata->settings.pass_unowned = o->pass_unowned;
	k->max_sessions = o->max_sessions;
	k->slot_words = BFD_SLOT_WORDS(o->max_sessions);
	k->top_words = BFD_TOP_WORDS(o->max_sessions);
	skel->rodata->settings.slot_words = k->slot_words;
	skel->rodata->settings.top_words = k->top_words;
	bpf_map__set_max_entries(skel->maps.wheel_groups, BFD_WHEEL_BUCKETS * k->slot_words);
	bpf_map__set_max_entries(skel->maps.wheel_tops, BFD_WHEEL_BUCKETS * k->top_words);
	bpf_map__set_max_entries(skel->maps.events, ring_bytes(o->max_sessions));
	bpf_map__set_max_entries(skel->maps.sessions_cfg, o->max_sessions);
	bpf_map__set_max_entries(skel->maps.sessions_rx, o->max_sessions);
	bpf_map__set_max_entries(skel->maps.sessions_expiry, o->max_sessions);
	bpf_map__set_max_entries(skel->maps.sessions_tx, o->max_sessions);
	bpf_map__set_max_entries(skel->maps.sessions_echo, o->max_sessions);
	bpf_map__set_max_entries(skel->maps.disc_index, o->max_sessions);
	/* each single-hop session twice: by both addresses, and by the peer's for echo (echo.h) */
	bpf_map__set_max_entries(skel->maps.addr_index, 2 * o->max_sessions);
	if (o->spread_pass) {
		skel->rodata->settings.spread_cpus = (uint32_t)k->ncpus;
		bpf_map__set_max_entries(skel->maps.pass_cpus, (uint32_t)k->ncpus);
	}
	if (o->pin_dir && (err = kern_pin_prepare(k, o->pin_dir)))
		goto fail;
	err = xdp_bfd__load(skel);
	if (err) {
		pr_err("kernel-tx: loading the XDP object failed: %s", strerror(-err));
		goto fail;
	}
	/* The links' entry program tail-calls xdp_bfd from slot 0; a reused pinned array keeps the
	 * previous engine's there until kern_takeover(). */
	if (!k->progs_pending && (err = kern_progs_fill(k))) {
		pr_err("kernel-tx: putting xdp_bfd in its prog array failed: %s", strerror(-err));
		goto fail;
	}
	k->tx_clocks_len = (size_t)o->max_sessions * sizeof(struct bfd_session_tx);
	k->tx_clocks = mmap(NULL, k->tx_clocks_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			    bpf_map__fd(skel->maps.sessions_tx), 0);
	if (k->tx_clocks == MAP_FAILED) {
		err = -errno;
		k->tx_clocks = NULL;
		pr_err("kernel-tx: mapping the transmit clocks failed: %s", strerror(-err));
		goto fail;
	}
	k->echo_recs_len = (size_t)o->max_sessions * sizeof(struct bfd_session_echo);
	k->echo_recs = mmap(NULL, k->echo_recs_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			    bpf_map__fd(skel->maps.sessions_echo), 0);
	if (k->echo_recs == MAP_FAILED) {
		err = -errno;
		k->echo_recs = NULL;
		pr_err("kernel-tx: mapping the echo records failed: %s", strerror(-err));
		goto fail;
	}
	if (o->pin_dir) {
		err = kern_pin_maps(k);
		if (err)
			goto fail;
		k->takeover_pending = true;
	} else {
		k->entry_fd = fcntl(bpf_program__fd(skel->progs.xdp_bfd_entry), F_DUPFD_CLOEXEC, 0);
		if (k->entry_fd < 0) {
			err = -errno;
			goto fail;
		}
	}
	if (o->spread_pass) {
		err = spread_fill(k);
		if (err)
			goto fail;
	}
	err = wheel_map(k);
	if (err) {
		pr_err("kernel-tx: mapping the sweep's wheel: %s", strerror(-err));
		goto fail;
	}
	k->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), o->on_event, o->ctx, NULL);
	if (!k->rb) {
		err = -errno;
		pr_err("kernel-tx: ring buffer: %s", strerror(-err));
		goto fail;
	}
	if (o->sweep_manual)
		return 0;
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.start_sweep), &run);
	if (!err && run.retval)
		err = (int)run.retval;
	if (err) {
		pr_err("kernel-tx: arming the sweep timer failed: %s", strerror(-err));
		goto fail;
	}
	return 0;
fail:
	kern_close(k);
	return err;
}

int kern_progs_fill(struct kern *k)
{
	int prog_fd = bpf_program__fd(k->skel->progs.xdp_bfd);
	__u32 key = 0;

	if (bpf_map_update_elem(bpf_map__fd(k->skel->maps.xdp_bfd_progs), &key, &prog_fd, BPF_ANY))
		return -errno;
	return 0;
}

void kern_close(struct kern *k)
{
	for (int i = 0; i < k->n_ifaces; i++)
		if (k->ifaces[i].link_fd >= 0)
			close(k->ifaces[i].link_fd);
	k->n_ifaces = 0;
	if (k->entry_fd >= 0)
		close(k->entry_fd);
	k->entry_fd = -1;
	ring_buffer__free(k->rb);
	k->rb = NULL;
	if (k->tx_clocks)
		munmap(k->tx_clocks, k->tx_clocks_len);
	k->tx_clocks = NULL;
	if (k->echo_recs)
		munmap(k->echo_recs, k->echo_recs_len);
	k->echo_recs = NULL;
	if (k->wheel_groups)
		munmap(k->wheel_groups, k->wheel_groups_len);
	if (k->wheel_tops)
		munmap(k->wheel_tops, k->wheel_tops_len);
	k->wheel_groups = k->wheel_tops = NULL;
	xdp_bfd__destroy(k->skel);
	k->skel = NULL;
}

void kern_detach(struct kern *k, uint32_t ifindex)
{
	for (int i = 0; i < k->n_ifaces; i++) {
		if (k->ifaces[i].ifindex != (int)ifindex)
			continue;
		kern_pin_link_drop(k, (int)ifindex); /* a pinned link would outlive the close */
		close(k->ifaces[i].link_fd);
		k->ifaces[i] = k->ifaces[--k->n_ifaces];
		return;
	}
}

bool kern_attached(const struct kern *k, uint32_t ifindex)
{
	for (int i = 0; i < k->n_ifaces; i++)
		if (k->ifaces[i].ifindex == (int)ifindex)
			return true;
	return false;
}

/*
 * Whether @ifname takes 802.1Q tags off in the driver (rx-vlan-offload, ETH_FLAG_RXVLAN): XDP
 * then sees a tagged frame as untagged and cannot keep VLANs apart (no VLAN kfunc here: it needs
 * a device-bound program per interface).
 */
static bool rx_vlan_stripped(const char *ifname)
{
	struct ethtool_value ev = {.cmd = ETHTOOL_GFLAGS};
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool on;

	if (fd < 0)
		return false;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ev;
	on = !ioctl(fd, SIOCETHTOOL, &ifr) && (ev.data & ETH_FLAG_RXVLAN);
	close(fd);
	return on;
}

int kern_attach(struct kern *k, const char *ifname)
{
	int prog_fd = k->entry_fd;
	LIBBPF_OPTS(bpf_link_create_opts, drv, .flags = XDP_FLAGS_DRV_MODE);
	LIBBPF_OPTS(bpf_link_create_opts, skb, .flags = XDP_FLAGS_SKB_MODE);
	struct kern_iface *ifc;
	int ifindex = (int)if_nametoindex(ifname);
	int fd = -1, err = 0;

	if (!ifindex) {
		err = -errno;
		pr_err("kernel-tx: no interface %s: %s", ifname, strerror(-err));
		return err;
	}
	if (kern_attached(k, (uint32_t)ifindex))
		return 0;
	if (k->n_ifaces >= KERN_MAX_IFACES) {
		pr_err("kernel-tx: %s: more than %d interfaces", ifname, KERN_MAX_IFACES);
		return -ENOSPC;
	}
	ifc = &k->ifaces[k->n_ifaces];
	fd = kern_pin_link_get(k, ifindex);
	if (fd >= 0) {
		LIBBPF_OPTS(bpf_xdp_query_opts, q);
		bool on_entry = kern_pin_link_on_entry(k, fd);

		/*
		 * On an entry program of our prog array it switches with the array's slot 0; an
		 * older engine's program keeps running until kern_takeover(), or is replaced now.
		 */
		ifc->pending = !on_entry && k->takeover_pending;
		if (!on_entry && !ifc->pending && bpf_link_update(fd, prog_fd, NULL)) {
			err = -errno;
			pr_err("kernel-tx: taking over the pinned XDP link of %s failed: %s",
			       ifname, strerror(-err));
			close(fd);
			return err;
		}
		ifc->native = !bpf_xdp_query(ifindex, 0, &q) && q.attach_mode == XDP_ATTACHED_DRV;
		ifc->ifindex = ifindex;
		ifc->link_fd = fd;
		snprintf(ifc->name, sizeof(ifc->name), "%s", ifname);
		k->n_ifaces++;
		pr_info("kernel-tx: XDP attached to %s (%s mode, pinned link%s)", ifname,
			ifc->native ? "native" : "generic",
			on_entry       ? " through the pinned prog array"
			: ifc->pending ? " of an older engine, bpf_link_update() once ready"
				       : " of an older engine, bpf_link_update() done");
		return 0;
	}
	fd = -1;
	if (!k->force_generic) {
		fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &drv);
		if (fd < 0) {
			err = -errno;
			pr_warn("kernel-tx: native XDP on %s refused (%s); trying generic mode",
				ifname, strerror(-err));
		}
	}
	ifc->native = fd >= 0;
	if (fd < 0) {
		fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &skb);
		if (fd < 0) {
			err = -errno;
			pr_err("kernel-tx: attaching XDP to %s failed: %s%s", ifname,
			       strerror(-err),
			       err == -EBUSY || err == -EEXIST
				   ? " (another XDP program is attached; remove it first)"
				   : "");
			return err;
		}
	}
	ifc->ifindex = ifindex;
	ifc->link_fd = fd;
	ifc->pending = false;
	snprintf(ifc->name, sizeof(ifc->name), "%s", ifname);
	k->n_ifaces++;
	kern_pin_link(k, ifindex, fd);
	pr_info("kernel-tx: XDP attached to %s (%s mode, link)", ifname,
		ifc->native ? "native" : "generic");
	if (rx_vlan_stripped(ifname))
		pr_warn(
		    "kernel-tx: %s has rx-vlan-offload on: a VLAN tag taken off before XDP is "
		    "invisible to the program, so BFD tagged for another VLAN is answered as if "
		    "untagged; turn the offload off where frames come in (NIC: 'ethtool -K %s "
		    "rxvlan off'; veth: txvlan off on its peer)",
		    ifname, ifname);
	return 0;
}

void kern_session_arm(struct kern *k, uint32_t slot)
{
	uint64_t *g, *t;

	if (slot >= k->max_sessions || !k->wheel_groups)
		return;
	g = k->wheel_groups + (size_t)BFD_WHEEL_ARMED * k->slot_words + (slot >> 6);
	t = k->wheel_tops + (size_t)BFD_WHEEL_ARMED * k->top_words + (slot >> 12);
	/* Group bit before top bit: the order the sweep reads them in reverse (maps.h). */
	__atomic_fetch_or(g, 1ULL << (slot & 63), __ATOMIC_SEQ_CST);
	__atomic_fetch_or(t, 1ULL << ((slot >> 6) & 63), __ATOMIC_SEQ_CST);
}

int kern_session_write(struct kern *k, uint32_t slot, const struct bfd_session_params *p)
{
	struct bfd_session_cfg v;

	memset(&v, 0, sizeof(v));
	v.p = *p;
	if (bpf_map__update_elem(k->skel->maps.sessions_cfg, &slot, sizeof(slot), &v, sizeof(v),
				 BPF_F_LOCK))
		return -errno;
	kern_session_arm(k, slot);
	return 0;
}

int kern_session_clear(struct kern *k, uint32_t slot)
{
	struct bfd_session_cfg cfg;
	struct bfd_session_rx rx;
	struct bfd_session_expiry ex;

	memset(&cfg, 0, sizeof(cfg));
	memset(&rx, 0, sizeof(rx));
	memset(&ex, 0, sizeof(ex));
	if (bpf_map__update_elem(k->skel->maps.sessions_cfg, &slot, sizeof(slot), &cfg, sizeof(cfg),
				 BPF_F_LOCK) ||
	    bpf_map__update_elem(k->skel->maps.sessions_rx, &slot, sizeof(slot), &rx, sizeof(rx),
				 BPF_F_LOCK) ||
	    bpf_map__update_elem(k->skel->maps.sessions_expiry, &slot, sizeof(slot), &ex,
				 sizeof(ex), 0))
		return -errno;
	if (kern_tx_clock(k, slot))
		__atomic_store_n(&kern_tx_clock(k, slot)->last_periodic_ns, 0, __ATOMIC_RELAXED);
	if (kern_echo_rec(k, slot))
		memset(kern_echo_rec(k, slot), 0, sizeof(struct bfd_session_echo));
	kern_session_arm(k, slot); /* its marks in the wheel are stale: the sweep drops them */
	return 0;
}

struct bfd_session_tx *kern_tx_clock(struct kern *k, uint32_t slot)
{
	return k->tx_clocks && slot < k->max_sessions ? &k->tx_clocks[slot] : NULL;
}

struct bfd_session_echo *kern_echo_rec(struct kern *k, uint32_t slot)
{
	return k->echo_recs && slot < k->max_sessions ? &k->echo_recs[slot] : NULL;
}

int kern_session_rx(struct kern *k, uint32_t slot, struct bfd_session_rx *out)
{
	if (bpf_map__lookup_elem(k->skel->maps.sessions_rx, &slot, sizeof(slot), out, sizeof(*out),
				 BPF_F_LOCK))
		return -errno;
	return 0;
}

/* The echo index's key of the session filed under @key (bfd_shared.h, BFD_ADDR_ECHO). */
static void echo_key(const struct bfd_addr_key *key, struct bfd_addr_key *out)
{
	*out = *key;
	out->multihop = BFD_ADDR_ECHO;
	memset(out->local_addr, 0, sizeof(out->local_addr));
}

int kern_index_add(struct kern *k, uint32_t local_disc, const struct bfd_addr_key *key,
		   uint32_t slot)
{
	struct bfd_addr_key ek;

	if (bpf_map__update_elem(k->skel->maps.disc_index, &local_disc, sizeof(local_disc), &slot,
				 sizeof(slot), BPF_ANY) ||
	    bpf_map__update_elem(k->skel->maps.addr_index, key, sizeof(*key), &slot, sizeof(slot),
				 BPF_ANY))
		return -errno;
	/* Single hop only (RFC 5883: no echo multihop); the latest session to a peer wins. */
	echo_key(key, &ek);
	if (!key->multihop && bpf_map__update_elem(k->skel->maps.addr_index, &ek, sizeof(ek), &slot,
						   sizeof(slot), BPF_ANY))
		return -errno;
	return 0;
}

void kern_index_del(struct kern *k, uint32_t local_disc, const struct bfd_addr_key *key)
{
	struct bfd_addr_key ek;
	uint32_t slot, other;

	if (bpf_map__lookup_elem(k->skel->maps.addr_index, key, sizeof(*key), &slot, sizeof(slot),
				 0))
		slot = UINT32_MAX;
	bpf_map__delete_elem(k->skel->maps.disc_index, &local_disc, sizeof(local_disc), 0);
	bpf_map__delete_elem(k->skel->maps.addr_index, key, sizeof(*key), 0);
	/* The echo entry only if it is still this session's (another may share the peer). */
	echo_key(key, &ek);
	if (!key->multihop &&
	    !bpf_map__lookup_elem(k->skel->maps.addr_index, &ek, sizeof(ek), &other, sizeof(other),
				  0) &&
	    other == slot)
		bpf_map__delete_elem(k->skel->maps.addr_index, &ek, sizeof(ek), 0);
}

int kern_counters(struct kern *k, uint64_t out[BFD_CNT__COUNT])
{
	uint64_t *v = calloc((size_t)k->ncpus, sizeof(*v));
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < BFD_CNT__COUNT; i++) {
		out[i] = 0;
		if (bpf_map__lookup_elem(k->skel->maps.counters, &i, sizeof(i), v,
					 sizeof(*v) * (size_t)k->ncpus, 0)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < k->ncpus; c++)
			out[i] += v[c];
	}
	free(v);
	return err;
}

int kern_sweep_stats(struct kern *k, struct bfd_sweep *out)
{
	uint32_t key = 0;

	if (bpf_map__lookup_elem(k->skel->maps.sweep, &key, sizeof(key), out, sizeof(*out), 0))
		return -errno;
	return 0;
}

void kern_heartbeat(struct kern *k, uint64_t now_ns)
{
	k->skel->bss->heartbeat_ns = now_ns;
}

void kern_set_slots_in_use(struct kern *k, uint32_t n)
{
	k->skel->bss->slots_in_use = n;
}

int kern_ring_fd(const struct kern *k)
{
	return ring_buffer__epoll_fd(k->rb);
}

int kern_ring_consume(struct kern *k)
{
	int n = ring_buffer__consume(k->rb);

	return n < 0 ? n : 0;
}
