"""`python3 -m lab topo render --backend bare-metal`: the rendering of the shipped bare-metal
description pinned file by file (golden files under tests/topo/golden/), and what is rendered
for every shipped description with [hosts] accepted by ansible-playbook --syntax-check and
ansible-lint (production profile), offline.

After an intended change of the renderer: UPDATE_GOLDEN=1 make test-topo, and review the diff.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lab import topo
from lab.bare import render
from lab.harness import bringup
from lab.rig import bird

REPO = Path(__file__).resolve().parents[2]
GOLDEN_ROOT = Path(__file__).with_name("golden")
GOLDEN = GOLDEN_ROOT / "baremetal"
# The pinned renderings: the reference testbed and every session class (IPv4/IPv6/link-local,
# single hop and multihop through the router, FRR and BIRD peers) on bare metal.
PINNED = ("baremetal", "baremetal-classes")
WITH_HOSTS = [p for p in sorted((REPO / "topologies").glob("*.toml")) if topo.load(p).hosts]
REPO_MARK = "@REPO@"  # the repo's path, the one machine-dependent value of a rendering


def rendered(out: Path, path: Path = REPO / "topologies" / "baremetal.toml") -> dict[str, str]:
    files = render.render(topo.load(path), out)
    return {str(f.relative_to(out)): f.read_text().replace(str(REPO), REPO_MARK)
            for f in files}


@pytest.mark.parametrize("name", PINNED)
def test_render_matches_golden_files(name: str, tmp_path: Path) -> None:
    got = rendered(tmp_path, REPO / "topologies" / f"{name}.toml")
    golden = GOLDEN_ROOT / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        shutil.rmtree(golden, ignore_errors=True)
        for rel, text in got.items():
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            (golden / rel).write_text(text)
    want = {str(p.relative_to(golden)): p.read_text()
            for p in sorted(golden.rglob("*")) if p.is_file()}
    assert sorted(got) == sorted(want)
    for rel in want:
        assert got[rel] == want[rel], f"{rel} differs from {golden / rel}"


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
        "    up ip address replace 10.77.0.2/16 dev enp1s0"]
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


def test_render_classes_key_values(tmp_path: Path) -> None:
    """Every session class on bare metal, the values that matter spelt out: link-local peers
    with their interface (and zebra), multihop blocks with minimum-ttl and the routes through
    the router, BIRD's config from lab.rig.bird's one writer, the router's notes."""
    path = REPO / "topologies" / "baremetal-classes.toml"
    got = rendered(tmp_path, path)
    peer = got["files/peer1/frr.conf"]
    assert " peer fe80::a4d:5 local-address fe80::a4d:105 interface enp1s0\n" in peer
    assert " peer fd00::a4e:9 multihop local-address fd00::a4e:109\n" in peer
    dut = got["files/dut1/xdp-bfd-peers.conf"]
    assert (" peer 10.78.1.17 multihop local-address 10.78.0.17\n  receive-interval 100\n"
            "  transmit-interval 100\n  detect-multiplier 3\n  minimum-ttl 63\n") in dut
    assert dut.count("\n peer ") == 20 and peer.count("\n peer ") == 20
    assert "zebra=yes" in got["files/dut1/daemons"]
    hv = yaml.safe_load(got["host_vars/dut1.yml"])
    assert hv["lab_ip_batch"][-2:] == [
        "route replace 10.78.0.0/16 via 10.77.3.254 dev enp1s0 onlink",
        "route replace fd00::a4e:0/112 via fd00::a4d:3fe dev enp1s0 onlink"]
    assert "address replace fe80::a4d:5/64 dev enp1s0 nodad" in hv["lab_ip_batch"]
    assert hv["lab_zebra"] is True
    pv = yaml.safe_load(got["host_vars/peer1.yml"])
    assert pv["lab_bird"]["netns"] == "xbm-bird" and pv["lab_bird"]["sessions"] == 20
    assert "bird2" in pv["lab_packages"]
    t = topo.load(path)
    nbrs, single, multi = bringup.bird_neighbors(t, "bird0")
    assert got["files/peer1/bird.conf"] == bird.config_text(
        nbrs, single, multi, "bird0", "/var/lib/xdp-bfd-lab/run/bird.log")
    assert '  neighbor fe80::a4d:f dev "bird0" local fe80::a4d:10f;\n' in \
        got["files/peer1/bird.conf"]
    assert "net.ipv4.conf.enp1s0.accept_redirects = 0" in got["files/dut1/sysctl.conf"]
    notes = got["router-notes.md"]
    assert "ip route replace 10.78.1.17/32 dev RIF  # peer1 BIRD bird0" in notes
    assert "ip route replace fd00::a4e:a/128 dev RIF  # dut1 enp1s0" in notes
    assert "router-notes.md" not in rendered(tmp_path / "plain")


def test_render_bfdpeer_peer_and_stock(tmp_path: Path) -> None:
    """[peer] kind "bfdpeer": the peer host gets bfdpeer's session list, the same document
    `python3 -m lab peer-sessions` prints, and a bfdd without peers. --stock: every engine
    device a stock bfdd (the witness run), said in topology.toml."""
    path = REPO / "topologies" / "baremetal-classes.toml"
    fast = tmp_path / "fast.toml"
    fast.write_text(path.read_text().replace('[peer]\n', '[peer]\nkind = "bfdpeer"\n', 1))
    got = rendered(tmp_path / "r", fast)
    r = subprocess.run([sys.executable, "-m", "lab", "peer-sessions", str(fast)], cwd=REPO,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(got["files/peer1/bfdpeer-sessions.json"]) == json.loads(r.stdout)
    assert len(json.loads(r.stdout)["sessions"]) == 20
    assert "peer " not in got["files/peer1/frr.conf"]
    assert yaml.safe_load(got["host_vars/peer1.yml"])["lab_peer_runner"] == "bfdpeer"
    out = tmp_path / "s"
    r = subprocess.run([sys.executable, "-m", "lab", "topo", "render",
                        str(REPO / "topologies" / "baremetal.toml"), "--backend", "bare-metal",
                        "--out", str(out), "--stock"], cwd=REPO, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    st = topo.load(out / "topology.toml")
    assert [d.kind for d in st.devices] == ["bfdd"] and st.devices[0].engine_args == ""
    assert not (out / "files" / "dut1" / "engine.conf").exists()
    assert (out / "files" / "dut1" / "frr.conf").read_text().count("\n peer ") == 32


@pytest.mark.skipif(shutil.which("vtysh") is None or shutil.which("bird") is None,
                    reason="frr or bird2 missing: make deps installs both")
def test_rendered_configs_parse_with_frr_and_bird(tmp_path: Path) -> None:
    """Every bfdd file of the classes rendering passes FRR 8.4.4's own parser (vtysh --dryrun:
    link-local `interface`, `multihop`, `minimum-ttl`), and bird.conf BIRD 2's (bird -p); a
    broken line fails both, so the check can fail."""
    out = tmp_path / "r"
    render.render(topo.load(REPO / "topologies" / "baremetal-classes.toml"), out)
    frr_files = sorted(out.glob("files/*/frr.conf")) + sorted(
        out.glob("files/*/xdp-bfd-peers.conf"))
    assert len(frr_files) == 4
    for f in frr_files:
        r = subprocess.run(["vtysh", "--dryrun", "-f", str(f)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, (f, r.stdout, r.stderr)
    r = subprocess.run(["bird", "-p", "-c", str(out / "files/peer1/bird.conf")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    bad = tmp_path / "bad"
    peer_conf = (out / "files/peer1/frr.conf").read_text()
    bad.write_text(peer_conf.replace("receive-interval", "receive-intervl", 1))
    assert subprocess.run(["vtysh", "--dryrun", "-f", str(bad)], capture_output=True,
                          timeout=60).returncode != 0
    bad.write_text((out / "files/peer1/bird.conf").read_text().replace(" local ", " locl ", 1))
    assert subprocess.run(["bird", "-p", "-c", str(bad)], capture_output=True,
                          timeout=60).returncode != 0
