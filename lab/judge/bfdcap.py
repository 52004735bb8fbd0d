"""bfdcap - the one client of the capture analyser build/bfdcap (docs/bfdcap.md).

Every figure (gaps, budgets, down events, percentiles) is computed in bfdcap (C); this module
only runs it: always through lab.util.run, so with a timeout and its command line in the run's
commands.log. Errors are LabError (a RuntimeError) with bfdcap's stderr.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..util import REPO, LabError, run

if TYPE_CHECKING:  # numpy: imported only when the gaps are wanted (below)
    from .gaps import GapTable

BFDCAP = REPO / "build" / "bfdcap"
TIMEOUT_S = 300.0  # a 10-million-packet capture takes about 2 s; anything near this is stuck
Tags = Sequence[tuple[str, str]]


def _argv(bfdcap: Path | str, tags: Tags, window: tuple[int | None, int | None] | None,
          ) -> list[str]:
    argv = [str(bfdcap)]
    for name, spec in tags:
        argv += ["--tag", f"{name}={spec}"]
    if window is not None:
        lo, hi = window
        if lo is not None:
            argv += ["--from", str(int(lo))]
        if hi is not None:
            argv += ["--to", str(int(hi))]
    return argv


def _run(argv: list[str], what: str) -> str:
    if not Path(argv[0]).exists():
        raise LabError(f"{argv[0]} missing: build it with make")
    try:
        return run(argv, timeout=TIMEOUT_S).stdout
    except LabError as e:
        raise LabError(f"bfdcap {what} failed: {e}") from e


def analyse(pcap: Path | str, tags: Tags = (), phases: Path | str | None = None,
            bfdcap: Path | str = BFDCAP,
            window: tuple[int | None, int | None] | None = None) -> dict[str, Any]:
    """`bfdcap --json`: the report (schema "bfdcap/1") of PCAP (pcap or pcapng, gzip allowed).

    TAGS: (name, spec) pairs, spec "PREFIX" or "SRC_PREFIX>DST_PREFIX", first match wins;
    PHASES: a phases file (results/schema/phases.schema.json) cutting the report per phase;
    WINDOW: (from_ns, to_ns), either None, the main window [from, to)."""
    argv = _argv(bfdcap, tags, window) + ["--json"]
    if phases is not None:
        argv += ["--phases", str(phases)]
    text = _run(argv + [str(pcap)], "--json")
    try:
        return json.loads(text)
    except ValueError as e:
        raise LabError(f"bfdcap --json printed no JSON ({e})") from e


def analyse_gaps(pcap: Path | str, tags: Tags = (), phases: Path | str | None = None,
                 bfdcap: Path | str = BFDCAP,
                 window: tuple[int | None, int | None] | None = None) -> tuple[dict[str, Any], Any]:
    """analyse() and the counted gaps of its main window (a lab.judge.gaps.GapTable: the rows
    of csv_gaps()) from one pass over PCAP (`bfdcap --json --gaps-bin`)."""
    from .gaps import GapTable  # numpy: only when the gaps are wanted

    fd, tmp = tempfile.mkstemp(prefix="bfdcap-gaps-", suffix=".bin")
    os.close(fd)
    try:
        argv = _argv(bfdcap, tags, window) + ["--json", "--gaps-bin", tmp]
        if phases is not None:
            argv += ["--phases", str(phases)]
        text = _run(argv + [str(pcap)], "--json")
        try:
            report = json.loads(text)
        except ValueError as e:
            raise LabError(f"bfdcap --json printed no JSON ({e})") from e
        return report, GapTable.load(tmp, report)
    finally:
        os.unlink(tmp)


def csv_gaps(pcap: Path | str, tags: Tags, window: tuple[int | None, int | None] | None,
             bfdcap: Path | str = BFDCAP) -> str:
    """`bfdcap --csv-gaps -`: one CSV row per gap of every end (header included), as text."""
    return _run(_argv(bfdcap, tags, window) + ["--csv-gaps", "-", str(pcap)], "--csv-gaps")


def gap_table(pcap: Path | str, tags: Tags, window: tuple[int | None, int | None] | None,
              bfdcap: Path | str = BFDCAP) -> GapTable:
    """csv_gaps() read into a lab.judge.gaps.GapTable (GapTable.from_csv()): the counted
    gaps for a caller without the report of the same pass (analyse_gaps() needs it)."""
    from .gaps import GapTable  # numpy: only when the gaps are wanted

    return GapTable.from_csv(csv_gaps(pcap, tags, window, bfdcap))


def _pair(line: str) -> tuple[str, str] | None:
    """(src, dst) of a --packets line, read without parsing it (None: not found)."""
    i = line.find('"src": "')
    j = line.find('"', i + 8) if i >= 0 else -1
    k = line.find('"dst": "', j) if j >= 0 else -1
    m = line.find('"', k + 8) if k >= 0 else -1
    return (line[i + 8:j], line[k + 8:m]) if m >= 0 else None


def packets(pcap: Path | str, lo_ns: int, hi_ns: int,
            bfdcap: Path | str = BFDCAP,
            pairs: set[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """`bfdcap --packets --from LO_NS --to HI_NS`: one dict per BFD packet in [LO_NS, HI_NS)
    (bfdcap stops reading at --to), in capture order; only those of the (src, dst) PAIRS
    when given (the others are not parsed)."""
    text = _run([str(bfdcap), "--packets", "--from", str(lo_ns), "--to", str(hi_ns),
                 str(pcap)], "--packets")
    return [json.loads(line) for line in text.splitlines() if '"src"' in line
            and (pairs is None or (pair := _pair(line)) is None or pair in pairs)]
