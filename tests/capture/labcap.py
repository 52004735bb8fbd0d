"""Make a real BFD capture in a namespace lab: FRR bfdd on both ends, a bridge in a wire
namespace, tcpdump with the lab's filter, and one SIGSTOP of one bfdd for real down events.

Everything gets a random suffix and is removed by PID and by name, even on failure; nothing
broad is ever killed (other people run bfdd and tcpdump on the same machine).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

from lab.rig.netns import End, Netns

BFDD = "/usr/lib/frr/bfdd"
FILTER = "inbound and udp and (port 3784 or port 3785 or port 4784)"

# (A address, B address, interval ms): two 10 ms and two 50 ms sessions, v4 and v6.
SESSIONS = [
    ("10.213.0.1", "10.213.0.11", 10),
    ("10.213.0.2", "10.213.0.12", 50),
    ("fd13::1", "fd13::11", 10),
    ("fd13::2", "fd13::12", 50),
]


def available() -> str | None:
    """None when the lab can run here, else why not (for pytest.skip)."""
    if os.geteuid() != 0:
        return "needs root (namespaces, bfdd)"
    for tool in (BFDD, "/usr/bin/tshark", "/usr/bin/vtysh"):
        if not os.path.exists(tool):
            return f"{tool} not installed"
    if not shutil.which("tcpdump"):
        return "tcpdump not installed"
    return None


def run(cmd: list[str], timeout: float = 20, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)


def wait_until(pred, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while (got := pred()) is None and time.monotonic() < deadline:
        time.sleep(0.05)  # poll interval, not a guess at how long the lab needs
    if got is None:
        raise TimeoutError(f"{what}: not reached within {timeout_s} s")
    return got


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class Lab:
    """A-(veth)-W(bridge)-(veth)-B, bfdd in A and B, tcpdump -i any in W."""

    def __init__(self, outdir: Path):
        self.rnd = secrets.token_hex(3)
        self.out = outdir
        self.net = Netns(f"xc{self.rnd}", [])
        self.ns = {"a": self.net.ns("a"), "b": self.net.ns("b"), "w": self.net.wire}
        self.inst = {r: f"cap-{r}{self.rnd}" for r in "ab"}
        self.pids: dict[str, int] = {}
        self.tcpdump: subprocess.Popen | None = None
        self.netns_made: list[str] = []
        self.dirs: list[Path] = []
        self.logs: dict[str, Path] = {}

    # --- set-up -----------------------------------------------------------------------------
    def build(self) -> None:
        """A and B on the bridge of W, through the lab's namespace builder (lab.rig.netns)."""
        for role, ifn, i in (("a", "va", 0), ("b", "vb", 1)):
            addrs = tuple(f"{s[i]}/64" if ":" in s[i] else f"{s[i]}/24" for s in SESSIONS)
            self.net.ends.append(End(role, ifn, addrs))
        try:
            self.net.build()
        finally:
            self.netns_made = list(self.net.created)

    def start_capture(self, pcap: Path) -> None:
        log = self.out / "tcpdump.log"
        self.tcpdump_log = log
        with open(log, "w") as err:
            self.tcpdump = subprocess.Popen(
                ["ip", "netns", "exec", self.ns["w"], "tcpdump", "-i", "any", "-y", "LINUX_SLL2",
                 "--time-stamp-precision=nano", "-j", "host", "-B", "16384", "-nn", "-Z", "root",
                 "-w", str(pcap), FILTER],
                stdout=subprocess.DEVNULL, stderr=err)
        wait_until(lambda: True if "listening on" in log.read_text() else None, 10,
                   "tcpdump listening")

    def start_bfdd(self, role: str) -> None:
        inst = self.inst[role]
        # bfdd runs as user frr: its files live under /run, not in the (root-only) tmp dir.
        base = Path(f"/run/bfdcap-{self.rnd}")
        base.mkdir(mode=0o755, exist_ok=True)
        if base not in self.dirs:
            self.dirs.append(base)
        d = base / inst
        d.mkdir()
        self.logs[role] = d / "bfdd.log"
        rundir = Path("/var/run/frr") / inst
        rundir.mkdir(parents=True)
        self.dirs.append(rundir)
        lines = [f"log file {d}/bfdd.log informational", "!", "bfd"]
        for la, lb, ms in SESSIONS:
            local, peer = (la, lb) if role == "a" else (lb, la)
            lines += [f" peer {peer} local-address {local}", f"  receive-interval {ms}",
                      f"  transmit-interval {ms}", "  detect-multiplier 3", " !"]
        lines.append("!")
        (d / "bfdd.conf").write_text("\n".join(lines) + "\n")
        (d / "bfdd.log").touch()
        shutil.chown(d, "frr", "frr")
        for f in d.iterdir():
            shutil.chown(f, "frr", "frr")
        shutil.chown(rundir, "frr", "frr")
        pidfile = d / "bfdd.pid"
        r = run(["ip", "netns", "exec", self.ns[role], BFDD, "-d", "-N", inst, "-f",
                 str(d / "bfdd.conf"), "-i", str(pidfile)], check=False)
        if r.returncode != 0:
            raise RuntimeError(f"bfdd {inst} failed to start: {r.stderr.strip()}")
        self.pids[role] = wait_until(
            lambda: int(pidfile.read_text()) if pidfile.exists() and pidfile.read_text().strip()
            else None, 10, f"bfdd {inst} pid file")

    def peers(self, role: str, what: str = "show bfd peers json") -> list[dict]:
        r = run(["vtysh", "-N", self.inst[role], "-c", what], check=False)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return []

    def all_up(self) -> bool | None:
        for role in "ab":
            p = self.peers(role)
            if len(p) != len(SESSIONS) or any(x.get("status") != "up" for x in p):
                return None
        return True

    # --- the run ----------------------------------------------------------------------------
    def run_scenario(self) -> dict:
        pcap = self.out / "wire.pcap"
        t0 = time.time_ns()
        self.start_capture(pcap)
        self.start_bfdd("a")
        time.sleep(1.2)  # two bfdd started in the same second pick the same discriminators
        self.start_bfdd("b")
        wait_until(self.all_up, 20, "all sessions up")
        time.sleep(2.0)  # steady state to measure
        t_stop = time.time_ns()
        os.kill(self.pids["a"], signal.SIGSTOP)
        time.sleep(1.0)
        os.kill(self.pids["a"], signal.SIGCONT)
        t_cont = time.time_ns()
        wait_until(self.all_up, 20, "all sessions up again")
        time.sleep(3.0)
        counters = {r: self.peers(r, "show bfd peers counters json") for r in "ab"}
        t_end = time.time_ns()
        self.stop_capture()
        phases = [
            {"name": "steady", "start_ns": t0, "end_ns": t_stop},
            {"name": "cut", "start_ns": t_stop, "end_ns": t_cont + 2_000_000_000},
            {"name": "after", "start_ns": t_cont + 2_000_000_000, "end_ns": t_end},
        ]
        (self.out / "phases.json").write_text(json.dumps(phases))
        return {"pcap": pcap, "phases": self.out / "phases.json", "phase_list": phases,
                "t_stop": t_stop, "t_cont": t_cont, "counters": counters,
                "tcpdump_log": self.tcpdump_log.read_text()}

    # --- teardown ---------------------------------------------------------------------------
    def stop_capture(self) -> None:
        if self.tcpdump and self.tcpdump.poll() is None:
            self.tcpdump.send_signal(signal.SIGTERM)
            try:
                self.tcpdump.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.tcpdump.kill()
                self.tcpdump.wait(timeout=10)

    def teardown(self) -> None:
        self.stop_capture()
        for role, pid in self.pids.items():
            if pid_alive(pid):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)
        for pid in self.pids.values():
            try:
                wait_until(lambda p=pid: True if not pid_alive(p) else None, 10, "bfdd exit")
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
        self.net.teardown()
        for role, log in self.logs.items():  # keep the daemons' logs with the capture
            if log.exists():
                shutil.copy(log, self.out / f"bfdd-{role}.log")
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
