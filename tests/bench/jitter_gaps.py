"""Transmission jitter of the engine's packets in a run folder (RFC 5880 6.8.7), from the wire.

    /usr/bin/python3 tests/bench/jitter_gaps.py RUN_DIR [--bfdcap build/bfdcap] [--phase idle]

For each class of the ends tagged `engine`, over the run's first phase named PHASE: bfdcap's jitter
counts (checked, early: under 75 % of the interval, late: over 100 %, 90 % with Detect Mult 1) and
the standard deviation, min and max of its gaps as fractions of the interval (bfdcap --csv-gaps;
gaps over 1.5 intervals, a lost or withheld packet, are left out of the spread). Reads
RUN_DIR/bfdcap.json (its tags), phases.json and capture.pcap.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import subprocess
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--bfdcap", default="build/bfdcap")
    ap.add_argument("--phase", default="idle")
    a = ap.parse_args()
    tags = json.loads((a.run / "bfdcap.json").read_text())["tags"]
    phases = json.loads((a.run / "phases.json").read_text())
    win = next(p for p in phases if p["name"].startswith(a.phase))
    argv = [a.bfdcap]
    for t in tags:
        argv += ["--tag", f"{t['name']}={t['spec']}"]
    argv += ["--from", str(win["start_ns"]), "--to", str(win["end_ns"])]
    pcap = str(a.run / "capture.pcap")
    rep = json.loads(subprocess.run(argv + ["--json", pcap], capture_output=True, text=True,
                                    check=True).stdout)
    rows = list(csv.DictReader(io.StringIO(subprocess.run(
        argv + ["--csv-gaps", "-", pcap], capture_output=True, text=True, check=True).stdout)))

    def engine(tag: str) -> bool:  # "engine" (older runs) or "engine/CLASS"
        return tag.partition("/")[0] == "engine"

    classes = [c for c in rep["classes"] if engine(c["tag"]) and c["interval_ms"]]
    for c in sorted(classes, key=lambda c: c["interval_ms"]):
        iv_ns = c["interval_ms"] * 1e6
        gaps = [int(r["gap_ns"]) / iv_ns for r in rows
                if engine(r["tag"]) and abs(int(r["budget_ns"]) - c["budget_ms"] * 1e6) < 1e3
                and int(r["gap_ns"]) < 1.5 * iv_ns]
        j = c["jitter"]
        sd = statistics.pstdev(gaps) if len(gaps) > 1 else 0.0
        print(f"{c['class']}: packets {c['packets']}, jitter checked {j['checked']} early "
              f"{j['early']} late {j['late']}; gaps n {len(gaps)} sd {sd:.4f} of the interval "
              f"({sd * iv_ns / 1e3:.0f} us), min {min(gaps, default=0):.4f} "
              f"max {max(gaps, default=0):.4f}")


if __name__ == "__main__":
    main()
