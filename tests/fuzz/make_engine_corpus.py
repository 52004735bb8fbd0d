#!/usr/bin/python3
"""Seed corpus for tests/fuzz/fuzz_engine.c (records [op][len][bytes]); writes
tests/fuzz/corpus/engine/. Run from the repository root: /usr/bin/python3 tests/fuzz/make_engine_corpus.py
"""
import struct
from pathlib import Path

OUT = Path("tests/fuzz/corpus/engine")


def rec(op: int, b: bytes) -> bytes:
    return bytes([op, len(b)]) + b


def bfd(state: int, flags: int = 0, my: int = 0x0B, your: int = 0x0A, tx: int = 10000) -> bytes:
    return struct.pack("!BBBBIIIII", 0x20, (state << 6) | flags, 3, 24, my, your, tx, 10000, 0)


def add(lid: int = 0x0A, tx: int = 10000, flags: int = 0, mtype: int = 2) -> bytes:
    body = struct.pack("!I16s16sIIIIIIBBHI64s", flags, bytes([10, 0, 0, 1]).ljust(16, b"\0"),
                       bytes([10, 0, 0, 2]).ljust(16, b"\0"), lid, tx, tx, 50000, 50000, 0,
                       255, 3, 0, 0, b"eth0")
    return struct.pack("!BBHHH", 1, 0, mtype, 0, 140) + body


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    seeds = {
        "handshake": rec(1, bfd(1, your=0)) + rec(1, bfd(2)) + rec(3, b"\x05" * 5) +
        rec(1, bfd(3, 0x20)) + rec(1, bfd(3, 0x10)) + rec(2, b""),
        "add_update_delete": rec(0, add()) + rec(0, add(tx=300000)) + rec(0, add(flags=0x40)) +
        rec(0, add(flags=0)) + rec(0, add(mtype=3)),
        "split_stream": rec(0, add()[:50]) + rec(0, add()[50:]) +
        rec(0, struct.pack("!BBHHHI", 1, 0, 5, 7, 12, 0x0A)) +
        rec(0, struct.pack("!BBHHHQQ", 1, 0, 1, 0, 24, 1, 2)),
        "bad_length": rec(0, struct.pack("!BBHHH", 1, 0, 2, 0, 0)),
        "bad_version": rec(0, struct.pack("!BBHHH", 2, 0, 2, 0, 140)),
        "admin_down_peer": rec(1, bfd(1, your=0)) + rec(1, bfd(3)) + rec(1, bfd(0)),
    }
    for name, data in seeds.items():
        (OUT / name).write_bytes(data)


if __name__ == "__main__":
    main()
