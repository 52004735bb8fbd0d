"""frame - the one run frame every kind of run goes through.

Prerequisites, leftovers of dead runs cleaned up, a run folder with its command log, the
harness shielded from the OOM killer and made subreaper, a tag, the registry (so a run killed
with SIGKILL can be cleaned up), SIGTERM/SIGHUP/SIGINT turned into an orderly teardown, then
the body; whatever happens, everything torn down by PID and name and run.json written (with
the OOM note when this container refuses oom_score_adj).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import time
from pathlib import Path
from typing import Any, Callable

from .. import util
from ..rig import registry
from ..rig.netns import Netns
from ..topo import Topology
from ..util import LabError, RunDir
from .bringup import check_prereqs
from .lab import Interrupted, Lab, RunConfig

Body = Callable[[Lab, dict[str, Any], RunConfig], None]  # (lab, meta, the run's config)


def run(cfg: RunConfig, topo: Topology, kind: str, meta_extra: dict[str, Any], body: Body,
        *, files: dict[str, Path] | None = None, extra_roles: tuple[str, ...] = (),
        intro: tuple[str, ...] = (), on_tag: Callable[[str], RunConfig] | None = None,
        ) -> tuple[RunDir, dict[str, Any]]:
    """Run BODY(lab, meta, cfg) inside the frame and return (run folder, run.json's contents).

    KIND names the run folder (results/runs/<utc>-<commit>-KIND); META_EXTRA goes into
    run.json beside the frame's own keys; FILES are copied into the run folder (name ->
    source); EXTRA_ROLES are namespaces the body adds (registered for cleanup); INTRO lines
    are printed after the run folder's; ON_TAG may give the body a config that depends on
    the run's tag (the ladder leaves its flood generator's MAC out of the capture). Errors
    from BODY (LabError, an interrupt) propagate after the teardown."""
    check_prereqs(cfg, topo)
    for old in registry.stale():  # a killed earlier run (its harness is gone): clear it first
        for line in registry.cleanup(old):
            cfg.out(f"cleanup of dead run {old.tag}: {line}")
    rd = RunDir.create(kind, cfg.runs_root)
    util.set_command_log(rd.logs / "commands.log")
    util.OOM_REFUSED.clear()
    util.set_oom_score_adj(os.getpid())
    util.become_subreaper()
    tag = "xb" + util.run_id_hex()
    if on_tag is not None:
        cfg = on_tag(tag)
    (rd.path / "topology.toml").write_text(Path(cfg.topology).read_text())
    for name, src in (files or {}).items():
        (rd.path / name).write_text(Path(src).read_text())
    meta: dict[str, Any] = {
        "run_id": rd.path.name, "tag": tag, "topology": str(cfg.topology),
        "duts": [d.name for d in topo.devices], "commit": rd.commit, "dirty": rd.dirty,
        "kernel": platform.release(), "nproc": os.cpu_count(),
        "shield": {}, "engine_attach": {}, "engine_stats": {}, "warnings": [], "capture": {},
        **meta_extra, "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    cfg.out(f"run folder {rd.path}")
    for line in intro:
        cfg.out(line)
    netns = Netns.for_topology(tag, topo, cfg.build / "xdp_pass.bpf.o")
    lab = Lab(topo, rd, tag, netns, registry.Registry.create(tag))
    lab.registry.add_namespaces([netns.ns(r) for r in netns.roles() + list(extra_roles)])

    def on_signal(signum: int, _frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    def on_int(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt  # also when started with SIGINT ignored (a background job)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    old[signal.SIGINT] = signal.signal(signal.SIGINT, on_int)
    error: str | None = None
    try:
        body(lab, meta, cfg)
    except (KeyboardInterrupt, Interrupted) as e:
        error = f"interrupted ({type(e).__name__} {e})"
        raise
    except LabError as e:
        error = str(e)
        raise
    finally:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second Ctrl-C must not cut the teardown
        problems = lab.teardown()
        for s, h in old.items():
            signal.signal(s, h)
        if problems:
            meta["warnings"] += [f"teardown: {p}" for p in problems]
        meta["error"] = error
        if util.OOM_REFUSED:
            meta["warnings"].append(
                f"oom_score_adj -1000 refused for {len(util.OOM_REFUSED)} processes "
                f"({util.OOM_REFUSED[0]}; this container lacks CAP_SYS_RESOURCE: the lab's "
                f"daemons are not shielded from the OOM killer, which matters only under the "
                f"memory levels)")
        (rd.path / "run.json").write_text(json.dumps(meta, indent=1) + "\n")
        if error:
            cfg.out(f"run aborted: {error}; everything torn down; logs in {rd.logs}")
    return rd, meta
