"""Which path sent each of the engine's packets in a run folder: the fast path or userspace.

    /usr/bin/python3 tests/bench/tx_source.py RUN_DIR [--phase idle] [--device engine]

The XDP program rewrites the peer's packet in place and keeps its IPv4 Identification, while a
packet userspace sends gets the kernel's own; so an engine packet whose IP ID is the one of the
peer's last packet on that session is an XDP reply, and any other one came from userspace. Per
class, over the run's first phase named PHASE: packets, userspace packets and their share.
Reads RUN_DIR/topology.toml, phases.json and capture.pcap (tcpdump reads it). IPv4 only.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
import subprocess
import tomllib
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"^(\d+\.\d+) .*? id (\d+),.*?\n\s+(\S+)\.\d+ > (\S+)\.3784:", re.M)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--phase", default="idle")
    ap.add_argument("--device", default="engine")
    a = ap.parse_args()
    topo = tomllib.loads((a.run / "topology.toml").read_text())
    dev = next(d for d in topo["device"] if d["name"] == a.device)
    first = ipaddress.ip_address(dev["first_address"])
    peer_first = ipaddress.ip_address(topo["peer"]["first_address"])
    cls_of, i = {}, 0
    for c in topo["class"]:
        for _ in range(c["count"]):
            cls_of[str(first + i)] = c["name"]
            i += 1
    win = next(p for p in json.loads((a.run / "phases.json").read_text())
               if p["name"].startswith(a.phase))
    out = subprocess.run(["tcpdump", "-r", str(a.run / "capture.pcap"), "-tt", "-nn", "-v",
                          "udp port 3784"], capture_output=True, text=True, check=True).stdout
    # The capture reads two interfaces, so a reply may be stamped a little before the packet it
    # answers: match the IP ID among the peer's packets within an interval either side.
    peer_ids: dict[tuple[str, int], list[int]] = defaultdict(list)
    ours: list[tuple[int, int, str]] = []
    for m in LINE.finditer(out):
        t_ns = int(float(m.group(1)) * 1e9)
        ip_id, src, dst = int(m.group(2)), m.group(3), m.group(4)
        if src in cls_of and int(ipaddress.ip_address(dst)) - int(peer_first) == \
                int(ipaddress.ip_address(src)) - int(first):
            if win["start_ns"] <= t_ns <= win["end_ns"]:
                ours.append((t_ns, ip_id, src))
        elif dst in cls_of:
            peer_ids[(dst, ip_id)].append(t_ns)
    iv_ns = {c["name"]: c["interval_ms"] * 1_000_000 for c in topo["class"]}
    total, user = defaultdict(int), defaultdict(int)
    for t_ns, ip_id, src in ours:
        c = cls_of[src]
        total[c] += 1
        user[c] += not any(abs(t - t_ns) < iv_ns[c] for t in peer_ids.get((src, ip_id), ()))
    for c in topo["class"]:
        n = total[c["name"]]
        print(f"{c['name']}: packets {n}, from userspace {user[c['name']]} "
              f"({100 * user[c['name']] / max(n, 1):.2f} %)")
    n = sum(total.values())
    print(f"all: packets {n}, from userspace {sum(user.values())} "
          f"({100 * sum(user.values()) / max(n, 1):.2f} %)")


if __name__ == "__main__":
    main()
