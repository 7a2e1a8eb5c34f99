"""Pick: one flag set for every machine (and program) given, for a distribution's CFLAGS.

`flagsweep pick RESULTS... [--baseline-isa x86-64-v2]`. The candidates are the variants every
results file measured against the same baseline flags, minus those some machine cannot run
(each machine's CPU flags from its results, judged like the matrix's CPU filter), minus
`-march=native`/`-mtune=native` (it means a different CPU on every machine), and with
`--baseline-isa` minus those the least CPU of that x86-64 level cannot run.

Each candidate's change is the geometric mean of its ratio to the baseline over every
(program, machine) pair, every pair weighted alike (the distribution ships one build to all of
them), with a 95% CI that combines the pairs' own intervals as independent estimates
(stats.pool, which `flagsweep suite` uses too).
The pick is the candidate with the lowest geometric mean whose whole interval lies below
1 - threshold; none, and the baseline stays. Every pair where the pick is slower is listed.

A distribution's decision is rarely the mean alone: beside it each candidate shows its skew
(on how many programs it is faster, equivalent, slower or undecided, and its worst loss with
the interval), and its costs: the loaded image's text size and the build's CPU time against
the baseline's, geometric means over the programs. `answer` says it in one paragraph.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from flagsweep import stats
from flagsweep.across import comparable, merge
from flagsweep.errors import FlagsweepError
from flagsweep.host import cpu
from flagsweep.results import confirmation, names, reader
from flagsweep.model import Build, Results, is_control


@dataclass
class Pair:
    program: str
    machine: str
    ratio: float
    ci95: tuple[float, float] | None
    verdict: str


@dataclass(frozen=True)
class Skew:
    """A candidate's pairs counted by verdict; undecided: inconclusive, or anything else."""
    faster: int
    equivalent: int
    slower: int
    undecided: int


@dataclass
class Candidate:
    id: str
    compiler: str
    flags: list[str]
    pairs: list[Pair] = field(default_factory=list)
    excluded: str = ""                       # why it cannot be the pick
    ratio: float | None = None               # geometric mean over the pairs
    ci95: tuple[float, float] | None = None
    # the interval the pick rests on: the pooled one adjusted for choosing among the
    # candidates (stats.fcr_intervals); None where the estimate is inside the band
    ci_fcr: tuple[float, float] | None = None
    label: str = ""                          # what people call it (results.names)
    size_ratio: float | None = None          # text size against the baseline's, over programs
    build_cpu_ratio: float | None = None     # build CPU time against the baseline's

    @property
    def losses(self) -> list[Pair]:
        return [p for p in self.pairs if p.verdict == "slower" or (p.ci95 and p.ci95[0] > 1)]

    @property
    def skew(self) -> Skew:
        """Pairs by verdict: faster, equivalent (identical code counts), slower, undecided."""
        verdicts = [p.verdict for p in self.pairs]
        faster, slower = verdicts.count("faster"), verdicts.count("slower")
        equivalent = verdicts.count("equivalent") + verdicts.count("identical-code")
        return Skew(faster, equivalent, slower, len(verdicts) - faster - equivalent - slower)

    @property
    def worst(self) -> Pair | None:
        return max(self.pairs, key=lambda p: p.ratio, default=None)


@dataclass
class Pick:
    baseline: str
    programs: list[str]
    machines: list[str]
    candidates: list[Candidate]
    chosen: Candidate | None
    why: str
    levels: list[str]                        # per program: is an -march=x86-64-vN build worth it
    answer: str = ""                         # the decision in one paragraph
    baseline_label: str = ""                 # what people call the baseline


def pick(paths: list[Path], baseline_isa: str | None = None, threshold_pct: float = stats.THRESHOLD_PCT,
         partial: bool = False) -> Pick:
    """`partial`: take sweeps stopped early (busy) too; else such a file is refused."""
    docs = [(Path(p), reader.load(Path(p))) for p in paths]
    comparable.refuse_partial(docs, partial)
    by_program = _by_program(docs)
    baseline = _common_baseline(docs)
    least = cpu.host_of_level(baseline_isa) if baseline_isa else None
    candidates = [_candidate(vid, docs, least, baseline_isa) for vid in _common_ids(docs)]
    for c in candidates:
        _combine(c)
    for c in candidates:
        c.size_ratio = _cost(c.id, by_program, text_size)
        c.build_cpu_ratio = _cost(c.id, by_program, build_cpu)
    doc0 = docs[0][1]
    named = names.label(next(v for v in doc0.variants if v.id == doc0.baseline), doc0)
    chosen, why = _choose(candidates, named if doc0.distro else baseline, threshold_pct)
    p = Pick(baseline, sorted(by_program), sorted({merge.label(d) for _, d in docs}),
             candidates, chosen, why, _level_answers(candidates, docs))
    p.baseline_label = named if doc0.distro else baseline
    p.answer = answer(p, threshold_pct, p.baseline_label)
    return p


def text_size(b: Build) -> float | None:
    """The loaded image's text bytes (build.sizes): what a change adds to every install."""
    return (b.sizes or {}).get("text")


def build_cpu(b: Build) -> float | None:
    """The build's CPU seconds (build.cpu_seconds): what a change adds to every rebuild."""
    return b.cpu_seconds


def cost(doc: Results, vid: str, of: Callable[[Build], float | None]) -> float | None:
    """A variant's build cost (`of`: text_size, build_cpu) against its baseline's in one
    sweep; None without both figures."""
    builds = {v.id: v.build for v in doc.variants}
    mine, base = (of(builds[i]) if i in builds else None for i in (vid, doc.baseline))
    return mine / base if mine and base else None


def _cost(vid: str, by_program: dict[str, list], of: Callable[[Build], float | None]
          ) -> float | None:
    """The geometric mean over programs of a build's cost against its baseline's (one result
    per program: the binaries are the same on every machine); None without every figure."""
    ratios = [cost(group[0][1], vid, of) for group in by_program.values()]
    if not ratios or None in ratios:
        return None
    return math.exp(sum(map(math.log, ratios)) / len(ratios))


def answer(p: Pick, threshold_pct: float, baseline: str) -> str:
    """The decision as a distribution's mailing list would read it: the pick or why none, each
    candidate's skew and costs in a sentence, the worst loss named."""
    lines = [f"Across {len(p.programs)} program(s) on {len(p.machines)} result(s), against "
             f"{baseline}: {p.why}."]
    for c in sorted((c for c in p.candidates if c.ratio), key=lambda c: c.ratio):
        s, worst = c.skew, c.worst
        text = (f"{c.label or ' '.join(c.flags)}: {stats.change_text(c.ratio, c.ci95)}; faster "
                f"on {s.faster}, equivalent on {s.equivalent}, slower on {s.slower}, "
                f"undecided on {s.undecided} of {len(c.pairs)}")
        if worst and worst.ratio > 1:
            text += f"; worst {worst.program} {stats.change_text(worst.ratio, worst.ci95)}"
        costs = [f"text size {_signed(c.size_ratio)}" if c.size_ratio else "",
                 f"build CPU {_signed(c.build_cpu_ratio)}" if c.build_cpu_ratio else ""]
        text += "".join(f"; {x}" for x in costs if x)
        lines.append(text + (f" (not eligible: {c.excluded})" if c.excluded else "") + ".")
    return " ".join(lines)


def _signed(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def _by_program(docs: list[tuple[Path, Results]]) -> dict[str, list]:
    """Results grouped by target; within a target they must merge (comparable.ACROSS_MACHINES)."""
    groups: dict[str, list] = defaultdict(list)
    for path, doc in docs:
        groups[doc.target].append((path, doc))
    for group in groups.values():
        comparable.check(group, "picked from together", comparable.ACROSS_MACHINES)
    return groups


def _common_baseline(docs: list[tuple[Path, Results]]) -> str:
    flags = {comparable.baseline_flags(doc): path for path, doc in docs}
    if len(flags) > 1:
        raise FlagsweepError("the results compare against different baselines ("
                             + "; ".join(f"{path}: {b}" for b, path in flags.items())
                             + "): a pick needs one reference build for every machine")
    return next(iter(flags))


def _common_ids(docs: list[tuple[Path, Results]]) -> list[str]:
    ids = [[v.id for v in doc.variants if v.id != doc.baseline
            and not is_control(v.id)] for _, doc in docs]
    common = set(ids[0]).intersection(*ids[1:])
    return [vid for vid in ids[0] if vid in common]


def _candidate(vid: str, docs, least, level: str | None) -> Candidate:
    v0 = next(v for v in docs[0][1].variants if v.id == vid)
    c = Candidate(vid, v0.compiler, v0.flags, label=names.label(v0, docs[0][1]))
    if any(re.match(r"-m(arch|tune|cpu)=native$", f) for f in c.flags):
        c.excluded = "-march=native is a different CPU on every machine"
    for path, doc in docs:
        host = cpu.host_from_machine(doc.machine.dump())
        runs = cpu.can_run_flags(tuple(c.flags), c.compiler, host)
        if not runs.ok and not c.excluded:
            c.excluded = f"{merge.label(doc)} cannot run it: {runs.reason}"
        measured = pair(doc, vid)
        if measured is None and not c.excluded:
            c.excluded = f"not measured on {merge.label(doc)}"
        if measured:
            c.pairs.append(measured)
    if least is not None and not c.excluded:
        runs = cpu.can_run_flags(tuple(c.flags), c.compiler, least)
        if not runs.ok:
            c.excluded = f"not every {level} CPU can run it: {runs.reason}"
    return c


def pair(doc: Results, vid: str) -> Pair | None:
    """That machine's ratio to its baseline; identical code borrows its twin's comparison. A
    faster/slower call layout luck could give, not confirmed over layouts, is not decided
    there (results.confirmation.final_verdict): it counts as undecided, never as a win or a
    loss of that program."""
    variants = {v.id: v for v in doc.variants}
    source = variants[vid].build.identical_to or vid
    if source == doc.baseline:
        return Pair(doc.target, merge.label(doc), 1.0, None, "identical-code")
    vs = variants[source].vs_baseline if source in variants else None
    if vs is None or vs.ratio is None or vs.verdict == "not-measured":
        return None
    return Pair(doc.target, merge.label(doc), vs.ratio, tuple(vs.ci95) if vs.ci95 else None,
                confirmation.final_verdict(vs))


def _combine(c: Candidate) -> None:
    """The geometric mean over every pair (stats.pool); none while a pair has no interval."""
    pooled = _pooled(c)
    if pooled:
        c.ratio, c.ci95 = pooled.ratio, pooled.ci95


def _pooled(c: Candidate) -> stats.RatioEstimate | None:
    usable = [p for p in c.pairs if p.ci95 or p.verdict == "identical-code"]
    if not usable or len(usable) < len(c.pairs):
        return None
    return stats.pool([(p.ratio, p.ci95) for p in usable])


def _choose(candidates: list[Candidate], baseline: str, threshold_pct: float):
    """The fastest eligible candidate whose interval lies wholly beyond the threshold.

    Picking the best of many candidates by their own 95% intervals is the selection that
    false-coverage-rate intervals are for: with ten candidates all exactly at the threshold,
    one of ten 95% intervals clears it by chance in 13-16% of draws. Each candidate's pooled
    interval is adjusted over all eligible candidates (stats.fcr_intervals; Benjamini &
    Yekutieli, JASA 2005), as a sweep's faster/slower calls are."""
    pooled = {c.id: p for c in candidates if not c.excluded and (p := _pooled(c)) is not None}
    eligible = [c for c in candidates if c.id in pooled]
    stats.fcr_intervals(list(pooled.values()), threshold_pct)
    threshold = stats.fraction(threshold_pct)
    for c in eligible:
        c.ci_fcr = pooled[c.id].ci_fcr
    winners = [c for c in eligible if c.ci_fcr is not None and c.ci_fcr[1] < 1 - threshold]
    if not winners:
        return None, (f"no candidate was faster than the baseline ({baseline}) by more than "
                      f"{threshold_pct:g}% across every machine and program ({len(eligible)} "
                      "eligible, intervals adjusted for choosing among them); keep the baseline")
    best = min(winners, key=lambda c: c.ratio)
    level = 100 * (pooled[best.id].fcr_level or 0.95)
    return best, (f"{best.label or ' '.join(best.flags)}: {stats.change_text(best.ratio, best.ci95)} "
                  f"geometric mean over {len(best.pairs)} program x machine pairs ({level:.4g}% "
                  f"interval, adjusted for choosing among {len(eligible)}: "
                  f"{stats.change_text(best.ratio, best.ci_fcr).split(' ', 1)[1]}); slower on "
                  f"{len(best.losses)} of them")


def _level_answers(candidates: list[Candidate], docs) -> list[str]:
    """'Is an -march=x86-64-vN build worth shipping?', per program, on the machines that run it."""
    out = []
    for c in candidates:
        level = next((f.split("=", 1)[1] for f in c.flags if re.fullmatch(r"-march=x86-64-v\d", f)), None)
        if level is None:
            continue
        for program in sorted({p.program for p in c.pairs} | {d.target for _, d in docs}):
            mine = Candidate(c.id, c.compiler, c.flags, [p for p in c.pairs if p.program == program])
            _combine(mine)
            lacking = [merge.label(d) for _, d in docs if d.target == program and not
                       cpu.can_run_flags(tuple(c.flags), c.compiler,
                                         cpu.host_from_machine(d.machine.dump())).ok]
            change = stats.change_text(mine.ratio, mine.ci95) if mine.ratio else "not measured"
            out.append(f"{program}: {c.label or ' '.join(c.flags)} {change} on {len(mine.pairs)} machine(s) "
                       f"that run {level}" + (f"; cannot run on {len(lacking)}" if lacking else ""))
    return out
