"""host - where `tune check` gets its readings: one small interface, injected.

LocalHost reads this machine (or one network namespace on it) with the real tools; tests
replay recorded outputs through the same interface, so every reader and recommendation is
exercised on this machine's veth and on recorded igb/I210 hosts alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..util import LabError, run
from .parse import HwtstampConfig, cmdline


@dataclass
class Result:
    """One command as it ran: exit status and both streams."""

    argv: list[str]
    rc: int
    stdout: str
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def message(self) -> str:
        """The tool's own words for a failure: its last stderr line (else stdout's)."""
        for text in (self.stderr, self.stdout):
            lines = [ln.strip() for ln in text.splitlines()
                     if ln.strip() and "Unable to load libkmod" not in ln]
            if lines:
                return lines[-1]
        return f"exit status {self.rc}"


@dataclass(frozen=True)
class Process:
    """A running xdp-bfd engine as /proc shows it."""

    pid: int
    argv: list[str]
    same_netns: bool  # runs in the network namespace being checked
    exe: str  # /proc/PID/exe target ('' when unreadable)


class Host(Protocol):
    """Everything the checks read. Missing files and directories are None, never raised."""

    netns: str | None

    def run(self, argv: list[str]) -> Result: ...

    def read(self, path: str) -> str | None: ...

    def listdir(self, path: str) -> list[str] | None: ...

    def realpath(self, path: str) -> str | None: ...

    def hwtstamp(self, iface: str) -> HwtstampConfig | str:
        """The current SIOCGHWTSTAMP config, or the error text when the driver refuses."""
        ...

    def engines(self) -> list[Process]: ...

    def uname(self) -> tuple[str, str]:
        """(host name, kernel release) of the machine read."""
        ...


class LocalHost:
    """This machine, or the network namespace NETNS on it (`ip netns exec`, which shows the
    namespace's own /sys/class/net; /proc and PCI sysfs are the same for every namespace)."""

    def __init__(self, netns: str | None = None) -> None:
        if netns is not None and not Path(f"/run/netns/{netns}").exists():
            raise LabError(f"network namespace {netns!r} does not exist (/run/netns/{netns})")
        self.netns = netns

    def _in_ns(self, path: str) -> bool:
        return self.netns is not None and path.startswith("/sys/class/net/")

    def run(self, argv: list[str]) -> Result:
        full = ["ip", "netns", "exec", self.netns, *argv] if self.netns else list(argv)
        try:
            cp = run(full, check=False, timeout=30)
        except LabError as e:  # not installed, or hung: the reading is unsupported
            return Result(list(argv), 127, "", str(e))
        return Result(list(argv), cp.returncode, cp.stdout or "", cp.stderr or "")

    def read(self, path: str) -> str | None:
        if self._in_ns(path):
            r = self.run(["cat", path])
            return r.stdout if r.ok else None
        try:
            return Path(path).read_text(errors="replace")
        except OSError:
            return None

    def listdir(self, path: str) -> list[str] | None:
        if self._in_ns(path):
            r = self.run(["ls", "-1", path])
            return sorted(r.stdout.split()) if r.ok else None
        try:
            return sorted(os.listdir(path))
        except OSError:
            return None

    def realpath(self, path: str) -> str | None:
        if self._in_ns(path):
            r = self.run(["readlink", "-e", path])
            return r.stdout.strip() if r.ok and r.stdout.strip() else None
        return os.path.realpath(path) if os.path.exists(path) else None

    def hwtstamp(self, iface: str) -> HwtstampConfig | str:
        from . import hwstamp  # ioctl plumbing lives with the capture side
        try:
            return hwstamp.get_config(iface, self.netns)
        except OSError as e:
            return f"SIOCGHWTSTAMP: {e.strerror or e}"

    def uname(self) -> tuple[str, str]:
        u = os.uname()
        return u.nodename, u.release

    def engines(self) -> list[Process]:
        target = f"/run/netns/{self.netns}" if self.netns else "/proc/self/ns/net"
        try:
            ns_ino = os.stat(target).st_ino
        except OSError:
            ns_ino = -1
        out = []
        for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                if comm != "xdp-bfd":
                    continue
                argv = cmdline(Path(f"/proc/{pid}/cmdline").read_bytes())
                same = os.stat(f"/proc/{pid}/ns/net").st_ino == ns_ino
            except OSError:
                continue  # gone meanwhile, or not ours to read
            try:
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                exe = ""
            out.append(Process(pid, argv, same, exe))
        return out
