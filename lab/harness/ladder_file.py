"""ladder_file - ladder/ladder.toml as data: the levels (stress-ng loads scaled to the CPU
count), the profiles (which levels, how long, floods), and a profile's plan of steps.

A misspelt key, an unknown level or an unknown flood arm fails when the file is loaded
(TopologyError), before anything starts. Layout: ../shared/docs/ladder.md.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..rig import flood, stress
from ..topo import TopologyError
from ..util import REPO, LabError

LADDER = REPO / "ladder" / "ladder.toml"


@dataclass(frozen=True)
class Level:
    name: str
    description: str
    reference_threads: int  # counts are given at this many threads and scaled to ours
    counts: Mapping[str, int]  # stressor -> count at reference_threads
    options: tuple[str, ...] = ()  # passed as they are (scheduling, sizes)
    memory: bool = False  # memory pressure: off unless asked, never in CI
    min_cpu_share: float = 0.5  # the load ran if stress-ng got this share of all CPUs' time

    def scaled(self, ncpu: int) -> dict[str, int]:
        """ceil(count x ncpu / reference_threads), minimum 1 (ladder.md section 1)."""
        return {k: max(1, math.ceil(v * ncpu / self.reference_threads))
                for k, v in self.counts.items()}

    def load(self, ncpu: int) -> stress.Load:
        args: list[str] = []
        for k, v in self.scaled(ncpu).items():
            args += [f"--{k}", str(v)]
        return stress.Load(self.name, tuple(args) + tuple(self.options), self.description)


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    idle_s: float
    levels: tuple[str, ...]
    level_s: float
    after_each_s: float
    after_levels_s: float
    flood_arm_s: float
    flood_pps: float
    flood_recovery_s: float
    soak_s: float
    level_s_override: Mapping[str, float] = field(default_factory=dict)
    flood_rotation: bool = True
    flood_alongside: tuple[str, ...] = ()


@dataclass(frozen=True)
class FloodCfg:
    generator: str
    arms: tuple[str, ...]


@dataclass(frozen=True)
class Ladder:
    levels: Mapping[str, Level]
    profiles: Mapping[str, Profile]
    flood: FloodCfg
    source: str = ""


def _build(cls: type, table: Any, where: str, **extra: Any) -> Any:
    if not isinstance(table, Mapping):
        raise TopologyError(f"{where}: expected a table")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - names)
    if unknown:
        raise TopologyError(f"{where}: unknown key(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(names - set(extra)))})")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in table.items()}
    try:
        return cls(**kw, **extra)
    except TypeError as e:
        raise TopologyError(f"{where}: {e}") from e


def load_ladder(path: Path = LADDER) -> Ladder:
    """Load and check ladder/ladder.toml (a misspelt key or unknown level fails here)."""
    src = str(path)
    try:
        doc = tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as e:
        raise TopologyError(f"{src}: {e}") from e
    unknown = sorted(set(doc) - {"level", "profile", "flood"})
    if unknown:
        raise TopologyError(f"{src}: unknown table(s) {', '.join(unknown)}")
    levels = {}
    for i, t in enumerate(doc.get("level", [])):
        lv = _build(Level, t, f"{src} [[level]] #{i + 1}")
        if lv.name in levels:
            raise TopologyError(f"{src}: duplicate level {lv.name}")
        if not lv.counts or any(not isinstance(v, int) or v < 1 for v in lv.counts.values()):
            raise TopologyError(f"{src}: level {lv.name}: counts must be positive integers")
        levels[lv.name] = lv
    fl = _build(FloodCfg, doc.get("flood", {}), f"{src} [flood]")
    if fl.generator not in ("live", "trafgen"):
        raise TopologyError(f"{src} [flood]: generator must be live or trafgen")
    bad = [a for a in fl.arms if a not in flood.ARMS]
    if bad:
        raise TopologyError(f"{src} [flood]: unknown arm(s) {bad} (known: {list(flood.ARMS)})")
    profiles = {}
    for name, t in (doc.get("profile") or {}).items():
        p = _build(Profile, t, f"{src} [profile.{name}]", name=name)
        missing = [lv for lv in p.levels if lv not in levels]
        missing += [lv for lv in p.level_s_override if lv not in levels]
        if missing:
            raise TopologyError(f"{src} [profile.{name}]: unknown level(s) {missing}")
        bad = [a for a in p.flood_alongside if a not in flood.ARMS]
        if bad:
            raise TopologyError(f"{src} [profile.{name}]: unknown arm(s) {bad}")
        profiles[name] = p
    return Ladder(levels, profiles, fl, src)


@dataclass(frozen=True)
class PlanStep:
    """One window of the run: idle, a level, a flood arm, or a recovery/soak window."""

    name: str
    seconds: float
    kind: str  # "idle" | "level" | "flood" | "recovery" | "soak"
    level: Level | None = None
    arm: str | None = None  # flood arm of a "flood" step
    alongside: tuple[str, ...] = ()  # arms rotating during a level (hostile)
    of: str = ""  # the level or flood a recovery window belongs to


def plan(ladder: Ladder, profile: str, with_memory: bool = False,
         floods: bool = True) -> list[PlanStep]:
    """The profile's steps in order. Memory levels only with WITH_MEMORY, never for ci."""
    if profile not in ladder.profiles:
        raise LabError(f"no profile {profile!r} in {ladder.source} "
                       f"(have: {', '.join(ladder.profiles)})")
    p = ladder.profiles[profile]
    if with_memory and profile == "ci":
        raise LabError("memory levels never run in the ci profile")
    steps = [PlanStep("idle", p.idle_s, "idle")] if p.idle_s else []
    seen: dict[str, int] = {}
    for name in p.levels:
        lv = ladder.levels[name]
        if lv.memory and not with_memory:
            continue
        seen[name] = seen.get(name, 0) + 1
        sname = name if seen[name] == 1 else f"{name}#{seen[name]}"
        steps.append(PlanStep(sname, p.level_s_override.get(name, p.level_s), "level", lv,
                              alongside=p.flood_alongside if floods else ()))
        if p.after_each_s:
            steps.append(PlanStep(f"{sname}-rec", p.after_each_s, "recovery", of=sname))
    if p.after_levels_s:
        steps.append(PlanStep("levels-rec", p.after_levels_s, "recovery", of="levels"))
    if floods and p.flood_rotation and ladder.flood.arms:
        for a in ladder.flood.arms:
            steps.append(PlanStep(f"flood-{a}", p.flood_arm_s, "flood", arm=a))
        if p.flood_recovery_s:
            steps.append(PlanStep("flood-rec", p.flood_recovery_s, "recovery", of="flood"))
    if p.soak_s:
        steps.append(PlanStep("soak", p.soak_s, "soak"))
    return steps
