"""Two engines facing each other (issue 8 item 9): each behind its own FRR bfdd (--dplaneaddr),
the device's engine against the lab's engine peer (topologies/engines.toml, peer "engine"),
run at their configured rate, idle and under L4.

From a capture on the bridge (scapy, the independent reader), per session and direction, over a
WINDOW_S window of steady state:
- packets per second within the jitter band of the negotiated interval (RFC 5880 6.8.7: each
  periodic packet 75-100 % of the interval after the last, so the rate lies between 1/interval
  and 1/(0.75 interval));
- no storm: no gap between two non-Final packets under 0.75 of the interval (a Final is owed at
  once and is exempt), less wirerate.TOL_MS of capture timestamp noise;
and at the end: no down event at either engine or either bfdd.

A run the lab cannot judge is VOID and tried again, by the lab's own rule (docs/lab.md section 2,
rule b): the far engine is the lab's peer, shielded like every peer, and when it fell silent past
the device's Detection Time while the device was still Up (peer_silences(): every packet from the
device in the silence Up), the device's Down is the correct reaction and the run says nothing
about it. Seen in one run in three or four here, at 10 ms x3: the peer engine's loop woke 24 ms
late while the device's own loop was late too, so neither sent for 31.5 ms. A run is VOID only
when every rule it breaks is on a session the peer left silent; the steal the lab's sampler
recorded within each silence goes with it, for diagnosis. After ATTEMPTS VOID runs the test
skips, naming every silence.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from lab import topo as topo_mod
from lab import util
from lab.harness.lab import Lab
from lab.judge import steal_log
from lab.rig import steal as steal_sampler
from lab.rig import stress
from enginelab import engine_lab
from wirerate import judge, lines, peer_silences, window

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="needs root: namespaces, XDP, FRR daemons")

TOPO = topo_mod.load(REPO / "topologies" / "engines.toml").select(["engine"])
WINDOW_S = 8.0
LOAD_LEAD_S = 1.0  # the load runs this long before the window opens and after it closes
ATTEMPTS = 3


def steady(lab: Lab) -> None:
    """Every session Up for 2 s at both engines, no Poll Sequence running: the window holds no
    handshake (its packets are sent by userspace: transition, Poll, Final)."""
    assert lab.epeer is not None
    for eng in (lab.engines["engine"], lab.epeer):
        util.wait_until(
            lambda: (x := eng.stats()) and
            all(y["state"] == "Up" and y["state_age_ms"] >= 2000 and not y["poll_active"]
                for y in x["sessions"]) or None,
            20, "every session Up for 2 s at both engines", poll_s=0.5)


def silences(lab: Lab, pcaps: list[Path], steal_path: Path) -> list[dict]:
    """peer_silences() in each window's capture, each with the host steal recorded within it
    (+-5 ms, the sampler's period; docs/lab.md section 2)."""
    steal = steal_log.load(steal_path)
    out = []
    for pcap in pcaps:
        for q in peer_silences(pcap, TOPO, "engine"):
            a, b = int(q["t0"] * 1e9) - 5_000_000, int(q["t1"] * 1e9) + 5_000_000
            q["window"] = pcap.stem
            q["steal_ms"] = round(sum(r["steal_ms"] for r in steal if a <= r["ts_ns"] <= b), 1)
            out.append(q)
    return out


def void(out: dict) -> bool:
    """Run OUT broke rules, every one of them on a session its peer left silent past the
    device's Detection Time (and the other way round for a bfdd's counters)."""
    if not out["broken"] or not out["silences"]:
        return False
    quiet = {a for q in out["silences"] for a in (q["device"], q["peer"])}
    return all(any(f" {a}:" in line for a in quiet) for line in out["broken"])


def broken(out: dict) -> list[str]:
    """Every rule run OUT breaks: the wire's (judge()) in both windows, a down event at a bfdd."""
    bad = judge(out["idle"]) + judge(out["L4"])
    for side, rows in out["bfdd_counters"].items():
        bad += [f"bfdd {side} {r['peer']}: {r['session-down']} down events" for r in rows
                if r["session-down"] != 0]
    return bad


def run_once() -> dict:
    """One run: both engines steady, an idle window, a window under L4; OUT as facing.json."""
    with engine_lab(TOPO, "engine-facing") as lab:
        steady(lab)
        assert lab.epeer is not None
        engines = {"device": lab.engines["engine"], "peer": lab.epeer}
        steal_path = lab.rd.path / "steal.jsonl"
        lab.steal_proc = util.spawn([util.PYTHON, str(Path(steal_sampler.__file__)),
                                     str(steal_path), str(int(4 * WINDOW_S + 30))])
        lab.registry.add_pid(lab.steal_proc.pid, "steal.py")
        shield = stress.shield(lab.steal_proc.pid, "steal sampler", steal_sampler.RESERVATION,
                               wait_s=10)
        idle = window(lab, TOPO, "engine", "idle", WINDOW_S, engines)
        load = stress.LoadRun(stress.L4, WINDOW_S + 2 * LOAD_LEAD_S + 2,
                              lab.rd.logs / "stress-L4.log")
        lab.load_run = load
        time.sleep(LOAD_LEAD_S)
        loaded = window(lab, TOPO, "engine", "L4", WINDOW_S, engines)
        res = load.finish()
        assert lab.epeer_bfdd is not None
        counters = {"device": lab.duts["engine"].counters(),
                    "peer": lab.epeer_bfdd.counters()}
        out = {"idle": idle, "L4": loaded, "load": res.as_dict(), "bfdd_counters": counters,
               "sampler_shield": shield, "run": lab.rd.path.name}
        out["broken"] = broken(out)
        out["silences"] = silences(lab, [lab.rd.path / "idle.pcap", lab.rd.path / "L4.pcap"],
                                   steal_path)
        (lab.rd.path / "facing.json").write_text(json.dumps(out, indent=1))
        print("\n".join(lines(idle) + lines(loaded)))
        return out


@pytest.fixture(scope="module")
def facing():
    for n in ("xdp-bfd", "xdp_pass.bpf.o"):
        if not (REPO / "build" / n).exists():
            pytest.skip(f"build/{n} missing (make)")
    voids = []
    for _ in range(ATTEMPTS):
        out = run_once()
        if not void(out):
            break
        why = "; ".join(f"{q['window']} peer {q['peer']} silent {q['gap_ms']} ms (budget "
                        f"{q['budget_ms']}, steal {q['steal_ms']} ms)" for q in out["silences"])
        print(f"VOID {out['run']}: {len(out['broken'])} rules broken, {why}")
        voids.append(f"{out['run']}: {why}")
    else:
        # Skip in CI: in every run the lab's peer engine fell silent past the device's
        # Detection Time (docs/lab.md section 2, rule b), so no run could judge the device.
        pytest.skip(f"VOID in all {ATTEMPTS} runs, the peer stalled: " + " | ".join(voids))
    out["void_runs"] = voids
    yield out


def test_sampler_shielded(facing: dict) -> None:
    # the steal sampler must hold its reservation, or its records miss what stalls the peer
    assert facing["sampler_shield"] == "deadline"


def test_topology_faces_engines() -> None:
    assert {c.peer for c in TOPO.classes} == {"engine"}
    assert {c.family for c in TOPO.classes} == set(topo_mod.FAMILIES)
    assert any(c.asymmetric for c in TOPO.classes)


def test_load_ran(facing: dict) -> None:
    assert facing["load"]["ran"], facing["load"]["problems"]


@pytest.mark.parametrize("name", ["idle", "L4"])
def test_rate_within_jitter_no_storm(facing: dict, name: str) -> None:
    w = facing[name]
    assert len(w["rows"]) == 2 * TOPO.sessions_per_device
    assert judge(w) == []


def test_no_down_at_either_bfdd(facing: dict) -> None:
    for side, rows in facing["bfdd_counters"].items():
        assert len(rows) == TOPO.sessions_per_device, side
        assert [r for r in rows if r["session-down"] != 0] == [], side
