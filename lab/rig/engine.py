"""engine - start, query and stop build/xdp-bfd inside a device namespace.

The engine runs under `nsenter --net` (not `ip netns exec`, which hides /sys/fs/bpf), connects
to its bfdd's data-plane server, and attaches XDP to the device's link. SIGUSR1 makes it
write its stats JSON; SIGTERM stops it cleanly (AdminDown on every session).
"""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import util
from .netns import nsenter
from ..util import LabError, spawn, wait_until

CONNECTED = "dplane: connected to"
ATTACHED = "kernel-tx: XDP attached to"


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

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def argv(self) -> list[str]:
        return nsenter(self.ns, [str(self.binary), "--dplane-connect", self.dplane,
                                 "--kernel-tx", self.iface,
                                 "--stats-dump", str(self.stats_path),
                                 "--log-file", str(self.log_path), *self.extra_args])

    def start(self, timeout_s: float = 15.0) -> int:
        """Start the engine and wait for its `dplane: connected to` line; returns its PID."""
        if not self.binary.exists():
            raise LabError(f"{self.binary} missing: the engine is not built (make)")
        self._err = open(self.stderr_path, "ab")
        self.proc = spawn(self.argv(), stdout=self._err, stderr=subprocess.STDOUT)
        util.set_oom_score_adj(self.proc.pid)

        def connected() -> bool | None:
            if self.proc is not None and self.proc.poll() is not None:
                raise LabError(f"xdp-bfd exited with {self.proc.returncode} before connecting; "
                               f"see {self.log_path} and {self.stderr_path}")
            return True if CONNECTED in self.log_text() else None

        wait_until(connected, timeout_s, f"xdp-bfd '{CONNECTED}' in {self.log_path.name}")
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
