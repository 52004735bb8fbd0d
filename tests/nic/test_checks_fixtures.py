"""`tune check` and `tune apply` on recorded igb/I210 hosts (tests/nic/scenarios.py): every
reading, status and recommendation, the changes with their undo commands, and the JSON
report against results/schema/tuning.json."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import ROOT
from lab.nic import apply, checks, tune
from replay import ReplayHost
from scenarios import as_installed, tuned

SCHEMA = json.loads((ROOT / "results" / "schema" / "tuning.json").read_text())


def rows(report: checks.Report) -> list[tuple[str, str, str, str]]:
    return [(f.check, f.subject, f.status, f.reading) for f in report.findings]


def test_as_installed_every_reading_and_status() -> None:
    rep = checks.check(as_installed(), "enp5s0")
    assert rows(rep) == [
        ("driver", "enp5s0", "info", "driver igb, version 5.4.0-k, bus-info 0000:05:00.0"),
        ("flow_control", "enp5s0", "change",
         "autoneg on, rx on, tx on (negotiated rx on, tx on)"),
        ("rx_flow_hash_udp4", "enp5s0", "change", "IP SA, IP DA (sd)"),
        ("rx_flow_hash_udp6", "enp5s0", "change", "IP SA, IP DA (sd)"),
        ("coalesce", "enp5s0", "optional",
         "rx-usecs 3, adaptive-rx n/a (igb: 1-3 are mode codes, 3 is dynamic conservative)"),
        ("hwtstamp_caps", "enp5s0", "info",
         "hardware receive yes, PHC /dev/ptp0, receive filters none, all"),
        ("hwtstamp_rx_filter", "enp5s0", "change", "rx filter all, tx on"),
        ("pcie_aspm", "root port 0000:00:1d.0", "change",
         "Root Port (Slot+): LnkCap ASPM L0s L1, LnkCtl ASPM L1 Enabled"),
        ("pcie_aspm", "nic 0000:05:00.0", "change",
         "Endpoint: LnkCap ASPM L0s L1, LnkCtl ASPM L1 Enabled"),
        ("aspm_owner", "host", "info",
         "firmware owns ASPM (dmesg: [    0.354349] acpi PNP0A08:00: FADT indicates ASPM is "
         "unsupported, using BIOS configuration); pcie_aspm policy default"),
        ("rss_queues", "enp5s0", "ok",
         "4 of 4 RX queue(s) in use (combined 4, rx n/a); 4 in sysfs"),
        ("irq_affinity", "enp5s0", "change",
         "enp5s0-TxRx-0 (irq 123) -> cpu 0; enp5s0-TxRx-1 (irq 124) -> cpu 0; "
         "enp5s0-TxRx-2 (irq 125) -> cpu 0; enp5s0-TxRx-3 (irq 126) -> cpu 0"),
        ("cpu_idle", "host", "optional",
         "enabled states cpu 0-3: POLL (0 us), C1E (2 us), C6 (220 us), C8 (280 us) "
         "(driver intel_idle)"),
        # pid 2417 names enp5s0 too, but in another namespace: not this port's engine.
        ("engine_spread_pass", "enp5s0", "change",
         "pid 2301 without --spread-pass (this engine build has no --spread-pass option: "
         "/usr/sbin/xdp-bfd --help)"),
    ]
    assert rep.pci_path == [{"address": "0000:00:1d.0", "role": "root port"},
                            {"address": "0000:05:00.0", "role": "nic"}]
    assert rep.counts() == {"ok": 1, "change": 8, "optional": 2, "unsupported": 0, "n/a": 0,
                            "info": 3}


def test_as_installed_recommendations_and_costs() -> None:
    rep = checks.check(as_installed(), "enp5s0")
    by = {(f.check, f.subject): f for f in rep.findings}
    fc = by[("flow_control", "enp5s0")]
    assert fc.recommended == ("autoneg off, rx off, tx off "
                              "(ethtool -A enp5s0 autoneg off rx off tx off)")
    assert "165,028" in fc.cost and "4,148" in fc.cost and "Under a flood" in fc.source
    assert by[("rx_flow_hash_udp6", "enp5s0")].recommended == (
        "sdfn: both addresses and both ports (ethtool -N enp5s0 rx-flow-hash udp6 sdfn)")
    nic = by[("pcie_aspm", "nic 0000:05:00.0")]
    assert nic.recommended == "ASPM Disabled (setpci -s 0000:05:00.0 CAP_EXP+10.w=0:3)"
    assert nic.cost.startswith("wire reply p50/p99 118/250 us with ASPM L1, 33/122 us")
    assert "Reply latency" in nic.source and nic.value["aspm_control"] == 2
    assert "31/52" in by[("coalesce", "enp5s0")].cost
    assert "a sixth of the rate" in by[("hwtstamp_rx_filter", "enp5s0")].cost
    assert "25 W" in by[("cpu_idle", "host")].cost
    assert by[("hwtstamp_caps", "enp5s0")].value["stamps_all"] is True
    assert by[("irq_affinity", "enp5s0")].value[0] == {
        "irq": 123, "name": "enp5s0-TxRx-0", "cpus": [0], "smp_affinity_list": "0-3",
        "interrupts": 8812345}


def test_tuned_every_reading_and_status() -> None:
    rep = checks.check(tuned(), "enp2s0")
    assert rows(rep) == [
        ("driver", "enp2s0", "info", "driver igb, version 5.4.0-k, bus-info 0000:02:00.0"),
        ("flow_control", "enp2s0", "ok", "autoneg off, rx off, tx off"),
        ("rx_flow_hash_udp4", "enp2s0", "ok",
         "IP SA, IP DA, L4 bytes 0 & 1 [TCP/UDP src port], L4 bytes 2 & 3 [TCP/UDP dst port] "
         "(sdfn)"),
        ("rx_flow_hash_udp6", "enp2s0", "ok",
         "IP SA, IP DA, L4 bytes 0 & 1 [TCP/UDP src port], L4 bytes 2 & 3 [TCP/UDP dst port] "
         "(sdfn)"),
        ("coalesce", "enp2s0", "ok", "rx-usecs 0, adaptive-rx n/a"),
        ("hwtstamp_caps", "enp2s0", "info",
         "hardware receive yes, PHC /dev/ptp0, receive filters none, all"),
        ("hwtstamp_rx_filter", "enp2s0", "ok", "rx filter none, tx off"),
        ("pcie_aspm", "root port 0000:00:1c.4", "ok",
         "Root Port (Slot+): LnkCap ASPM not supported, LnkCtl ASPM Disabled"),
        ("pcie_aspm", "nic 0000:02:00.0", "ok",
         "Endpoint: LnkCap ASPM L0s L1, LnkCtl ASPM Disabled"),
        ("aspm_owner", "host", "unsupported", "unsupported"),
        ("rss_queues", "enp2s0", "ok",
         "4 of 4 RX queue(s) in use (combined 4, rx n/a); 4 in sysfs"),
        ("irq_affinity", "enp2s0", "ok",
         "enp2s0-TxRx-0 (irq 123) -> cpu 0; enp2s0-TxRx-1 (irq 124) -> cpu 1; "
         "enp2s0-TxRx-2 (irq 125) -> cpu 2; enp2s0-TxRx-3 (irq 126) -> cpu 3"),
        ("cpu_idle", "host", "ok", "enabled states cpu 0-3: POLL (0 us), C1E (2 us) "
         "(driver intel_idle)"),
        ("engine_spread_pass", "enp2s0", "ok", "pid 2301 with --spread-pass"),
    ]
    owner = rep.of("aspm_owner")[0]
    assert owner.error == "dmesg: read kernel buffer failed: Operation not permitted"
    assert owner.value == {"firmware_owned": None, "dmesg_line": "", "policy": ""}


def test_apply_as_installed_commands_results_and_undo() -> None:
    host = as_installed()
    rep = checks.check(host, "enp5s0")
    changes = apply.execute(host, apply.plan(rep, rx_usecs_0=True))
    assert host.ran == [
        ["ethtool", "-A", "enp5s0", "autoneg", "off", "rx", "off", "tx", "off"],
        ["ethtool", "-N", "enp5s0", "rx-flow-hash", "udp4", "sdfn"],
        ["ethtool", "-N", "enp5s0", "rx-flow-hash", "udp6", "sdfn"],
        ["ethtool", "-C", "enp5s0", "rx-usecs", "0"],
        ["setpci", "-s", "0000:05:00.0", "CAP_EXP+10.w=0:3"],  # the NIC before its port
        ["setpci", "-s", "0000:00:1d.0", "CAP_EXP+10.w=0:3"],
    ]
    assert [c.result for c in changes if c.command] == ["done"] * 6
    assert apply.undo_script(changes, None) == [
        "setpci -s 0000:00:1d.0 CAP_EXP+10.w=2:3",
        "setpci -s 0000:05:00.0 CAP_EXP+10.w=2:3",
        "ethtool -C enp5s0 rx-usecs 3",
        "ethtool -N enp5s0 rx-flow-hash udp6 sd",
        "ethtool -N enp5s0 rx-flow-hash udp4 sd",
        "ethtool -A enp5s0 autoneg on rx on tx on",
    ]
    manual = {c.check: c.result for c in changes if not c.command}
    assert manual == {
        "hwtstamp_rx_filter": "manual: the filter belongs to whoever set it (ptp4l, a capture "
                              "tool); to clear it: python3 -m lab.nic.hwstamp set enp5s0 "
                              "--rx-filter none",
        "irq_affinity": "manual: give each queue IRQ its own CPU (irqbalance, or echo CPU > "
                        "/proc/irq/N/smp_affinity_list)",
        "cpu_idle": "manual: limit to C1E only where microseconds count (25 W on the testbed)",
        "engine_spread_pass": "manual: restart the engine with --spread-pass added to its "
                              "arguments",
    }
    text = tune.format_changes(rep, changes, None)
    assert "note: the firmware owns ASPM on this host: setpci holds until the next boot" in text


def test_apply_leaves_coalescing_unless_asked_and_dry_run_runs_nothing() -> None:
    host = as_installed()
    rep = checks.check(host, "enp5s0")
    changes = apply.execute(host, apply.plan(rep), dry_run=True)
    assert host.ran == []
    co = next(c for c in changes if c.check == "coalesce")
    assert (co.command, co.result) == (
        [], "skipped: rx-usecs 0 costs power: pass --rx-usecs-0 to set it")
    assert {c.result for c in changes if c.command} == {"dry run: not run"}
    assert apply.undo_script(changes, "ns1")[-1] == (
        "ip netns exec ns1 ethtool -A enp5s0 autoneg on rx on tx on")


def test_apply_records_a_refusal_and_keeps_going() -> None:
    host = as_installed()
    host.failures[("setpci", "-s", "0000:00:1d.0", "CAP_EXP+10.w=0:3")] = (
        1, "setpci: Unable to write: Permission denied")  # what a kernel lockdown answers
    rep = checks.check(host, "enp5s0")
    changes = apply.execute(host, apply.plan(rep))
    port = next(c for c in changes if c.subject == "root port 0000:00:1d.0")
    assert port.failed and port.result == "failed: setpci: Unable to write: Permission denied"
    assert port.undo is None  # nothing changed there
    assert next(c for c in changes if c.subject == "nic 0000:05:00.0").result == "done"


def test_tuned_host_needs_nothing() -> None:
    rep = checks.check(tuned(), "enp2s0")
    assert apply.plan(rep) == []
    assert tune.format_changes(rep, [], None).endswith(
        "nothing to change: every reading is as recommended, or cannot change")


def test_reports_match_the_schema() -> None:
    for host, ifc in ((as_installed(), "enp5s0"), (tuned(), "enp2s0")):
        doc = json.loads(json.dumps(checks.check(host, ifc).as_dict()))
        jsonschema.validate(doc, SCHEMA)
        assert doc["schema"] == "tuning/1"
    bad = json.loads(json.dumps(checks.check(tuned(), "enp2s0").as_dict()))
    bad["findings"][9]["error"] = ""  # an unsupported line must say why
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)


def _idle_host(driver: str, states: list[tuple[str, int]]) -> ReplayHost:
    """Two CPUs with STATES (name, exit latency us), all enabled, as sysfs shows them."""
    files = {"/sys/devices/system/cpu/cpuidle/current_driver": driver + "\n"}
    dirs = {"/sys/devices/system/cpu": ["cpu0", "cpu1", "cpuidle"]}
    for cpu in (0, 1):
        base = f"/sys/devices/system/cpu/cpu{cpu}/cpuidle"
        dirs[base] = [f"state{i}" for i in range(len(states))]
        for i, (name, lat) in enumerate(states):
            files.update({f"{base}/state{i}/name": name + "\n",
                          f"{base}/state{i}/latency": f"{lat}\n",
                          f"{base}/state{i}/disable": "0\n"})
    return ReplayHost("idle", {}, files=files, dirs=dirs)


def test_cpu_idle_deep_means_slower_than_c1e() -> None:
    # Recorded on this project's 2-vCPU VM (2026-12-03): the guest's haltpoll driver, whose
    # one real state wakes in 1 us: not deep, whatever its name.
    (f,) = checks.cpu_idle(_idle_host("haltpoll", [("POLL", 0), ("haltpoll idle", 1)]))
    assert (f.status, f.reading) == (
        "ok", "enabled states cpu 0-1: POLL (0 us), haltpoll idle (1 us) (driver haltpoll)")
    # Constructed: acpi_idle's names (C1..C3) with a C3 at 33 us: deep, so the advice applies.
    (f,) = checks.cpu_idle(_idle_host("acpi_idle", [("POLL", 0), ("C1", 1), ("C3", 33)]))
    assert (f.status, f.reading) == (
        "optional", "enabled states cpu 0-1: POLL (0 us), C1 (1 us), C3 (33 us) "
                    "(driver acpi_idle)")
    # No states at all: nothing to judge.
    (f,) = checks.cpu_idle(ReplayHost("none", {}, files={
        "/sys/devices/system/cpu/cpuidle/current_driver": "none\n"},
        dirs={"/sys/devices/system/cpu": ["cpu0", "cpuidle"]}))
    assert (f.status, f.reading) == ("n/a", "no CPU idle states exposed (cpuidle driver: none)")
