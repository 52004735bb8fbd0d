"""A host that answers with recorded outputs (tests/nic/fixtures), through lab.nic.host's
interface: the same checks that run on this machine's veth run on recorded igb/I210 hosts.

Fixture files may open with "#fixture: ..." lines (where the output comes from); they are
not part of the output and are stripped here. Commands a scenario has no recording for
answer as a missing tool would (exit 127), so a gap shows up as "unsupported", never as a
made-up reading. Setting commands (ethtool -A/-N/-C, setpci with "=") succeed silently,
as those tools do on success, and are remembered in `ran` for the apply tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lab.nic.host import Process, Result
from lab.nic.parse import HwtstampConfig

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture(name: str) -> str:
    """A fixture's recorded text, without its "#fixture:" source lines."""
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    return "".join(ln for ln in lines if not ln.startswith("#fixture:"))


def source_lines(name: str) -> list[str]:
    return [ln for ln in (FIXTURES / name).read_text().splitlines()
            if ln.startswith("#fixture:")]


def _is_setting(argv: tuple[str, ...]) -> bool:
    if argv[:1] == ("ethtool",) and len(argv) > 1 and argv[1] in ("-A", "-N", "-C"):
        return True
    return argv[:1] == ("setpci",) and any("=" in a for a in argv[1:])


@dataclass
class ReplayHost:
    name: str
    commands: dict[tuple[str, ...], str]  # argv -> fixture file name (stdout, exit 0)
    files: dict[str, str] = field(default_factory=dict)  # path -> content
    dirs: dict[str, list[str]] = field(default_factory=dict)  # path -> entries
    links: dict[str, str] = field(default_factory=dict)  # path -> resolved path
    hwtstamp_config: HwtstampConfig | str = "SIOCGHWTSTAMP: not recorded"
    processes: list[Process] = field(default_factory=list)
    failures: dict[tuple[str, ...], tuple[int, str]] = field(default_factory=dict)
    netns: str | None = None
    node: tuple[str, str] = ("recorded-host", "recorded")
    ran: list[list[str]] = field(default_factory=list)

    def run(self, argv: list[str]) -> Result:
        key = tuple(argv)
        if key in self.commands:
            return Result(list(argv), 0, fixture(self.commands[key]))
        if key in self.failures:
            rc, err = self.failures[key]
            return Result(list(argv), rc, "", err)
        if _is_setting(key):
            self.ran.append(list(argv))
            return Result(list(argv), 0, "")
        return Result(list(argv), 127, "", f"{argv[0]}: not recorded for {self.name}")

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def listdir(self, path: str) -> list[str] | None:
        return self.dirs.get(path)

    def realpath(self, path: str) -> str | None:
        return self.links.get(path)

    def hwtstamp(self, iface: str) -> HwtstampConfig | str:
        return self.hwtstamp_config

    def engines(self) -> list[Process]:
        return self.processes

    def uname(self) -> tuple[str, str]:
        return self.node
