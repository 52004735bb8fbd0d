"""at - `python3 -m lab.bare.at START_NS END_NS [-- CMD ...]`: one step of a bare-metal
ladder on one host, on the phase clock.

Waits until CLOCK_REALTIME reaches START_NS (written by the capture host, whose clock stamps
the phases; the hosts keep their clocks in step with PTP or NTP, docs/baremetal.md), runs CMD
if given, then waits until END_NS. Exit status: CMD's (0 without one); 3 on bad arguments.
So every host of a step starts its load at the phase's start and the play moves on only
after the phase's end, whatever the Ansible round trips cost.
"""

from __future__ import annotations

import subprocess
import sys
import time


def wait_until_ns(t_ns: int) -> None:
    while True:
        left = t_ns - time.time_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.5))


def main(argv: list[str]) -> int:
    cmd = argv[argv.index("--") + 1:] if "--" in argv else []
    head = argv[:argv.index("--")] if "--" in argv else argv
    try:
        start_ns, end_ns = (int(x) for x in head)
    except ValueError:
        print("usage: python3 -m lab.bare.at START_NS END_NS [-- CMD ...] (ns since the epoch)",
              file=sys.stderr)
        return 3
    wait_until_ns(start_ns)
    rc = subprocess.call(cmd) if cmd else 0
    wait_until_ns(end_ns)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
