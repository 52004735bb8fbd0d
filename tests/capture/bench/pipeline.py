"""The usual practice bfdcap is measured against: tshark -T fields piped into Python computing the
same per-end and per-class figures (tests/capture/reference.py: gaps with nearest-rank
percentiles, budgets, transitions, episodes, not-Up time, jitter, reply latency, detections).

    /usr/bin/python3 tests/capture/bench/pipeline.py CAPTURE
Prints packets, sessions, and the per-class gap p50/p99/max (ns) and down events.
"""

from __future__ import annotations

import sys

import reference

INF = 2**63


def main() -> int:
    pkts = reference.tshark_packets(sys.argv[1])
    ref = reference.analyse(pkts, [("all", -INF, INF)])
    print(f"packets {len(pkts)} sessions {len(ref['sessions'])}")
    for (tag, cls), c in sorted(reference.classes(ref, 0).items()):
        g = c["gap_ns"]
        print(f"{tag or '-'} {cls}: ends {c['ends']} gaps {g['n']} p50 {g['p50']} "
              f"p99 {g['p99']} max {g['max']} down {c['down_events']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
