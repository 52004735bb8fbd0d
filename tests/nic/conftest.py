"""Shared fixtures for lab.nic's tests: import paths, and a pair of namespaces joined by a veth
(made with the real ip tools, removed by name even when a test fails). No lab run, no lock."""

from __future__ import annotations

import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PY = "/usr/bin/python3"


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=60)


@dataclass
class VethPair:
    ns_a: str  # holds "va" (10.99.0.1, fd99::1)
    ns_b: str  # holds "vb" (10.99.0.2, fd99::2)


@pytest.fixture()
def veth() -> VethPair:
    tag = "nic" + secrets.token_hex(3)
    pair = VethPair(f"{tag}-a", f"{tag}-b")
    made = []
    try:
        for ns in (pair.ns_a, pair.ns_b):
            sh("ip", "netns", "add", ns)
            made.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", pair.ns_a, "link", "add", "va", "type", "veth", "peer", "name", "vb",
           "netns", pair.ns_b)
        for ns, ifc, last in ((pair.ns_a, "va", 1), (pair.ns_b, "vb", 2)):
            sh("ip", "-n", ns, "addr", "add", f"10.99.0.{last}/24", "dev", ifc)
            sh("ip", "-n", ns, "addr", "add", f"fd99::{last}/64", "dev", ifc, "nodad")
            sh("ip", "-n", ns, "link", "set", ifc, "up")
        yield pair
    finally:
        for ns in reversed(made):
            sh("ip", "netns", "del", ns, check=False)


def lab(*args: str) -> subprocess.CompletedProcess[str]:
    """`python3 -m lab ARGS` from the repository root, as a user runs it."""
    return subprocess.run([PY, "-m", "lab", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
