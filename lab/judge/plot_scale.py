"""The scale curve as a PNG: engine CPU at idle (process, sweep, XDP; % of one CPU) and
bring-up time against the session count, from a `python3 -m lab scale` summary.json
(schema results/schema/scale.schema.json). Headless (matplotlib's Agg backend).

    /usr/bin/python3 -m lab.judge.plot_scale SUMMARY_JSON OUT_PNG
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .. import runfiles  # noqa: E402


def plot(summary: dict[str, Any], path: Path) -> None:
    sizes = summary["sizes"]
    n = [s["sessions"] for s in sizes]
    fig, (cpu, up) = plt.subplots(1, 2, figsize=(10, 4.2))
    for key, label in (("engine", "engine process"), ("sweep", "detection sweep"),
                       ("xdp", "XDP program")):
        cpu.plot(n, [s["engine_cpu_pct"][key] for s in sizes], marker="o", label=label)
    cpu.set(xscale="log", xlabel="sessions", ylabel="% of one CPU at idle",
            title="engine CPU at idle")
    cpu.legend()
    up.plot(n, [s["bringup_s"] for s in sizes], marker="o")
    for s in sizes:
        up.annotate(f"{s['driver']}, {s['verdict']}", (s["sessions"], s["bringup_s"]),
                    fontsize=7)
    up.set(xscale="log", xlabel="sessions", ylabel="s", title="bring-up (lab start to all Up)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 3
    plot(runfiles.read("scale", Path(argv[0])), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
