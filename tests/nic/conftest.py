"""Shared fixtures for lab.nic's tests: import paths, and a pair of namespaces joined by a veth
(made with the real ip tools, removed by name even when a test fails). No lab run, no lock."""

from __future__ import annotations

import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.rig.netns import End, Netns

ROOT = Path(__file__).resolve().parents[2]

PY = "/usr/bin/python3"


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=check, timeout=60)


@dataclass
class VethPair:
    ns_a: str  # holds "va" (10.99.0.1, fd99::1)
    ns_b: str  # holds "vb" (10.99.0.2, fd99::2)


@pytest.fixture()
def veth() -> VethPair:
    """Two namespaces on the lab's one builder (lab.rig.netns): "va" in ns_a, "vb" in ns_b,
    joined through the builder's wire bridge; removed by name even when a test fails."""
    tag = "nic" + secrets.token_hex(3)
    lab_ns = Netns(tag, [End("a", "va", ("10.99.0.1/24", "fd99::1/64")),
                         End("b", "vb", ("10.99.0.2/24", "fd99::2/64"))])
    try:
        lab_ns.build()
        yield VethPair(lab_ns.ns("a"), lab_ns.ns("b"))
    finally:
        lab_ns.teardown()


def lab(*args: str) -> subprocess.CompletedProcess[str]:
    """`python3 -m lab ARGS` from the repository root, as a user runs it."""
    return subprocess.run([PY, "-m", "lab", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
