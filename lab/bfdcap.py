"""Run the capture analyser build/bfdcap on a capture and return its JSON report.

The figures (gaps, budgets, down events, percentiles) are computed only in bfdcap (C); this
module just runs it. Schema and definitions: docs/bfdcap.md.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path


def analyse(
    pcap,
    tags: Sequence[tuple[str, str]] = (),
    phases=None,
    bfdcap="build/bfdcap",
    window=None,
) -> dict:
    """Analyse a capture with bfdcap --json.

    pcap: path to a pcap/pcapng file (gzip allowed).
    tags: (name, spec) pairs, spec "PREFIX" or "SRC_PREFIX>DST_PREFIX"; first match wins.
    phases: path to a phases JSON file ([{"name", "start_ns", "end_ns"}, ...]) or None.
    bfdcap: path to the bfdcap binary.
    window: None or (from_ns, to_ns), either may be None: the main window [from, to).
    Returns the parsed report (schema "bfdcap/1").
    Raises RuntimeError with bfdcap's stderr when it fails.
    """
    cmd = [str(bfdcap), "--json"]
    for name, spec in tags:
        cmd += ["--tag", f"{name}={spec}"]
    if phases is not None:
        cmd += ["--phases", str(phases)]
    if window is not None:
        start_ns, end_ns = window
        if start_ns is not None:
            cmd += ["--from", str(int(start_ns))]
        if end_ns is not None:
            cmd += ["--to", str(int(end_ns))]
    cmd.append(str(Path(pcap)))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed (rc {proc.returncode}): {proc.stderr.strip()}"
        )
    return json.loads(proc.stdout)
