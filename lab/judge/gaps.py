"""gaps - bfdcap's counted gaps of the main window as numpy columns (`bfdcap --gaps-bin`).

The same rows as `bfdcap --csv-gaps`, in the same order, without printing and parsing
millions of CSV lines: at the 1,024-session mesh a ladder run has about 6 million gaps, and
reading them through the csv module took minutes (docs/lab.md, "Analysis at scale"). The
validity rules only need the few rows over budget and a handful looked up by time; the gap
survival plot needs every gap per class, sorted. Nothing here computes a figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

RECORD = np.dtype([("ts_ns", "=i8"), ("gap_ns", "=i8"), ("budget_ns", "=i8"),
                   ("session", "=u4"), ("end", "=u4")])  # struct gap_record (capture/track.h)


class GapTable:
    """The counted gaps of one bfdcap report: columns ts_ns, gap_ns, budget_ns and end (an
    index into ends: (session key, src, dst, tag) as in the CSV)."""

    def __init__(self, rec: np.ndarray, report: dict[str, Any]) -> None:
        self.ts_ns = rec["ts_ns"]
        self.gap_ns = rec["gap_ns"]
        self.budget_ns = rec["budget_ns"]
        self.ends: list[tuple[str, str, str, str]] = []
        index: dict[tuple[int, int], int] = {}
        for i, s in enumerate(report.get("sessions") or []):
            for e in s.get("ends") or []:
                ei = 0 if e.get("src") == s["addr_a"] else 1
                index[(i, ei)] = len(self.ends)
                self.ends.append((s["key"], e["src"], s["addr_b"] if ei == 0 else s["addr_a"],
                                  e.get("tag") or ""))
        keys = rec["session"].astype(np.int64) * 2 + rec["end"]
        lut = np.full(2 * len(report.get("sessions") or []) + 2, -1, dtype=np.int64)
        for (i, ei), k in index.items():
            lut[2 * i + ei] = k
        self.end = lut[keys] if len(keys) else np.zeros(0, dtype=np.int64)
        if (self.end < 0).any():
            raise ValueError("bfdcap --gaps-bin names an end its report does not have")

    @classmethod
    def load(cls, path: Path | str, report: dict[str, Any]) -> GapTable:
        return cls(np.fromfile(path, dtype=RECORD), report)

    def __len__(self) -> int:
        return len(self.ts_ns)

    def row(self, i: int) -> dict[str, Any]:
        key, src, dst, tag = self.ends[int(self.end[i])]
        return {"ts_ns": int(self.ts_ns[i]), "session": key, "src": src, "dst": dst,
                "tag": tag, "gap_ns": int(self.gap_ns[i]), "budget_ns": int(self.budget_ns[i])}

    def over_budget(self, tag_prefix: str = "") -> list[dict[str, Any]]:
        """The rows (of tags starting with TAG_PREFIX) whose gap exceeds a nonzero budget, in
        order, as lab.judge.validity.over_budget_rows() gives them from the CSV."""
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
        """{KEY_OF(session key, src): every gap_ns of the ends with that key, ascending}."""
        names: list[Any] = []
        ids: dict[Any, int] = {}
        gid = np.zeros(len(self.ends) + 1, dtype=np.int64)
        for k, (key, src, _, _) in enumerate(self.ends):
            gid[k] = ids.setdefault(key_of(key, src), len(ids))
            if gid[k] == len(names):
                names.append(key_of(key, src))
        g_row = gid[self.end]
        order = np.lexsort((self.gap_ns, g_row))
        g_sorted, gaps = g_row[order], self.gap_ns[order]
        cuts = np.flatnonzero(np.diff(g_sorted)) + 1
        out: dict[Any, list[int]] = {}
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(order)]):
            if hi > lo:
                out[names[int(g_sorted[lo])]] = gaps[lo:hi].tolist()
        return out
