"""Shared fixtures for bfdcap's tests: the binary, the shared captures, one real lab capture."""

from __future__ import annotations

import json
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BFDCAP = ROOT / "build" / "bfdcap"
PCAPS = ROOT.parent / "shared" / "data" / "pcaps"


def bfdcap_json(*args) -> dict:
    """Run bfdcap --json; floats parsed as Decimal so ms values convert to ns exactly."""
    out = subprocess.run([str(BFDCAP), "--json", *map(str, args)], capture_output=True,
                         text=True, check=True, timeout=600).stdout
    return json.loads(out, parse_float=Decimal)


def ms_to_ns(v) -> int | None:
    return None if v is None else int(Decimal(v) * 1_000_000)


@pytest.fixture(scope="session")
def bfdcap() -> Path:
    if not BFDCAP.exists():
        subprocess.run(["make", "-C", str(ROOT), "build/bfdcap"], check=True)
    return BFDCAP


@pytest.fixture(scope="session")
def lab_run(tmp_path_factory, bfdcap):
    """One real capture (FRR bfdd both ends, SIGSTOP 1 s); the lab is torn down before use."""
    import labcap

    why = labcap.available()
    if why:
        pytest.skip(why)
    out = tmp_path_factory.mktemp("labcap")
    lab = labcap.Lab(out)
    try:
        lab.build()
        result = lab.run_scenario()
    finally:
        lab.teardown()
    return result
