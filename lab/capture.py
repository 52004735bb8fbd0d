"""capture - tcpdump in the wire namespace, phases.json, and analysis through lab.bfdcap.

The capture sees every packet once, at its entry to the wire (`inbound` on `-i any`), with
host nanosecond timestamps taken in the kernel. A run is only as good as its capture: the
exit summary must say "0 packets dropped by kernel".
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import util
from .netns import nsexec
from .util import LabError, spawn, wait_until

BFD_FILTER = "inbound and udp and (port 3784 or port 3785 or port 4784)"


@dataclass
class Capture:
    ns: str
    pcap: Path
    log: Path
    buffer_kib: int = 32768
    proc: subprocess.Popen[bytes] | None = None
    stats: dict[str, int] = field(default_factory=dict)
    exclude_src_mac: str = ""  # frames from this MAC (the flood generator) are not captured
    iface: str = ""  # "": the wire (-i any, inbound); else this interface's own sends (-Q out)

    @property
    def filter(self) -> str:
        if self.iface:
            return "udp and (port 3784 or port 3785 or port 4784)"
        return bpf_filter(self.exclude_src_mac)

    def argv(self) -> list[str]:
        """The tcpdump command start() runs (a subclass may capture elsewhere or stamp with
        another clock: lab.nic.hwstamp.HwCapture)."""
        where = (["-i", self.iface, "-Q", "out"] if self.iface
                 else ["-i", "any", "-y", "LINUX_SLL2"])
        return nsexec(self.ns, ["tcpdump", *where, "-j", "host",
                                "--time-stamp-precision=nano", "-B", str(self.buffer_kib),
                                "-Z", "root", "-n", "-w", str(self.pcap), self.filter])

    def start(self, timeout_s: float = 10.0) -> int:
        self._logf = open(self.log, "ab")
        self.proc = spawn(self.argv(), stdout=self._logf, stderr=subprocess.STDOUT)
        wait_until(lambda: "listening on" in self.log.read_text(errors="replace")
                   or (self.proc.poll() is not None and "exit") or None,
                   timeout_s, "tcpdump listening")
        if self.proc.poll() is not None:
            raise LabError(f"tcpdump exited: {self.log.read_text(errors='replace')[-500:]}")
        util.set_oom_score_adj(self.proc.pid)
        return self.proc.pid

    def stop(self, timeout_s: float = 10.0) -> dict[str, int]:
        """SIGINT tcpdump (it flushes and prints its counters); returns those counters."""
        if self.proc is None:
            return self.stats
        if self.proc.poll() is None:
            util.stop_pid(self.proc.pid, "tcpdump", sig=signal.SIGINT, timeout_s=timeout_s)
        try:
            self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        self._logf.close()
        self.stats = parse_tcpdump_stats(self.log.read_text(errors="replace"))
        self.proc = None
        return self.stats


def bpf_filter(exclude_src_mac: str = "") -> str:
    """The capture filter. EXCLUDE_SRC_MAC leaves out a sender's frames by the link-layer
    source address LINUX_SLL2 records at bytes 12-17 ("ether src" is refused on SLL2): the
    flood generator forges BFD from the peer's own addresses, and bfdcap would take its
    frames for the peer's."""
    if not exclude_src_mac:
        return BFD_FILTER
    b = exclude_src_mac.split(":")
    hi, lo = "".join(b[:4]), "".join(b[4:6])
    return f"{BFD_FILTER} and not (link[12:4] = 0x{hi} and link[16:2] = 0x{lo})"


def parse_tcpdump_stats(text: str) -> dict[str, int]:
    """{'captured', 'received', 'dropped'} from tcpdump's exit summary (missing: absent)."""
    out: dict[str, int] = {}
    for key, pat in (("captured", r"(\d+) packets? captured"),
                     ("received", r"(\d+) packets? received by filter"),
                     ("dropped", r"(\d+) packets? dropped by kernel")):
        m = re.findall(pat, text)
        if m:
            out[key] = int(m[-1])
    return out


@dataclass
class Phase:
    name: str
    start_ns: int
    end_ns: int
    load: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "load": self.load}


def write_phases(path: Path, phases: list[Phase]) -> None:
    path.write_text(json.dumps([p.as_dict() for p in phases], indent=1) + "\n")


def read_phases(path: Path) -> list[Phase]:
    return [Phase(**p) for p in json.loads(path.read_text())]


def analyse(pcap: Path, tags: list[tuple[str, str]], phases_path: Path | None,
            bfdcap: Path, window: tuple[int, int] | None = None) -> dict[str, Any]:
    """bfdcap's JSON (schema bfdcap/1) for PCAP, through lab.bfdcap (the capture engineer's API).

    Raises LabError when the analyser is not available or fails.
    """
    try:
        from . import bfdcap as _bfdcap  # written by the capture engineer
    except ImportError as e:
        raise LabError(f"lab/bfdcap.py not available ({e})") from e
    if not bfdcap.exists():
        raise LabError(f"{bfdcap} missing: build it with make")
    try:
        return _bfdcap.analyse(str(pcap), tags=tuple(tags),
                               phases=str(phases_path) if phases_path else None,
                               bfdcap=str(bfdcap), window=window)
    except Exception as e:  # noqa: BLE001 - any analyser failure makes the run VOID, with why
        raise LabError(f"bfdcap analysis failed: {type(e).__name__}: {e}") from e
