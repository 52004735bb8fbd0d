"""floods - the ladder's flood arms run against every device at once, from the load
namespace into each device's link: a generator per device (trafgen or BPF live frames), the
counters around it (the bridge port, the link, UdpRcvbufErrors, the engine's counters), and
the rotation of arms within a step.
"""

from __future__ import annotations

import time
from typing import Any

from ..rig import flood
from .lab import Lab, RunConfig
from .steps import Step


class FloodRun:
    """One arm against every device at once: a generator per device, counters around it."""

    def __init__(self, lab: Lab, targets: dict[str, flood.Target], arm: str,
                 seconds: float, pps: float, generator: str, idx: int) -> None:
        self.lab, self.arm, self.seconds, self.pps = lab, arm, seconds, pps
        self.before: dict[str, Any] = {}
        self.gens: dict[str, flood.Gen] = {}
        ns = flood.load_ns(lab.netns)
        for dev, t in targets.items():
            self.before[dev] = _counters(lab, dev)
            self.gens[dev] = flood.make_gen(generator, ns, flood.ARMS[arm],
                                            flood.frame(arm, t), seconds, pps, lab.rd.logs,
                                            f"{idx:02d}-{arm}-{dev}")
        self.t0 = time.monotonic()
        for dev, g in self.gens.items():
            lab.registry.add_pid(g.start(), "timeout")
        lab.extra.append((f"flood {arm}", self.stop))

    def stop(self) -> None:
        for g in self.gens.values():
            g.stop()

    def finish(self) -> dict[str, Any]:
        out: dict[str, Any] = {"arm": self.arm, "description": flood.ARMS[self.arm].description,
                               "expect": flood.ARMS[self.arm].expect,
                               "target_pps": self.pps, "devices": {}}
        for dev, g in self.gens.items():
            res = g.wait(self.seconds + 15)
            dt = max(1e-3, time.monotonic() - self.t0)
            after = _counters(self.lab, dev)
            out["devices"][dev] = _arm_deltas(self.before[dev], after, dt, res, self.seconds)
        self.lab.extra = [x for x in self.lab.extra if x[1] != self.stop]
        return out


def _counters(lab: Lab, dev: str) -> dict[str, Any]:
    """What an arm's effect is measured with: the bridge port towards the device, the
    device's link, its namespace's UdpRcvbufErrors, and the engine's counters (SIGUSR1)."""
    ns = lab.netns.device_ns(dev)
    c: dict[str, Any] = {"t": time.monotonic(),
                         "port": flood.link_stats(lab.netns.wire, lab.netns.wire_port(dev)),
                         "link": flood.link_stats(ns, "dut0"),
                         "udp_rcvbuf_errors": flood.udp_rcvbuf_errors(ns)}
    eng = lab.engines.get(dev)
    if eng is not None:
        st = eng.stats(timeout_s=3)
        c["engine"] = None if st is None else {"counters": st.get("counters") or {},
                                               "drops": st.get("drops") or {},
                                               "sessions_up": st.get("sessions_up")}
    return c


def _arm_deltas(b: dict[str, Any], a: dict[str, Any], dt: float,
                gen: dict[str, Any], gen_s: float = 0.0) -> dict[str, Any]:
    span = max(1e-3, a["t"] - b["t"])
    offered = a["port"]["tx_packets"] - b["port"]["tx_packets"]
    # The rate over the generator's own sending time (live frames reports it; trafgen runs
    # for its timeout): the counters' span also holds process start-up and the stats dumps.
    busy = min(span, float(gen.get("seconds") or gen_s or span))
    d: dict[str, Any] = {
        "seconds": round(busy, 3),
        "counter_span_s": round(span, 3),
        "offered_frames": offered,  # frames the bridge sent into the device's link
        "offered_pps": round(offered / max(1e-3, busy)),
        "port_tx_dropped": a["port"]["tx_dropped"] - b["port"]["tx_dropped"],
        "link_rx_packets": a["link"]["rx_packets"] - b["link"]["rx_packets"],
        "link_rx_dropped": a["link"]["rx_dropped"] - b["link"]["rx_dropped"],
        "udp_rcvbuf_errors": a["udp_rcvbuf_errors"] - b["udp_rcvbuf_errors"],
        "generator": gen,
    }
    eb, ea = b.get("engine"), a.get("engine")
    if eb and ea:
        d["engine_counters"] = {k: ea["counters"].get(k, 0) - eb["counters"].get(k, 0)
                                for k in ea["counters"]
                                if ea["counters"].get(k, 0) != eb["counters"].get(k, 0)}
        d["engine_drops"] = {k: ea["drops"].get(k, 0) - eb["drops"].get(k, 0)
                             for k in ea["drops"] if ea["drops"].get(k, 0) != eb["drops"].get(k, 0)}
        d["engine_sessions_up_after"] = ea.get("sessions_up")
    elif "engine" in a or "engine" in b:
        d["engine_counters"] = None  # the engine did not answer SIGUSR1 in time
    return d


class Rotation:
    """The loop's flood hook (lab.harness.steps.Floods): a step's arms, one after the other,
    ARM_S each (a single arm: the whole step), at PPS per device with GENERATOR."""

    def __init__(self, lab: Lab, targets: dict[str, flood.Target], pps: float, generator: str,
                 meta_floods: list[dict[str, Any]]) -> None:
        self.lab, self.targets, self.pps, self.generator = lab, targets, pps, generator
        self.meta_floods = meta_floods  # the run's arms so far (numbers the generators' logs)
        self.fr: FloodRun | None = None
        self.arms: list[dict[str, Any]] = []
        self.arm_i, self.arm_t0 = 0, 0.0

    def begin(self, step: Step, t0: float) -> None:
        self.arms, self.arm_i, self.arm_t0, self.fr = [], 0, t0, None
        if step.arms:
            self.fr = FloodRun(self.lab, self.targets, step.arms[0],
                               min(self._arm_len(step), step.seconds), self.pps,
                               self.generator, len(self.meta_floods))

    @staticmethod
    def _arm_len(step: Step) -> float:
        return step.arm_s or step.seconds

    def tick(self, step: Step, now: float, elapsed: float) -> None:
        if self.fr is None or now - self.arm_t0 < self._arm_len(step) \
                or elapsed >= step.seconds - 1:
            return
        self.arms.append(self.fr.finish())
        self.arm_i += 1
        self.arm_t0 = time.monotonic()
        self.fr = FloodRun(self.lab, self.targets, step.arms[self.arm_i % len(step.arms)],
                           min(self._arm_len(step), step.seconds - elapsed), self.pps,
                           self.generator, len(self.meta_floods) + len(self.arms))

    def end(self) -> list[dict[str, Any]]:
        if self.fr is not None:
            self.arms.append(self.fr.finish())
            self.fr = None
        return self.arms


def bench(lab: Lab, cfg: RunConfig) -> dict[str, Any]:
    """Unpaced rate of each generator and arm into the first device's link, sessions Up."""
    dev = lab.topo.devices[0].name
    out = {}
    t = flood.targets(lab.netns, lab.topo, [dev])
    for kind in ("trafgen", "live"):
        for a in ("A", "B", "D", "F"):
            fr = FloodRun(lab, t, a, 4.0, 0, kind, len(out))
            time.sleep(4.5)
            res = fr.finish()["devices"][dev]
            out[f"{kind}/{a}"] = {"offered_pps": res["offered_pps"],
                                  "generator": res["generator"],
                                  "engine_drops": res.get("engine_drops")}
            cfg.out(f"bench {kind} arm {a}: {res['offered_pps']} pps offered to {dev}")
    return out
