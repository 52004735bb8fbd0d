"""The engine's start-up port checks (engine/ports.c) against real sysctl settings.

Each case runs in a namespace of its own: net.ipv4.ip_local_port_range and
ip_local_reserved_ports are per network namespace, so the settings are real kernel settings the
engine reads, and the host's stay as they were (the namespace goes at the end).
- the data-plane port 50700 unreserved: a warning whether the engine listens on it (--dplane)
  or bfdd does (--dplane-connect); reserved, or outside the ephemeral range, or a Unix socket:
  none;
- the trap the warning names, shown on the kernel itself: with 50700 the only ephemeral port, a
  connect() to 127.0.0.1:50700 with nothing listening connects to itself; reserved, it cannot;
- the engine's source ports (tx.h: 61000-65535) partly reserved: a warning with the count; and
  what it says about explicit bind() is checked: a UDP socket still binds a reserved port;
- the ephemeral range widened over the source ports: a warning.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from lab import util
from lab.rig.netns import End, Netns

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: network namespaces")

ENGINE = REPO / "build" / "xdp-bfd"
TX_PORT_FIRST, TX_PORT_LAST = 61000, 65535  # engine/tx.h
DPLANE_WARN = "ports: the data-plane port 50700 (which {who}) is in the ephemeral range " \
              "32768-60999 and not in net.ipv4.ip_local_reserved_ports"


@pytest.fixture
def ns() -> Iterator[str]:
    if not ENGINE.exists():
        pytest.skip("build/xdp-bfd missing (make)")
    lab_ns = Netns(f"xbports{os.getpid()}", [End("engine", "dut0")])
    try:
        lab_ns.build()
        yield lab_ns.ns("engine")
    finally:
        lab_ns.teardown()


def sysctl(ns: str, key: str, value: str) -> None:
    util.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={value}"])
    got = util.run(["ip", "netns", "exec", ns, "sysctl", "-n", key]).stdout.split()
    assert got == value.split(), (key, got)


def engine_log(ns: str, tmp: Path, *args: str) -> str:
    """Run the engine in NS for 0.5 s (SIGTERM), return its log."""
    log = tmp / f"engine-{len(list(tmp.glob('engine-*')))}.log"
    r = subprocess.run(["ip", "netns", "exec", ns, "timeout", "--preserve-status", "-s", "TERM",
                        "0.5", str(ENGINE), "--log-file", str(log), *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, (r.returncode, r.stderr)  # SIGTERM: orderly stop, exit 0
    return log.read_text()


def in_ns(ns: str, code: str) -> str:
    return util.run(["ip", "netns", "exec", ns, "/usr/bin/python3", "-c", code]).stdout.strip()


def test_dplane_port_unreserved_is_warned(ns: str, tmp_path: Path) -> None:
    t = engine_log(ns, tmp_path, "--dplane", "50700")
    assert DPLANE_WARN.format(who="the engine listens on") in t, t
    t = engine_log(ns, tmp_path, "--dplane-connect", "ipv4:127.0.0.1:50700")
    assert DPLANE_WARN.format(who="bfdd listens on") in t, t
    t = engine_log(ns, tmp_path, "--dplane-connect", "ipv6:[::1]:50700")
    assert DPLANE_WARN.format(who="bfdd listens on") in t, t
    assert "ports:" not in engine_log(ns, tmp_path, "--dplane", "61500")  # not ephemeral
    assert "ports:" not in engine_log(ns, tmp_path, "--dplane-connect", f"unix:{tmp_path}/s")


def test_dplane_port_reserved_is_quiet(ns: str, tmp_path: Path) -> None:
    sysctl(ns, "net.ipv4.ip_local_reserved_ports", "50700")
    for args in (["--dplane", "50700"], ["--dplane-connect", "ipv4:127.0.0.1:50700"]):
        t = engine_log(ns, tmp_path, *args)
        assert "info: stopped" in t and "ports:" not in t, t


SELF_CONNECT = """
import socket
s = socket.socket()
try:
    s.connect(("127.0.0.1", 50700))
    print("self" if s.getsockname() == s.getpeername() else "other")
except OSError as e:
    print(e.errno)
"""


def test_the_trap_itself(ns: str) -> None:
    """Nothing listens on 50700 and the kernel may pick it as a source: TCP's simultaneous
    open connects the socket to itself. Reserved, the kernel never picks it."""
    sysctl(ns, "net.ipv4.ip_local_port_range", "50700 50700")
    assert in_ns(ns, SELF_CONNECT) == "self"
    sysctl(ns, "net.ipv4.ip_local_reserved_ports", "50700")
    assert in_ns(ns, SELF_CONNECT) == "99"  # EADDRNOTAVAIL: no source port left to pick


BIND = """
import socket
for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 61005))
    print(s.getsockname()[1])
"""


def test_source_ports_reserved_are_warned(ns: str, tmp_path: Path) -> None:
    sysctl(ns, "net.ipv4.ip_local_reserved_ports", "50700,61000-61010,63000")
    t = engine_log(ns, tmp_path, "--dplane", "50700")
    assert ("ports: net.ipv4.ip_local_reserved_ports (50700,61000-61010,63000) holds 12 of the "
            f"engine's source ports {TX_PORT_FIRST}-{TX_PORT_LAST}") in t, t
    assert "data-plane port" not in t and "overlaps" not in t
    # What the warning says: a reservation does not stop an explicit bind (as the engine's).
    assert in_ns(ns, BIND).split() == ["61005", "61005"]


def test_ephemeral_range_over_source_ports_is_warned(ns: str, tmp_path: Path) -> None:
    sysctl(ns, "net.ipv4.ip_local_port_range", "40000 62000")
    t = engine_log(ns, tmp_path, "--dplane-connect", f"unix:{tmp_path}/s")
    assert ("ports: the ephemeral range 40000-62000 (net.ipv4.ip_local_port_range) overlaps "
            f"the engine's source ports {TX_PORT_FIRST}-{TX_PORT_LAST}") in t, t
    assert "holds" not in t
