/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bfd_shared.h - the one contract between the XDP program and the engine.
 *
 * Holds the BFD Control packet layout (RFC 5880 section 4.1), the map keys and values, the
 * ring-buffer records, the discard reasons and counters, and the load-time settings. Every struct
 * has fixed-width fields, explicit padding and a size assert, so the BPF object and userspace
 * agree byte for byte. Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns()) unless the
 * name says otherwise; intervals carry their unit in their name, as on the wire (_us).
 *
 * Included by bpf/xdp_bfd.bpf.c (after vmlinux.h), by the engine, by bfdcap and by the tests.
 */
#ifndef BFD_SHARED_H
#define BFD_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock, struct bpf_timer */
#endif

/* --- Protocol constants (RFC 5880, 5881, 5883, 7130) --- */

#define BFD_VERSION	   1
#define BFD_CTRL_LEN	   24	   /* mandatory section of a Control packet */
#define BFD_PORT_CONTROL   3784	   /* single hop, RFC 5881 section 4 */
#define BFD_PORT_ECHO	   3785	   /* RFC 5881 section 4 */
#define BFD_PORT_MULTIHOP  4784	   /* RFC 5883 section 5 */
#define BFD_PORT_MICRO	   6784	   /* micro-BFD on LAG members, RFC 7130 */
#define BFD_TTL_SINGLE_HOP 255	   /* GTSM, RFC 5881 section 5 */
#define BFD_SLOW_TX_US	   1000000 /* at least 1 s while not Up, RFC 5880 section 6.8.3 */

enum bfd_session_state {
	BFD_STATE_ADMIN_DOWN = 0,
	BFD_STATE_DOWN = 1,
	BFD_STATE_INIT = 2,
	BFD_STATE_UP = 3,
};

enum bfd_diag { /* RFC 5880 section 4.1 */
		BFD_DIAG_NONE = 0,
		BFD_DIAG_DETECT_EXPIRED = 1,
		BFD_DIAG_ECHO_FAILED = 2,
		BFD_DIAG_NEIGHBOR_DOWN = 3,
		BFD_DIAG_FWD_RESET = 4,
		BFD_DIAG_PATH_DOWN = 5,
		BFD_DIAG_CONCAT_DOWN = 6,
		BFD_DIAG_ADMIN_DOWN = 7,
		BFD_DIAG_REV_CONCAT_DOWN = 8,
};

/* Flag bits of the second byte; the session state is in its top two bits. */
#define BFD_FLAG_POLL	    0x20
#define BFD_FLAG_FINAL	    0x10
#define BFD_FLAG_CPI	    0x08
#define BFD_FLAG_AUTH	    0x04
#define BFD_FLAG_DEMAND	    0x02
#define BFD_FLAG_MULTIPOINT 0x01

/*
 * BFD Control packet, mandatory section (RFC 5880 section 4.1). All multi-byte fields in network
 * byte order. Read as bytes and masks: no bitfields.
 */
struct bfd_ctrl {
	__u8 version_diag; /* version << 5 | diag */
	__u8 state_flags;  /* state << 6 | P F C A D M */
	__u8 detect_mult;
	__u8 length;
	__u32 my_disc;
	__u32 your_disc;
	__u32 desired_min_tx_us;
	__u32 required_min_rx_us;
	__u32 required_min_echo_rx_us;
};
_Static_assert(sizeof(struct bfd_ctrl) == BFD_CTRL_LEN, "bfd_ctrl layout");

#define BFD_CTRL_VERSION(c) ((c)->version_diag >> 5)
#define BFD_CTRL_DIAG(c)    ((c)->version_diag & 0x1f)
#define BFD_CTRL_STATE(c)   ((c)->state_flags >> 6)
#define BFD_CTRL_FLAGS(c)   ((c)->state_flags & 0x3f)

/*
 * Discard reasons, in the order of the checks (the checksums the stack would have verified:
 * RFC 791, RFC 768, RFC 8200 section 8.1; then RFC 5881 section 5 TTL, then RFC 5880 section
 * 6.8.6), then the engine's own. One table: the XDP program, the engine's software path, the
 * stats dump and bfdcap all use these names. X(name, "what was wrong").
 */
#define BFD_DROP_REASONS(X)                                                                        \
	X(BAD_IP_CHECKSUM, "IPv4 header checksum wrong")                                           \
	X(BAD_UDP_CHECKSUM, "UDP checksum wrong")                                                  \
	X(ZERO_UDP_CHECKSUM_IPV6, "UDP checksum zero over IPv6 (RFC 8200 8.1)")                    \
	X(TTL, "TTL/hop limit below what the session accepts (255 single hop)")                    \
	X(BAD_VERSION, "Version is not 1")                                                         \
	X(BAD_LENGTH, "Length below 24 (26 with A set)")                                           \
	X(LENGTH_GT_PAYLOAD, "Length beyond the UDP payload")                                      \
	X(ZERO_MULT, "Detect Mult is zero")                                                        \
	X(MULTIPOINT, "Multipoint (M) bit set")                                                    \
	X(ZERO_MY_DISC, "My Discriminator is zero")                                                \
	X(UNKNOWN_YOUR_DISC, "Your Discriminator names no session")                                \
	X(ZERO_YOUR_DISC, "Your Discriminator zero while state is not Down or AdminDown")          \
	X(NO_SESSION, "Your Discriminator zero and no session for the addresses")                  \
	X(DEMUX_MISMATCH, "session found but addresses, interface or port do not match it")        \
	X(AUTH_MISMATCH, "A bit does not match the session's authentication")                      \
	X(ADMIN_DOWN, "session is AdminDown")                                                      \
	X(POLL_AND_FINAL, "Poll and Final both set")                                               \
	X(MALFORMED_IP, "IP or UDP header inconsistent")

#define BFD_DROP_ENUM(name, text) BFD_DROP_##name,
enum bfd_drop_reason { BFD_DROP_REASONS(BFD_DROP_ENUM) BFD_DROP__COUNT };
#undef BFD_DROP_ENUM

/*
 * Per-CPU counters of the XDP program and the sweep timer (one BPF_MAP_TYPE_PERCPU_ARRAY,
 * indexed by this enum; drop reasons follow at BFD_CNT_DROP_BASE + reason).
 */
#define BFD_COUNTERS(X)                                                                            \
	X(PASS_NON_BFD, "not BFD: passed to the stack")                                            \
	X(PASS_UNOWNED, "BFD port but not ours (--pass-unowned): passed")                          \
	X(PASS_SPREAD, "not BFD: handed to a CPU's stack through the cpumap (--spread-pass)")      \
	X(RX_CTRL, "Control packets accepted for a session")                                       \
	X(TX_REPLY, "replies sent with XDP_TX")                                                    \
	X(TX_FINAL, "replies that carried Final")                                                  \
	X(TX_ECHO, "the peer's Echo packets returned with XDP_TX (RFC 5881 4)")                    \
	X(ECHO_UNOWNED, "Echo packets (UDP 3785) of no session of ours: to the stack")             \
	X(ECHO_REFUSED, "Echo dropped: session not Up, multihop, or our Required Min Echo RX 0")   \
	X(ECHO_TTL, "Echo dropped: TTL/hop limit not 255 (forwarded or returned already)")         \
	X(ECHO_OWN_RX, "our own Echo packets back (RFC 5880 6.4): arrival recorded, dropped")      \
	X(RX_CONSUMED, "accepted packets not answered in XDP (state not Up, rate, dead-man)")      \
	X(DEADMAN_HOLD, "replies withheld: the engine's heartbeat is older than --deadman-us")     \
	X(EXPIRED_HOLD, "replies withheld: detection time expired, the engine has not acted")      \
	X(EVENT_POSTED, "events posted to the engine")                                             \
	X(EVENT_LOST, "events not posted: ring buffer full (expiries retried)")                    \
	X(SWEEP_RUNS, "detection sweeps run")                                                      \
	X(SWEEP_EXPIRED, "sessions found past their detection time")                               \
	X(TIMER_ERRORS, "bpf_timer_start failures")

#define BFD_CNT_ENUM(name, text) BFD_CNT_##name,
enum bfd_counter { BFD_COUNTERS(BFD_CNT_ENUM) BFD_CNT_DROP_BASE };
#undef BFD_CNT_ENUM
#define BFD_CNT__COUNT (BFD_CNT_DROP_BASE + BFD_DROP__COUNT)

/* --- Sessions --- */

#define BFD_MAX_SESSIONS_DEFAULT 1024
#define BFD_MAX_SESSIONS_LIMIT	 65536

/*
 * The detection sweep's timing wheel (RFC 5880 6.8.4 deadlines). Bucket b of BFD_WHEEL_TICKS holds
 * the slots due at a sweep tick t with t % BFD_WHEEL_TICKS == b; bucket BFD_WHEEL_TICKS ("armed")
 * holds the slots whose deadline may have moved earlier (the engine wrote the cfg, or the XDP
 * program saw a packet that changed the peer's fields): the next sweep visits them. Each bucket is
 * a two-level bitmap: a bit per slot in 64-slot group words, and a bit per group word in top
 * words, so a sweep reads only the words that hold a marked slot. A deadline further than
 * BFD_WHEEL_TICKS - 1 ticks is visited at that horizon and scheduled again.
 */
#define BFD_WHEEL_TICKS	    512
#define BFD_WHEEL_ARMED	    BFD_WHEEL_TICKS /* the bucket writers mark */
#define BFD_WHEEL_BUCKETS   (BFD_WHEEL_TICKS + 1)
#define BFD_SLOT_WORDS(n)   (((n) + 63) / 64) /* group words per bucket for n slots */
#define BFD_TOP_WORDS(n)    ((BFD_SLOT_WORDS(n) + 63) / 64)
#define BFD_TOP_WORDS_LIMIT BFD_TOP_WORDS(BFD_MAX_SESSIONS_LIMIT)

/* bfd_session_cfg.session_flags */
#define BFD_SF_IPV6	0x01 /* addresses are IPv6 */
#define BFD_SF_MULTIHOP 0x02 /* UDP 4784, TTL >= min_ttl (RFC 5883) */
#define BFD_SF_CPI	0x04 /* send C (control plane independent) */
#define BFD_SF_POLL	0x10 /* our Poll Sequence poll_seq is open: set P until its Final */
/* Userspace serves it (its packets came through the stack): report every packet, answer none. */
#define BFD_SF_SOFTWARE 0x20
/* The peer's packets clock ours: if they stop, the sweep reports it (BFD_EV_QUIET). */
#define BFD_SF_RX_CLOCKED 0x40
#define BFD_SF_ACTIVE	  0x80 /* slot in use */

/*
 * What our side of a session says and expects, as the engine last decided it. The XDP program
 * copies it out of bfd_session_cfg under the lock and builds replies from the copy, so a reply
 * never mixes two versions. Addresses: IPv4 in the first 4 bytes (network order), rest zero;
 * IPv6 all 16. Discriminators and intervals in host order.
 */
struct bfd_session_params {
	__u8 session_state; /* enum bfd_session_state */
	__u8 local_diag;    /* enum bfd_diag, sent in our packets */
	__u8 detect_mult;   /* our Detect Mult */
	__u8 session_flags; /* BFD_SF_* */
	__u8 min_ttl;	    /* lowest TTL accepted: 255 single hop, bfdd's value multihop */
	__u8 _pad0;
	__u16 local_port;	 /* our UDP source port */
	__u32 ifindex;		 /* 0: any interface */
	__u32 local_disc;	 /* My Discriminator (bfdd's lid) */
	__u32 remote_disc;	 /* Your Discriminator we send */
	__u32 desired_min_tx_us; /* as advertised now (at least 1 s while not Up) */
	__u32 required_min_rx_us;
	__u32 required_min_echo_rx_us;
	__u32 poll_seq;	   /* number of our current or last Poll Sequence (see BFD_SF_POLL) */
	__u32 incarnation; /* the engine's number for this session, never reused: events carry it */
	__u64 detect_time_ns; /* RFC 5880 6.8.4, for the sweep; 0 = detection off */
	__u32 tx_in_force_us; /* our Desired Min TX for our interval (6.8.3: waits for a Final) */
	__u32 cfg_gen;	      /* bumped by every write: an expiry holds until the engine's next */
	__u8 local_addr[16];
	__u8 peer_addr[16];
};
_Static_assert(sizeof(struct bfd_session_params) == 88, "bfd_session_params layout");

/* The engine writes it with BPF_F_LOCK; the XDP program reads it under the lock. */
struct bfd_session_cfg {
	struct bpf_spin_lock lock;
	__u32 _pad;
	struct bfd_session_params p;
};
_Static_assert(sizeof(struct bfd_session_cfg) == 96, "bfd_session_cfg layout");

/*
 * Per-session receive state: the XDP program writes it under the lock for every accepted packet;
 * the engine reads it with BPF_F_LOCK. Remote fields are host order, as last received.
 */
struct bfd_session_rx {
	struct bpf_spin_lock lock;
	__u32 final_poll_seq; /* poll_seq the peer's Final answered */
	__u64 last_rx_ns;     /* arrival of the last accepted packet */
	__u64 last_tx_ns;     /* last XDP reply */
	__u64 rx_packets;
	__u64 rx_bytes;
	__u64 tx_packets; /* XDP replies */
	__u64 tx_bytes;
	__u32 remote_disc;
	__u32 remote_desired_min_tx_us;
	__u32 remote_required_min_rx_us;
	__u32 remote_required_min_echo_rx_us;
	__u8 remote_state;
	__u8 remote_diag;
	__u8 remote_flags; /* BFD_FLAG_* as last received */
	__u8 remote_detect_mult;
	/*
	 * Whether the peer jitters (RFC 5880 6.8.7), judged over windows of BFD_PEER_GAP_WINDOW
	 * gaps between its non-Final packets: peer_steady 1 when the last window spread less than
	 * 1/BFD_PEER_STEADY_DIV of its interval. Its packets then cannot clock ours (ours would
	 * carry no jitter).
	 */
	__u8 peer_gap_n; /* gaps in the current window */
	__u8 peer_steady;
	__u16 _pad;
	__u32 peer_gap_min_us, peer_gap_max_us; /* the current window's */
	__u32 peer_gap_iv_us; /* the peer's interval the window is judged against */
	__u32 _pad2;
	__u64 peer_last_ns; /* arrival of its last non-Final packet */
};
_Static_assert(sizeof(struct bfd_session_rx) == 104, "bfd_session_rx layout");

#define BFD_PEER_GAP_WINDOW 32
/*
 * 1/16: 32 gaps drawn uniformly over 75-100 % (RFC 5880 6.8.7) spread less than a quarter of
 * their range, 1/16 of the interval, with a probability of 32 * 4^-31 (7e-18); a fixed-rate
 * sender's own scheduling noise (a 5 ms tick at 200 ms: 10 ms of 12.5) stays under it. 1/8 was
 * too wide: bfdpeer draws 75-100 % but its own lateness packs its gaps into 41-50 ms at 50 ms,
 * and 1,694 of 6,293 of its 32-gap windows spread under 6.25 ms in C13c (run
 * 20261203T093011Z), none under 3.125 ms; judged steady, the session left the fast path's
 * mirror for userspace's timer, which a stopped or loaded userspace then missed.
 */
#define BFD_PEER_STEADY_DIV 16

/*
 * The session's transmit clock, shared by the XDP program and userspace (a BPF_F_MMAPABLE array:
 * userspace maps it and uses the same atomic instruction): the time of our last periodic packet,
 * whoever sent it. Each side claims it (bfd_tx_claim()) before sending a periodic packet, so the
 * two together never send faster than the interval allows; a Final is not periodic and does not
 * claim (RFC 5880 6.8.7).
 */
struct bfd_session_tx {
	__u64 last_periodic_ns;
};
_Static_assert(sizeof(struct bfd_session_tx) == 8, "bfd_session_tx layout");

/*
 * bfd_tx_jitter_ns() - how long after the periodic packet sent at @last_ns the next one is due:
 * @interval_us reduced by a random 0-25 % (0-10 % of the reduction left out with @detect_mult 1:
 * 75-90 % of the interval), RFC 5880 6.8.7. The random value is a hash of @last_ns, so the XDP
 * program and userspace, reading the same shared clock, agree on the deadline without storing it;
 * a nanosecond timestamp is as unpredictable as any draw for this purpose (jitter needs spread,
 * not secrecy). Return: ns; 0 for an interval of 0.
 */
static inline __u64 bfd_tx_jitter_ns(__u32 interval_us, __u8 detect_mult, __u64 last_ns)
{
	__u64 h = last_ns, iv_ns = (__u64)interval_us * 1000, span;

	/* murmur3's 64-bit finaliser: every input bit reaches every output bit */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	span = detect_mult == 1 ? iv_ns * 15 / 100 : iv_ns / 4;
	/* 75 % plus a uniform fraction of the span, in 1/65536 steps (iv_ns < 2^32 * 1000) */
	return iv_ns - iv_ns / 4 + ((span * (h & 0xffff)) >> 16);
}

/*
 * bfd_tx_claim() - take the periodic slot of @clock at @now_ns if at least @gap_ns have passed
 * since the last periodic packet: one compare-and-swap, so of the XDP program on any CPU and
 * userspace, exactly one wins a slot. Return: 1 if the caller may send, 0 if not.
 */
static inline int bfd_tx_claim(struct bfd_session_tx *clock, __u64 now_ns, __u64 gap_ns)
{
	__u64 last = *(volatile __u64 *)&clock->last_periodic_ns;

	if (last && (__s64)(now_ns - last) < (__s64)gap_ns)
		return 0;
	return __sync_val_compare_and_swap(&clock->last_periodic_ns, last, now_ns) == last;
}

/*
 * Written only by the sweep timer: the last_rx_ns it has already reported as expired, and the
 * cfg_gen it saw then. Until the engine writes a newer cfg, the session has gone down (RFC 5880
 * 6.8.4) whatever the cfg still says, so the program answers nothing.
 */
struct bfd_session_expiry {
	__u64 reported_rx_ns;
	__u32 expired_cfg_gen;
	__u32 expired;	  /* 1 once an expiry was reported for this slot */
	__u64 quiet_ns;	  /* when the sweep last reported the peer quiet (BFD_EV_QUIET) */
	__u64 wheel_tick; /* the sweep tick the slot is scheduled for; 0: not in the wheel */
};
_Static_assert(sizeof(struct bfd_session_expiry) == 32, "bfd_session_expiry layout");

/* Key of the address index, used when Your Discriminator is zero (RFC 5880 6.3, RFC 5881 3). */
struct bfd_addr_key {
	__u32 ifindex; /* 0: the session is not bound to an interface */
	__u8 family;   /* 4 or 6 */
	__u8 multihop; /* 0 or 1 */
	__u16 _pad;
	__u8 local_addr[16];
	__u8 peer_addr[16];
};
_Static_assert(sizeof(struct bfd_addr_key) == 40, "bfd_addr_key layout");
/*
 * bfd_addr_key.multihop of the echo index: each single-hop session is filed again under this,
 * its local address zeroed, so the XDP program finds it by the peer's address alone (a
 * self-addressed Echo packet carries none of ours; kern/echo.h). addr_index holds twice the
 * sessions.
 */
#define BFD_ADDR_ECHO 2

/*
 * The payload of the Echo packets the engine originates (RFC 5880 6.4: its content is the
 * sender's business), network order. The XDP program knows one coming back by the magic, the
 * discriminator naming one of our sessions and the destination being that session's local
 * address (kern/echo_own.h); anything else on UDP 3785 is the peer's echo (kern/echo.h).
 */
#define BFD_ECHO_MAGIC 0x58424645 /* "XBFE" */
struct bfd_echo_payload {
	__u32 magic;   /* BFD_ECHO_MAGIC */
	__u32 my_disc; /* the session's My Discriminator */
	__u32 seq;     /* the session's echo count when sent */
	__u32 _pad;    /* zero */
	__u64 tx_ns;   /* CLOCK_MONOTONIC when sent: the round trip, for the curious */
};
_Static_assert(sizeof(struct bfd_echo_payload) == 24, "bfd_echo_payload layout");

/*
 * Per-session record of our own echo coming back, written by the XDP program (plain stores: one
 * writer per packet, a torn read costs the engine one stale value) and read by the engine
 * through a mapping (BPF_F_MMAPABLE), without a syscall per look.
 */
struct bfd_session_echo {
	__u64 last_rx_ns; /* arrival of the last one back; 0: none yet */
	__u64 rx_packets; /* how many came back */
	__u64 last_tx_ns; /* the tx_ns it carried: last_rx_ns - last_tx_ns is its round trip */
	__u32 last_seq;
	__u32 _pad;
};
_Static_assert(sizeof(struct bfd_session_echo) == 32, "bfd_session_echo layout");

/* --- Events to the engine (ring buffer) --- */

enum bfd_event_kind {
	BFD_EV_RX = 1,	    /* accepted packet the engine must see */
	BFD_EV_EXPIRED = 2, /* sweep: no packet within the detection time */
	/* Sweep: an rx-clocked session has sent nothing for 1.5 intervals (its peer is quiet):
	 * userspace sends, since our transmission must not wait for reception (RFC 5880 6.8.7). */
	BFD_EV_QUIET = 3,
};

/* bfd_event.event_flags */
#define BFD_EVF_FINAL_SENT 0x01 /* XDP already answered this Poll with a Final */
#define BFD_EVF_REPLIED	   0x02 /* XDP answered this packet */
#define BFD_EVF_NOT_UP	   0x04 /* the published state was not Up: XDP could not answer */
#define BFD_EVF_EXPIRED	   0x08 /* the sweep found the session expired; the engine has not acted */
/* The peer does not jitter (bfd_session_rx.peer_steady): userspace clocks our packets. */
#define BFD_EVF_PEER_STEADY 0x10
/* An rx-clocked packet came too soon after our last periodic packet to be answered: the next
 * one is userspace's to send if the peer's next comes too late (RFC 5880 6.8.7). */
#define BFD_EVF_TX_EARLY 0x20

struct bfd_event {
	__u32 kind; /* enum bfd_event_kind */
	__u32 slot;
	__u64 ts_ns;	  /* arrival (RX) or sweep time (EXPIRED) */
	__u64 last_rx_ns; /* EXPIRED: the arrival it timed out from */
	__u32 ifindex;
	__u16 peer_port; /* host order */
	__u8 ttl;
	__u8 event_flags;    /* BFD_EVF_* */
	struct bfd_ctrl pkt; /* as received, network order */
	/* The slot's session then (params.incarnation): a slot reused since, even with the same
	 * discriminator, makes the event stale. */
	__u32 incarnation;
	__u32 _pad;
};
_Static_assert(sizeof(struct bfd_event) == 64, "bfd_event layout");

/* --- Live handover (the engine's --pin) --- */

/*
 * Version of what the engine pins for a live handover: the session maps, the counters and the
 * .bss (heartbeat_ns, slots_in_use). The pin directory's name hashes this with each pinned map's
 * type, key and value sizes, entries and flags, so a build whose maps differ finds no state to
 * adopt. Bump it when the meaning of a pinned value changes without its size changing.
 */
#define BFD_PIN_LAYOUT_VERSION 1

/* --- Global state --- */

/* Load-time settings (.rodata of the XDP object, set before load). */
struct bfd_settings {
	__u64 deadman_ns;      /* stop replying when the heartbeat is older; 0 = off */
	__u64 sweep_period_ns; /* detection sweep period */
	__u32 pass_unowned;    /* 1: hand BFD packets we do not own to the stack */
	__u32 spread_cpus;     /* --spread-pass: non-BFD frames go to CPU (flow hash % this)
				* through the pass_cpus cpumap; 0 = off (XDP_PASS here) */
	__u32 slot_words;      /* BFD_SLOT_WORDS(max sessions): group words per wheel bucket */
	__u32 top_words;       /* BFD_TOP_WORDS(max sessions): top words per wheel bucket */
};
_Static_assert(sizeof(struct bfd_settings) == 32, "bfd_settings layout");

/* The one sweep timer, in a one-element array (a bpf_timer must live in a map value). */
struct bfd_sweep {
	struct bpf_timer timer;
	__u64 runs;
	__u64 last_scan_ns; /* how long the last sweep took */
	__u64 max_scan_ns;
	__u64 total_scan_ns; /* sum over all sweeps: their CPU cost */
	__u64 last_tick;     /* the last wheel tick swept (now_ns / sweep_period_ns) */
	__u64 last_visited;  /* slots the last sweep visited (marked in the buckets it read) */
	__u64 max_visited;
	__u64 total_visited;
	__u32 busy; /* a sweep is running: a second one (sweep_at beside the timer) backs off */
	__u32 _pad;
	/* Scratch for the bitmap walk (bpf_loop callbacks keep their changing state here, not on
	 * the stack, so the verifier checks each callback once): the top word and the group word
	 * being walked. */
	__u64 walk_top;
	__u64 walk_group;
};

/* Context of the sweep_at program (BPF_PROG_TEST_RUN): one sweep as if the clock read now_ns. */
struct bfd_sweep_at {
	__u64 now_ns;
};

/* --- bfdpeer (peer/): the lab's BFD session emulator, with an XDP program of its own --- */

/*
 * One BFD datagram that arrived on bfdpeer's interface (bpf/xdp_bfdpeer.bpf.c), its IP and UDP
 * checksums verified, copied to the ring so userspace reads arrivals without a syscall each.
 */
struct bfdpeer_arrival {
	__u64 ts_ns;	     /* arrival, CLOCK_MONOTONIC */
	__u8 local_addr[16]; /* destination (ours); IPv4 in bytes 0-3 */
	__u8 peer_addr[16];  /* source */
	__u32 ifindex;
	__u16 peer_port;     /* host order */
	__u16 local_port;    /* host order: 3784 single hop, 4784 multihop */
	__u16 payload_len;   /* UDP payload bytes on the wire (pkt holds the first 24) */
	__u8 family;	     /* 4 or 6 */
	__u8 ttl;	     /* TTL or hop limit as received */
	struct bfd_ctrl pkt; /* network order; bytes past payload_len are zero */
};
_Static_assert(sizeof(struct bfdpeer_arrival) == 80, "bfdpeer_arrival layout");

/* bfdpeer's XDP counters (a per-CPU array indexed by these). */
enum bfdpeer_counter {
	BFDPEER_CNT_RX = 0,	   /* BFD datagrams put on the ring */
	BFDPEER_CNT_RING_FULL = 1, /* dropped: the ring was full (userspace fell behind) */
	BFDPEER_CNT_BAD_CSUM = 2,  /* dropped: IP or UDP checksum wrong (RFC 791, 768, 8200) */
	BFDPEER_CNT_MALFORMED = 3, /* dropped: UDP to a BFD port whose headers disagree */
	BFDPEER_CNT_PASSED = 4,	   /* not BFD Control: handed to the stack (ARP, ND, ...) */
	BFDPEER_CNT__COUNT = 5,
};

#endif /* BFD_SHARED_H */
