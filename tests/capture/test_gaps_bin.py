"""bfdcap --gaps-bin and lab.judge.gaps.GapTable: a table read from --gaps-bin and one read
from the --csv-gaps text of the same capture (GapTable.from_csv(), how the rule tests' CSV
fixtures and callers without the report reach the judge) hold the same rows in the same
order, and the validity rules and the gap survival plot give the same answers from either."""

from __future__ import annotations

import csv
import io
import json
import subprocess

import numpy as np
import pcapgen as g
import pytest
from conftest import BFDCAP, PCAPS, ROOT
from test_synthetic import A4, B4, flap_events, session

from lab.judge import bfdcap as client
from lab.judge import plot, validity
from lab.judge.gaps import GapTable

TAGS = [("a", "192.0.2.1"), ("peer-b", "192.0.2.2")]
CORPUS = ROOT / "tests" / "fuzz" / "corpus" / "bfdcap"  # committed captures
MS = 1_000_000


def rows(table: GapTable) -> list[dict]:
    return [table.row(i) for i in range(len(table))]


def test_gaps_bin_rows_equal_csv(tmp_path):
    pcap = tmp_path / "f.pcap"
    g.write_pcap(pcap, session(flap_events()))
    tags = [x for n, s in TAGS for x in ("--tag", f"{n}={s}")]
    text = subprocess.run([str(BFDCAP), *tags, "--csv-gaps", "-", str(pcap)],
                          capture_output=True, text=True, check=True).stdout
    report, table = client.analyse_gaps(pcap, TAGS, bfdcap=BFDCAP)
    plain = json.loads(subprocess.run([str(BFDCAP), *tags, "--json", str(pcap)],
                                      capture_output=True, check=True).stdout)
    assert report == plain  # --gaps-bin changes nothing in the report
    csv_rows = list(csv.DictReader(io.StringIO(text)))
    assert len(csv_rows) == len(table) == 18
    for i, r in enumerate(csv_rows):
        assert {k: str(v) for k, v in table.row(i).items()} == r
    from_csv = GapTable.from_csv(text)
    assert rows(from_csv) == rows(table)
    for prefix in ("", "peer-", "a"):
        assert validity.over_budget_rows(table, prefix) == \
            validity.over_budget_rows(from_csv, prefix)
    peer = {"192.0.2.2"}
    assert validity.early_downs(report, peer, table) == \
        validity.early_downs(report, peer, from_csv)
    by_capture = plot.gaps_by_class(report, plot.capture_gaps(report, pcap, str(BFDCAP)))
    assert by_capture == plot.gaps_by_class(report, table) == \
        {("a", "10ms x3"): [10 * MS] * 8, ("peer-b", "10ms x3"): [10 * MS] * 10}


def over_budget_capture(path) -> None:
    """Both ends Up at 10 ms x3 (budget 30 ms): A silent 20-70 ms (a 50 ms gap), B silent
    35-75 ms (40 ms); B declares Down (diag 1) at 105 ms, 5 ms after A's last packet (an
    early Down: A's gap ending there is 10 ms)."""
    ev = [(t, "a", {"state": "Up"}) for t in (0, 10_000, 20_000, 70_000, 80_000, 90_000,
                                              100_000)]
    ev += [(t, "b", {"state": "Up"}) for t in (5_000, 15_000, 25_000, 35_000, 75_000, 85_000,
                                               95_000)]
    ev.append((105_000, "b", {"state": "Down", "diag": 1, "your": 0, "tx_us": 1_000_000}))
    g.write_pcap(path, session(ev))


QUOTED = 'dev,"x"'  # a tag --csv-gaps must quote (a comma and quotes in it)


@pytest.mark.parametrize("name, tags, n_rows", [
    ("over-budget.pcap", [(QUOTED, A4), ("peer-b", B4)], 12),
    ("corpus/mixed.pcapng", [], 3),
    ("corpus/sll2-flap.pcap", [("peer-b", B4)], 3),
    ("shared/bfd-multihop.pcap", [(QUOTED, "101.0.0.1"), ("peer-x", "101.0.0.12")], 22)])
def test_csv_and_bin_tables_agree_row_for_row(tmp_path, name, tags, n_rows):
    """The same capture read twice by bfdcap, through --csv-gaps text and through
    --gaps-bin with its report: the two GapTables agree row for row, column for column,
    and in every answer the judge takes from them."""
    if name.startswith("shared/") and not PCAPS.is_dir():
        pytest.skip("the shared captures (../shared/data/pcaps) are not on this machine")
    pcap = {"corpus": CORPUS, "shared": PCAPS}.get(name.split("/")[0], tmp_path) / \
        name.split("/")[-1]
    if name == "over-budget.pcap":
        over_budget_capture(pcap)
    report, binary = client.analyse_gaps(pcap, tags, bfdcap=BFDCAP)
    text = client.csv_gaps(pcap, tags, None, BFDCAP)
    table = GapTable.from_csv(text)
    assert len(table) == len(binary) == n_rows
    assert rows(table) == rows(binary)
    for col in ("ts_ns", "gap_ns", "budget_ns"):
        assert getattr(table, col).dtype == np.int64
        assert np.array_equal(getattr(table, col), getattr(binary, col)), col
    # ends: the CSV knows only the ends with a row, in order of their first row
    assert table.ends == list(dict.fromkeys(binary.ends[int(k)] for k in binary.end))
    for prefix in ("", "peer-", "dev"):
        assert validity.over_budget_rows(table, prefix) == \
            validity.over_budget_rows(binary, prefix)
    assert table.at_times(set(binary.ts_ns.tolist())) == rows(binary)
    assert table.at_times({int(binary.ts_ns[-1]) + 1}) == []
    peer = {B4, "101.0.0.12"}
    assert validity.early_downs(report, peer, table) == \
        validity.early_downs(report, peer, binary)
    assert validity.peer_gaps(table, report, peer) == validity.peer_gaps(binary, report, peer)
    assert plot.gaps_by_class(report, table) == plot.gaps_by_class(report, binary)
    if name == "over-budget.pcap":  # what the rules found, from either table
        assert [(r["tag"], r["gap_ns"]) for r in validity.over_budget_rows(table)] == [
            (QUOTED, 50 * MS), ("peer-b", 40 * MS)]
        assert [(p.src, p.gap_ns, p.source) for p in validity.peer_gaps(table, report, peer)] \
            == [(B4, 40 * MS, "csv-gaps")]
        races, impossible = validity.early_downs(report, peer, table)
        assert races == [] and [(e.detect_ms, e.dev_gap_ms) for e in impossible] == [(5.0, 10.0)]


def test_from_csv_empty_and_malformed():
    for text in ("", "ts_ns,session,src,dst,tag,gap_ns,budget_ns\n"):
        table = GapTable.from_csv(text)
        assert len(table) == 0 and table.ends == [] and validity.over_budget_rows(table) == []
    with pytest.raises(ValueError, match="header"):
        GapTable.from_csv("ts_ns,session,src,dst,gap_ns,budget_ns\n1,k,a,b,2,3\n")
    with pytest.raises(ValueError, match="line 2: 6 fields"):
        GapTable.from_csv("ts_ns,session,src,dst,tag,gap_ns,budget_ns\n1,k,a,b,2,3\n")


def test_gaps_bin_empty(tmp_path):
    pcap = tmp_path / "f.pcap"
    g.write_pcap(pcap, [])
    report, table = client.analyse_gaps(pcap, (), bfdcap=BFDCAP)
    assert len(table) == 0 and validity.over_budget_rows(table) == []
    from_csv = GapTable.from_csv(client.csv_gaps(pcap, (), None, BFDCAP))
    assert len(from_csv) == 0 and plot.gaps_by_class(report, from_csv) == {}


def test_packet_source_prefetch_answers_the_same(tmp_path):
    from lab.judge.assess import packet_source
    pcap = tmp_path / "f.pcap"
    g.write_pcap(pcap, session(flap_events()))
    pks = client.packets(pcap, 0, 2**62, BFDCAP)
    t0, t1 = int(pks[0]["ts_ns"]), int(pks[-1]["ts_ns"])
    a, b = pks[0]["src"], pks[0]["dst"]
    mid = (t0 + t1) // 2
    queries = [[(a, b, t0, mid)], [(b, a, mid, t1)], [(a, b, t0, t1), (b, a, t0, mid)],
               [("*", "*", t0, mid)]]
    fresh = [packet_source(pcap, BFDCAP)(q) for q in queries]
    src = packet_source(pcap, BFDCAP)
    src.prefetch([(a, b, t0, t1), (b, a, t0 - 1, t1 + 1)])
    assert [src(q) for q in queries] == fresh
    assert all(fresh[:3])
