"""Bad input to the command-line tools: bfdcap, `python3 -m lab {gate, baseline, report}` and
`python3 -m lab.plot`.

A tool given a bad file or a bad command line must exit non-zero with a one-line error on
stderr: no Python traceback, no crash, no hang, and no report that looks like a result. Some
tests guard inputs that were handled well when they were written; those under "Fixed finding"
reproduce defects found by trying (each failed until its fix). A new finding goes in as
`@pytest.mark.xfail(strict=True, raises=AssertionError, reason=...)`.

Every test runs the exact command line with subprocess, in well under 10 s, without root.
"""

from __future__ import annotations

import gzip
import json
import struct
import subprocess
import sys

import pytest

from conftest import BFDCAP, ROOT
from lab.util import inet_checksum  # noqa: E402  (conftest puts the repo on the path)

PY = sys.executable
T0 = 1_000_000_000_000  # ns

# A miniature ladder summary that `lab gate` judges PASS with results/gates.toml.
LADDER_SUMMARY = {
    "run_id": "t", "profile": "ci", "verdict": "PASS",
    "duts": {"engine": {"kind": "engine", "sessions": 1, "sessions_up_end": 1}},
    "levels": {"L4": {"duts": {"engine": {
        "down_events_counted": 0,
        "classes": {"10ms x3": {"max_over_budget": 0.5, "gap_ms": {"p99": 10.0},
                                "interval_ms": 10}}}}}},
}


# --- captures, built by hand (RFC 5880 4.1 for BFD; no scapy needed) ----------------------

def bfd_frame(src: str, dst: str, my: int, your: int) -> bytes:
    """Ethernet / IPv4 / UDP 3784 / BFD Control, state Up, 10 ms x3."""
    bfd = struct.pack("!BBBBIIIII", 1 << 5, 3 << 6, 3, 24, my, your, 10000, 10000, 0)
    udp = struct.pack("!HHHH", 49152, 3784, 8 + len(bfd), 0) + bfd
    a, b = (bytes(map(int, x.split("."))) for x in (src, dst))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 255, 17, 0, a, b)
    ip = ip[:10] + struct.pack("!H", inet_checksum(ip)) + ip[12:]
    return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x08\x00" + ip + udp


def frames(n: int = 20) -> list[tuple[int, bytes]]:
    out = []
    for i in range(n):
        out.append((T0 + i * 10_000_000, bfd_frame("10.0.0.1", "10.0.0.2", 1, 2)))
        out.append((T0 + i * 10_000_000 + 100_000, bfd_frame("10.0.0.2", "10.0.0.1", 2, 1)))
    return out


def pcap_bytes(fr, snaplen: int = 262144) -> bytes:
    """Nanosecond pcap, Ethernet."""
    out = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snaplen, 1)
    for ts, data in fr:
        out += struct.pack("<IIII", ts // 10**9, ts % 10**9, len(data), len(data)) + data
    return out


def _block(btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def pcapng_spb_first(fr) -> bytes:
    """One section, one Ethernet interface in ns; a Simple Packet Block (no timestamp)
    first, then Enhanced Packet Blocks."""
    out = _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += _block(1, struct.pack("<HHI", 1, 0, 262144) + struct.pack("<HH", 9, 1) + b"\x09\0\0\0"
                  + struct.pack("<HH", 0, 0))
    out += _block(3, struct.pack("<I", len(fr[0][1])) + fr[0][1])
    for ts, data in fr:
        out += _block(6, struct.pack("<IIIII", 0, ts >> 32, ts & 0xFFFFFFFF, len(data),
                                     len(data)) + data)
    return out


def bfdcap(*args, stdin=None, stdout=subprocess.PIPE, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BFDCAP), *map(str, args)], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=30, env=env)


def lab(*args) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "lab", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)


def plot(*args) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "lab.plot", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def clean_error(p: subprocess.CompletedProcess, status: int | None = None) -> str:
    """Assert a clean failure: non-zero status (STATUS when given), exactly one line on
    stderr, no traceback. Returns that line."""
    assert "Traceback" not in p.stderr, p.stderr
    assert p.returncode != 0, (p.returncode, p.stderr)
    if status is not None:
        assert p.returncode == status, (p.returncode, p.stderr)
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.fixture
def good_pcap(tmp_path):
    path = tmp_path / "good.pcap"
    path.write_bytes(pcap_bytes(frames()))
    return path


def run_dir(tmp_path, name: str, summary) -> str:
    d = tmp_path / name
    d.mkdir()
    (d / "summary.json").write_text(summary if isinstance(summary, str) else
                                    json.dumps(summary))
    return str(d)


# === bfdcap: handled well (guards) ========================================================

def test_bfdcap_missing_file(tmp_path):
    line = clean_error(bfdcap(tmp_path / "nope.pcap"), 1)
    assert "No such file or directory" in line


def test_bfdcap_empty_file_and_directory(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert "not a pcap or pcapng file" in clean_error(bfdcap(tmp_path / "empty"), 1)
    clean_error(bfdcap(tmp_path), 1)


def test_bfdcap_truncated_file_header(tmp_path, good_pcap):
    (tmp_path / "t.pcap").write_bytes(good_pcap.read_bytes()[:10])
    assert "cut short" in clean_error(bfdcap(tmp_path / "t.pcap"), 1)


def test_bfdcap_garbage_on_stdin(tmp_path):
    (tmp_path / "g").write_bytes(b"garbage, not a capture\n" * 100)
    with open(tmp_path / "g", "rb") as f:
        assert "not a pcap or pcapng file" in clean_error(bfdcap("-", stdin=f), 1)


def test_bfdcap_truncated_gzip_reports_what_was_read(tmp_path, good_pcap):
    """Documented: exit 0 with the report of what was read and the reason in read_error."""
    z = gzip.compress(good_pcap.read_bytes())
    (tmp_path / "t.pcap.gz").write_bytes(z[:200])
    p = bfdcap("--json", tmp_path / "t.pcap.gz")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["read_error"] and rep["malformed"].get("read_error") == 1


@pytest.mark.parametrize("snaplen", [0, 2**31])
def test_bfdcap_odd_snaplen_is_read(tmp_path, snaplen):
    (tmp_path / "s.pcap").write_bytes(pcap_bytes(frames(), snaplen))
    p = bfdcap("--json", tmp_path / "s.pcap")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["bfd_packets"] == 40


@pytest.mark.parametrize("args", [["--from", "abc"], ["--to", "1e9"],
                                  ["--from", "99999999999999999999"], ["--bogus"],
                                  ["--reader", "nope"], ["--tag", "a=10.0.0.0/99"]])
def test_bfdcap_bad_command_line(good_pcap, args):
    p = bfdcap(*args, good_pcap)
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.strip(), p.stderr


@pytest.mark.parametrize("text,words", [
    ('[{"name": "a", "start_ns": 5, "end_ns": 1}]', "ends before it starts"),
    ('[{"name": "a", "end_ns": 5}]', "needs name, start_ns and end_ns"),
    ("{}", "expected a JSON array"),
    ('[{"name": "a", "start_ns": 1.5, "end_ns": 5}]', "fraction"),
])
def test_bfdcap_bad_phases_file(tmp_path, good_pcap, text, words):
    (tmp_path / "ph.json").write_text(text)
    line = clean_error(bfdcap("--phases", tmp_path / "ph.json", good_pcap), 1)
    assert words in line and f"phases file {tmp_path / 'ph.json'}" in line, line


def test_bfdcap_csv_gaps_unwritable(tmp_path, good_pcap):
    line = clean_error(bfdcap("--csv-gaps", tmp_path / "no" / "dir" / "g.csv", good_pcap), 1)
    assert "No such file or directory" in line
    assert "write error" in clean_error(bfdcap("--csv-gaps", "/dev/full", good_pcap), 1)


# === bfdcap: fixed findings ==========================================================

# Fixed finding (low-medium): bfdcap --phases reads past the end of the file's text on a truncated
# or empty phases file (empty, whitespace, '[', '[{"name"'): the parser steps over the terminating
# NUL (config.c `*j.p++ != ...`) and fail() quotes the uninitialised heap bytes behind it in the
# error (valgrind: 'Conditional jump depends on uninitialised value', config.c:102). Should quote
# only the file's own text: the error is at the end of the text, and quotes nothing.
@pytest.mark.parametrize("text", ["", "   ", "[", '[{"name"'])
def test_bfdcap_phases_error_quotes_only_the_file(tmp_path, good_pcap, text):
    (tmp_path / "ph.json").write_text(text)
    env = {"PATH": "/usr/bin:/bin", "MALLOC_PERTURB_": "158"}  # fresh heap bytes read 'a'
    line = clean_error(bfdcap("--phases", tmp_path / "ph.json", good_pcap, env=env), 1)
    assert f"phases file {tmp_path / 'ph.json'}, line 1 column {len(text)}: " in line, line
    assert line.endswith(" near end of file"), line


# Fixed finding (low): a --phases error message quotes the text after the offending character,
# raw: for a CSV phases file, "expected a JSON array near 'ame,start_ns,end_ns<LF>'" drops the 'n'
# it stumbled on and spreads over two lines. Should quote from the offending character, with
# control characters escaped.
def test_bfdcap_phases_error_is_one_line_from_the_bad_character(tmp_path, good_pcap):
    (tmp_path / "ph.csv").write_text("name,start_ns,end_ns\nidle,1,2\n")
    line = clean_error(bfdcap("--phases", tmp_path / "ph.csv", good_pcap), 1)
    assert "ph.csv, line 1 column 4: '[' or '{' expected near 'name'" in line, line
    # A quoted token with a line feed in it: still one line, the control character as '?'.
    (tmp_path / "ph.json").write_text('["a\\\n"]')
    line = clean_error(bfdcap("--phases", tmp_path / "ph.json", good_pcap), 1)
    assert line.endswith("line 2 column 0: invalid escape near '\"a\\?'"), line


# Fixed finding (low): bfdcap accepts trailing garbage after the --phases array ('[...] junk' is
# read as the array); should be refused like other malformed JSON.
def test_bfdcap_phases_trailing_garbage(tmp_path, good_pcap):
    (tmp_path / "ph.json").write_text('[{"name": "a", "start_ns": 1, "end_ns": 5}] junk')
    line = clean_error(bfdcap("--phases", tmp_path / "ph.json", good_pcap), 1)
    assert "line 1 column 48: end of file expected near 'junk'" in line, line


# Fixed finding (low): bfdcap --from A --to B with A > B exits 0 with an empty report (0 frames),
# while a phase ending before it starts is refused; should exit 2 naming the window.
def test_bfdcap_reversed_window(good_pcap):
    clean_error(bfdcap("--from", T0 + 10**9, "--to", T0, good_pcap), 2)


# Fixed finding (low): bfdcap --csv-gaps - on a capture that ends inside a record exits 0 and says
# nothing: the CSV replaces the report, so read_error is lost (--packets warns on stderr). Should
# warn on stderr as --packets does.
def test_bfdcap_csv_stdout_warns_on_truncated_capture(tmp_path, good_pcap):
    (tmp_path / "t.pcap").write_bytes(good_pcap.read_bytes()[:500])
    p = bfdcap("--csv-gaps", "-", tmp_path / "t.pcap")
    assert p.returncode == 0 and p.stdout.startswith("ts_ns,"), p.stderr
    assert "truncated" in p.stderr


# Fixed finding (low): bfdcap --csv-gaps - (and --packets) with standard output on a full disk
# exit 1 with nothing on stderr; the table and --json modes say 'bfdcap: write error'.
@pytest.mark.parametrize("mode", [["--csv-gaps", "-"], ["--packets"]])
def test_bfdcap_stdout_write_error_is_reported(good_pcap, mode):
    with open("/dev/full", "w") as full:
        p = bfdcap(*mode, good_pcap, stdout=full)
    assert "write error" in clean_error(p, 1)


# Fixed finding (low): a pcapng whose first block is a Simple Packet Block (no timestamp) gets
# first_ts_ns 0: the SPB frame takes the reader's last timestamp (0 at the start), so the
# capture's span reads 1000 s instead of 0.19 s. A frame without a timestamp should not set
# first/last_ts_ns.
def test_bfdcap_spb_does_not_fake_a_timestamp(tmp_path):
    fr = frames()
    (tmp_path / "s.pcapng").write_bytes(pcapng_spb_first(fr))
    p = bfdcap("--json", tmp_path / "s.pcapng")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["malformed"].get("no_timestamp") == 1
    assert rep["first_ts_ns"] == fr[0][0], rep["first_ts_ns"]


# === lab gate / baseline / report: handled well (guards) ==================================

def test_gate_missing_dir_and_bad_json(tmp_path):
    for rd in (tmp_path / "nope", run_dir(tmp_path, "trunc", '{"run_id": "x", "lev')):
        p = lab("gate", rd)
        assert p.returncode == 3 and "Traceback" not in p.stderr, p.stderr
        assert (p.stdout + p.stderr).startswith("gate: ")


def test_gate_refuses_a_demo_summary(tmp_path):
    rd = run_dir(tmp_path, "demo", {"run_id": "d", "duts": {"engine": {"kind": "engine"}}})
    p = lab("gate", rd)
    assert p.returncode == 3 and "not a ladder summary" in p.stdout + p.stderr


@pytest.mark.parametrize("text,words", [("not json", "Expecting value"),
                                        ('{"schema": "other"}', "expected xdp-bfd-lab-")])
def test_gate_bad_baseline_file(tmp_path, text, words):
    rd = run_dir(tmp_path, "run", LADDER_SUMMARY)
    (tmp_path / "b.json").write_text(text)
    p = lab("gate", rd, "--baseline", tmp_path / "b.json")
    assert p.returncode == 3 and "Traceback" not in p.stderr and words in p.stdout + p.stderr


@pytest.mark.parametrize("text,words", [("this is [not toml", "Expected '='"),
                                        ("[gate]\nbogus = 1\n", "unknown key bogus")])
def test_gate_bad_gates_file(tmp_path, text, words):
    rd = run_dir(tmp_path, "run", LADDER_SUMMARY)
    (tmp_path / "g.toml").write_text(text)
    p = lab("gate", rd, "--gates", tmp_path / "g.toml")
    assert p.returncode == 3 and "Traceback" not in p.stderr and words in p.stdout + p.stderr


def test_gate_minimal_ladder_summary_passes(tmp_path):
    """The synthetic summary the findings below start from is a valid one."""
    p = lab("gate", run_dir(tmp_path, "run", LADDER_SUMMARY))
    assert p.returncode == 0 and "PASS" in p.stdout, p.stdout + p.stderr


def test_baseline_and_report_missing_dir(tmp_path):
    assert "No such file" in clean_error(lab("baseline", tmp_path / "nope", "--name", "x"), 3)
    assert "No such file" in clean_error(lab("report", tmp_path / "nope"), 3)


# === lab: fixed findings =============================================================

# Fixed finding (low): lab gate prints its error messages (missing or malformed summary, baseline
# or gates file) on standard output, not stderr, so `lab gate ... > verdict.txt` hides them; lab
# report and lab baseline use stderr.
def test_gate_error_goes_to_stderr(tmp_path):
    clean_error(lab("gate", tmp_path / "nope"), 3)


# Fixed finding (medium): lab gate / lab baseline crash with a traceback (exit 1, which for gate
# means 'regression') on a summary.json that is valid JSON of the wrong shape: not an object, or a
# ladder summary without 'duts' or a device's 'sessions_up_end'. Should exit 3 with a one-line
# 'not a ladder summary' error.
@pytest.mark.parametrize("cmd", ["gate", "baseline"])
@pytest.mark.parametrize("summary", ["[1, 2, 3]", "null", {"levels": {"L4": {}}}])
def test_gate_and_baseline_wrong_shape_summary(tmp_path, cmd, summary):
    rd = run_dir(tmp_path, "run", summary)
    p = lab(cmd, rd) if cmd == "gate" else lab(cmd, rd, "--name", "x")
    assert "Traceback" not in p.stderr and p.returncode == 3, p.stderr[-300:]


# Fixed finding (medium): lab baseline accepts a demo run (no levels), which lab gate refuses as
# 'not a ladder summary', and writes a baseline with empty steps, exit 0: a baseline that can
# never regress. Should exit 3 like gate.
def test_baseline_refuses_a_demo_summary(tmp_path):
    rd = run_dir(tmp_path, "demo", {"run_id": "d", "verdict": "PASS",
                                    "duts": {"engine": {"kind": "engine"}}})
    clean_error(lab("baseline", rd, "--name", "x"), 3)


# Fixed finding (medium): lab gate --baseline FILE crashes with a traceback (exit 1 =
# 'regression') when FILE has the right schema but the wrong shape: not an object, a step that is
# a list, or a p99_ms that is a string. Should exit 3 naming the bad field.
@pytest.mark.parametrize("base", [
    [],
    {"devices": {"engine": {"steps": {"*": []}}}},
    {"devices": {"engine": {"steps": {"*": {"classes": {"*": {"p99_ms": "x"}}}}}}},
])
def test_gate_wrong_shape_baseline(tmp_path, base):
    if isinstance(base, dict):
        base = dict(base, schema="xdp-bfd-lab-baseline/1", name="b")
    rd = run_dir(tmp_path, "run", LADDER_SUMMARY)
    (tmp_path / "b.json").write_text(json.dumps(base))
    p = lab("gate", rd, "--baseline", tmp_path / "b.json")
    assert "Traceback" not in p.stderr and p.returncode == 3, p.stderr[-300:]


# Fixed finding (medium): lab gate --baseline FILE with the baseline schema but no 'devices' (or
# 'devices': []) prints 'PASS ... against gates.toml and FILE' and exits 0, having made no
# baseline check. A baseline without devices should be refused (exit 3).
@pytest.mark.parametrize("devices", [None, []])
def test_gate_baseline_without_devices(tmp_path, devices):
    base = {"schema": "xdp-bfd-lab-baseline/1", "name": "b"}
    if devices is not None:
        base["devices"] = devices
    rd = run_dir(tmp_path, "run", LADDER_SUMMARY)
    (tmp_path / "b.json").write_text(json.dumps(base))
    p = lab("gate", rd, "--baseline", tmp_path / "b.json")
    assert p.returncode == 3, p.stdout


# Fixed finding (low): lab gate --gates FILE with a value of the wrong type crashes with a
# traceback (exit 1): 'gate = 5', 'down_events_counted_max = "zero"', 'max_over_budget_below =
# []'. Should exit 3 naming the key.
@pytest.mark.parametrize("text", ["gate = 5\n", '[gate]\ndown_events_counted_max = "zero"\n',
                                  "[gate]\nmax_over_budget_below = []\n"])
def test_gate_gates_file_wrong_types(tmp_path, text):
    rd = run_dir(tmp_path, "run", LADDER_SUMMARY)
    (tmp_path / "g.toml").write_text(text)
    p = lab("gate", rd, "--gates", tmp_path / "g.toml")
    assert "Traceback" not in p.stderr and p.returncode == 3, p.stderr[-300:]


# Fixed finding (low): lab gate --gates FILE with '[ladder] required = "L4"' (a string, not a
# list) iterates it by character and calls the run VOID: 'required step L is not in the run;
# required step 4 is not in the run', exit 2. Should be a gates-file error.
def test_gate_gates_file_required_string(tmp_path):
    rd = run_dir(tmp_path, "run", LADDER_SUMMARY)
    (tmp_path / "g.toml").write_text('[ladder]\nrequired = "L4"\n')
    p = lab("gate", rd, "--gates", tmp_path / "g.toml")
    assert p.returncode == 3, p.stdout


# Fixed finding (medium): lab report RUN_DIR crashes with a traceback (exit 1, which for report
# means FAIL) when run.json lacks a key or is not an object ({} -> KeyError 'duts'; [] ->
# TypeError; a phase without start_ns -> KeyError). Should exit 3 with one line.
@pytest.mark.parametrize("meta", [{}, [], {"duts": ["engine"], "phases": [{"name": "x"}]}])
def test_report_wrong_shape_run_json(tmp_path, meta):
    d = tmp_path / "run"
    d.mkdir()
    (d / "run.json").write_text(json.dumps(meta))
    (d / "topology.toml").write_text((ROOT / "topologies" / "demo.toml").read_text())
    clean_error(lab("report", d), 3)


# Fixed finding (medium): python3 -m lab.plot has no error handling: a missing or empty folder, or
# a bfdcap report without 'classes', ends in a Python traceback (exit 1). Should print one line
# ('lab.plot: ...') and exit non-zero.
@pytest.mark.parametrize("case", ["missing", "empty", "report-without-classes"])
def test_plot_bad_source(tmp_path, case):
    src = tmp_path / "src"
    if case != "missing":
        src.mkdir()
    if case == "report-without-classes":
        (src / "bfdcap.json").write_text('{"schema": "bfdcap/1"}')
    clean_error(plot(src, "--out", tmp_path / "out"))


# Fixed finding (low-medium): python3 -m lab.plot DIR/b.pcap draws the alphabetically first
# capture of DIR (a.pcap), not b.pcap, and exits 0 even though b.pcap is not a capture. A source
# that is neither a folder nor a JSON file should be analysed itself, or refused.
def test_plot_draws_the_named_capture(tmp_path, good_pcap):
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.pcap").write_bytes(good_pcap.read_bytes())
    (d / "b.pcap").write_bytes(b"")
    p = plot(d / "b.pcap", "--out", tmp_path / "out")
    assert p.returncode != 0, p.stdout
