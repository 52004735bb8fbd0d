"""bird - BIRD 2 (Debian's bird2) as a BFD peer: config, start, session state, stop.

One BIRD per namespace, run as root from the run folder (platform.md section 10):
`bird -c CONF -s CTL -P PID`, queried with `birdc -s CTL show bfd sessions`. Its BFD protocol
takes timers per interface (single hop) and once for multihop, not per neighbour, so every
single-hop neighbour here shares one set and every multihop neighbour another (lab.topo
checks a topology asks for no more).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import util
from .netns import nsexec
from ..util import LabError, run, wait_until

BIRD = "bird"
BIRDC = "birdc"
STATES = ("Up", "Down", "Init", "AdminDown")
# "10.77.0.1   peer0   Up   02:00:01.123   0.050   0.150" (Interface is "---" for multihop)
_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(" + "|".join(STATES) + r")\s")


@dataclass(frozen=True)
class Neighbor:
    """`neighbor PEER [dev "IF"] local LOCAL [multihop yes]`: IFNAME for single hop."""

    peer: str
    local: str
    ifname: str = ""
    multihop: bool = False

    def line(self) -> str:
        dev = f' dev "{self.ifname}"' if self.ifname and not self.multihop else ""
        return (f"neighbor {self.peer}{dev} local {self.local}"
                f"{' multihop yes' if self.multihop else ''};")


@dataclass(frozen=True)
class Timers:
    """One set of BFD timers (RFC 5880 6.8.1): desired min TX = required min RX, Detect Mult."""

    interval_ms: int
    detect_mult: int

    def lines(self) -> list[str]:
        return [f"min rx interval {self.interval_ms} ms;",
                f"min tx interval {self.interval_ms} ms;", "idle tx interval 1000 ms;",
                f"multiplier {self.detect_mult};"]


@dataclass
class Bird:
    """BIRD in namespace NS; its config, control socket, pid file and log live in DIR."""

    ns: str
    dir: Path
    ifname: str  # the interface single-hop neighbours are on
    pid: int | None = None

    @property
    def conf(self) -> Path:
        return self.dir / "bird.conf"

    @property
    def ctl(self) -> Path:
        return self.dir / "bird.ctl"

    @property
    def pidfile(self) -> Path:
        return self.dir / "bird.pid"

    @property
    def log(self) -> Path:
        return self.dir / "bird.log"

    def write_config(self, neighbors: list[Neighbor], single_hop: Timers | None,
                     multihop: Timers | None) -> None:
        """bird.conf in DIR (config_text) with its log in DIR."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(config_text(neighbors, single_hop, multihop, self.ifname,
                                         str(self.log)))

    def start(self, timeout_s: float = 10.0) -> int:
        """Start BIRD (it daemonises) and wait for its pid file and control socket; its pid."""
        # BIRD parses the config first and exits non-zero on an error, naming the line.
        run(nsexec(self.ns, [BIRD, "-c", str(self.conf), "-s", str(self.ctl), "-P",
                             str(self.pidfile)]), timeout=timeout_s)

        def ready() -> int | None:
            try:
                pid = int(self.pidfile.read_text().strip())
            except (OSError, ValueError):
                return None
            return pid if self.ctl.exists() and util.pid_alive(pid) else None

        self.pid = wait_until(ready, timeout_s, f"bird in {self.ns}: pid file and socket")
        util.set_oom_score_adj(self.pid)
        return self.pid

    def birdc(self, *words: str, timeout: float = 5.0) -> str:
        return run([BIRDC, "-s", str(self.ctl), *words], timeout=timeout).stdout

    def sessions(self, timeout: float = 5.0) -> list[dict]:
        """`show bfd sessions`: one dict per neighbour, {"peer", "interface", "state"}."""
        out = []
        for line in self.birdc("show", "bfd", "sessions", timeout=timeout).splitlines():
            m = _ROW.match(line.strip())
            if m:
                out.append({"peer": m.group(1), "interface": m.group(2), "state": m.group(3)})
        return out

    def up_count(self) -> int:
        """Sessions Up in BIRD's view (-1 when it does not answer)."""
        try:
            return sum(1 for s in self.sessions() if s["state"] == "Up")
        except LabError:
            return -1

    def alive(self) -> bool:
        return self.pid is not None and util.pid_alive(self.pid)

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM BIRD by PID (checked against its command line)."""
        util.stop_daemon(self.pid, self.pidfile, str(self.conf), timeout_s)
        self.pid = None


def config_text(neighbors: list[Neighbor], single_hop: Timers | None, multihop: Timers | None,
                ifname: str, log: str) -> str:
    """bird.conf: log to LOG, the BFD protocol "lab" with NEIGHBORS; SINGLE_HOP timers for
    interface IFNAME, MULTIHOP for multihop neighbours (None: BIRD's defaults, for a kind with
    no neighbour). The namespace lab's and lab.bare's (a peer host's BIRD) alike."""
    out = [f'log "{log}" all;', "router id 198.18.0.6;",
           "protocol device { scan time 10; }", "protocol bfd lab {"]
    if single_hop is not None:
        out.append(f'  interface "{ifname}" {{ ' + " ".join(single_hop.lines()) + " };")
    if multihop is not None:
        out.append("  multihop { " + " ".join(multihop.lines()) + " };")
    out += ["  " + n.line() for n in neighbors] + ["}", ""]
    return "\n".join(out)
