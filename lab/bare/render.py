"""render - `python3 -m lab topo render FILE --backend bare-metal --out DIR`: a topology with
[hosts] turned into what Ansible needs to drive the testbed (docs/baremetal.md).

DIR after a render:
    ansible.cfg, inventory.ini          the four roles' groups; netns hosts use the shipped
                                        connection plugin (connection_plugins/netns.py)
    group_vars/all.yml                  the repo, the ladder's steps (one clock: the capture's)
    host_vars/HOST.yml                  role, test interface, addresses, files, step commands
    files/HOST/...                      what the host installs: sysctl.conf, interfaces,
                                        frr.conf, daemons, xdp-bfd-peers.conf, engine.conf,
                                        stress.sh / floods.sh / capture.sh (the commands)
    deploy.yml, ladder.yml, stop.yml,   the playbooks (copied from lab/bare/ansible)
    tasks/
    mirror-notes.md, topology.toml, ladder.toml

Deterministic: the same description, ladder and options give the same bytes (golden tests).
The repo path is the only machine-dependent value (group_vars/all.yml lab_repo).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # python3-yaml (packaging/deps.txt; ansible-core needs it too)

from .. import util
from ..harness.ladder_file import LADDER, load_ladder, plan
from ..nic.hwstamp import CAPTURE_FILTER
from ..rig import bfdpeer, frr, stress
from ..rig.flood import load_address
from ..topo import Topology
from .check import dplane_port
from .plan import BIRD_IF, HostPlan, plan_hosts, stress_hosts
from .router import router_notes

ANSIBLE_SRC = Path(__file__).with_name("ansible")
REHEARSAL_ROOT = "/var/tmp/xdp-bfd-bm"  # netns hosts keep their files here, one folder each
PHASE_LEAD_NS = 2_000_000_000  # a step starts this long after the capture host names it
BACKENDS = ("bare-metal",)
PACKAGES = {"dut": ["frr", "stress-ng", "ethtool", "pciutils", "python3", "time"],
            "peer": ["frr", "ethtool", "python3"],
            "load": ["python3", "iputils-ping", "ethtool"],
            "capture": ["tcpdump", "ethtool", "pciutils", "python3"]}


@dataclass(frozen=True)
class Options:
    ladder: Path = LADDER
    profile: str = "ci"
    floods: bool = True
    repo: Path = util.REPO
    stock: bool = False  # T is already stock_text()'s; topology.toml says so too


def _root(p: HostPlan, t: Topology) -> str:
    """Where the host keeps its files: / on a real machine; a folder of its own when the
    host is a namespace of one machine (they share one filesystem)."""
    return f"{REHEARSAL_ROOT}/{t.meta.name}/{p.host.name}" if p.host.netns else ""


def _sysctl(p: HostPlan, t: Topology, port: int | None) -> str:
    out = [f"# sysctl settings of host {p.host.name} ({p.host.role}; python3 -m lab topo render, "
           f"topology {t.meta.name}).",
           "# Only per-network-namespace keys, so the same file serves a rehearsal in namespaces."]
    if p.addresses:
        out += ["# Many addresses on one interface: answer ARP only for the addresses of the",
                "# interface asked on, from the best local source.",
                f"net.ipv4.conf.{p.host.iface}.arp_ignore = 1",
                f"net.ipv4.conf.{p.host.iface}.arp_announce = 2"]
    if p.routes or (p.bird and p.bird.routes):
        out += ["# Multihop sessions go through the router: its redirects must not teach this host",
                "# a direct path (the router also sends none: router-notes.md).",
                f"net.ipv4.conf.{p.host.iface}.accept_redirects = 0",
                f"net.ipv6.conf.{p.host.iface}.accept_redirects = 0"]
    if p.is_engine and port is not None:
        out += ["# bfdd and xdp-bfd meet on this TCP port: reserved, so no connect() is ever given",
                "# it as a source port (packaging/50-xdp-bfd.conf).",
                f"net.ipv4.ip_local_reserved_ports = {port}"]
    return "\n".join(out) + "\n"


def _addr_cmd(a: str, dev: str) -> str:
    """`address replace A dev DEV` (ip -batch form); IPv6 with nodad, usable at once."""
    return f"address replace {a} dev {dev}" + (" nodad" if ":" in a else "")


def _interfaces(p: HostPlan, t: Topology) -> str:
    h = p.host
    out = [f"# /etc/network/interfaces.d/xdp-bfd-lab of host {h.name} ({h.role}; python3 -m lab "
           f"topo render, topology {t.meta.name})", f"auto {h.iface}"]
    v4 = [a for a in p.addresses if ":" not in a]
    if not v4:
        out += [f"iface {h.iface} inet manual", f"    up ip link set {h.iface} up"
                + ("  # the switch's mirror port: no address" if h.role == "capture" else "")]
    else:
        out += [f"iface {h.iface} inet static", f"    address {v4[0]}"]
    out += [f"    up ip {_addr_cmd(a, h.iface)}" for a in p.addresses if a != (v4 or [""])[0]]
    out += [f"    up ip {r.command(h.iface)}" for r in p.routes]
    return "\n".join(out) + "\n"


def _daemons(p: HostPlan, t: Topology) -> str:
    opts = "  -A 127.0.0.1"
    if p.is_engine:
        assert p.device is not None
        opts += f" --dplaneaddr {p.device.dplane}"
    return "\n".join([
        f"# /etc/frr/daemons of host {p.host.name} (python3 -m lab topo render, topology "
        f"{t.meta.name}): bfdd only" + ("; it listens for xdp-bfd" if p.is_engine else "") + ".",
        "# packaging/frr-daemons.snippet explains the data-plane options.",
        "bfdd=yes", "vtysh_enable=yes",
        *(["# zebra (always started by FRR's init) tells bfdd the interface of link-local peers",
           "zebra=yes"] if p.zebra else []),
        'zebra_options="  -A 127.0.0.1 -s 90000000"',
        f'bfdd_options="{opts}"', ""])


def _engine_conf(p: HostPlan) -> str:
    assert p.device is not None
    args = ["--dplane-connect", p.device.dplane, "--kernel-tx", p.host.iface,
            *p.device.engine_argv]
    src = (util.REPO / "packaging" / "engine.conf").read_text()
    line = 'XDP_BFD_ARGS="--dplane-connect ipv4:127.0.0.1:50700"'
    assert line in src, "packaging/engine.conf changed: update lab.bare.render"
    return src.replace(line, f"XDP_BFD_ARGS=\"{shlex.join(args)}\"")


def _yaml(doc: Any) -> str:
    return "---\n" + yaml.safe_dump(doc, sort_keys=False, width=100, default_flow_style=False)


def _steps(t: Topology, opts: Options) -> tuple[list[dict[str, Any]], Any]:
    ladder = load_ladder(opts.ladder)
    steps = plan(ladder, opts.profile, False, opts.floods)
    out = []
    for st in steps:
        arms = list(st.alongside or ((st.arm,) if st.arm else ()))
        out.append({"name": st.name, "seconds": st.seconds, "kind": st.kind,
                    "level": st.level.name if st.level else None, "of": st.of,
                    "load": st.level.name if st.level else (st.arm or ""), "arms": arms,
                    "min_cpu_share": st.level.min_cpu_share if st.level else 0.5})
    return out, ladder


def _run(p: HostPlan, t: Topology) -> str:
    return f"{_root(p, t)}/var/lib/xdp-bfd-lab/run"


def _step_cmds(p: HostPlan, t: Topology, steps: list[dict[str, Any]], ladder: Any,
               opts: Options) -> dict[str, str]:
    """The command each step runs on this host (inside lab.bare.at, after the phase starts):
    stress-ng on a dut for a level, the flood arms on the load host; none elsewhere."""
    run = _run(p, t)
    py = f"env PYTHONPATH={_root(p, t)}/opt/xdp-bfd-lab /usr/bin/python3"
    out: dict[str, str] = {}
    prof = ladder.profiles[opts.profile]
    stressed = stress_hosts(t)
    for st in steps:
        if p.host in stressed and st["level"]:
            lv = ladder.levels[st["level"]]
            ncpu = p.host.nproc or lv.reference_threads
            argv = lv.load(ncpu).argv(st["seconds"], ncpu)
            log = f"{run}/stress-{st['name']}.log"
            out[st["name"]] = (f"/usr/bin/time -a -o {log} -f 'xdp-bfd-lab time: wall_s %e "
                               f"user_s %U sys_s %S rc %x' {shlex.join(argv)} >> {log} 2>&1")
        elif p.host.role == "load" and st["arms"]:
            each = st["seconds"] if st["kind"] == "flood" else prof.flood_arm_s
            load_addr, stranger = load_address(t)
            targets = " ".join(f"--target {s.device}={s.device_address},{s.peer_address}"
                               for s in (t.sessions(d.name)[0] for d in t.devices))
            cmds = [f"{py} -m lab.bare.flood {arm} {p.host.iface} {each:g} --pps "
                    f"{prof.flood_pps:g} --load-addr {load_addr} --stranger {stranger} "
                    f"{targets} --out {run}/flood-{st['name']}-{i}-{arm}.json"
                    for i, arm in enumerate(st["arms"])]
            out[st["name"]] = "; ".join(cmds)
    return out


def _host_vars(p: HostPlan, t: Topology, steps: list[dict[str, Any]], ladder: Any,
               opts: Options) -> dict[str, Any]:
    h = p.host
    root = _root(p, t)
    inst = f"xbm-{h.name}"
    v: dict[str, Any] = {
        "lab_role": h.role, "lab_iface": h.iface, "lab_addresses": list(p.addresses),
        "lab_ip_batch": [_addr_cmd(a, h.iface) for a in p.addresses]
        + [r.command(h.iface) for r in p.routes],
        "lab_root": root, "lab_run": _run(p, t),
        "lab_init": "direct" if h.netns else "systemd",
        "lab_install_packages": not h.netns,
        "lab_packages": PACKAGES[h.role] + (["bird2"] if p.bird else []),
    }
    if h.role in ("peer", "dut"):
        v.update(lab_bfdd_inst=inst, lab_vtysh=f"vtysh -N {inst}" if h.netns else "vtysh",
                 lab_bfdd_pidfile=(f"/var/run/frr/{inst}/bfdd.pid" if h.netns
                                   else "/var/run/frr/bfdd.pid"),
                 lab_sessions=len(p.peers), lab_engine=p.is_engine, lab_zebra=p.zebra)
    if h.role == "peer":
        # FRR's bfdd or build/bfdpeer serves the "frr" classes ([peer] kind)
        v["lab_peer_runner"] = t.peer.kind
        v["lab_bfdpeer_bin"] = ("{{ lab_repo }}/build/bfdpeer" if h.netns
                                else "/usr/local/sbin/xdp-bfd-bfdpeer")
    if p.bird is not None:
        b = p.bird
        v["lab_bird"] = {
            "netns": b.netns, "iface": BIRD_IF, "sessions": len(b.neighbors),
            "ip_batch": [_addr_cmd(a, BIRD_IF) for a in b.addresses]
            + [r.command(BIRD_IF) for r in b.routes],
            "conf": f"{root}/etc/bird/xdp-bfd-lab.conf", "ctl": f"{_run(p, t)}/bird.ctl",
            "pidfile": f"{_run(p, t)}/bird.pid"}
    # The peer and the capture must not be what fails: SCHED_DEADLINE on every thread (as
    # the namespace lab does, lab.rig.stress.shield), SCHED_FIFO 99 if the kernel refuses.
    if h.role == "peer":
        v["lab_shield_chrt"] = " ".join(stress.DEADLINE_ARGS)
    if h.role == "capture":
        v["lab_shield_chrt"] = " ".join(stress.CAPTURE_DEADLINE_ARGS)
    if h.role == "dut":
        v.update(lab_device=h.device,
                 lab_engine_bin=("{{ lab_repo }}/build/xdp-bfd" if h.netns
                                 else "/usr/sbin/xdp-bfd"))
    if h.role == "capture":
        v["lab_capture_cmd"] = _capture_cmd(p, t)
    if h.role == "dut":
        v["lab_counters_cmd"] = _counters_cmd(p, t)
    v["lab_step_cmds"] = _step_cmds(p, t, steps, ladder, opts)
    return v


def _counters_cmd(p: HostPlan, t: Topology) -> str:
    """A dut's counter snapshot around each flood step (lab.bare.counters; OUT appended)."""
    cmd = (f"env PYTHONPATH={_root(p, t)}/opt/xdp-bfd-lab /usr/bin/python3 -m lab.bare.counters "
           f"{p.host.iface}")
    if p.is_engine and p.host.netns:
        cmd += f" --engine-pid-file {_run(p, t)}/xdp-bfd.pid --engine-stats {_run(p, t)}/" \
               "engine-stats.json"
    elif p.is_engine:
        cmd += " --engine-unit xdp-bfd.service --engine-stats /run/xdp-bfd/stats.json"
    return cmd


def _capture_cmd(p: HostPlan, t: Topology) -> str:
    return (f"env PYTHONPATH={_root(p, t)}/opt/xdp-bfd-lab /usr/bin/python3 -m lab.nic.hwstamp "
            f"capture {p.host.iface} {_run(p, t)}/capture.pcap")


def _inventory(t: Topology) -> str:
    out = [f"# Inventory of topology {t.meta.name} (python3 -m lab topo render)."]
    for role in ("dut", "peer", "load", "capture"):
        out.append(f"[{role}]")
        for h in t.hosts_of(role):
            line = f"{h.name} ansible_host={h.ssh} ansible_user={h.ssh_user}"
            if h.netns:
                line += f" ansible_connection=netns lab_netns={h.netns}"
            out.append(line)
        out.append("")
    out += ["[all:vars]", "ansible_python_interpreter=/usr/bin/python3", ""]
    return "\n".join(out)


def _mirror_notes(t: Topology) -> str:
    cap = t.hosts_of("capture")[0]
    duts = ", ".join(f"{h.name} ({h.iface})" for h in t.hosts_of("dut"))
    peer = t.hosts_of("peer")[0]
    load = t.hosts_of("load")[0]
    return f"""# Switch mirror for topology {t.meta.name}

The capture host {cap.name} takes every BFD packet from the switch port its {cap.iface} is
plugged into. Configure that port as the destination of a mirror (SPAN) session whose sources
are the **ingress** of the ports facing:

- the device(s) under test: {duts}
- the peer: {peer.name} ({peer.iface})

Ingress only, of exactly these ports: each packet is then copied once, as it enters the
switch, so bfdcap sees every packet once. Do **not** mirror the load host's port
({load.name}, {load.iface}): the flood arms forge the peer's addresses and would be taken for
the peer's packets. The mirror port must not be a member of the lab's VLAN (no address on
{cap.iface}; it only listens), and its speed must be at least the sum of the mirrored ports'
BFD traffic (a few Mbit/s; the floods are not mirrored).

The capture stamps in the NIC (`tcpdump -j adapter_unsynced`, lab.nic.hwstamp) when
`ethtool -T {cap.iface}` offers hardware receive stamps with filter "all"; the run's summary
says which clock stamped the packets. The phases are written on the capture host's clock:
keep the NIC's clock on the system clock (phc2sys -s CLOCK_REALTIME -c {cap.iface}) and every
host on PTP or NTP, or the steps and the packets will not line up.

Filter: {CAPTURE_FILTER}.
"""


def stock_text(text: str) -> str:
    """The description TEXT with every device of kind "engine" made a stock bfdd (its
    engine_args kept as a comment): `topo render --stock`, the contrast witness run of a
    testbed whose one dut runs the engine ("Stock bfdd first", docs/baremetal.md section 6).
    Line-based, so the description's comments and layout stay."""
    out = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        if key == "kind" and line.split("=", 1)[1].split("#")[0].strip() == '"engine"':
            line = 'kind = "bfdd"  # rendered with --stock: the witness run of an engine device'
        elif key == "engine_args":
            line = f"# {line.strip()}  (--stock: no engine)"
        out.append(line)
    return "\n".join(out) + "\n"


def render(t: Topology, out: Path, opts: Options = Options()) -> list[Path]:
    """Write the bare-metal rendering of T (conflict-free, with [hosts]) into OUT (created;
    existing files overwritten, nothing else removed). Returns the files written, sorted."""
    plans = plan_hosts(t)
    steps, ladder = _steps(t, opts)
    written: list[Path] = []

    def put(rel: str, text: str) -> None:
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        written.append(p)

    for src in sorted(ANSIBLE_SRC.rglob("*")):
        if src.is_file() and "__pycache__" not in src.parts:
            put(str(src.relative_to(ANSIBLE_SRC)), src.read_text())
    put("inventory.ini", _inventory(t))
    total = sum(s["seconds"] for s in steps)
    put("group_vars/all.yml", _yaml({
        "lab_repo": str(opts.repo), "lab_topology": t.meta.name, "lab_profile": opts.profile,
        "lab_run_dir": "{{ lab_repo }}/results/runs/bare-metal-{{ lab_topology }}-"
                       "{{ lab_profile }}",
        "lab_phase_lead_ns": PHASE_LEAD_NS, "lab_run_seconds": total, "lab_steps": steps}))
    for name, p in plans.items():
        put(f"host_vars/{name}.yml", _yaml(_host_vars(p, t, steps, ladder, opts)))
        f = f"files/{name}"
        port = dplane_port(p.device.dplane) if p.is_engine and p.device else None
        put(f"{f}/sysctl.conf", _sysctl(p, t, port))
        put(f"{f}/interfaces", _interfaces(p, t))
        if p.host.role in ("peer", "dut"):
            log = f"{_root(p, t)}/var/log/frr/bfdd.log"
            # an engine's peers come after the engine connects (FRR 8.4.4's 58-message pass);
            # a bfdpeer serves the peer's: its session list, as `lab peer-sessions` prints it
            fast = p.host.role == "peer" and t.peer.kind == "bfdpeer"
            put(f"{f}/frr.conf", frr.config_text([] if p.is_engine or fast else list(p.peers),
                                                 log))
            put(f"{f}/daemons", _daemons(p, t))
            if fast:
                put(f"{f}/bfdpeer-sessions.json",
                    json.dumps(bfdpeer.session_list(t), indent=1) + "\n")
        if p.bird is not None:
            put(f"{f}/bird.conf", p.bird.config(f"{_run(p, t)}/bird.log"))
        if p.is_engine:
            put(f"{f}/xdp-bfd-peers.conf", frr.config_text(list(p.peers)))
            put(f"{f}/engine.conf", _engine_conf(p))
        cmds = _step_cmds(p, t, steps, ladder, opts)
        if p.host.role == "dut":
            put(f"{f}/stress.sh", _script(p, "stress-ng of each ladder step", cmds))
        if p.host.role == "load":
            put(f"{f}/floods.sh", _script(p, "flood arms of each ladder step", cmds))
        if p.host.role == "capture":
            put(f"{f}/capture.sh", _script(p, "the capture (until SIGINT)",
                                           {"capture": _capture_cmd(p, t)}))
            put(f"{f}/mirror-notes.md", _mirror_notes(t))
    put("mirror-notes.md", _mirror_notes(t))
    if any(p.routes for p in plans.values()):
        put("router-notes.md", router_notes(t, plans))
    text = Path(t.source).read_text()
    put("topology.toml", stock_text(text) if opts.stock else text)
    put("ladder.toml", Path(opts.ladder).read_text())
    return sorted(written)


def _script(p: HostPlan, what: str, cmds: dict[str, str]) -> str:
    out = ["#!/bin/sh", f"# {what} on host {p.host.name}, as ladder.yml runs them (each inside",
           "# python3 -m lab.bare.at START_NS END_NS, on the capture host's clock). For reading."]
    for name, c in cmds.items():
        out += [f"# {name}", c]
    return "\n".join(out) + "\n"
