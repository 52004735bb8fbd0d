"""--spread-pass against real FRR 8.4.4 bfdd, in namespaces, as root.

One engine device (8 sessions at 50 ms x3, to a stock peer) started with --spread-pass from the
topology's engine_args. Traffic that is not BFD must still reach the device's stack, now through
the cpumap (counted as pass_spread, never as pass_non_bfd), while BFD is answered in XDP.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from lab import util
from lab.harness.lab import Lab
from lab.rig.netns import nsexec
from lab.topo import Device, Meta, Peer, SessionClass, Topology
from enginelab import engine_lab

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

SESSIONS = 8
PINGS = 40
TOPO = Topology(meta=Meta("spread", 16), peer=Peer("10.83.1.1"),
                devices=(Device("engine", "engine", "10.83.0.1", engine_args="--spread-pass"),),
                classes=(SessionClass("50ms", 50, 3, SESSIONS),), source="test")


@pytest.fixture(scope="module")
def lab():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    with engine_lab(TOPO, "engine-spread") as lab:
        yield lab


def test_every_online_cpu_takes_an_entry(lab: Lab) -> None:
    m = re.search(r"--spread-pass: other traffic goes to (\d+) of (\d+) CPUs by flow",
                  lab.engines["engine"].log_text())
    assert m, lab.engines["engine"].log_text()
    assert int(m.group(1)) == os.cpu_count()


def test_other_traffic_reaches_the_stack_through_the_cpumap(lab: Lab) -> None:
    eng = lab.engines["engine"]
    before = eng.stats()
    assert before is not None
    # Real ICMP echo to the device's address: its stack answers only if the frames arrive.
    r = util.run(nsexec(lab.netns.peer, ["ping", "-q", "-c", str(PINGS), "-i", "0.01", "-W", "1",
                                         "-I", "10.83.1.1", "10.83.0.1"]), check=False)
    assert f"{PINGS} packets transmitted, {PINGS} received" in r.stdout, r.stdout + r.stderr
    time.sleep(0.5)
    after = eng.stats()
    assert after is not None
    c0, c1 = before["counters"], after["counters"]
    assert c1["pass_spread"] - c0["pass_spread"] >= PINGS
    assert c1["pass_non_bfd"] == c0["pass_non_bfd"]  # every CPU holds an entry: none stay here
    # BFD is still answered in XDP, every session Up
    assert c1["tx_reply"] > c0["tx_reply"]
    assert after["sessions_up"] == SESSIONS
