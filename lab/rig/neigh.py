"""neigh - the neighbour-table limits a large lab needs, raised for the run and put back.

The kernel's neighbour tables (ARP, ND) count entries of every namespace against one set of
limits, settable only from the initial namespace: net.ipv{4,6}.neigh.default.gc_thresh1/2/3
(128/512/1024 by default). Every session of a lab run puts one entry in the peer's namespace
and one in its device's, so at 1,024 sessions per device and two devices (4,096 entries) the
table overflows ("neighbour table overflow"), ARP entries are dropped and sessions flap for a
reason that is no device's fault. raise_for() lifts the limits only above their present values
and restore() puts back only a value still as it left it, so two runs on the same machine do not
lower each other's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import util

SYSCTL = Path("/proc/sys/net")
KEYS = tuple(f"ipv{v}/neigh/default/gc_thresh{i}" for v in (4, 6) for i in (1, 2, 3))


def _read(key: str) -> int:
    return int((SYSCTL / key).read_text().split()[0])


def _write(key: str, value: int) -> None:
    (SYSCTL / key).write_text(f"{value}\n")
    util.log_note(f"sysctl net/{key} = {value}")


@dataclass
class Raised:
    """The limits raise_for() changed: key -> (value before, value set)."""

    changed: dict[str, tuple[int, int]] = field(default_factory=dict)

    def restore(self) -> list[str]:
        """Put back every limit still at the value set; problems as messages."""
        problems = []
        for key, (before, now) in self.changed.items():
            try:
                if _read(key) == now:
                    _write(key, before)
            except OSError as e:
                problems.append(f"restoring net/{key} to {before}: {e}")
        self.changed.clear()
        return problems


def wanted(entries: int) -> dict[str, int]:
    """Limits for ENTRIES neighbours: none collected below them (thresh1), room to twice and
    four times as many (thresh2, thresh3)."""
    out = {}
    for key in KEYS:
        i = int(key[-1])
        out[key] = entries * (1, 2, 4)[i - 1]
    return out


def raise_for(entries: int) -> Raised:
    """Raise the limits that are below wanted(ENTRIES); the rest stay as they are."""
    r = Raised()
    for key, want in wanted(entries).items():
        have = _read(key)
        if have < want:
            _write(key, want)
            r.changed[key] = (have, want)
    return r
