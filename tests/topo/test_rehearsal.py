"""The bare-metal playbooks run end to end against namespace hosts on this machine
(topologies/rehearsal.toml, docs/baremetal.md section 7): rehearse up, render with a short
ladder (tests/topo/short-ladder.toml), deploy.yml, ladder.yml, then `lab report` and `lab gate`
(against the published I210 baseline too) judge the run folder; stop.yml and rehearse down
whatever happened. About five minutes (307 s measured, Ansible's per-task cost on 2
CPUs is most of it); a lab run: take the lab lock around make test-topo
(flock /tmp/xdp-bfd-lab.lock).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOPO = REPO / "topologies" / "rehearsal.toml"
LADDER = Path(__file__).with_name("short-ladder.toml")
I210 = REPO / "results" / "baselines" / "i210-published.json"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces, bfdd and XDP need root"),
    pytest.mark.skipif(shutil.which("ansible-playbook") is None,
                       reason="ansible-core missing: make deps installs it"),
]


def lab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def playbook(out: Path, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_LOCAL_TEMP": str(out / ".tmp"), "NO_COLOR": "1"}
    r = subprocess.run(["ansible-playbook", name, *extra], cwd=out, capture_output=True,
                       text=True, timeout=600, env=env)
    (out / f"{name}.log").write_text(r.stdout + r.stderr)
    return r


def test_playbooks_end_to_end_on_namespace_hosts(tmp_path: Path) -> None:
    out, run = tmp_path / "rendered", tmp_path / "run"
    lab("topo", "rehearse", "down", str(TOPO))  # leftovers of a killed run, if any
    r = lab("topo", "rehearse", "up", str(TOPO))
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        r = lab("topo", "render", str(TOPO), "--backend", "bare-metal", "--out", str(out),
                "--ladder", str(LADDER), "--profile", "rehearsal")
        assert r.returncode == 0, r.stdout + r.stderr
        r = playbook(out, "deploy.yml")
        assert r.returncode == 0, r.stdout[-3000:]
        r = playbook(out, "ladder.yml", "-e", f"lab_run_dir={run}")
        assert r.returncode == 0, r.stdout[-3000:]
    finally:
        playbook(out, "stop.yml")
        down = lab("topo", "rehearse", "down", str(TOPO))
    assert down.returncode == 0, down.stdout
    # deploy.yml read the test interface inside each namespace (ip netns exec's own /sys)
    meta = json.loads((run / "run.json").read_text())
    tune = meta["tuning"]
    assert sorted(tune) == ["cap1", "dut1", "dut2", "load1", "peer1"]
    assert tune["dut1"]["iface"] == "eth0"
    assert tune["dut1"]["findings"][0]["reading"].startswith("driver veth")
    names = ["idle", "L1", "L1-rec", "L4", "L4-rec", "flood-D", "flood-rec"]
    assert [p["name"] for p in meta["phases"]] == names
    seconds = [5, 8, 4, 8, 4, 5, 4]
    assert [p["end_ns"] - p["start_ns"] for p in meta["phases"]] == [s * 10**9 for s in seconds]
    assert all(a["end_ns"] <= b["start_ns"] for a, b in zip(meta["phases"], meta["phases"][1:]))
    loads = {s["name"]: s["load"] for s in meta["steps"] if s["load"]}
    assert sorted(loads) == ["L1", "L4"]
    for name, ld in loads.items():
        assert ld["ran"], (name, ld["problems"])
        assert ld["bogo_ops"]["cpu"] > 0
    # veth has no hardware stamps: the capture says so and stamps on the host's clock
    assert meta["capture"]["clock"] == "host"
    assert meta["capture"]["dropped"] == 0
    assert any("host" in w and "cap1" in w for w in meta["warnings"])
    (flood,) = meta["floods"]
    assert (flood["arm"], flood["step"]) == ("D", "flood-D")
    assert sorted(flood["devices"]) == ["bfdd", "engine"]
    assert flood["devices"]["engine"]["offered_pps"] > 0
    # the judge takes the folder like a namespace run's
    r = lab("report", str(run), timeout=300)
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["verdict"] in ("PASS", "FAIL", "VOID")
    assert sorted(summary["levels"]) == sorted(names)
    for dev in ("engine", "bfdd"):
        assert sorted(summary["duts"][dev]["classes"]) == ["10ms", "300ms", "50ms"]
    for g in ([], ["--baseline", str(I210)]):
        r = lab("gate", str(run), *g, timeout=120)
        assert r.returncode in (0, 1, 2), r.stdout + r.stderr
