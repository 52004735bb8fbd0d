#!/usr/bin/python3
"""Seed corpus for tests/fuzz/fuzz_engine.c (records [op][len][bytes]); writes
tests/fuzz/corpus/engine/. Run from the repository root:
    PYTHONPATH=. /usr/bin/python3 tests/fuzz/make_engine_corpus.py
"""
import ipaddress
from pathlib import Path

from lab.wire import bfd as wbfd
from lab.wire import bfddp

OUT = Path("tests/fuzz/corpus/engine")


def rec(op: int, b: bytes) -> bytes:
    return bytes([op, len(b)]) + b


def bfd(state: int, flags: int = 0, my: int = 0x0B, your: int = 0x0A, tx: int = 10000) -> bytes:
    return wbfd.control(state, my, your, flags=flags, tx_us=tx, rx_us=10000)


def add(lid: int = 0x0A, tx: int = 10000, flags: int = 0, mtype: int = 2) -> bytes:
    return bfddp.session(mtype, ipaddress.ip_address("10.0.0.1").packed,
                         ipaddress.ip_address("10.0.0.2").packed, lid, tx, tx, flags=flags,
                         ifname=b"eth0")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = {
        "handshake": rec(1, bfd(1, your=0)) + rec(1, bfd(2)) + rec(3, b"\x05" * 5) +
        rec(1, bfd(3, 0x20)) + rec(1, bfd(3, 0x10)) + rec(2, b""),
        "add_update_delete": rec(0, add()) + rec(0, add(tx=300000)) + rec(0, add(flags=0x40)) +
        rec(0, add(flags=0)) + rec(0, add(mtype=3)),
        "split_stream": rec(0, add()[:50]) + rec(0, add()[50:]) +
        rec(0, bfddp.request_counters(0x0A, mid=7)) +
        rec(0, bfddp.echo(bfddp.ECHO_REPLY, 1, 2)),
        "bad_length": rec(0, bfddp.header(bfddp.ADD_SESSION, 0)),
        "bad_version": rec(0, bfddp.header(bfddp.ADD_SESSION, 140, version=2)),
        "admin_down_peer": rec(1, bfd(1, your=0)) + rec(1, bfd(3)) + rec(1, bfd(0)),
    }
    for name, data in seeds.items():
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
