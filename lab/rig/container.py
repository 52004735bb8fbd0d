"""container - a Debian 12 system container booted with systemd as PID 1, in a lab namespace.

The root is built once by debootstrap from the mirror this machine's apt uses and cached under
CACHE_DIR, keyed by the suite, the mirror and the package list (never inside the repository).
Each boot runs on an overlay of the cached root (a private upper directory per run), so what a
test installs never reaches the cache. systemd-nspawn boots it with --register=no and
--keep-unit (the host's PID 1 is not systemd, so there is no machined to register with) and
--network-namespace-path, so the container's network is a lab namespace's. Commands run in the
container through `nsenter -t LEADER -a` (the container's PID 1), since `systemd-run -M` and
`machinectl` need machined.

What BPF and XDP need inside (docs/engine.md, "How the package is tested"): the capabilities
of the engine's unit in the container's bounding set (--capability=), bpf(2) allowed by nspawn's
own seccomp filter (--system-call-filter=bpf: systemd 252's filter refuses it otherwise, EPERM
at the first program load), the host's user namespace (--private-users=no). The pin unit mounts
its bpffs itself (nspawn keeps CAP_SYS_ADMIN).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..util import LabError, log_note, pid_alive, run, spawn, stop_pid, wait_until

CACHE_DIR = Path("/var/cache/xdp-bfd-lab")
SUITE = "bookworm"
# What the container runs: systemd as PID 1, FRR, the engine's shared libraries (so dpkg -i of
# the package needs nothing from the network), and the tools the tests use inside.
PACKAGES = ("systemd", "systemd-sysv", "dbus", "frr", "iproute2", "procps", "libbpf1", "libelf1",
            "libcap2", "libsystemd0", "zlib1g")
# The engine unit's capability bounding set (debian/xdp-bfd.service): the container must hold
# them for its systemd to hand them on; CAP_SYS_ADMIN is nspawn's default (mount for the
# pin unit's bpffs).
CAPABILITIES = ("CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_SYS_NICE")
BUILD_TIMEOUT_S = 1800.0


def apt_mirror(sources_dir: Path = Path("/etc/apt")) -> str:
    """The Debian archive URL this machine's apt uses for SUITE (deb822 or one-line sources).
    Raises LabError when there is none."""
    files = sorted(sources_dir.glob("sources.list.d/*")) + [sources_dir / "sources.list"]
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            m = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            if m and re.search(rf"^Suites:.*\b{SUITE}\b(?!-)", stanza, re.M) \
                    and "security" not in m.group(1):
                return m.group(1)
        for m in re.finditer(rf"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+{SUITE}\s", text, re.M):
            return m.group(1)
    raise LabError(f"no apt source for {SUITE} under {sources_dir}: cannot debootstrap")


def cache_key(mirror: str, packages: tuple[str, ...] = PACKAGES) -> str:
    """12 hex digits naming a root: the suite, the mirror and the sorted package list."""
    text = "\n".join([SUITE, mirror, *sorted(packages)])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def seed_debs(cache_dir: Path, apt_archives: Path = Path("/var/cache/apt/archives")) -> Path:
    """debootstrap's package cache, CACHE_DIR/debs, seeded with hard links to the .debs apt has
    already fetched for this machine (`make deps` fetched FRR and most of what the root needs):
    debootstrap checks each against the suite's checksums and downloads only the rest, so a
    fresh machine does not fetch them twice. apt's own cache is left as it was. Returns it."""
    debs = cache_dir / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    for deb in apt_archives.glob("*.deb"):
        target = debs / deb.name
        if not target.exists():
            try:
                os.link(deb, target)
            except OSError:  # another filesystem: copy
                shutil.copy2(deb, target)
    return debs


def cached_root(packages: tuple[str, ...] = PACKAGES, cache_dir: Path = CACHE_DIR) -> Path:
    """The cached root for PACKAGES, built by debootstrap when absent (minutes on a fresh
    machine: see docs/engine.md). A root is complete only once its stamp file exists; a build
    interrupted half-way is removed and redone. Returns the root's directory."""
    mirror = apt_mirror()
    root = cache_dir / f"{SUITE}-{cache_key(mirror, packages)}"
    stamp = root.with_suffix(".done")
    if stamp.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log_note(f"debootstrap {SUITE} into {root} from {mirror} (not cached)")
    run(["debootstrap", "--variant=minbase", "--include=" + ",".join(packages),
         f"--cache-dir={seed_debs(cache_dir)}", SUITE, str(root), mirror],
        timeout=BUILD_TIMEOUT_S)
    # FRR's packaged daemons file would start zebra, bfdd and staticd with defaults: the tests
    # write their own. No getty on a console nobody reads.
    (root / "etc/systemd/system/multi-user.target.wants/frr.service").unlink(missing_ok=True)
    (root / "etc/systemd/system/getty.target.wants/getty@tty1.service").unlink(missing_ok=True)
    (root / "etc/hostname").write_text("xdp-bfd-ct\n")
    for deb in (root / "var/cache/apt/archives").glob("*.deb"):  # debootstrap's downloads
        deb.unlink()
    stamp.write_text(f"{time.monotonic() - t0:.0f} s\n")
    return root


def leader_pid(nspawn_pid: int) -> int | None:
    """The container's PID 1 as the host sees it: the descendant of systemd-nspawn whose PID in
    its own namespace is 1 (/proc/PID/status NSpid), or None while there is none yet."""
    todo = [nspawn_pid]
    while todo:
        pid = todo.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"^NSpid:\s+(.*)$", status, re.M)
        ids = m.group(1).split() if m else []
        if pid != nspawn_pid and len(ids) > 1 and ids[-1] == "1":
            return pid
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return None


@dataclass
class Container:
    """One boot of the cached root in network namespace NS; files under WORKDIR (the overlay's
    upper and work directories, the merged root, the console log). start() boots it to
    multi-user; stop() shuts it down and removes the overlay, by PID."""

    root: Path
    ns: str
    workdir: Path
    name: str = "xdp-bfd-ct"
    proc: subprocess.Popen | None = None
    leader: int | None = None
    mounted: bool = False
    journal: list[str] = field(default_factory=list)

    @property
    def merged(self) -> Path:
        return self.workdir / "root"

    @property
    def console_log(self) -> Path:
        return self.workdir / "console.log"

    def argv(self) -> list[str]:
        # /proc/sys/net writable: the container's network namespace is its own, and the
        # package's postinst sets net.ipv4.ip_local_reserved_ports there (nspawn mounts all of
        # /proc/sys read-only otherwise)
        return ["env", "SYSTEMD_NSPAWN_API_VFS_WRITABLE=network",
                "systemd-nspawn", "--boot", "--register=no", "--keep-unit", "--quiet",
                f"--machine={self.name}", f"--directory={self.merged}",
                f"--network-namespace-path=/run/netns/{self.ns}", "--private-users=no",
                "--capability=" + ",".join(CAPABILITIES), "--system-call-filter=bpf",
                "--console=pipe"]

    def _mount(self) -> None:
        for d in ("upper", "work", "root"):
            (self.workdir / d).mkdir(parents=True, exist_ok=True)
        run(["mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={self.root},upperdir={self.workdir / 'upper'},"
             f"workdir={self.workdir / 'work'}", str(self.merged)])
        self.mounted = True

    def start(self, timeout_s: float = 60.0) -> int:
        """Boot it and wait until systemd reports running (multi-user reached, no unit failed;
        "degraded" raises with the failed units). Returns the leader's host PID."""
        self._mount()
        with open(self.console_log, "wb") as out:
            self.proc = spawn(self.argv(), stdout=out, stderr=subprocess.STDOUT)
        self.leader = wait_until(lambda: self._check_alive() and leader_pid(self.proc.pid),
                                 timeout_s, "the container's PID 1")
        # systemctl needs PID 1's private socket, which appears a moment after PID 1 does
        wait_until(lambda: self._check_alive() and self.run(
            ["test", "-S", "/run/systemd/private"], check=False).returncode == 0 or None,
            timeout_s, "systemd's socket in the container", poll_s=0.2)
        state = self.run(["systemctl", "is-system-running", "--wait"], timeout=timeout_s,
                         check=False).stdout.strip()
        if state != "running":
            failed = self.run(["systemctl", "--failed", "--no-legend"], check=False).stdout
            raise LabError(f"container {self.name}: system {state!r}; failed units: {failed}")
        return self.leader

    def _check_alive(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            tail = self.console_log.read_text(errors="replace")[-2000:]
            raise LabError(f"systemd-nspawn exited {self.proc.returncode}: {tail}")
        return True

    def enter(self, argv: list[str]) -> list[str]:
        """ARGV run in every namespace of the container (its PID 1's)."""
        if self.leader is None:
            raise LabError(f"container {self.name} is not running")
        return ["nsenter", "-t", str(self.leader), "-a", *argv]

    def run(self, argv: list[str], timeout: float = 60.0, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        """ARGV run inside the container (util.run: LabError on failure when CHECK)."""
        return run(self.enter(argv), timeout=timeout, check=check, input_text=input_text)

    def copy_in(self, src: Path, dst: str) -> None:
        """Copy host file SRC to DST inside the container (through the merged root)."""
        target = self.merged / dst.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Shut the container down (SIGTERM to systemd-nspawn, which asks PID 1 to halt), then
        SIGKILL after TIMEOUT_S; unmount and remove the overlay. Keeps the container's journal
        in self.journal for the test's report."""
        if self.proc is not None and self.proc.poll() is None:
            if self.leader is not None and pid_alive(self.leader):
                self.journal = self.run(["journalctl", "--no-pager"], check=False,
                                        timeout=20).stdout.splitlines()
            stop_pid(self.proc.pid, "systemd-nspawn", timeout_s=timeout_s)
            self.proc.wait(timeout=5)
        self.leader = None
        if self.mounted:
            run(["umount", str(self.merged)], check=False)
            self.mounted = False
        shutil.rmtree(self.workdir, ignore_errors=True)
