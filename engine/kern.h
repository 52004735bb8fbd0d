/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kern.h - the engine's side of the XDP program: load the object, attach it to interfaces,
 * write session configuration, read receive state and counters, and consume the ring buffer.
 * Every function returns 0 or -errno unless it says otherwise.
 */
#ifndef ENGINE_KERN_H
#define ENGINE_KERN_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "bfd_shared.h"

#define KERN_MAX_IFACES 64

struct kern_opts {
	uint32_t max_sessions;	  /* sizes the session maps, 1..BFD_MAX_SESSIONS_LIMIT */
	uint64_t deadman_ns;	  /* 0: the fast path answers whatever userspace does */
	uint64_t sweep_period_ns; /* detection sweep period */
	bool pass_unowned;	  /* hand BFD packets for unknown sessions to the stack */
	bool spread_pass;	  /* other traffic to every CPU's stack through a cpumap */
	bool force_generic;	  /* attach in generic (skb) mode only */
	const char *pin_dir;	  /* --pin: a bpffs directory for a live handover; NULL = off */
	bool sweep_manual;	  /* do not arm the sweep timer: the caller runs sweep_at (tests) */
	/* Called for each ring-buffer record (struct bfd_event); return 0. */
	int (*on_event)(void *ctx, void *data, size_t size);
	void *ctx;
};

struct kern_iface {
	int ifindex;
	char name[IF_NAMESIZE];
	int link_fd; /* XDP bpf_link: closing it detaches the program (unless pinned) */
	bool native;
	/* a pinned link running an older engine's program (not xdp_bfd_entry through our
	 * xdp_bfd_progs): bpf_link_update() to our entry program at kern_takeover() */
	bool pending;
};

struct kern {
	struct xdp_bfd *skel;
	struct ring_buffer *rb;
	int ncpus;
	bool force_generic;
	int spread_cpus; /* CPUs --spread-pass hands frames to (0: off) */
	struct kern_iface ifaces[KERN_MAX_IFACES];
	int n_ifaces;
	/* --pin (kern_pin.c): DIR, and DIR/maps-<layout hash> where the maps are pinned. */
	char pin_dir[256];
	char pin_maps_dir[300];
	bool adopted;	       /* the maps are the pinned ones: their sessions are there to adopt */
	bool takeover_pending; /* until kern_takeover(), pinned links found are only held */
	/* The pinned xdp_bfd_progs was reused: its slot 0 runs the previous engine's xdp_bfd
	 * until kern_takeover() puts ours there. */
	bool progs_pending;
	/* What kern_takeover() switched, for the handover's log line. */
	char switched[96];
	/* The entry program every link runs (owned fd): ours, or under --pin the one pinned as
	 * DIR/entry when it tail-calls through our xdp_bfd_progs, so all links run one program
	 * whose id tells a link on the array from an older engine's (no CAP_SYS_ADMIN needed). */
	int entry_fd;
	uint32_t entry_id;
	uint32_t max_sessions, slot_words, top_words;
	/* The sweep's timing wheel, mapped: the engine marks the armed bucket (bfd_shared.h). */
	uint64_t *wheel_groups, *wheel_tops;
	size_t wheel_groups_len, wheel_tops_len;
	/* sessions_tx mapped into our memory: the transmit clocks we share with the program */
	struct bfd_session_tx *tx_clocks;
	size_t tx_clocks_len;
	/* sessions_echo mapped: our own echo coming back, as the program recorded it */
	struct bfd_session_echo *echo_recs;
	size_t echo_recs_len;
};

/* kern_open() - load and verify the XDP object, arm the sweep timer. */
int kern_open(struct kern *k, const struct kern_opts *o);
void kern_close(struct kern *k);

/*
 * kern_attach() - attach the program to @ifname through a bpf_link, in native mode, falling back
 * to generic mode (and saying so). Idempotent. Logs "kernel-tx: XDP attached to IFACE (native
 * mode, link)". The link runs xdp_bfd_entry, which tail-calls xdp_bfd from slot 0 of
 * xdp_bfd_progs (filled by kern_open(), or by kern_takeover() on a reused pinned array).
 */
int kern_attach(struct kern *k, const char *ifname);
/* kern_detach() - forget @ifindex (its link is gone with the device, or detach it). */
void kern_detach(struct kern *k, uint32_t ifindex);
/* kern_attached() - whether @ifindex has the program (any mode). */
bool kern_attached(const struct kern *k, uint32_t ifindex);

/*
 * --- Live handover (kern_pin.c), with kern_opts.pin_dir set ---
 *
 * kern_open() hashes the layout of the maps it pins (sessions_cfg, sessions_rx, sessions_expiry,
 * disc_index, addr_index, counters and the .bss holding the heartbeat, with
 * BFD_PIN_LAYOUT_VERSION) into DIR/maps-<16 hex digits>. Found there with the same layout, they
 * are reused (bpf_map__reuse_fd() before the load: k->adopted); pinned state of another layout
 * is removed and logged, and the engine starts fresh. Each interface's XDP bpf_link is pinned
 * as DIR/link-<ifindex> and runs xdp_bfd_entry (pinned as DIR/entry); the prog array it
 * tail-calls through is pinned as DIR/progs (beside the links, not in the maps directory: any
 * maps layout hands over through it) and reused. A handover is then one map update, slot 0 to this
 * engine's xdp_bfd, for all interfaces at once. A pinned link of an older engine (running its
 * xdp_bfd directly) is held by kern_attach() (ifc->pending) and switched to our entry program by
 * kern_takeover(), so the interface never runs without a program.
 */

/*
 * kern_takeover() - put our xdp_bfd in the reused array's slot 0, then bpf_link_update() every
 * pending link to our entry program; k->switched says which was done. Return: 0 or the first
 * -errno.
 */
int kern_takeover(struct kern *k);
/* kern_unpin() - remove every pin this engine holds (maps dir, DIR/progs, DIR/entry, links,
 * DIR/owner). */
void kern_unpin(struct kern *k);
/* kern_pin_owner() - the PID DIR/owner names (the engine owning the pins), 0 for none. */
pid_t kern_pin_owner(struct kern *k);
/* kern_pin_set_owner() - name @pid there (creating DIR/owner). Return: 0 or -errno. */
int kern_pin_set_owner(struct kern *k, pid_t pid);
/* kern_session_cfg() - the slot's published cfg, read under its lock. */
int kern_session_cfg(struct kern *k, uint32_t slot, struct bfd_session_params *out);
/* kern_pin_prepare(), kern_pin_maps(), kern_pin_link(): kern.c's steps, before and after the
 * load and at attach. */
int kern_pin_prepare(struct kern *k, const char *dir);
/* kern_progs_fill() - put this engine's xdp_bfd in slot 0 of xdp_bfd_progs. */
int kern_progs_fill(struct kern *k);
int kern_pin_maps(struct kern *k);
/* Return: the pinned link's fd for @ifindex (held, pending), or -ENOENT to create one. */
int kern_pin_link_get(struct kern *k, int ifindex);
/* kern_pin_link_on_entry() - whether pinned link @link_fd runs k->entry_fd's program, which
 * tail-calls through our xdp_bfd_progs (then only the array's slot 0 needs switching). */
bool kern_pin_link_on_entry(struct kern *k, int link_fd);
void kern_pin_link(struct kern *k, int ifindex, int link_fd);
void kern_pin_link_drop(struct kern *k, int ifindex);

/* kern_session_write() - publish the slot's cfg (BPF_F_LOCK) and mark it for the next sweep. */
int kern_session_write(struct kern *k, uint32_t slot, const struct bfd_session_params *p);
/*
 * kern_session_arm() - mark @slot in the sweep's armed bucket: the next sweep (within one
 * --sweep-us tick) looks at its deadlines again. For anything that may bring them closer without
 * a kern_session_write(); a slot beyond max_sessions is ignored.
 */
void kern_session_arm(struct kern *k, uint32_t slot);
/* kern_session_clear() - zero the slot's cfg, receive state, expiry record and transmit clock. */
int kern_session_clear(struct kern *k, uint32_t slot);
/*
 * kern_tx_clock() - the slot's transmit clock, shared with the program (struct bfd_session_tx,
 * claimed with bfd_tx_claim()); NULL for a slot out of range.
 */
struct bfd_session_tx *kern_tx_clock(struct kern *k, uint32_t slot);
/*
 * kern_echo_rec() - the slot's record of our own echo coming back (struct bfd_session_echo,
 * written by the program); NULL for a slot out of range.
 */
struct bfd_session_echo *kern_echo_rec(struct kern *k, uint32_t slot);
/* kern_session_rx() - the slot's receive state, read under its lock (BPF_F_LOCK). */
int kern_session_rx(struct kern *k, uint32_t slot, struct bfd_session_rx *out);

/*
 * Index entries the program finds sessions by: Your Discriminator, and addresses (RFC 5880 6.3);
 * for a single-hop session also the peer's address alone (BFD_ADDR_ECHO, for kern/echo.h).
 */
int kern_index_add(struct kern *k, uint32_t local_disc, const struct bfd_addr_key *key,
		   uint32_t slot);
void kern_index_del(struct kern *k, uint32_t local_disc, const struct bfd_addr_key *key);

/* kern_counters() - per-CPU counters summed, indexed by enum bfd_counter / drop base. */
int kern_counters(struct kern *k, uint64_t out[BFD_CNT__COUNT]);
/* kern_sweep_stats() - the sweep timer's own record (runs, last/longest/total scan ns, slots
 * visited). */
int kern_sweep_stats(struct kern *k, struct bfd_sweep *out);

void kern_heartbeat(struct kern *k, uint64_t now_ns);
void kern_set_slots_in_use(struct kern *k, uint32_t n);

/* The fd to wait on for ring-buffer records, and the call that hands them to on_event. */
int kern_ring_fd(const struct kern *k);
int kern_ring_consume(struct kern *k);

#endif
