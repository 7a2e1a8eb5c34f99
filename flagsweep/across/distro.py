"""The distro report's table: a campaign's packages (campaign.json, written by
`flagsweep campaign`) read back, each change of the recipe judged per package and across them.

Per package and change: the ratio to that package's own baseline with its 95% interval and
the verdict of its own sweep (pick.pair: identical code borrows its twin's, a call within
layout luck's reach stays undecided), the text size and build CPU time against the baseline's
(pick.cost), and the package's own tests on that build. A change is **broken** for a package
when its build failed, its flags did not reach the build (the audit), its output check failed,
or its own tests fail where the baseline's pass (package_tests.fails): a distribution cannot
ship it there, whatever its speed.

Across packages, per change: pick's candidate (the geometric mean over the packages that
measured it, with the interval pooled from theirs, stats.pool; pick's costs), the packages by
verdict, the spread of their ratios, and the one flag set pick chooses with its worst package.
A package the campaign could not measure (generation or sweep failed, results file missing) is
listed with its stage and error: nothing was measured, so it is not "broken".

campaign.json is data anyone may have edited: a results path that leads out of the campaign's
folder, once every link is followed, is refused, naming the key.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from flagsweep import stats
from flagsweep.across import comparable, pick
from flagsweep.compilation import package_tests
from flagsweep.errors import FlagsweepError
from flagsweep.model import Campaign, CampaignPackage, Results, Variant, is_control
from flagsweep.results import analysis, names, reader

FILE = "campaign.json"


@dataclass
class DistroRow:
    """One package x one change."""
    package: str                             # the campaign's name for it
    version: str                             # the target's version
    variant: str                             # the variant id
    change: str                              # what people call it (results.names)
    compiler: str
    flags: list[str]
    verdict: str            # the sweep's (faster, equivalent, ...), broken, not-measured or absent
    ratio: float | None = None
    ci95: tuple[float, float] | None = None
    size_ratio: float | None = None          # text size against the baseline's
    build_cpu_ratio: float | None = None     # build CPU time against the baseline's
    tests: str = "absent"                    # passed | failed | timeout | none | absent (not run)
    why: str = ""                            # why broken, not measured or absent


@dataclass
class DistroChange:
    """One change across the measured packages."""
    variant: str
    change: str
    compiler: str
    flags: list[str]
    packages: int                            # packages measured by the campaign
    skew: pick.Skew                          # measured packages by verdict
    broken: list[str]                        # the packages it breaks
    ratio: float | None = None               # pick's geometric mean
    ci95: tuple[float, float] | None = None
    spread: tuple[float, float, float] | None = None   # smallest, median, largest ratio
    worst: pick.Pair | None = None           # the package with the largest ratio
    size_ratio: float | None = None          # pick's, over the packages
    build_cpu_ratio: float | None = None
    note: str = ""                           # why it cannot be the pick


@dataclass
class Unmeasured:
    """A package with no results to read: its stage and the error that stopped it."""
    name: str
    package: str
    stage: str
    error: str


@dataclass
class DistroPackage:
    """A package of the campaign with what it cost and where its results are."""
    name: str
    package: str
    status: str                              # the campaign's, or "unmeasured" for the report
    version: str = ""
    results: Path | None = None
    baseline_tests: str = "absent"           # its own tests on the baseline's build
    generate_seconds: float | None = None
    sweep_seconds: float | None = None


@dataclass
class DistroTable:
    campaign: Path
    recipe: str
    threshold_pct: float
    baseline: str                            # what people call the baseline
    packages: list[DistroPackage]
    rows: list[DistroRow]
    changes: list[DistroChange]
    unmeasured: list[Unmeasured]
    chosen: DistroChange | None = None
    why: str = ""                            # pick's decision in a sentence
    answer: str = ""                         # pick's paragraph: every change's skew and costs
    warnings: list[str] = field(default_factory=list)

    def total(self, key: str) -> float:
        """The campaign's cost in seconds: generate_seconds or sweep_seconds, summed."""
        return sum(getattr(p, key) or 0.0 for p in self.packages)


def build(campaign_json: Path, threshold_pct: float | None = None,
          partial: bool = False) -> DistroTable:
    """The table of the campaign at campaign_json. `partial`: a sweep stopped early (busy)
    counts as measured; without it the package is listed as not measured, with the reason."""
    campaign_json = Path(campaign_json)
    campaign = reader.load(campaign_json, "campaign")
    measured, unmeasured = _measured(campaign, campaign_json, partial)
    docs = [(path, doc) for _, path, doc in measured]
    threshold = threshold_pct or max((d.threshold_pct or stats.THRESHOLD_PCT for _, d in docs),
                                     default=stats.THRESHOLD_PCT)
    ids = change_ids(docs)
    rows = [row for p, _, doc in measured for row in _rows(p.name, doc, ids, docs)]
    table = DistroTable(campaign_json, campaign.recipe, threshold, "",
                        _packages(campaign, measured), rows, [], unmeasured)
    if not docs:
        table.why = "no package of the campaign was measured"
        return table
    picked = pick.pick([path for path, _ in docs], threshold_pct=threshold, partial=partial)
    table.baseline, table.why, table.answer = picked.baseline_label, picked.why, picked.answer
    table.changes = _changes(rows, picked, len(docs))
    chosen = picked.chosen.id if picked.chosen else None
    table.chosen = next((c for c in table.changes if c.variant == chosen), None)
    table.warnings = _warnings(docs, threshold)
    return table


def _measured(campaign: Campaign, campaign_json: Path, partial: bool):
    """([(package, results path, results)], [Unmeasured]) in the list's order."""
    folder = campaign_json.parent
    measured, unmeasured = [], []
    for i, p in enumerate(campaign.packages):
        if p.status != "swept":
            unmeasured.append(_not_swept(p))
            continue
        path = results_path(folder, p, i, campaign_json)
        if path.exists() and not path.is_file():     # a folder, or a pipe a read would wait on
            unmeasured.append(Unmeasured(p.name, p.package, "report", f"{path}: not a file"))
            continue
        try:
            doc = reader.load(path)
        except FlagsweepError as e:       # a missing or unreadable file: this package only
            unmeasured.append(Unmeasured(p.name, p.package, "report", str(e)))
            continue
        why = comparable.partial(doc)
        if why and not partial:
            unmeasured.append(Unmeasured(p.name, p.package, "sweep", why))
            continue
        measured.append((p, path, doc))
    return measured, unmeasured


def _not_swept(p: CampaignPackage) -> Unmeasured:
    if p.status == "failed":
        return Unmeasured(p.name, p.package, p.failed_stage or "?", p.error or "")
    stage = "generate" if p.status == "pending" else "sweep"
    return Unmeasured(p.name, p.package, stage, "not reached: the campaign stopped before it")


def results_path(folder: Path, p: CampaignPackage, index: int, campaign_json: Path) -> Path:
    """A package's results.json, which must be inside the campaign's folder once every link is
    followed (the file names it relative to campaign.json)."""
    key = f"key 'packages[{index}].results'"
    if not p.results:
        raise FlagsweepError(f"{campaign_json}: {key}: {p.name} is swept but names no "
                             "results file")
    try:
        path = (folder / p.results).resolve()
        inside = path.is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):      # a link loop, a NUL in the path
        inside = False
    if not inside:
        raise FlagsweepError(f"{campaign_json}: {key}: {p.results!r} is outside the "
                             f"campaign's folder {folder}: only a file inside it is read")
    return path


def _packages(campaign: Campaign, measured) -> list[DistroPackage]:
    """Every package of the list, measured or not, with its costs."""
    found = {id(p): (path, doc) for p, path, doc in measured}
    out = []
    for p in campaign.packages:
        row = DistroPackage(p.name, p.package, p.status, generate_seconds=p.generate_seconds,
                            sweep_seconds=p.sweep_seconds)
        if id(p) in found:
            row.results, doc = found[id(p)]
            row.version = doc.target_version or "?"
            row.baseline_tests = _tests(_variants(doc)[doc.baseline])
        elif p.status == "swept":
            row.status = "unmeasured"
        out.append(row)
    return out


def _variants(doc: Results) -> dict[str, Variant]:
    return {v.id: v for v in doc.variants}


def _tests(v: Variant) -> str:
    return v.build.package_tests.status if v.build.package_tests else "absent"


def change_ids(docs: list[tuple[Path, Results]]) -> list[str]:
    """Every change of any package's sweep, in first-seen order: not baselines, not controls."""
    seen: dict[str, None] = {}
    for _, doc in docs:
        for v in doc.variants:
            if v.id != doc.baseline and not is_control(v.id):
                seen.setdefault(v.id)
    return list(seen)


def _rows(name: str, doc: Results, ids: list[str],
          docs: list[tuple[Path, Results]]) -> list[DistroRow]:
    """A package's row for every change of the campaign, absent ones too."""
    variants = _variants(doc)
    return [_row(name, doc, variants[vid]) if vid in variants else _absent(name, doc, vid, docs)
            for vid in ids]


def _row(name: str, doc: Results, v: Variant) -> DistroRow:
    variants = _variants(doc)
    base = variants[doc.baseline]
    # identical code was built once: its tests and its check are its representative's
    source = variants.get(v.build.identical_to or v.id, v)
    row = DistroRow(name, doc.target_version or "?", v.id, names.label(v, doc), v.compiler,
                    v.flags, "not-measured", tests=_tests(source),
                    size_ratio=pick.cost(doc, v.id, pick.text_size),
                    build_cpu_ratio=pick.cost(doc, v.id, pick.build_cpu))
    row.why = broken(v, source, base)
    if row.why:
        row.verdict = "broken"
        return row
    measured = pick.pair(doc, v.id)
    if measured is None:
        row.why = (v.vs_baseline.why if v.vs_baseline else "") or "no comparison"
        return row
    row.ratio, row.ci95, row.verdict = measured.ratio, measured.ci95, measured.verdict
    return row


def broken(v: Variant, source: Variant, base: Variant) -> str:
    """Why the change cannot ship for this package, or "": its build failed, its flags did not
    reach the build, its output check failed, or its own tests fail where the baseline's pass."""
    b = v.build
    if b.status != "ok":
        return f"build {b.status}: {analysis.build_reason(b.detail)}"
    if b.flags_verified is False:
        return "its flags did not reach every compile and link (the audit)"
    tests = source.build.package_tests
    if package_tests.fails(tests, base.build.package_tests):
        said = "timed out" if tests.status == "timeout" else tests.status
        return f"its own tests {said} where the baseline's pass"
    if source.check is not None and source.check.status == "failed":
        return f"its output check failed: {source.check.detail or 'no detail'}"
    return ""


def _absent(name: str, doc: Results, vid: str, docs) -> DistroRow:
    """A change this package's sweep did not have: skipped (this CPU cannot run it) or not in
    its matrix."""
    v0, d0 = next((v, d) for _, d in docs for v in d.variants if v.id == vid)
    skipped = next((s.reason for s in doc.skipped or [] if s.id == vid), "")
    return DistroRow(name, doc.target_version or "?", vid, names.label(v0, d0), v0.compiler,
                     v0.flags, "absent", tests="absent",
                     why=f"skipped: {skipped}" if skipped else "not in this package's sweep")


def _changes(rows: list[DistroRow], picked: pick.Pick, packages: int) -> list[DistroChange]:
    """Each change across the packages: pick's candidate for the mean and the costs, the
    packages' own verdicts for the skew, the spread and the worst."""
    candidates = {c.id: c for c in picked.candidates}
    out = []
    for vid in dict.fromkeys(r.variant for r in rows):
        mine = [r for r in rows if r.variant == vid]
        pairs = [pick.Pair(r.package, "", r.ratio, r.ci95, r.verdict)
                 for r in mine if r.ratio is not None]
        seen = pick.Candidate(vid, mine[0].compiler, mine[0].flags, pairs)
        ratios = sorted(p.ratio for p in pairs)
        change = DistroChange(vid, mine[0].change, mine[0].compiler, mine[0].flags, packages,
                              seen.skew, [r.package for r in mine if r.verdict == "broken"],
                              worst=seen.worst, spread=(ratios[0], statistics.median(ratios),
                                                        ratios[-1]) if ratios else None)
        c = candidates.get(vid)
        if c is not None:
            change.ratio, change.ci95 = c.ratio, c.ci95
            change.size_ratio, change.build_cpu_ratio = c.size_ratio, c.build_cpu_ratio
        change.note = _note(change, mine, c)
        out.append(change)
    return out


def _note(change: DistroChange, rows: list[DistroRow], c: pick.Candidate | None) -> str:
    """Why a change cannot be the pick, in the campaign's words (pick's name machines)."""
    if change.broken:
        return f"breaks {len(change.broken)} package(s): {', '.join(change.broken)}"
    absent = [r.package for r in rows if r.verdict == "absent"]
    if c is None or absent:
        return f"not swept for {', '.join(absent)}" if absent else "not in every sweep"
    unmeasured = [r.package for r in rows if r.verdict == "not-measured"]
    if unmeasured:
        return f"not measured on {', '.join(unmeasured)}"
    return c.excluded


def _warnings(docs: list[tuple[Path, Results]], threshold: float) -> list[str]:
    """What a reader must know before trusting the across-package numbers."""
    out = []
    thresholds = {d.threshold_pct for _, d in docs if d.threshold_pct is not None}
    if thresholds - {threshold}:
        out.append(f"the sweeps used thresholds of {', '.join(f'{t:g}%' for t in sorted(thresholds))};"
                   f" the choice across packages uses {threshold:g}%, each package's verdicts "
                   "keep their sweep's")
    for path, doc in docs:
        if doc.status != "complete":
            out.append(f"{doc.target}: its sweep is {doc.status} ({doc.stop_reason or '?'}), "
                       f"so its numbers are partial ({path})")
        base = _variants(doc)[doc.baseline].build.package_tests
        if base is not None and base.status in ("failed", "timeout"):
            out.append(f"{doc.target}: its own tests fail on the baseline too ({base.status}): "
                       "no change is called broken there for failing them")
    return out
