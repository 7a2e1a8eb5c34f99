"""A variant's earlier sweeps on this machine (flagsweep.across.history)."""

from __future__ import annotations

from flagsweep.model.values import Num, Record, Pair, Str


class HistoryPoint(Record):
    run_id: Str
    started: Num = None
    median: Num = None
    ci95: Pair = None
    n: Num = None
    versions: dict[str, Str | None] | None = None  # "target" and each compiler -> its version
    # kernel, microcode and, when recorded, distro, image, runner (across.cause)
    environment: dict[str, Str | None] | None = None


class HistoryStep(Record):
    run_id: Str
    verdict: Str
    ratio: Num = None
    ci95: Pair = None
    why: Str | None = None
    changed: list[Str] = []                 # the versions and environment that changed with it
    found_in: Str | None = None             # the sweep whose check found it


class HistoryUnjudged(Record):
    run_id: Str
    started: Num = None
    why: Str


class HistoryLatest(Record):
    """The latest sweep of a series against its segment (the sweeps since the last step)."""
    run_id: Str
    verdict: Str                            # faster | slower | equivalent | ... | unjudged
    ratio: Num = None
    ci95: Pair = None
    why: Str | None = None
    against: list[Str] = []                 # the segment's run ids


class HistorySeries(Record):
    """One variant's earlier sweeps on this machine (flagsweep.across.history)."""
    variant: Str
    flags: list[Str]
    machine: Str
    points: list[HistoryPoint]
    steps: list[HistoryStep]
    latest: HistoryLatest | None = None
    reference: Str | None = None            # the reference binary's sha256: points are ratios to it
    metric: Str | None = None               # the series' metric (its first sweep's)
    unjudged: list[HistoryUnjudged] | None = None   # nights neither a pass nor a step, and why
