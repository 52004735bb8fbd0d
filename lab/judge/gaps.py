"""gaps - bfdcap's counted gaps of the main window as numpy columns (`bfdcap --gaps-bin`,
or `--csv-gaps` text: GapTable.from_csv()).

The same rows as `bfdcap --csv-gaps`, in the same order, without printing and parsing
millions of CSV lines: at the 1,024-session mesh a ladder run has about 6 million gaps, and
reading them through the csv module took minutes (docs/lab.md, "Analysis at scale"). The
validity rules only need the few rows over budget and a handful looked up by time; the gap
survival plot needs every gap per class, sorted. Nothing here computes a figure.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import numpy as np

RECORD = np.dtype([("ts_ns", "=i8"), ("gap_ns", "=i8"), ("budget_ns", "=i8"),
                   ("session", "=u4"), ("end", "=u4")])  # struct gap_record (capture/track.h)
CSV_COLUMNS = ("ts_ns", "session", "src", "dst", "tag", "gap_ns", "budget_ns")  # --csv-gaps


class GapTable:
    """The counted gaps of one bfdcap report: columns ts_ns, gap_ns, budget_ns and end (an
    index into ends: (session key, src, dst, tag) as in the CSV). The one reader of the gaps
    for the judge (lab.judge.validity, episodes, plot): load() reads `--gaps-bin`,
    from_csv() reads `--csv-gaps` text (the rule tests' fixtures)."""

    def __init__(self, ts_ns: np.ndarray, gap_ns: np.ndarray, budget_ns: np.ndarray,
                 end: np.ndarray, ends: list[tuple[str, str, str, str]]) -> None:
        self.ts_ns = ts_ns
        self.gap_ns = gap_ns
        self.budget_ns = budget_ns
        self.end = end
        self.ends = ends

    @classmethod
    def from_records(cls, rec: np.ndarray, report: dict[str, Any]) -> GapTable:
        """The table of REC (struct gap_record rows), its ends named by REPORT (the bfdcap
        report of the same pass: a record's session is an index into its sessions)."""
        ends: list[tuple[str, str, str, str]] = []
        index: dict[tuple[int, int], int] = {}
        for i, s in enumerate(report.get("sessions") or []):
            for e in s.get("ends") or []:
                ei = 0 if e.get("src") == s["addr_a"] else 1
                index[(i, ei)] = len(ends)
                ends.append((s["key"], e["src"], s["addr_b"] if ei == 0 else s["addr_a"],
                             e.get("tag") or ""))
        keys = rec["session"].astype(np.int64) * 2 + rec["end"]
        lut = np.full(2 * len(report.get("sessions") or []) + 2, -1, dtype=np.int64)
        for (i, ei), k in index.items():
            lut[2 * i + ei] = k
        end = lut[keys] if len(keys) else np.zeros(0, dtype=np.int64)
        if (end < 0).any():
            raise ValueError("bfdcap --gaps-bin names an end its report does not have")
        return cls(rec["ts_ns"], rec["gap_ns"], rec["budget_ns"], end, ends)

    @classmethod
    def load(cls, path: Path | str, report: dict[str, Any]) -> GapTable:
        return cls.from_records(np.fromfile(path, dtype=RECORD), report)

    @classmethod
    def from_csv(cls, csv_text: str) -> GapTable:
        """The table of `bfdcap --csv-gaps` text (header line first; "" has no rows): the
        same rows in the same order as load() of `--gaps-bin` from the same pass, so every
        method answers the same. Only ends differs: it lists the ends that have a row, in
        the order of their first row (load(): every end of the report, in its order)."""
        reader = csv.reader(io.StringIO(csv_text))
        header = next(reader, None)
        if header is None:
            return cls(*(np.zeros(0, dtype=np.int64) for _ in range(4)), [])
        try:
            col = [header.index(c) for c in CSV_COLUMNS]
        except ValueError:
            raise ValueError(f"bfdcap --csv-gaps header {header}: not {list(CSV_COLUMNS)}") \
                from None
        ts: list[int] = []
        gap: list[int] = []
        budget: list[int] = []
        end: list[int] = []
        index: dict[tuple[str, str, str, str], int] = {}  # the ends, in order of first row
        for line in reader:
            if not line:
                continue  # a blank line, as csv.DictReader skips it
            if len(line) != len(header):
                raise ValueError(f"bfdcap --csv-gaps line {reader.line_num}: {len(line)} "
                                 f"fields, not {len(header)}")
            t, key, src, dst, tag, g, b = (line[i] for i in col)
            ts.append(int(t))
            gap.append(int(g))
            budget.append(int(b))
            end.append(index.setdefault((key, src, dst, tag), len(index)))
        return cls(*(np.array(x, dtype=np.int64) for x in (ts, gap, budget, end)), list(index))

    def __len__(self) -> int:
        return len(self.ts_ns)

    def row(self, i: int) -> dict[str, Any]:
        key, src, dst, tag = self.ends[int(self.end[i])]
        return {"ts_ns": int(self.ts_ns[i]), "session": key, "src": src, "dst": dst,
                "tag": tag, "gap_ns": int(self.gap_ns[i]), "budget_ns": int(self.budget_ns[i])}

    def over_budget(self, tag_prefix: str = "") -> list[dict[str, Any]]:
        """The rows (of tags starting with TAG_PREFIX) whose gap exceeds a nonzero budget, in
        order (lab.judge.validity.over_budget_rows())."""
        idx = np.flatnonzero((self.budget_ns > 0) & (self.gap_ns > self.budget_ns))
        rows = (self.row(i) for i in idx)
        return [r for r in rows if r["tag"].startswith(tag_prefix)]

    def at_times(self, ts_ns: set[int]) -> list[dict[str, Any]]:
        """The rows whose ts_ns is one of TS_NS, in order."""
        if not ts_ns or not len(self):
            return []
        idx = np.flatnonzero(np.isin(self.ts_ns, np.fromiter(ts_ns, dtype=np.int64)))
        return [self.row(i) for i in idx]

    def sorted_by_end_key(self, key_of: Any) -> dict[Any, list[int]]:
        """{KEY_OF(session key, src, tag): every gap_ns of the ends with that key,
        ascending}."""
        names: list[Any] = []
        ids: dict[Any, int] = {}
        gid = np.zeros(len(self.ends) + 1, dtype=np.int64)
        for k, (key, src, _, tag) in enumerate(self.ends):
            gid[k] = ids.setdefault(key_of(key, src, tag), len(ids))
            if gid[k] == len(names):
                names.append(key_of(key, src, tag))
        g_row = gid[self.end]
        order = np.lexsort((self.gap_ns, g_row))
        g_sorted, gaps = g_row[order], self.gap_ns[order]
        cuts = np.flatnonzero(np.diff(g_sorted)) + 1
        out: dict[Any, list[int]] = {}
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(order)]):
            if hi > lo:
                out[names[int(g_sorted[lo])]] = gaps[lo:hi].tolist()
        return out
