"""lab.rig.memcg: the memory levels' pressure stays inside a cgroup v1 memory group.

Real stress-ng in a real group with a small limit (256 MiB), as root; no namespaces, no lab
lock needed. Checks the rewrite of RAM shares into bytes of the limit, that stress-ng and its
workers run inside the group (its peak usage follows the share asked of the limit, not of the
machine), that 110 % OOM-kills inside the group and the group's counters say so, and that the
group is removed afterwards, also by `lab cleanup` for a dead run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lab.rig import memcg, registry, stress

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not (memcg.ROOT / "cgroup.procs").exists(),
                                reason="needs root and the cgroup v1 memory controller")

MIB = 1 << 20
LIMIT = 256 * MIB


def test_shares_become_bytes_of_the_limit() -> None:
    got = memcg.scaled_stressors(("--vm", "8", "--vm-bytes", "95%", "--vm-keep"), 4 << 30)
    assert got == ("--vm", "8", "--vm-bytes", "4080218931b", "--vm-keep")  # 0.95 x 4 GiB
    assert memcg.scaled_stressors(("--cpu", "2", "--vm-bytes", "1g"), LIMIT) == \
        ("--cpu", "2", "--vm-bytes", "1g")
    with pytest.raises(memcg.LabError, match="not a percentage"):
        memcg.scaled_stressors(("--vm-bytes", "x%"), LIMIT)
    assert memcg.default_limit_bytes(24 << 30) == 4 << 30
    assert memcg.default_limit_bytes(8 << 30) == 2 << 30


@pytest.fixture
def group():
    g = memcg.MemCgroup(f"xdp-bfd-test{os.getpid()}", LIMIT)
    g.create()
    try:
        yield g
    finally:
        g.remove()
        assert not g.path.exists()


def _load(tmp: Path, share: str, group: memcg.MemCgroup) -> stress.LoadResult:
    load = stress.Load("M", ("--vm", "2", "--vm-bytes", share, "--vm-keep"))
    run = stress.LoadRun(load, 3, tmp / f"stress-{share}.log", min_cpu_share=0.0, group=group)
    assert run.argv[run.argv.index("--vm-bytes") + 1] == f"{int(LIMIT * float(share[:-1]) / 100)}b"
    return run.finish()


def test_load_runs_inside_the_group(tmp_path: Path, group: memcg.MemCgroup) -> None:
    group.reset_max_usage()
    res = _load(tmp_path, "50%", group)
    assert res.rc == 0, (tmp_path / "stress-50%.log").read_text()
    c = group.counters()
    # 128 MiB asked (50 % of the limit) plus stress-ng's own pages; a share of the machine's
    # 24 GiB would have hit the limit instead
    assert 120 * MIB <= c["max_usage_bytes"] <= 200 * MIB, c
    assert c["oom_kill"] == 0
    assert group.pids() == []


def test_over_the_limit_oom_kills_inside(tmp_path: Path, group: memcg.MemCgroup) -> None:
    _load(tmp_path, "110%", group)
    c = group.counters()
    assert c["oom_kill"] >= 1, c
    assert c["failcnt"] >= 1, c
    assert c["max_usage_bytes"] <= LIMIT


def test_cleanup_removes_a_dead_runs_group(tmp_path: Path) -> None:
    g = memcg.MemCgroup(f"xdp-bfd-test{os.getpid()}b", LIMIT)
    g.create()
    r = registry.Registry(f"xbtest{os.getpid()}", harness_pid=0, cgroups=[str(g.path)])
    done = registry.cleanup(r)
    assert done == [f"removed memory cgroup {g.path}"]
    assert not g.path.exists()
