"""engine - start, query and stop build/xdp-bfd inside a device namespace.

The engine runs under `nsenter --net` (not `ip netns exec`, which hides /sys/fs/bpf), connects
to its bfdd's data-plane server, and attaches XDP to the device's link. SIGUSR1 makes it
write its stats JSON; SIGTERM stops it cleanly (AdminDown on every session).

It runs with the scheduling it has as installed: the package's XDP_BFD_SCHED
(packaging/engine.conf, its own SCHED_DEADLINE reservation), unless the topology's engine_args
name --sched-deadline themselves. Without it the loop, which sends what the fast path cannot
clock off the peer, starves under L3 and L4 (docs/lab.md section 7: BIRD classes, gaps of 111-175
ms on a 100 ms interval).
"""

from __future__ import annotations

import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import util
from .netns import nsenter
from ..util import LabError, spawn, wait_until

PACKAGED_CONF = util.REPO / "packaging" / "engine.conf"  # /etc/xdp-bfd/engine.conf as shipped
CONNECTED = "dplane: connected to"
LISTENING = "dplane: listening on"
ATTACHED = "kernel-tx: XDP attached to"


def packaged_sched_args(conf: Path = PACKAGED_CONF) -> tuple[str, ...]:
    """The options of XDP_BFD_SCHED in CONF, e.g. ("--sched-deadline", "1000/10000"); LabError
    when CONF has no such line."""
    for line in conf.read_text().splitlines():
        if line.startswith("XDP_BFD_SCHED="):
            # systemd takes the quotes off, then splits the unquoted $XDP_BFD_SCHED at spaces
            return tuple(" ".join(shlex.split(line.split("=", 1)[1])).split())
    raise LabError(f"{conf}: no XDP_BFD_SCHED line")


@dataclass
class Engine:
    binary: Path
    ns: str
    iface: str
    dplane: str  # bfdd's --dplaneaddr, e.g. ipv4:127.0.0.1:50700
    stats_path: Path
    log_path: Path
    stderr_path: Path
    extra_args: tuple[str, ...] = ()  # the topology's engine_args
    proc: subprocess.Popen[bytes] | None = None
    packaged_sched: bool = True  # add packaged_sched_args() unless extra_args set the policy
    listen: bool = False  # listen on DPLANE's port (--dplane) for a bfdd stand-in instead

    @property
    def port(self) -> int:
        """DPLANE's port (ipv4:ADDR:PORT)."""
        return int(self.dplane.rsplit(":", 1)[1])

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def sched_args(self) -> tuple[str, ...]:
        """The package's scheduling options, unless extra_args name a policy of their own."""
        own = any(a.split("=", 1)[0] == "--sched-deadline" for a in self.extra_args)
        return packaged_sched_args() if self.packaged_sched and not own else ()

    def argv(self) -> list[str]:
        bfdd = ["--dplane", str(self.port)] if self.listen else ["--dplane-connect", self.dplane]
        return nsenter(self.ns, [str(self.binary), *bfdd,
                                 "--kernel-tx", self.iface,
                                 "--stats-dump", str(self.stats_path),
                                 "--log-file", str(self.log_path), *self.sched_args(),
                                 *self.extra_args])

    def start(self, timeout_s: float = 15.0) -> int:
        """Start the engine and wait for its `dplane: connected to` line (`listening on` with
        LISTEN); returns its PID."""
        if not self.binary.exists():
            raise LabError(f"{self.binary} missing: the engine is not built (make)")
        self._err = open(self.stderr_path, "ab")
        self.proc = spawn(self.argv(), stdout=self._err, stderr=subprocess.STDOUT)
        util.set_oom_score_adj(self.proc.pid)

        def connected() -> bool | None:
            if self.proc is not None and self.proc.poll() is not None:
                raise LabError(f"xdp-bfd exited with {self.proc.returncode} before connecting; "
                               f"see {self.log_path} and {self.stderr_path}")
            return True if want in self.log_text() else None

        want = LISTENING if self.listen else CONNECTED
        wait_until(connected, timeout_s, f"xdp-bfd '{want}' in {self.log_path.name}")
        return self.proc.pid

    def follow(self, proc: Any) -> None:
        """Take on an engine process this object did not start (the one `--takeover` forks):
        PROC offers Popen's pid, poll() and wait(timeout)."""
        self._err = open(self.stderr_path, "ab")
        self.proc = proc

    def log_text(self) -> str:
        text = ""
        for p in (self.log_path, self.stderr_path):
            try:
                text += p.read_text(errors="replace")
            except OSError:
                pass
        return text

    def attach_line(self) -> str:
        for line in self.log_text().splitlines():
            if ATTACHED in line:
                return line.strip()
        return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stats(self, timeout_s: float = 3.0) -> dict[str, Any] | None:
        """SIGUSR1, then the freshly written stats JSON (None if none came within TIMEOUT_S)."""
        if not self.alive():
            return None
        assert self.proc is not None
        return util.signal_for_json(self.proc.pid, self.stats_path, timeout_s,
                                    "engine stats dump")

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """SIGTERM by PID (AdminDown on every session), SIGKILL after TIMEOUT_S; exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            util.stop_pid(self.proc.pid, str(self.binary.name), sig=signal.SIGTERM,
                          timeout_s=timeout_s)
        try:
            rc = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            rc = None
        self._err.close()
        util.log_note(f"xdp-bfd exit status {rc}")
        return rc
