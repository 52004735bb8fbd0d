"""capture - tcpdump in the wire namespace (the run's capture.pcap).

The capture sees every packet once, at its entry to the wire (`inbound` on `-i any`), with
host nanosecond timestamps taken in the kernel. A run is only as good as its capture: the
exit summary must say "0 packets dropped by kernel".
"""

from __future__ import annotations

import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .. import util
from .netns import nsexec
from ..util import LabError, spawn, wait_until

BFD_FILTER = "inbound and udp and (port 3784 or port 3785 or port 4784)"
# The kernel's ring for tcpdump -B: allocated and zeroed when the capture starts, in one stretch
# the scheduler cannot preempt. A 32 MiB ring held a SCHED_FIFO 90 task off its CPU for 38-62 ms
# in 3 of 4 starts (a 2 MiB ring in none of 4; /tmp probe, 1 ms periodic wake-ups), which took
# 10 ms x3 sessions Down at both engines of test_engine_facing.py in one run in three. So a
# capture started while sessions run gets a small ring (MIDRUN_BUFFER_KIB: some 10,000 BFD
# packets, seconds of the lab's rates); only a run's own capture, started before any session
# exists and facing floods, takes RUN_BUFFER_KIB.
MIDRUN_BUFFER_KIB = 2048
RUN_BUFFER_KIB = 32768


@dataclass
class Capture:
    ns: str
    pcap: Path
    log: Path
    buffer_kib: int = MIDRUN_BUFFER_KIB
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
