"""bfdcap --gaps-bin and lab.judge.gaps.GapTable: the same rows as --csv-gaps, and the
validity rules and the gap survival plot give the same answers from either."""

from __future__ import annotations

import csv
import io
import json
import subprocess

import pcapgen as g
from conftest import BFDCAP
from test_synthetic import flap_events, session

from lab.judge import bfdcap as client
from lab.judge import plot, validity

TAGS = [("a", "192.0.2.1"), ("peer-b", "192.0.2.2")]


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
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(table) > 0
    for i, r in enumerate(rows):
        assert {k: str(v) for k, v in table.row(i).items()} == r
    for prefix in ("", "peer-", "a"):
        assert validity.over_budget_rows(table, prefix) == \
            validity.over_budget_rows(text, prefix)
    peer = {"192.0.2.2"}
    assert validity.early_downs(report, peer, table) == validity.early_downs(report, peer, text)
    by_csv = plot.gaps_by_class(report, pcap, str(BFDCAP))
    by_table = plot.gaps_by_class(report, pcap, str(BFDCAP), table)
    assert {k: sorted(v) for k, v in by_csv.items()} == by_table


def test_gaps_bin_empty(tmp_path):
    pcap = tmp_path / "f.pcap"
    g.write_pcap(pcap, [])
    report, table = client.analyse_gaps(pcap, (), bfdcap=BFDCAP)
    assert len(table) == 0 and validity.over_budget_rows(table) == []


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
