"""util - the lab's plumbing: one command helper, background processes, waiting, run folders.

Every external command goes through run() or spawn(): an argument list, a timeout, and the
command line appended to the run's commands log, so a run folder says exactly what was done.
Processes the lab starts are stopped by PID only (never by name: other people run bfdd,
tcpdump and stress-ng on the same machine).
"""

from __future__ import annotations

import datetime as _dt
import os
import secrets
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, IO, Iterator, Sequence, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"


class LabError(RuntimeError):
    """A lab step failed; the message says which and why."""


class CommandLog:
    """Appends each command line (and its outcome) to logs/commands.log of the run."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        if self.path is None:
            return
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(f"{stamp} {line}\n")


_log = CommandLog(None)


def set_command_log(path: Path | None) -> None:
    """Direct the command log of this process to PATH (None: log nothing)."""
    global _log
    _log = CommandLog(path)


def log_note(text: str) -> None:
    """Write a free-form note (e.g. a decision the harness took) to the commands log."""
    _log.write(f"# {text}")


def run(
    argv: Sequence[str],
    *,
    timeout: float = 30.0,
    check: bool = True,
    capture: bool = True,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ARGV to completion (no shell) and return the CompletedProcess.

    The command line is logged before it runs and its exit status after. check=True raises
    LabError with stderr on a non-zero exit; a timeout raises LabError too.
    """
    argv = [str(a) for a in argv]
    _log.write("$ " + shlex.join(argv))
    try:
        cp = subprocess.run(
            argv,
            text=True,
            capture_output=capture,
            timeout=timeout,
            input=input_text,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        _log.write(f"  -> timeout after {timeout} s")
        raise LabError(f"{shlex.join(argv)}: no result within {timeout} s") from e
    except FileNotFoundError as e:
        _log.write("  -> not found")
        raise LabError(f"{argv[0]}: not found") from e
    if cp.returncode != 0:
        _log.write(f"  -> rc {cp.returncode}: {(cp.stderr or '').strip()[:500]}")
        if check:
            raise LabError(
                f"{shlex.join(argv)} failed (rc {cp.returncode}): {(cp.stderr or '').strip()}"
            )
    return cp


def spawn(
    argv: Sequence[str],
    *,
    stdout: IO[bytes] | int | None = subprocess.DEVNULL,
    stderr: IO[bytes] | int | None = subprocess.DEVNULL,
    new_session: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ARGV in the background (own session, so it can be signalled as a group)."""
    argv = [str(a) for a in argv]
    _log.write("& " + shlex.join(argv))
    try:
        p = subprocess.Popen(
            argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
            start_new_session=new_session,
        )
    except FileNotFoundError as e:
        raise LabError(f"{argv[0]}: not found") from e
    _log.write(f"  -> pid {p.pid}")
    return p


def wait_until(pred: Callable[[], T | None], timeout_s: float, what: str,
               poll_s: float = 0.05) -> T:
    """Call PRED until it returns something other than None/False; raise LabError on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = pred()
        if got is not None and got is not False:
            return got
        if time.monotonic() >= deadline:
            raise LabError(f"{what}: not reached within {timeout_s} s")
        time.sleep(poll_s)  # poll interval, not a guess at how long the lab needs


def signal_for_json(pid: int, path: Path, timeout_s: float, what: str) -> dict | None:
    """SIGUSR1 to PID, then PATH's JSON once it has been rewritten (the engine and bfdpeer
    dump their stats this way); None if no fresh file came within TIMEOUT_S."""
    import json

    def ident() -> tuple[int, int]:
        # A dump is renamed into place (a new inode); the time alone may not move between two
        # dumps within one tick of the filesystem's clock (a stats read came back None once).
        st = path.stat()
        return st.st_ino, st.st_mtime_ns

    try:
        before = ident()
    except OSError:
        before = (0, 0)
    os.kill(pid, signal.SIGUSR1)

    def fresh() -> dict | None:
        try:
            if ident() == before:
                return None
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None  # not there yet, or caught mid-write

    try:
        return wait_until(fresh, timeout_s, what, poll_s=0.02)
    except LabError:
        return None


def realtime_ns() -> int:
    """CLOCK_REALTIME in ns: the clock tcpdump's host timestamps use, so phases cut the pcap."""
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def run_id_hex(nbytes: int = 3) -> str:
    """A random hex tag for this run's namespace and instance names (6 hex digits by default)."""
    return secrets.token_hex(nbytes)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pid_cmdline(pid: int) -> str:
    """The process's command line joined with spaces, '' when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def pid_threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


OOM_REFUSED: list[str] = []  # "pid N: reason" for every oom_score_adj the kernel refused


def set_oom_score_adj(pid: int, value: int = -1000) -> bool:
    """Keep PID out of the OOM killer's reach (the machine has no swap).

    Lowering the value needs CAP_SYS_RESOURCE, which some sandboxes withhold: then the
    refusal is logged and remembered in OOM_REFUSED (the run records it), not raised.
    """
    try:
        Path(f"/proc/{pid}/oom_score_adj").write_text(f"{value}\n")
        _log.write(f"# oom_score_adj {value} -> pid {pid}")
        return True
    except OSError as e:
        _log.write(f"# oom_score_adj {value} -> pid {pid} failed: {e}")
        OOM_REFUSED.append(f"pid {pid} ({pid_cmdline(pid)[:40]}): {e.strerror}")
        return False


def proc_cpu_s(pid: int) -> float | None:
    """utime + stime of PID (all its threads) in seconds, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of proc(5))
    return ticks / os.sysconf("SC_CLK_TCK")


def cpu_steal_ms() -> float:
    """Time the hypervisor ran something else on our vCPUs, summed over CPUs (/proc/stat)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def stop_daemon(pid: int | None, pidfile: Path, expect: str, timeout_s: float = 5.0) -> None:
    """SIGTERM a daemon we started (FRR, BIRD) by PID, read from its PIDFILE when PID is None
    (a daemon that forked), checked against EXPECT in its command line (stop_pid)."""
    if pid is None:
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            return
    stop_pid(pid, expect, sig=signal.SIGTERM, timeout_s=timeout_s)


def stop_pid(pid: int, expect: str, *, sig: int = signal.SIGTERM, timeout_s: float = 5.0,
             group: bool = False) -> bool:
    """Stop one process we started: SIG, wait, then SIGKILL. Only if its cmdline contains EXPECT.

    EXPECT guards against PID reuse: we never signal a process that is not ours.
    Returns True when the process is gone.
    """
    cmd = pid_cmdline(pid)
    if not cmd:
        return True
    if expect not in cmd:
        _log.write(f"# not stopping pid {pid}: cmdline {cmd!r} lacks {expect!r}")
        return False
    kill = (lambda s: os.killpg(pid, s)) if group else (lambda s: os.kill(pid, s))
    who = f"{'group ' if group else ''}pid {pid}"
    _log.write(f"# signal {signal.Signals(sig).name} -> {who} ({cmd[:80]})")
    try:
        kill(sig)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid) or _is_zombie(pid):
            _reap(pid)
            return True
        time.sleep(0.05)
    _log.write(f"# SIGKILL -> pid {pid}")
    try:
        kill(signal.SIGKILL)
    except ProcessLookupError:
        return True
    for _ in range(100):
        _reap(pid)
        if not pid_alive(pid) or _is_zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].startswith("Z")


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def become_subreaper() -> bool:
    """PR_SET_CHILD_SUBREAPER: daemons we start (bfdd -d) re-parent to us, not to PID 1.

    PID 1 on this machine kind is not an init that reaps promptly, so a stopped bfdd would
    linger as a zombie there; as our child, stop_pid() reaps it.
    """
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def git_short_commit() -> tuple[str, bool]:
    """(short commit, dirty) of the repository, ('nogit', False) outside git."""
    try:
        short = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                               capture_output=True, text=True, timeout=10, check=True).stdout
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                                 "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "nogit", False
    return short.strip(), bool(status.strip())


@dataclass
class RunDir:
    """results/runs/<utc>-<shortcommit>-<kind>/ with logs/ inside; `latest` points at it."""

    path: Path
    commit: str
    dirty: bool
    logs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.logs = self.path / "logs"

    @classmethod
    def create(cls, kind: str, root: Path | None = None) -> "RunDir":
        root = root or REPO / "results" / "runs"
        commit, dirty = git_short_commit()
        utc = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        base = root / f"{utc}-{commit}-{kind}"
        path, n = base, 1
        while path.exists():
            n += 1
            path = base.with_name(f"{base.name}.{n}")
        (path / "logs").mkdir(parents=True)
        rd = cls(path, commit, dirty)
        latest = root / "latest"
        tmp = root / f".latest.{os.getpid()}"
        try:
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(path.name)
            os.replace(tmp, latest)
        except OSError:
            pass
        return rd


def lines_of(path: Path) -> Iterator[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from f
    except OSError:
        return
