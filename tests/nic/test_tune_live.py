"""`python3 -m lab tune check|apply` on this machine's veth and loopback, with the real tools:
real answers, "not supported" included, and a real engine attached to the veth."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, VethPair, lab, sh

SCHEMA = json.loads((ROOT / "results" / "schema" / "tuning.json").read_text())
ENGINE = ROOT / "build" / "xdp-bfd"


def findings(doc: dict) -> dict[str, dict]:
    return {f["check"]: f for f in doc["findings"]}


def host_cpu_idle() -> tuple[str, str]:
    """This host's CPU idle finding (status, reading) derived from cpu0's sysfs files
    directly: machines differ (one exposes none, another the guest's haltpoll driver), so the
    expectation is read, not written down. A state is deep when it is neither POLL/C1/C1E nor
    waking within 2 us (C1E on the testbed); cpus with differing states are not expected."""
    base = Path("/sys/devices/system/cpu")
    drv = (base / "cpuidle" / "current_driver").read_text().strip() \
        if (base / "cpuidle" / "current_driver").exists() else ""
    states = sorted((base / "cpu0" / "cpuidle").glob("state*"))
    if not states:
        return "n/a", f"no CPU idle states exposed (cpuidle driver: {drv or 'unknown'})"
    enabled = [((d / "name").read_text().strip(), int((d / "latency").read_text()))
               for d in states if (d / "disable").read_text().strip() != "1"]
    deep = any(not re.match(r"^(POLL|C1E?)([-_].*)?$", n, re.I) and lat > 2
               for n, lat in enabled)
    ncpu = len([c for c in base.iterdir() if re.fullmatch(r"cpu\d+", c.name)])
    cpus = "0" if ncpu == 1 else f"0-{ncpu - 1}"
    names = ", ".join(f"{n} ({lat} us)" for n, lat in enabled) or "none"
    return ("optional" if deep else "ok",
            f"enabled states cpu {cpus}: {names} (driver {drv or 'unknown'})")


def test_check_veth_json(veth: VethPair) -> None:
    cp = lab("tune", "check", "va", "--netns", veth.ns_a, "--json")
    assert cp.returncode == 0, cp.stderr  # nothing to change on a veth: no "change" line
    doc = json.loads(cp.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert (doc["iface"], doc["netns"], doc["pci_path"]) == ("va", veth.ns_a, [])
    f = findings(doc)
    assert f["driver"]["value"] == {"driver": "veth", "version": "1.0", "bus-info": ""}
    unsupported = {
        "flow_control": "ethtool -a va: netlink error: Operation not supported",
        "rx_flow_hash_udp4": "ethtool -n va rx-flow-hash udp4: Cannot get RX network flow "
                             "hashing options: Operation not supported",
        "rx_flow_hash_udp6": "ethtool -n va rx-flow-hash udp6: Cannot get RX network flow "
                             "hashing options: Operation not supported",
        "coalesce": "ethtool -c va: netlink error: Operation not supported",
        "hwtstamp_rx_filter": "SIOCGHWTSTAMP: Operation not supported",
    }
    for check, error in unsupported.items():
        assert (f[check]["status"], f[check]["error"], f[check]["value"]) == (
            "unsupported", error, None), check
    assert (f["hwtstamp_caps"]["status"], f["hwtstamp_caps"]["reading"]) == (
        "info", "hardware receive no, PHC none, receive filters none")
    assert f["hwtstamp_caps"]["value"]["capabilities"] == [
        "software-transmit", "software-receive", "software-system-clock"]
    assert (f["pcie_aspm"]["status"], f["pcie_aspm"]["reading"]) == (
        "n/a", "no PCI device: va is virtual (no /sys/class/net/va/device)")
    assert (f["irq_affinity"]["status"], f["irq_affinity"]["reading"]) == (
        "n/a", "no queue interrupts of va in /proc/interrupts")
    # veth on 6.18: two RX queues possible, one real (ethtool -l: RX max 2, current 1).
    assert (f["rss_queues"]["status"], f["rss_queues"]["reading"]) == (
        "optional", "1 of 2 RX queue(s) in use (combined n/a, rx 1); 1 in sysfs")
    assert f["engine_spread_pass"]["status"] == "n/a"
    assert f["engine_spread_pass"]["reading"].startswith("no xdp-bfd engine attached to va here")
    assert f["aspm_owner"]["value"]["firmware_owned"] is False
    assert (f["cpu_idle"]["status"], f["cpu_idle"]["reading"]) == host_cpu_idle()


def test_check_veth_text_and_loopback(veth: VethPair) -> None:
    cp = lab("tune", "check", "va", "--netns", veth.ns_a)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0].startswith(f"tune check va in netns {veth.ns_a} (host ")
    assert "[unsupported] flow control (va): ethtool -a va: netlink error: Operation not " \
           "supported" in lines
    idle = host_cpu_idle()[0]  # the one finding that depends on the host, not the veth
    counts = {"ok": 0, "optional": 1, "n/a": 3}
    counts[idle] += 1
    assert lines[-1] == (f"13 findings: {counts['ok']} ok, 0 change, {counts['optional']} "
                         f"optional, 5 unsupported, {counts['n/a']} n/a, 3 info")
    lo = json.loads(lab("tune", "check", "lo", "--netns", veth.ns_a, "--json").stdout)
    jsonschema.validate(lo, SCHEMA)
    f = findings(lo)
    assert f["driver"]["error"] == ("ethtool -i lo: Cannot get driver information: "
                                    "Operation not supported")
    assert f["rss_queues"]["error"] == "ethtool -l lo: netlink error: Operation not supported"
    assert f["rss_queues"]["reading"] == ("1 RX queue(s) in /sys/class/net/lo/queues; channel "
                                          "counts unsupported")
    assert f["hwtstamp_rx_filter"]["error"] == "SIOCGHWTSTAMP: Operation not supported"
    assert f["pcie_aspm"]["reading"] == "no PCI device: lo is virtual (no /sys/class/net/lo/device)"


def test_errors_are_reported_not_raised(veth: VethPair) -> None:
    cp = lab("tune", "check", "nosuch0", "--netns", veth.ns_a)
    assert (cp.returncode, cp.stderr.strip()) == (
        3, f"lab: no interface 'nosuch0' in namespace {veth.ns_a} (/sys/class/net/nosuch0)")
    cp = lab("tune", "check", "va", "--netns", veth.ns_a + "-gone")
    assert cp.returncode == 3 and "does not exist" in cp.stderr


def test_apply_veth_reports_what_it_cannot_change(veth: VethPair) -> None:
    for extra in ([], ["--dry-run"]):
        cp = lab("tune", "apply", "va", "--netns", veth.ns_a, "--rx-usecs-0", *extra)
        assert cp.returncode == 0, cp.stderr  # nothing was refused: nothing could be tried
        assert unwrap(cp.stdout)[1:] == [
            "flow control (va): skipped: cannot read it here (ethtool -a va: netlink error: "
            "Operation not supported)",
            "UDP/IPv4 hashing (va): skipped: cannot read it here (ethtool -n va rx-flow-hash "
            "udp4: Cannot get RX network flow hashing options: Operation not supported)",
            "UDP/IPv6 hashing (va): skipped: cannot read it here (ethtool -n va rx-flow-hash "
            "udp6: Cannot get RX network flow hashing options: Operation not supported)",
            "interrupt coalescing (va): skipped: cannot read it here (ethtool -c va: netlink "
            "error: Operation not supported)",
            "RSS queues (va): manual: ethtool -L va combined <maximum>",
        ] + (["CPU idle states (host): manual: limit to C1E only where microseconds count "
              "(25 W on the testbed)"] if host_cpu_idle()[0] == "optional" else [])


def unwrap(text: str) -> list[str]:
    """The printed lines with wrapped continuations (indented) joined back on."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith(" ") and out and not line.lstrip().startswith(("run:", "undo:",
                                                                          "now:")):
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out


@pytest.fixture(scope="module")
def engine_binary() -> str:
    if not ENGINE.exists():
        subprocess.run(["make", "-C", str(ROOT), "build/xdp-bfd"], check=True, timeout=600)
    return str(ENGINE)


def _engine_finding(veth: VethPair, engine_binary: str, tmp_path, extra: list[str]) -> tuple:
    """Start the real engine on va inside the namespace with EXTRA options, read lab tune's
    engine_spread_pass finding for va, stop the engine. Returns (pid, argv, finding, log)."""
    argv = [engine_binary, "--dplane", "50791", *extra, "--kernel-tx", "va"]
    log = open(tmp_path / "engine.log", "w")
    proc = subprocess.Popen(["ip", "netns", "exec", veth.ns_a, *argv], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 10
        while "XDP attached to va" not in open(log.name).read():
            assert proc.poll() is None and time.monotonic() < deadline, open(log.name).read()
            time.sleep(0.05)  # poll for the engine's attach line
        f = findings(json.loads(lab("tune", "check", "va", "--netns", veth.ns_a,
                                    "--json").stdout))
        # The same engine seen from the host's namespace is not this port's.
        assert sh("ip", "link", "show", "va", check=False).returncode != 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
    return proc.pid, argv, f["engine_spread_pass"], open(log.name).read()


def test_engine_without_spread_pass_is_found(veth: VethPair, engine_binary: str,
                                             tmp_path) -> None:
    pid, argv, e, log = _engine_finding(veth, engine_binary, tmp_path, [])
    assert e["status"] == "change"
    # This build has the option, so the reading does not add the "no such option" remark.
    assert e["reading"] == f"pid {pid} without --spread-pass"
    assert e["value"] == [{"pid": pid, "spread_pass": False, "argv": argv}]
    assert "stopped" in log


def test_engine_with_spread_pass_is_ok(veth: VethPair, engine_binary: str, tmp_path) -> None:
    pid, argv, e, log = _engine_finding(veth, engine_binary, tmp_path, ["--spread-pass"])
    assert e["status"] == "ok"
    assert e["reading"] == f"pid {pid} with --spread-pass"
    assert e["value"] == [{"pid": pid, "spread_pass": True, "argv": argv}]
    assert "stopped" in log
