"""runfiles - the JSON files of a run folder and of results/, checked against their JSON Schemas
(results/schema/*.schema.json, Draft 2020-12) where they are written and where they are read.

    phases    phases.json, and the "phases" of run.json: [{name, start_ns, end_ns, load}]
    summary   summary.json (lab.judge.summarise; read by gate, baseline, plot)
    baseline  results/baselines/*.json (python3 -m lab baseline; read by gate)

A file that does not match gets one error, from here: RunFileError (a ValueError) naming the
file, the place in it and what is wrong, e.g. "x/summary.json: at levels.L4: 'duts' is a
required property (schema summary)".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # python3-jsonschema (packaging/deps.txt)

from .util import REPO

SCHEMA_DIR = REPO / "results" / "schema"
KINDS = ("phases", "summary", "baseline", "scale")


class RunFileError(ValueError):
    """A run file that is missing, not JSON, or does not match its schema."""


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    store = {}
    for k in KINDS:
        doc = json.loads((SCHEMA_DIR / f"{k}.schema.json").read_text())
        store[doc["$id"]] = doc
    schema = store[f"urn:xdp-bfd-lab:schema:{kind}"]
    resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    return jsonschema.Draft202012Validator(schema, resolver=resolver)


def _message(e: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in e.absolute_path) or "top level"
    if e.validator == "const":
        return f"at {where}: {e.instance!r}, expected {e.validator_value}"
    if e.validator == "enum":
        return f"at {where}: {e.instance!r}, expected one of {e.validator_value}"
    return f"at {where}: {e.message}"


def check(kind: str, doc: Any, where: str | Path) -> Any:
    """DOC if it matches schema KIND, else RunFileError naming WHERE. Returns DOC."""
    errors = list(_validator(kind).iter_errors(doc))
    # a file of another kind says so in its "schema" field: that is the error to name
    first = [e for e in errors if list(e.absolute_path) == ["schema"]]
    err = first[0] if first else jsonschema.exceptions.best_match(errors)
    if err is not None:
        raise RunFileError(f"{where}: {_message(err)} (schema {kind})")
    return doc


def read(kind: str, path: Path) -> Any:
    """PATH parsed and checked against schema KIND (RunFileError when missing or bad)."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise RunFileError(f"{path}: {e.strerror or e}") from e
    except ValueError as e:
        raise RunFileError(f"{path}: not JSON ({e})") from e
    return check(kind, doc, path)


def write(kind: str, path: Path, doc: Any) -> None:
    """Check DOC against schema KIND, then write it (indent 1, a final newline)."""
    check(kind, doc, path)
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


@dataclass
class Phase:
    """One step of a run: [start_ns, end_ns) in CLOCK_REALTIME ns, and the load it ran."""

    name: str
    start_ns: int
    end_ns: int
    load: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "load": self.load}


def write_phases(path: Path, phases: list[Phase]) -> None:
    write("phases", path, [p.as_dict() for p in phases])


def read_phases(path: Path) -> list[Phase]:
    return [Phase(**p) for p in read("phases", path)]
