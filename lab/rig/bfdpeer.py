"""bfdpeer - start, query and stop build/bfdpeer (the fast BFD peer, docs/bfdpeer.md) in the
peer namespace, as the lab's peer of kind "bfdpeer".

It answers the lab's questions the way frr.Bfdd does (peers(), counters(): rows with "peer",
"local", "status", "session-down"), from its stats JSON (SIGUSR1), so the monitor, the wait for
sessions Up and the final views treat both kinds alike. bfdpeer runs under `nsenter --net`
(XDP on the peer's veth; bpffs stays the host's). SIGTERM sends AdminDown on every session and
writes the stats one last time.

Its log and stats live on tmpfs (SHM_ROOT) while it runs and are copied into the run folder
when it stops: a write to a journalled file system can wait for the journal thread, which the
L4 SCHED_FIFO hogs starve, and a peer stalled in write() sends nothing (measured: silent on all
sessions for up to 343 ms under L4 while writing them in the run folder).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import util
from ..topo import Topology
from ..topo_checks import at
from ..util import LabError, spawn, wait_until
from .netns import nsenter

ATTACHED = "bfdpeer: XDP attached to"
RUNNING = "sessions from"
SHM_ROOT = Path("/dev/shm/xdp-bfd-lab")
ROWS_REUSE_S = 0.5  # a stats dump this recent answers peers() and counters() alike


def session_list(topo: Topology) -> dict[str, Any]:
    """The peer side of TOPO's sessions whose peer is "frr" (BIRD's stay BIRD's), as bfdpeer's
    session list: local is the peer's address, peer the device's, with the class's peer timers
    and hop type."""
    out = []
    for d in topo.devices:
        for s in topo.sessions(d.name):
            if s.cls.peer != "frr":
                continue
            ms, mult = s.cls.peer_timers
            row: dict[str, Any] = {"local": s.peer_address, "peer": s.device_address,
                                   "interval_ms": ms, "detect_mult": mult}
            if s.multihop:
                row["multihop"] = True
            for opt in ("passive", "admin_down", "demand"):  # lab.topo_checks: per end
                if at(getattr(s.cls, opt), "peer"):
                    row[opt] = True
            out.append(row)
    return {"sessions": out}


def interfaces(topo: Topology, iface: str, router_iface: str) -> tuple[str, ...]:
    """Where bfdpeer must receive TOPO's sessions: IFACE (on the bridge; the first scopes
    link-local destinations), and ROUTER_IFACE too when one of its sessions is multihop: those
    reach the peer's namespace through the router's own link to it, never the bridge."""
    mh = any(s.multihop and s.cls.peer == "frr" for d in topo.devices
             for s in topo.sessions(d.name))
    return (iface, router_iface) if mh and topo.router is not None else (iface,)


ARRIVAL_BYTES = 88  # struct bfdpeer_arrival (80) and the ring's 8-byte record header


def ring_kib_for(sessions: int) -> int:
    """bfdpeer's --ring-kib for SESSIONS: room for 2 s of arrivals with every session at 1 s
    (the rate while not Up, RFC 5880 6.8.3), so that a pass late by up to that loses nothing;
    a power of two, at least the default 1 MiB. 65,536 sessions: 16 MiB (the default 1 MiB
    filled up and dropped 33,719 arrivals at that size, run 20261203T145835Z)."""
    need = sessions * ARRIVAL_BYTES * 2 // 1024
    kib = 1024
    while kib < need:
        kib *= 2
    return kib


@dataclass
class BfdPeer:
    """build/bfdpeer in namespace NS on IFACE (and EXTRA_IFACES: XDP on each, one ring); DIR
    receives its session list, stats and logs (kept in WORKDIR, on tmpfs, while it runs)."""

    binary: Path
    ns: str
    iface: str
    dir: Path
    extra_ifaces: tuple[str, ...] = ()
    ring_kib: int = 1024  # its XDP arrival ring: write_sessions() sizes it to the session count
    proc: subprocess.Popen[bytes] | None = None
    _cached: tuple[float, list[dict[str, Any]]] | None = None

    @property
    def inst(self) -> str:  # what teardown messages call it (frr.Bfdd's field)
        return f"bfdpeer in {self.ns}"

    @property
    def workdir(self) -> Path:
        return SHM_ROOT / self.ns

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def sessions_path(self) -> Path:
        return self.dir / "bfdpeer-sessions.json"

    @property
    def stats_path(self) -> Path:
        return self.workdir / "bfdpeer-stats.json"

    @property
    def log_path(self) -> Path:
        return self.workdir / "bfdpeer.log"

    def write_sessions(self, topo: Topology) -> int:
        self.dir.mkdir(parents=True, exist_ok=True)
        doc = session_list(topo)
        self.sessions_path.write_text(json.dumps(doc, indent=1))
        self.ring_kib = ring_kib_for(len(doc["sessions"]))
        return len(doc["sessions"])

    def argv(self) -> list[str]:
        ifs = [a for i in (self.iface, *self.extra_ifaces) for a in ("--interface", i)]
        return nsenter(self.ns, [str(self.binary), *ifs,
                                 "--sessions", str(self.sessions_path),
                                 "--stats", str(self.stats_path),
                                 "--log-file", str(self.log_path),
                                 "--ring-kib", str(self.ring_kib)])

    def start(self, timeout_s: float = 10.0) -> int:
        """Start bfdpeer and wait until it runs (XDP attached, sessions loaded); its PID."""
        if not self.binary.exists():
            raise LabError(f"{self.binary} missing: build it with make")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._err = open(self.workdir / "bfdpeer.stderr", "ab")
        self.proc = spawn(self.argv(), stdout=self._err, stderr=subprocess.STDOUT)
        util.set_oom_score_adj(self.proc.pid)

        def running() -> bool | None:
            if self.proc is not None and self.proc.poll() is not None:
                self.collect()
                raise LabError(f"bfdpeer exited with {self.proc.returncode}; see "
                               f"{self.dir / 'bfdpeer.log'} and {self.dir / 'bfdpeer.stderr'}")
            return True if RUNNING in self.log_text() else None

        wait_until(running, timeout_s, f"bfdpeer '{RUNNING}' in {self.log_path.name}")
        return self.proc.pid

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stats(self, timeout: float = 3.0) -> dict[str, Any] | None:
        """A fresh stats dump (docs/bfdpeer.md, "Stats"), or None."""
        if not self.alive():
            return None
        assert self.proc is not None
        return util.signal_for_json(self.proc.pid, self.stats_path, timeout, "bfdpeer stats")

    def _rows(self, timeout: float) -> list[dict[str, Any]]:
        # peers() and counters() come in pairs (the monitor, the final views): one dump
        # serves both, so the peer is not asked to write thousands of rows twice
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > ROWS_REUSE_S:
            st = self.stats(timeout)
            if st is None:
                raise LabError("bfdpeer: no stats dump (not running?)")
            self._cached = (now, st["sessions"])
        return self._cached[1]

    def peers(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Its sessions as frr.Bfdd.peers() gives them (peer, local, status, id, remote-id)."""
        return [{"peer": r["peer"], "local": r["local"], "status": r["status"],
                 "id": r["my_disc"], "remote-id": r["your_disc"],
                 "diagnostic": r["diag"], "remote-diagnostic": r["remote_diag"]}
                for r in self._rows(timeout)]

    def counters(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Per-session up and down events, as frr.Bfdd.counters() names them."""
        return [{"peer": r["peer"], "session-up": r["up_events"],
                 "session-down": r["down_events"], "control-packet-input": r["rx_packets"],
                 "control-packet-output": r["tx_packets"]} for r in self._rows(timeout)]

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """SIGTERM by PID (AdminDown on every session, last stats), SIGKILL after TIMEOUT_S."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            util.stop_pid(self.proc.pid, self.binary.name, sig=signal.SIGTERM,
                          timeout_s=timeout_s)
        try:
            rc = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            rc = None
        self._err.close()
        util.log_note(f"bfdpeer exit status {rc}")
        self.collect()
        return rc

    def collect(self) -> None:
        """Move its log, stderr and last stats from tmpfs into DIR."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in ("bfdpeer.log", "bfdpeer.stderr", "bfdpeer-stats.json"):
            src = self.workdir / name
            if src.exists():
                shutil.copyfile(src, self.dir / name)
        shutil.rmtree(self.workdir, ignore_errors=True)
