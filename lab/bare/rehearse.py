"""rehearse - `python3 -m lab topo rehearse {up,down} FILE` (root): the testbed of a
description whose [hosts] all carry netns = "PREFIX-ROLE", on this machine, so the rendered
playbooks run end to end here (the netns connection plugin: lab/bare/ansible).

    PREFIX-peer   iface ─veth─ to-peer   ┐
    PREFIX-dut    iface ─veth─ to-dut    ├─ br0 in PREFIX-wire (the switch)
    PREFIX-load   iface ─veth─ to-load   ┘
    PREFIX-capture iface ─veth─ to-capture: no bridge port; the switch mirrors the ingress of
                  the dut and peer ports to it (tc mirred), as docs/baremetal.md asks of a
                  real switch: each packet once, the floods not at all.

Addresses are not set here: deploy.yml sets them, as on real machines. down removes the
namespaces (by name) and the hosts' files under lab.bare.render.REHEARSAL_ROOT.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..rig import netns as rig_netns
from ..rig.netns import End, Netns, nsexec
from ..topo import Topology, slot_address
from ..util import LabError, REPO, run
from .plan import BIRD_IF, plan_hosts
from .render import REHEARSAL_ROOT
from .router import multihop_addresses

XDP_PASS = REPO / "build" / "xdp_pass.bpf.o"


def layout(t: Topology) -> tuple[str, list[tuple[str, str, str]]]:
    """(PREFIX, [(host name, role suffix, iface)]); LabError unless every host has a netns
    PREFIX-SUFFIX with one PREFIX."""
    out, prefixes = [], set()
    for h in t.hosts:
        prefix, _, suffix = h.netns.rpartition("-")
        if not prefix or not suffix or suffix == "wire":
            raise LabError(f"host {h.name}: netns {h.netns!r}: a rehearsal needs PREFIX-NAME "
                           "(not -wire)")
        prefixes.add(prefix)
        out.append((h.name, suffix, h.iface))
    if len(prefixes) != 1:
        raise LabError(f"the hosts' netns must share one prefix, got {sorted(prefixes)}")
    return prefixes.pop(), out


def up(t: Topology) -> Netns:
    prefix, hosts = layout(t)
    roles = {h.name: h.role for h in t.hosts}
    ends = [End(sfx, iface, xdp_pass=roles[name] in ("dut", "load"))
            for name, sfx, iface in hosts if roles[name] != "capture"]
    n = Netns(prefix, ends, XDP_PASS)
    if t.router is not None:
        _router(t, n)
    try:
        n.build()
        _bird_namespaces(t, n)
        cap = [(sfx, iface) for name, sfx, iface in hosts if roles[name] == "capture"][0]
        cap_ns, cap_port = n.ns(cap[0]), n.wire_port(cap[0])
        n.add_ns(cap_ns)
        run(["ip", "-n", cap_ns, "link", "add", cap[1], "type", "veth", "peer", "name",
             cap_port, "netns", n.wire])
        for ns, i in ((cap_ns, cap[1]), (n.wire, cap_port)):
            run(["ip", "-n", ns, "link", "set", i, "up"])
        for name, sfx, _ in hosts:
            if roles[name] in ("dut", "peer"):
                port = n.wire_port(sfx)
                run(["tc", "-n", n.wire, "qdisc", "add", "dev", port, "clsact"])
                # u32 matching everything: this kernel has no cls_matchall
                run(["tc", "-n", n.wire, "filter", "add", "dev", port, "ingress", "protocol",
                     "all", "u32", "match", "u32", "0", "0", "action", "mirred", "egress",
                     "mirror", "dev", cap_port])
    except LabError:
        n.teardown()
        raise
    return n


def _router(t: Topology, n: Netns) -> None:
    """The router the description names, as a namespace PREFIX-router on the switch: what
    router-notes.md asks of a real one (its addresses, forwarding, an on-link route per
    multihop address, no redirects)."""
    r = t.router
    assert r is not None
    plen = t.meta.prefix_len
    n.ends.append(End("router", "eth0", (f"{r.address}/{plen}",
                                         f"{slot_address('ipv6', r.address)}/{96 + plen}"),
                      forwarding=True))
    for p in plan_hosts(t).values():
        for a, _ in multihop_addresses(p):
            n.routes.append(rig_netns.Route("router", a, "", "eth0"))


def _bird_namespaces(t: Topology, n: Netns) -> None:
    """BIRD's namespace on the peer host with its macvlan, made here: deploy.yml makes it on
    a real machine, but inside `ip netns exec` (how a rehearsal host runs its tasks) a new
    namespace's mount would stay in that command's mount namespace."""
    for p in plan_hosts(t).values():
        if p.bird is None:
            continue
        n.add_ns(p.bird.netns)
        host_ns = p.host.netns
        run(["ip", "-n", host_ns, "link", "add", BIRD_IF, "link", p.host.iface, "type",
             "macvlan", "mode", "bridge"])
        run(["ip", "-n", host_ns, "link", "set", BIRD_IF, "netns", p.bird.netns])
        run(["ip", "-n", p.bird.netns, "link", "set", BIRD_IF, "up"])
    if n.routes:
        run(nsexec(n.ns("router"), ["sysctl", "-qw", "net.ipv4.conf.all.send_redirects=0",
                                    "net.ipv4.conf.eth0.send_redirects=0"]))


def down(t: Topology) -> list[str]:
    prefix, hosts = layout(t)
    problems = []
    extra = [f"{prefix}-router"] if t.router is not None else []
    extra += [p.bird.netns for p in plan_hosts(t).values() if p.bird is not None]
    for name in [f"{prefix}-{sfx}" for _, sfx, _ in hosts] + [f"{prefix}-wire"] + extra:
        if rig_netns.exists(name):
            try:
                run(["ip", "netns", "del", name], timeout=20)
            except LabError as e:
                problems.append(str(e))
    shutil.rmtree(Path(REHEARSAL_ROOT) / t.meta.name, ignore_errors=True)
    return problems


def main(t: Topology, action: str) -> int:
    if action == "up":
        n = up(t)
        print(f"rehearsal {t.meta.name}: namespaces {', '.join(n.created)}; mirror of the dut "
              "and peer ports to the capture host")
        return 0
    problems = down(t)
    for p in problems:
        print(p)
    print(f"rehearsal {t.meta.name}: removed" + (f" ({len(problems)} problems)" if problems
                                                 else ""))
    return 1 if problems else 0
