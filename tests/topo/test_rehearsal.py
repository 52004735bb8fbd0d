"""The bare-metal playbooks run end to end against namespace hosts on this machine
(topologies/rehearsal.toml, docs/baremetal.md section 7): rehearse up, render with a short
ladder (tests/topo/short-ladder.toml), deploy.yml, ladder.yml, then `lab report` and `lab gate`
(against the published I210 baseline too) judge the run folder; stop.yml and rehearse down
whatever happened. The same for every session class (topologies/rehearsal-classes.toml), opt-in
(`make test-topo-classes`, or XDP_BFD_REHEARSAL_CLASSES=1): see its skip reason.
About five minutes each (321.5 s measured for the first, Ansible's per-task cost on 2 CPUs is
most of it); a lab run: take the lab lock around make test-topo
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


def rehearse(tmp_path: Path, topo: Path) -> Path:
    """rehearse up, render with the short ladder, deploy.yml, ladder.yml; stop.yml and
    rehearse down whatever happened. Returns the run folder."""
    out, run = tmp_path / "rendered", tmp_path / "run"
    lab("topo", "rehearse", "down", str(topo))  # leftovers of a killed run, if any
    r = lab("topo", "rehearse", "up", str(topo))
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        r = lab("topo", "render", str(topo), "--backend", "bare-metal", "--out", str(out),
                "--ladder", str(LADDER), "--profile", "rehearsal")
        assert r.returncode == 0, r.stdout + r.stderr
        r = playbook(out, "deploy.yml")
        assert r.returncode == 0, r.stdout[-3000:]
        r = playbook(out, "ladder.yml", "-e", f"lab_run_dir={run}")
        assert r.returncode == 0, r.stdout[-3000:]
    finally:
        playbook(out, "stop.yml")
        down = lab("topo", "rehearse", "down", str(topo))
    assert down.returncode == 0, down.stdout
    return run


def test_playbooks_end_to_end_on_namespace_hosts(tmp_path: Path) -> None:
    run = rehearse(tmp_path, TOPO)
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
        # The playbook started stress-ng on the device and it ran its length. Less CPU than the
        # judge asks (other work sharing this machine) makes that step VOID in the report
        # below, which accepts any verdict: it is not the playbooks' fault.
        busy = [p for p in ld["problems"] if "s of CPU, expected >=" in p]
        assert ld["ran"] or ld["problems"] == busy, (name, ld["problems"])
        assert ld["bogo_ops"]["cpu"] > 0 and ld["cpu_s"] > 0
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
    # device-side counters around the flood step, fetched and shown beside the wire figures
    eng = flood["devices"]["engine"]
    before = json.loads((run / "hosts" / "dut1" / "counters-flood-D-before.json").read_text())
    assert before["iface"] == "eth0" and before["engine"] is not None
    assert "peer_ifindex" in before["nic"]  # what a veth gives (docs/baremetal.md 7)
    assert eng["link_rx_packets"] > 0 and eng["counters_scope"] == "arm"
    assert eng["nic_counters"] == len(before["nic"])
    assert eng["engine_counters"] is not None and eng["engine_sessions_up_after"] == 16
    assert isinstance(eng["link_rx_dropped"], int) and isinstance(eng["udp_rcvbuf_errors"], int)
    assert "engine_counters" not in flood["devices"]["bfdd"]  # a stock device has no engine
    r = lab("report", str(run), timeout=300)
    assert "    engine device side: link rx +" in r.stdout, r.stdout
    assert "- engine device side: link rx +" in (run / "report.md").read_text()
    # the engine alone, witnessed by a stock-bfdd run of the same hosts and ladder: the same
    # run folder twice, one keeping only the engine, the other only the stock bfdd
    alone, stock = tmp_path / "alone", tmp_path / "stock"
    for d, keep in ((alone, "engine"), (stock, "bfdd")):
        shutil.copytree(run, d)
        m = json.loads((d / "run.json").read_text())
        m["duts"] = [keep]
        if keep == "engine":
            m["witness_run"] = "stock"
        (d / "run.json").write_text(json.dumps(m))
    assert lab("report", str(stock), timeout=300).returncode in (0, 1, 2)
    stock_l4 = json.loads((stock / "summary.json").read_text())["levels"]["L4"]
    r = lab("report", str(alone), timeout=300)
    s = json.loads((alone / "summary.json").read_text())
    assert s["witness_run"]["run"] == "stock"
    bit = stock_l4["duts"]["bfdd"]["down_events_counted"]
    if bit and stock_l4["verdict"] != "VOID":
        assert s["witness_run"]["reasons"] == {"L4": []}
        assert not any("witness" in w or "stock" in w for w in s["levels"]["L4"]["void_reasons"])
    else:  # the load did not bite this time: the witness run says so and L4 is VOID
        assert s["levels"]["L4"]["verdict"] == "VOID", s["levels"]["L4"]
        assert s["witness_run"]["reasons"]["L4"]


# Opt-in for make test's 30-minute budget: with it, make test took 30 min here at bc4f0f6 (the two
# rehearsals 9 min 23 s of it). The class rendering stays covered in make test by the golden
# files, FRR's and BIRD's own parsers and ansible-lint (test_render.py); the single-hop
# rehearsal above runs the same playbooks end to end.
@pytest.mark.skipif(os.environ.get("XDP_BFD_REHEARSAL_CLASSES") != "1",
                    reason="opt-in (about 5 min): make test-topo-classes")
def test_every_session_class_on_namespace_hosts(tmp_path: Path) -> None:
    """topologies/rehearsal-classes.toml: IPv4, IPv6 global and link-local (zebra), multihop
    through the named router (a namespace on the switch), FRR's bfdd and BIRD 2 (in its
    namespace on the peer host) as peers, on both devices: every session Up at both ends
    before the steps (ladder.yml waits for it) and at the end, and the judge reads each class."""
    run = rehearse(tmp_path, REPO / "topologies" / "rehearsal-classes.toml")
    hosts = run / "hosts"
    for h in ("peer1", "dut1", "dut2"):
        peers = json.loads((hosts / h / "final-peers.json").read_text())
        assert [p["status"] for p in peers] == ["up"] * 10, (h, peers)
        kinds = {(p.get("multihop", False), ":" in p["peer"], p.get("interface", ""))
                 for p in peers}
        assert kinds == {(False, False, ""), (False, True, ""), (False, True, "eth0"),
                         (True, False, ""), (True, True, "")}, h
    bird = (hosts / "peer1" / "final-bird.txt").read_text()
    assert bird.count(" Up ") == 10 and bird.count("---") == 4, bird  # 4 multihop
    r = lab("report", str(run), timeout=300)
    assert r.returncode in (0, 1, 2), r.stdout + r.stderr
    s = json.loads((run / "summary.json").read_text())
    for dev in ("engine", "bfdd"):
        assert len(s["duts"][dev]["classes"]) == 10
        assert s["duts"][dev]["sessions_up_end"] == 10
