"""collect - `python3 -m lab topo collect RUN_DIR --rendered DIR`: what ladder.yml fetched
(RUN_DIR/hosts/HOST/...) made into a run folder that `python3 -m lab report` and
`python3 -m lab gate` judge exactly like a namespace ladder's.

    capture.pcap                 the capture host's (stamped by its NIC when it can)
    phases.json, run.json        phases on the capture host's clock; the steps, each level's
                                 stress-ng proven by its bogo ops and CPU time (GNU time), the
                                 floods, the capture's counters and clock, every host's tuning
    steal.jsonl                  the peer host's steal sampler (lab/rig/steal.py)
    topology.toml, ladder.toml   from the rendering
    logs/HOST/...                everything else each host left (bfdd, engine, stress-ng)
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from .. import runfiles
from ..harness.bringup import engine_stats_brief
from ..harness.ladder_file import load_ladder
from ..rig import flood
from ..rig.stress import LoadResult, judge_load, parse_metrics
from ..topo import load as load_topology
from . import counters
from .plan import stress_hosts

TIME_LINE = re.compile(r"xdp-bfd-lab time: wall_s ([\d.]+) user_s ([\d.]+) sys_s ([\d.]+) "
                       r"rc (-?\d+)")


def load_result(log: Path, name: str, argv: list[str], seconds: float, ncpu: int,
                min_share: float) -> dict[str, Any]:
    """A level's stress-ng proven as lab.rig.stress does on one machine: its bogo ops
    (--metrics-brief) and the CPU time of it and its workers (GNU time's rusage line)."""
    res = LoadResult(name, argv, seconds)
    text = log.read_text(errors="replace") if log.exists() else ""
    res.bogo_ops = parse_metrics(text)
    m = TIME_LINE.findall(text)
    if m:
        wall, usr, sys_, rc = m[-1]
        res.wall_s, res.cpu_s, res.rc = float(wall), float(usr) + float(sys_), int(rc)
        judge_load(res, ncpu, min_share)
    else:
        res.problems.append(f"no GNU time line in {log.name}: stress-ng did not finish")
    return res.as_dict()


def flood_record(fl: dict[str, Any], step: str,
                 device_side: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The load host's ARM.json (lab.bare.flood) in the shape of a namespace run's flood
    record (lab.harness.floods): the arm's description and expected counter; per device what
    left the load host, and what the device's own counters moved over the step
    (DEVICE_SIDE: lab.bare.counters.deltas per device name; "n/a" where none was taken)."""
    arm = flood.ARMS.get(fl.get("arm", ""))
    devices = {}
    for dev, d in (fl.get("devices") or {}).items():
        devices[dev] = {"seconds": d.get("seconds"), "offered_pps": d.get("offered_pps", 0),
                        "offered_frames": d.get("sent"),
                        "generator": {"pps": d.get("offered_pps"), "sent": d.get("sent"),
                                      "rc": d.get("rc")},
                        "udp_rcvbuf_errors": "n/a", "link_rx_dropped": "n/a",
                        **(device_side or {}).get(dev, {})}
    out = {"arm": fl.get("arm"), "description": arm.description if arm else "?",
           "expect": arm.expect if arm else "?", "target_pps": fl.get("target_pps") or 0,
           "devices": devices, "step": step}
    if "error" in fl:
        out["error"] = fl["error"]
    return out


def device_counters(hosts_dir: Path, duts: list[Any], step: str,
                    warnings: list[str]) -> dict[str, dict[str, Any]]:
    """{device: lab.bare.counters.deltas} of each dut host's snapshots around STEP."""
    out = {}
    for h in duts:
        try:
            snaps = [json.loads((hosts_dir / h.name / f"counters-{step}-{w}.json").read_text())
                     for w in ("before", "after")]
        except (OSError, ValueError):
            warnings.append(f"{h.name}: no device counters around {step}")
            continue
        out[h.device] = counters.deltas(*snaps)
    return out


def _read_int(p: Path, default: int) -> int:
    try:
        return int(p.read_text().strip())
    except (OSError, ValueError):
        return default


def collect(run_dir: Path, rendered: Path, witness: str = "") -> dict[str, Any]:
    """Assemble RUN_DIR (see the module's doc); returns run.json's contents. WITNESS names
    the stock-bfdd run that witnesses L4 for a run of engines only (lab.judge.witness)."""
    hosts_dir = run_dir / "hosts"
    topo = load_topology(rendered / "topology.toml")
    gv = yaml.safe_load((rendered / "group_vars" / "all.yml").read_text())
    ladder = load_ladder(rendered / "ladder.toml")
    cap_host = topo.hosts_of("capture")[0].name
    peer_host = topo.hosts_of("peer")[0].name
    for name in ("topology.toml", "ladder.toml"):
        shutil.copyfile(rendered / name, run_dir / name)
    cap_dir = hosts_dir / cap_host
    warnings: list[str] = []
    if (cap_dir / "capture.pcap").exists():
        shutil.copyfile(cap_dir / "capture.pcap", run_dir / "capture.pcap")
    else:
        warnings.append(f"no capture.pcap from {cap_host}")
    try:
        cap_summary = json.loads((cap_dir / "capture.pcap.summary.json").read_text())
    except (OSError, ValueError):
        cap_summary = {}
        warnings.append(f"no capture summary from {cap_host}")
    if cap_summary.get("warning"):
        warnings.append(f"capture on {cap_host}: {cap_summary['warning']}")
    if (hosts_dir / peer_host / "steal.jsonl").exists():
        shutil.copyfile(hosts_dir / peer_host / "steal.jsonl", run_dir / "steal.jsonl")
    phases = []
    for line in (cap_dir / "phases.jsonl").read_text().splitlines() \
            if (cap_dir / "phases.jsonl").exists() else []:
        if line.strip():
            phases.append(json.loads(line))
    runfiles.write("phases", run_dir / "phases.json", phases)
    by_name = {p["name"]: p for p in phases}
    steps, floods = [], []
    duts = topo.hosts_of("dut")
    load_host = topo.hosts_of("load")[0].name
    for st in gv["lab_steps"]:
        ph = by_name.get(st["name"])
        if ph is None:
            continue
        rec: dict[str, Any] = {"name": st["name"], "kind": st["kind"], "of": st["of"],
                               "start_ns": ph["start_ns"], "end_ns": ph["end_ns"],
                               "level": st["level"], "load": None, "steal_ms": None,
                               "oom_kill": None, "floods": list(st["arms"])}
        if st["level"]:
            loads = {}
            for h in stress_hosts(topo):
                ncpu = _read_int(hosts_dir / h.name / "nproc", h.nproc or 1)
                argv = ladder.levels[st["level"]].load(h.nproc or ncpu).argv(st["seconds"])
                loads[h.name] = load_result(hosts_dir / h.name / f"stress-{st['name']}.log",
                                            st["level"], argv, st["seconds"], ncpu,
                                            st["min_cpu_share"])
            # one dut: its load is the step's; several: the first that did not run decides
            rec["load"] = next((v for v in loads.values() if not v["ran"]),
                               next(iter(loads.values())))
            rec["loads"] = loads
        side = device_counters(hosts_dir, duts, st["name"], warnings) if st["arms"] else {}
        for dev in side:  # several arms in one step: the device's counters span them all
            side[dev]["counters_scope"] = "step" if len(st["arms"]) > 1 else "arm"
        for i, arm in enumerate(st["arms"]):
            f = hosts_dir / load_host / f"flood-{st['name']}-{i}-{arm}.json"
            try:
                fl = json.loads(f.read_text())
            except (OSError, ValueError):
                fl = {"arm": arm, "target_pps": 0, "devices": {},
                      "error": f"no {f.name} from {load_host}"}
                warnings.append(f"flood {arm} of {st['name']}: no result from {load_host}")
            floods.append(flood_record(fl, st["name"], side))
        steps.append(rec)
    tuning = {}
    for h in topo.hosts:
        p = hosts_dir / h.name
        for f in sorted(p.glob("tune-*.json")) if p.is_dir() else []:
            try:
                tuning[h.name] = json.loads(f.read_text())
            except ValueError:
                warnings.append(f"{f}: not JSON")
    logs = run_dir / "logs"
    for h in topo.hosts:
        src = hosts_dir / h.name
        if src.is_dir():
            shutil.copytree(src, logs / h.name, dirs_exist_ok=True)
    peer_ncpu = _read_int(hosts_dir / peer_host / "nproc", 0)
    tc = cap_summary.get("tcpdump") or {}
    meta = {
        "run_id": run_dir.name, "tag": f"bm-{topo.meta.name}",
        "topology": str(rendered / "topology.toml"),
        "duts": [d.name for d in topo.devices], "commit": "", "dirty": False,
        "kernel": "", "nproc": peer_ncpu, "backend": "bare-metal",
        "hosts": {h.name: {"role": h.role, "ssh": h.ssh, "iface": h.iface,
                           "netns": h.netns} for h in topo.hosts},
        "shield": {}, "engine_attach": {}, "engine_stats": {}, "warnings": warnings,
        "capture": {**tc, "clock": cap_summary.get("clock"), "host": cap_host,
                    "nic_drops": cap_summary.get("nic_drops"),
                    "hwtstamp": cap_summary.get("hwtstamp")},
        "tuning": tuning, "profile": gv["lab_profile"], "generator": "live",
        "flood_pps": None, "steps": steps, "floods": floods, "phases": phases,
        "plan": [{"name": s["name"], "seconds": s["seconds"], "kind": s["kind"]}
                 for s in gv["lab_steps"]],
        "steal_sampler_alive": True, "error": None if phases else "no phases were written",
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                     time.gmtime(phases[0]["start_ns"] / 1e9 if phases else 0)),
    }
    if witness:
        meta["witness_run"] = witness
    for role, host, f in (("peer", peer_host, "shield-bfdd.txt"),
                          ("tcpdump", cap_host, "shield-tcpdump.txt")):
        try:
            meta["shield"][role] = (hosts_dir / host / f).read_text().strip() or "none"
        except OSError:
            meta["shield"][role] = "none"
    for h in duts:
        st = hosts_dir / h.name / "engine-stats.json"
        if st.exists():
            try:
                meta["engine_stats"][h.device] = engine_stats_brief(json.loads(st.read_text()))
            except ValueError:
                warnings.append(f"{st}: not JSON")
    (run_dir / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta
