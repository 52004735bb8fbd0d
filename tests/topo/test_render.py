"""`python3 -m lab topo render --backend bare-metal`: the rendering of the shipped bare-metal
description pinned file by file (golden files under tests/topo/golden/), and what is rendered
for every shipped description with [hosts] accepted by ansible-playbook --syntax-check and
ansible-lint (production profile), offline.

After an intended change of the renderer: UPDATE_GOLDEN=1 make test-topo, and review the diff.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lab import topo
from lab.bare import render

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden") / "baremetal"
WITH_HOSTS = [p for p in sorted((REPO / "topologies").glob("*.toml")) if topo.load(p).hosts]
REPO_MARK = "@REPO@"  # the repo's path, the one machine-dependent value of a rendering


def rendered(out: Path, path: Path = REPO / "topologies" / "baremetal.toml") -> dict[str, str]:
    files = render.render(topo.load(path), out)
    return {str(f.relative_to(out)): f.read_text().replace(str(REPO), REPO_MARK)
            for f in files}


def test_render_matches_golden_files(tmp_path: Path) -> None:
    got = rendered(tmp_path)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, text in got.items():
            (GOLDEN / rel).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / rel).write_text(text)
    want = {str(p.relative_to(GOLDEN)): p.read_text()
            for p in sorted(GOLDEN.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want)
    for rel in want:
        assert got[rel] == want[rel], f"{rel} differs from {GOLDEN / rel}"


def test_render_key_values(tmp_path: Path) -> None:
    """The values that matter, spelt out (so a golden update cannot slip them by)."""
    got = rendered(tmp_path)
    assert got["files/dut1/engine.conf"].count(
        'XDP_BFD_ARGS="--dplane-connect ipv4:127.0.0.1:50700 --kernel-tx enp1s0 '
        '--spread-pass"') == 1
    assert 'bfdd_options="  -A 127.0.0.1 --dplaneaddr ipv4:127.0.0.1:50700"' in \
        got["files/dut1/daemons"]
    assert 'bfdd_options="  -A 127.0.0.1"' in got["files/peer1/daemons"]
    # the engine's bfdd starts without peers; they come with vtysh once the engine connected
    assert "peer " not in got["files/dut1/frr.conf"]
    assert got["files/dut1/xdp-bfd-peers.conf"].count("\n peer ") == 32
    assert got["files/peer1/frr.conf"].count("\n peer ") == 32
    assert " peer 10.77.0.1 local-address 10.77.1.1\n  receive-interval 10\n" in \
        got["files/peer1/frr.conf"]
    assert " peer 10.77.1.32 local-address 10.77.0.32\n  receive-interval 300\n" in \
        got["files/dut1/xdp-bfd-peers.conf"]
    assert "net.ipv4.ip_local_reserved_ports = 50700\n" in got["files/dut1/sysctl.conf"]
    assert "ip_local_reserved_ports" not in got["files/peer1/sysctl.conf"]
    assert got["files/dut1/interfaces"].splitlines()[2:5] == [
        "iface enp1s0 inet static", "    address 10.77.0.1/16",
        "    up ip address add 10.77.0.2/16 dev enp1s0"]
    assert "iface enp2s0 inet manual" in got["files/cap1/interfaces"]
    assert got["inventory.ini"].splitlines()[1:3] == [
        "[dut]", "dut1 ansible_host=dut.lab.example ansible_user=root"]
    # L4 at the dut's 12 CPUs: ceil(4 x 12 / 4) FIFO 50 hogs for the ci profile's 20 s
    assert ("stress-ng --cpu 12 --sched fifo --sched-prio 50 --timeout 20s --metrics-brief"
            in got["files/dut1/stress.sh"])
    assert ("-m lab.bare.flood D enp1s0 5 --pps 50000 --load-addr 10.77.255.254 --stranger "
            "10.77.255.253 --target engine=10.77.0.1,10.77.1.1" in got["files/load1/floods.sh"])
    assert ("-m lab.nic.hwstamp capture enp2s0 /var/lib/xdp-bfd-lab/run/capture.pcap"
            in got["files/cap1/capture.sh"])
    assert "Do **not** mirror the load host's port" in got["mirror-notes.md"]


def test_render_refuses_conflicts_and_hostless(tmp_path: Path) -> None:
    def cli(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "lab", "topo", "render", str(path),
                               "--backend", "bare-metal", "--out", str(tmp_path / "o")],
                              cwd=REPO, capture_output=True, text=True, timeout=60)
    r = cli(REPO / "topologies" / "demo.toml")
    assert (r.returncode, r.stdout.split(": ", 1)[1]) == (
        1, "no [hosts]: nothing to render for bare metal (docs/baremetal.md)\n")
    bad = tmp_path / "bad.toml"
    bad.write_text((REPO / "topologies" / "baremetal.toml").read_text().replace(
        'device = "engine"', 'device = "nope"'))
    r = cli(bad)
    assert (r.returncode, r.stdout) == (
        1, f"conflict host-device: {bad}: host dut1: no [[device]] named 'nope'\n"
           f"conflict host-device: {bad}: device engine runs on no host (no dut host names "
           "it)\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("path", WITH_HOSTS, ids=lambda p: p.name)
def test_ansible_syntax_check_and_lint(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    render.render(topo.load(path), out)
    env = {**os.environ, "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"), "NO_COLOR": "1"}
    r = subprocess.run(["ansible-playbook", "--syntax-check", "deploy.yml", "ladder.yml",
                        "stop.yml"], cwd=out, capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["playbook:", "deploy.yml", "playbook:", "ladder.yml",
                                "playbook:", "stop.yml"]
    assert "WARNING" not in r.stderr, r.stderr
    r = subprocess.run(["ansible-lint", "--offline", "-p", "--profile", "production",
                        "deploy.yml", "ladder.yml", "stop.yml"], cwd=out, capture_output=True,
                       text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed with production profile: 0 failure(s), 0 warning(s)" in r.stderr + r.stdout
