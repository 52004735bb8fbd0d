"""frr - FRR 8.4.4 bfdd instances: config, start, peers, vtysh queries, stop.

One bfdd per namespace, each with its own pathspace (-N INST), single-hop or multihop peers
that name local-address (platform.md section 9). Without zebra bfdd knows no interface, so a
link-local peer (which names its interface) stays Down: an instance with such peers starts
zebra in the same pathspace first (Bfdd(zebra=True)), and bfdd finds it there.

bfdd drops to user frr, so everything it opens itself (config, log, pid file, vty socket)
lives in its pathspace's run directory /var/run/frr/INST, owned by frr: never in the run
folder, which may sit where frr cannot reach (a clone in /root, mode 700). stop() copies the logs
and config into the run folder.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import util
from .netns import nsexec
from ..util import LabError, run, wait_until

BFDD = "/usr/lib/frr/bfdd"
ZEBRA = "/usr/lib/frr/zebra"
VTYSH = "vtysh"
FRR_RUN = Path("/var/run/frr")
# Two instances started within the same second pick identical discriminators (platform.md 9).
START_SPACING_S = 1.1
# Peers per vtysh call when adding live: one call for 1,024 peers outlasts vtysh's timeout.
ADD_BATCH = 128


@dataclass(frozen=True)
class PeerCfg:
    """One `peer PEER [multihop] local-address LOCAL [interface IF]` block with its timers.

    MULTIHOP: an RFC 5883 session (UDP 4784), MINIMUM_TTL the lowest TTL it accepts (0: bfdd's
    default, 254). IFNAME: the interface a link-local peer is on (bfdd then needs zebra to
    know the interface: Bfdd(zebra=True)). ECHO_MS: echo-mode with this echo transmit and
    receive interval (0: no echo)."""

    peer: str
    local: str
    interval_ms: int
    detect_mult: int
    multihop: bool = False
    ifname: str = ""
    minimum_ttl: int = 0
    echo_ms: int = 0
    passive: bool = False  # `passive-mode`: RFC 5880 6.1 Passive role
    shutdown: bool = False  # `shutdown`: AdminDown (RFC 5880 6.8.16)

    @property
    def head(self) -> str:
        """The block's first line, which names the session in bfdd (and in vtysh)."""
        return (f"peer {self.peer}{' multihop' if self.multihop else ''} "
                f"local-address {self.local}{f' interface {self.ifname}' if self.ifname else ''}")

    def lines(self) -> list[str]:
        out = [self.head,
               f"receive-interval {self.interval_ms}",
               f"transmit-interval {self.interval_ms}",
               f"detect-multiplier {self.detect_mult}"]
        if self.multihop and self.minimum_ttl:
            out.append(f"minimum-ttl {self.minimum_ttl}")
        if self.echo_ms:  # FRR 8.4.4's words (vtysh; docs/engine.md, Echo)
            out += ["echo-mode", f"echo transmit-interval {self.echo_ms}",
                    f"echo receive-interval {self.echo_ms}"]
        return out + ["passive-mode"] * self.passive + ["shutdown"] * self.shutdown


_last_start = 0.0


@dataclass
class Bfdd:
    """A bfdd instance INST in namespace NS; its files live in rundir (owned by frr) and are
    collected into DIR (the run folder's logs) when it stops."""

    inst: str
    ns: str
    dir: Path  # where stop() leaves bfdd.log (appended across restarts) and bfdd.conf
    dplane: str | None = None  # --dplaneaddr (server mode, e.g. ipv4:127.0.0.1:50700)
    pid: int | None = None
    started_ns: int = 0
    threads_shielded: list[int] = field(default_factory=list)
    zebra: bool = False  # start zebra first: bfdd needs it for peers that name an interface
    zebra_pid: int | None = None

    @property
    def zebra_pidfile(self) -> Path:
        return self.rundir / "zebra.pid"

    def _start_zebra(self, timeout_s: float) -> None:
        conf, log = self.rundir / "zebra.conf", self.rundir / "zebra.log"
        conf.write_text(f"log file {log} informational\n")
        log.touch()
        frr = pwd.getpwnam("frr")
        for p in (conf, log):
            os.chown(p, frr.pw_uid, frr.pw_gid)
        run(nsexec(self.ns, [ZEBRA, "-d", "-N", self.inst, "-f", str(conf), "-i",
                             str(self.zebra_pidfile), "-P", "0"]), timeout=timeout_s)
        api = self.rundir / "zserv.api"

        def ready() -> int | None:
            try:
                pid = int(self.zebra_pidfile.read_text().strip())
            except (OSError, ValueError):
                return None
            return pid if api.exists() and util.pid_alive(pid) else None

        self.zebra_pid = wait_until(ready, timeout_s, f"zebra {self.inst} pid file and zserv")

    @property
    def conf(self) -> Path:
        return self.rundir / "bfdd.conf"

    @property
    def log(self) -> Path:
        return self.rundir / "bfdd.log"

    @property
    def pidfile(self) -> Path:
        return self.rundir / "bfdd.pid"

    @property
    def rundir(self) -> Path:
        return FRR_RUN / self.inst

    def write_config(self, peers: list[PeerCfg]) -> None:
        self.rundir.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(config_text(peers, str(self.log)))
        self.log.touch()

    def start(self, timeout_s: float = 10.0) -> int:
        """Start bfdd (daemonised) and wait for its pid file and vty socket; returns its pid."""
        global _last_start
        wait = _last_start + START_SPACING_S - time.monotonic()
        if wait > 0:
            util.log_note(f"waiting {wait:.2f} s so {self.inst} picks its own discriminators")
            time.sleep(wait)  # a fixed spacing FRR needs, not a wait for a condition
        if not self.conf.exists():
            self.write_config([])
        frr = pwd.getpwnam("frr")
        for p in (self.rundir, self.conf, self.log):
            os.chown(p, frr.pw_uid, frr.pw_gid)
        if self.zebra and not (self.zebra_pid and util.pid_alive(self.zebra_pid)):
            self._start_zebra(timeout_s)
        argv = [BFDD, "-d", "-N", self.inst, "-f", str(self.conf), "-i", str(self.pidfile),
                "-P", "0"]  # no TCP vty: vtysh uses the unix socket in the pathspace
        if self.dplane:
            argv += ["--dplaneaddr", self.dplane]
        _last_start = time.monotonic()
        self.started_ns = util.realtime_ns()
        run(nsexec(self.ns, argv), timeout=timeout_s)
        vty = self.rundir / "bfdd.vty"

        def ready() -> int | None:
            try:
                pid = int(self.pidfile.read_text().strip())
            except (OSError, ValueError):
                return None
            return pid if vty.exists() and util.pid_alive(pid) else None

        self.pid = wait_until(ready, timeout_s, f"bfdd {self.inst} pid file and vty socket")
        util.set_oom_score_adj(self.pid)
        return self.pid

    def vtysh(self, *commands: str, timeout: float = 10.0, check: bool = True) -> str:
        argv = [VTYSH, "-N", self.inst]
        for c in commands:
            argv += ["-c", c]
        return run(argv, timeout=timeout, check=check).stdout

    def add_peers(self, peers: list[PeerCfg], timeout: float = 30.0,
                  batch: int = ADD_BATCH) -> None:
        """Add PEERS, BATCH per vtysh call (each command is its own event-loop pass in bfdd);
        TIMEOUT is per call."""
        for i in range(0, len(peers), batch):
            cmds = ["configure terminal", "bfd"]
            for p in peers[i:i + batch]:
                head, *rest = p.lines()
                cmds += [head, *rest, "exit"]
            cmds += ["end"]
            self.vtysh(*cmds, timeout=timeout)

    def peers(self, timeout: float = 5.0) -> list[dict]:
        """`show bfd peers json`: a list of dicts (peer, local, status, id, remote-id, ...)."""
        out = self.vtysh("show bfd peers json", timeout=timeout)
        return _json_list(out)

    def counters(self, timeout: float = 5.0) -> list[dict]:
        """`show bfd peers counters json` (session-up, session-down per peer)."""
        out = self.vtysh("show bfd peers counters json", timeout=timeout)
        return _json_list(out)

    def alive(self) -> bool:
        return self.pid is not None and util.pid_alive(self.pid)

    def stop(self, timeout_s: float = 5.0) -> None:
        """SIGTERM the instance by PID (checked against its -N name), then clean its run dir."""
        util.stop_daemon(self.pid, self.pidfile, f"-N {self.inst}", timeout_s)
        self.pid = None
        if self.zebra_pid is not None:
            util.stop_pid(self.zebra_pid, f"-N {self.inst}", sig=signal.SIGTERM,
                          timeout_s=timeout_s)
            self.zebra_pid = None
        self.collect()
        shutil.rmtree(self.rundir, ignore_errors=True)

    def collect(self) -> None:
        """Copy the instance's log (appended: a restarted bfdd keeps one log) and config
        into DIR."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.log.exists():
            with open(self.dir / "bfdd.log", "ab") as out:
                out.write(self.log.read_bytes())
        if self.conf.exists():
            shutil.copyfile(self.conf, self.dir / "bfdd.conf")
        if (self.rundir / "zebra.log").exists():
            shutil.copyfile(self.rundir / "zebra.log", self.dir / "zebra.log")


def config_text(peers: list[PeerCfg], log_file: str | None = None) -> str:
    """bfdd's configuration: the log file (if any) and a `bfd` block with PEERS; the same text
    serves as a vtysh input file (lab.bare: peers added once the engine is connected)."""
    out = [f"log file {log_file} informational", "!"] if log_file else []
    out.append("bfd")
    for p in peers:
        head, *rest = p.lines()
        out += [" " + head] + ["  " + r for r in rest] + [" !"]
    out += ["!", ""]
    return "\n".join(out)


def _json_list(out: str) -> list[dict]:
    start = out.find("[")
    if start < 0:
        raise LabError(f"vtysh: no JSON list in output: {out[:200]!r}")
    data = json.loads(out[start:])
    if not isinstance(data, list):
        raise LabError("vtysh: JSON is not a list")
    return data


def up_count(peers: list[dict], local: str | None = None) -> int:
    """Sessions whose status is 'up' (optionally only those with local address LOCAL)."""
    return sum(1 for p in peers
               if p.get("status") == "up" and (local is None or p.get("local") == local))
