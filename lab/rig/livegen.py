"""livegen - send one frame at a high rate with BPF_PROG_TEST_RUN and BPF_F_TEST_XDP_LIVE_FRAMES.

Run inside the load namespace (the interface index is looked up there):

    /usr/bin/python3 lab/livegen.py IFNAME HEXFRAME SECONDS [--pps N] [--random-sport]

A two- (or ten-) instruction XDP program returning XDP_TX is run by the kernel over the frame
in live-frame mode: every XDP_TX leaves through IFNAME (a veth here; its peer must run a
native XDP program, as the lab's bridge ports do). With --random-sport the program writes
bpf_get_prandom_u32() into the UDP source port (IPv4 without options, so offset 34) of every
frame; the frame's UDP checksum must then be 0. The kernel loop is run in slices of at most
SLICE frames (100 ms worth when paced to --pps; 0: as fast as possible) until SECONDS have
passed.
Prints one JSON line: {"sent": n, "seconds": s, "pps": x, "slices": n, "errors": n}.

Only the bpf(2) syscall through ctypes: no libbpf, no ELF, no compiler at run time.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
import sys
import time

BPF_PROG_LOAD = 5
BPF_PROG_TEST_RUN = 10
BPF_PROG_TYPE_XDP = 6
BPF_F_TEST_XDP_LIVE_FRAMES = 1 << 1
XDP_TX = 3
SLICE = 65536  # frames per test_run call: the kernel loop is not interruptible inside one
NR_BPF = 321  # x86_64

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def program(random_sport: bool) -> bytes:
    """XDP_TX, optionally after writing a random UDP source port (bounds-checked)."""
    if not random_sport:
        return _insn(0xb7, 0, imm=XDP_TX) + _insn(0x95)  # r0 = XDP_TX; exit
    return b"".join([
        _insn(0xbf, 6, 1),            # r6 = ctx
        _insn(0x61, 2, 6, 0),         # r2 = ctx->data
        _insn(0x61, 3, 6, 4),         # r3 = ctx->data_end
        _insn(0xbf, 4, 2),            # r4 = r2
        _insn(0x07, 4, imm=42),       # r4 += 42 (eth 14 + ip 20 + udp 8)
        _insn(0x2d, 4, 3, off=4),     # if r4 > r3 goto out
        _insn(0xbf, 7, 2),            # r7 = r2 (callee-saved across the call)
        _insn(0x85, imm=7),           # call bpf_get_prandom_u32
        _insn(0x6b, 7, 0, off=34),    # *(u16 *)(r7 + 34) = r0: UDP source port
        _insn(0x05, off=0),           # goto out (no-op jump keeps the offsets simple)
        _insn(0xb7, 0, imm=XDP_TX),   # out: r0 = XDP_TX
        _insn(0x95),                  # exit
    ])


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    r = _libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf({cmd}): {os.strerror(e)}")
    return r


def load(random_sport: bool) -> int:
    insns = program(random_sport)
    buf = ctypes.create_string_buffer(insns, len(insns))
    lic = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(65536)
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("<IIQQIIQ", attr, 0, BPF_PROG_TYPE_XDP, len(insns) // 8,
                     ctypes.addressof(buf), ctypes.addressof(lic), 1, len(log),
                     ctypes.addressof(log))
    struct.pack_into("16s", attr, 48, b"lab_livegen")
    try:
        return _bpf(BPF_PROG_LOAD, attr)
    except OSError as e:
        raise OSError(e.errno, f"{e.strerror}: {log.value.decode(errors='replace')}") from e


def run(prog_fd: int, frame: bytes, ifindex: int, repeat: int) -> None:
    data = ctypes.create_string_buffer(frame, len(frame))
    # xdp_md: data 0, data_end = the frame length (the kernel insists), data_meta 0, ifindex
    ctx = ctypes.create_string_buffer(struct.pack("<6I", 0, len(frame), 0, ifindex, 0, 0), 24)
    attr = ctypes.create_string_buffer(80)
    # prog_fd, retval, data_size_in, data_size_out, data_in, data_out, repeat, duration,
    # ctx_size_in, ctx_size_out, ctx_in, ctx_out, flags, cpu, batch_size
    struct.pack_into("<IIIIQQIIIIQQIII", attr, 0, prog_fd, 0, len(frame), 0,
                     ctypes.addressof(data), 0, repeat, 0, len(ctx), 0,
                     ctypes.addressof(ctx), 0, BPF_F_TEST_XDP_LIVE_FRAMES, 0, 0)
    _bpf(BPF_PROG_TEST_RUN, attr)


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ifname, frame, seconds = argv[0], bytes.fromhex(argv[1]), float(argv[2])
    pps = float(argv[argv.index("--pps") + 1]) if "--pps" in argv else 0.0
    fd = load("--random-sport" in argv)
    ifindex = socket.if_nametoindex(ifname)
    sent = slices = errors = 0
    t0 = time.monotonic()
    end = t0 + seconds
    # Each test_run call sets up its own page pool (about 20 ms here), so pace in slices of
    # 100 ms worth of frames: the rate holds on average, in bursts at the unpaced speed.
    per = max(1024, min(SLICE, int(pps / 10))) if pps else SLICE
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if pps:
            due = int((now - t0) * pps) - sent
            if due < per:
                time.sleep(min(0.002, end - now))
                continue
        try:
            run(fd, frame, ifindex, per)
            sent += per
        except OSError as e:
            errors += 1
            if errors > 100:
                print(json.dumps({"error": str(e)}), flush=True)
                return 1
        slices += 1
    dt = time.monotonic() - t0
    print(json.dumps({"sent": sent, "seconds": round(dt, 3), "pps": round(sent / dt, 1),
                      "slices": slices, "errors": errors}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
