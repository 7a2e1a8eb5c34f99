"""The variants table and the builds section: one row per variant of results.json, what it
measured against the baseline, and how its binary was built."""

from __future__ import annotations

import os
import shlex
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from flagsweep import stats
from flagsweep.compilation import binaries, dependency, package_tests
from flagsweep.report.formats import (
    LUCK_SUFFIX,
    VERDICT_TEXT,
    ci_pct_text,
    column,
    number,
    p_text,
    pct,
    signed_pct,
    times100,
)
from flagsweep import model
from flagsweep.results import confirmation, names
from flagsweep.model import AA_SUFFIX, is_control

# What a variant without a summary or a comparison reads as: nothing measured.
NO_SUMMARY = model.Summary()
NO_COMPARISON = model.VsBaseline(verdict="")
NO_CHECK = model.Check(status="")


@dataclass
class VariantRow:
    id: str
    label: str
    flags: str
    compiler: str
    role: str                        # "baseline" | "twin" | ""
    verdict: str                     # a VERDICTS key or "baseline"
    change_pct: float | None
    change_text: str
    ci_text: str
    p_adjusted: float | None
    p_text: str
    median: float | None
    median_text: str
    cv_pct: float | None
    n: int
    outliers: int
    retaken: int                     # runs taken again because the machine disturbed them
    size_bytes: int | None
    same_code_as: str
    check: str
    check_detail: str
    why: str
    stopped_at: int | None = None    # stopped early at a final verdict, after this many rounds
    quality_text: str = ""           # the quality check's figures: "SNR 38.42 dB (baseline 38.44)"
    # Within layout luck's reach (results.confirmation): its status and why, "" when beyond it.
    luck: str = ""
    luck_why: str = ""
    own_tests: str = ""              # "fails its own tests" (the package's suite), else ""

    @property
    def shown(self) -> str:
        """The verdict as the report shows it: a faster/slower call layout luck could give and
        no comparison over layouts confirmed is "faster-luck" (or "slower-luck")."""
        unsettled = self.luck and self.luck != confirmation.CONFIRMED
        return self.verdict + LUCK_SUFFIX if unsettled else self.verdict

    @property
    def badge(self) -> str:
        return VERDICT_TEXT[self.shown]

    @property
    def finding(self) -> str:
        """The row in the findings: its change, or why it has none."""
        if self.luck:       # its intervals are in ci_text; the why's first clause says the rest
            return f"{self.change_text} {self.ci_text}: {self.luck_why.split(': ')[0]}".strip()
        if self.verdict in ("faster", "slower", "equivalent", "inconclusive"):
            return f"{self.change_text} {self.ci_text}".strip()
        if self.verdict == "identical-code":
            return f"same code as {self.same_code_as}"
        if self.why:
            return self.why
        if self.own_tests:
            return self.own_tests
        return self.check_detail.splitlines()[0] if self.check_detail else ""


@dataclass
class BuildRow:
    id: str
    status: str
    verified: bool
    compiles: int | None
    seconds: str
    size: str
    compile_line: str
    log_href: str | None
    log_path: str
    detail: str
    shows: str          # what its folded part holds: compile line, problems, or what it is
    text: str = ""      # the loaded image's executable and read-only bytes (ELF text)
    cpu: str = ""       # the build's CPU seconds
    mode: str = ""      # LTO and PGO, each when verified
    tests: str = ""     # the package's own suite: "passed (1.2 s)", "failed (see LOG)", ...
    tests_tail: str = ""   # a failed suite's last log lines


def metric_values(samples: dict, metric: str) -> list[float | None]:
    """The primary metric per counted sample, aligned with the other columns; cpu_s is
    user + sys, as results.metric_of has it."""
    if metric == "cpu_s":
        return [u + s if u is not None and s is not None else None
                for u, s in zip(samples.get("user_s") or [], samples.get("sys_s") or [])]
    return list(samples.get(metric) or [])


def variant_row(v: model.Variant, doc: model.Results) -> VariantRow:
    s, c = v.summary or NO_SUMMARY, v.vs_baseline or NO_COMPARISON
    role = ("baseline" if v.id == doc.baseline
            else "twin" if v.id.endswith(AA_SUFFIX) else "")
    verdict = "baseline" if role == "baseline" else c.verdict or "not-measured"
    change = pct(c.ratio)
    check, b = v.check or NO_CHECK, v.build
    luck = c.layout_luck
    return VariantRow(
        id=v.id, label=names.label(v, doc), flags=" ".join(v.flags), compiler=v.compiler,
        role=role, verdict=verdict, change_pct=change,
        change_text=signed_pct(change) if change is not None and role != "baseline" else "",
        ci_text=ci_with_fcr(c, doc.threshold_pct) + over_layouts_text(luck),
        p_adjusted=c.p_adjusted,
        p_text=p_text(c.p_adjusted), median=s.median,
        median_text=number(s.median), cv_pct=times100(s.cv),
        n=s.n or 0, outliers=s.outliers or 0, retaken=s.retaken or 0,
        size_bytes=b.size_bytes, same_code_as=b.identical_to or "",
        check=check.status if b.status == "ok" else b.status,
        check_detail=check.detail or getattr(b, "detail", None) or "",
        why=c.why or "", stopped_at=s.stopped_at,
        quality_text=quality_text(check.quality), luck=luck.status if luck else "",
        luck_why=(luck.why or "") if luck else "", own_tests=own_tests(v, doc))


def own_tests(v: model.Variant, doc: model.Results) -> str:
    """'fails its own tests' when the package's suite fails on this build and passes on the
    baseline's (jobs/checks.py left it untimed), else ""."""
    base = next((d.build.package_tests for d in doc.variants if d.id == doc.baseline), None)
    tests = v.build.package_tests
    if v.id == doc.baseline or not package_tests.fails(tests, base):
        return ""
    return f"fails its own tests ({tests.status}, {tests.log})"


def over_layouts_text(luck: model.LayoutLuck | None) -> str:
    """The interval over layouts of a row measured again, after its one-layout one:
    "; over 6 layouts [-4.1, -1.0]"."""
    over = luck.over_layouts if luck else None
    if over is None or not over.ci95:
        return ""
    return f"; over {over.layouts} layouts {ci_pct_text(over.ci95)}"


def luck_note(doc: model.Results, rows: list[VariantRow]) -> str:
    """What "one layout, within layout luck" means, when a row of this sweep reads so."""
    c = doc.recommendation.confirmation if doc.recommendation else None
    if c is None or not any(r.luck for r in rows) or c.reach_pct is None:
        return ""
    return (f"A faster or slower call whose interval, with one build's layout luck in it (reach "
            f"{c.reach_pct:.1f}%: {c.reach_source}), reaches within the threshold could be "
            "the luck of one build's code layout: it reads \"one layout, within layout luck\" "
            "and is not settled until the same comparison over relinked layouts calls it the "
            "same way (docs/statistics.md, \"Confirmed over layouts\").")


def quality_text(q: model.Quality | None) -> str:
    """The decoded quality in a table cell: its SNR, the baseline's beside it when it is not
    the baseline, and the product's size."""
    if not q:
        return ""
    def db(x):
        return "no noise" if x is None else f"{x:.2f} dB"
    # Absent on the baseline itself; null beside a variant when the baseline had no noise.
    base = (f" (baseline {db(q.baseline_snr_db)})"
            if "baseline_snr_db" in q.model_fields_set else "")
    size = f", {q.size_bytes:,} bytes" if q.size_bytes is not None else ""
    return f"SNR {db(q.snr_db)}{base}{size}"


def ci_with_fcr(c: model.VsBaseline, threshold_pct: float | None) -> str:
    """The 95% CI, then the false-coverage adjusted one where the verdict rests on it (the 95%
    one clears the threshold and the adjusted one is wider): "[+1.4, +1.8]; 99.5% [+1.4, +1.9]"."""
    text = ci_pct_text(c.ci95)
    ci95, fcr, level = c.ci95, c.ci_fcr, c.fcr_level
    if not (ci95 and fcr and level and level > 0.95 + 1e-9 and threshold_pct is not None):
        return text
    t = stats.fraction(threshold_pct)
    if not (ci95[1] < 1 - t or ci95[0] > 1 + t):
        return text
    return f"{text}; {stats.level_text(level)} {ci_pct_text(fcr)}"


@dataclass
class Spending:
    """Where the sweep's rounds went: the variants that stopped at a final verdict, the runs
    that saved, and the comparisons still open with what would likely close them."""
    stopped: list[str]               # "-O0 after 12 of 30 rounds (slower)"
    saved: int
    open: list[str]                  # "-O3: roughly 45 rounds would likely decide"

    @property
    def sentences(self) -> list[str]:
        out = []
        if self.stopped:
            out.append(f"Stopped early, their verdicts final (not measured again): "
                       f"{'; '.join(self.stopped)}; {self.saved} runs not spent.")
        if self.open:
            out.append(f"Still open: {'; '.join(self.open)}.")
        return out


def spending(doc: model.Results, rows: list[VariantRow]) -> Spending:
    ran = max((r.n for r in rows if r.role == "baseline"), default=0)
    by_id = {v.id: v for v in doc.variants}
    stopped = [f"{r.label} after {r.stopped_at} of {ran} rounds ({r.verdict})"
               for r in rows if r.stopped_at]
    still = []
    for r in rows:
        c = by_id[r.id].vs_baseline or NO_COMPARISON
        if r.verdict != "inconclusive":
            continue
        if c.rounds_needed:
            still.append(f"{r.label}: roughly {c.rounds_needed} rounds would likely decide")
        elif getattr(c, "layouts", None):
            still.append(f"{r.label}: more layouts, not more rounds, would narrow it")
        else:
            still.append(f"{r.label}: undecided")
    saved = (doc.measurement.runs_saved if doc.measurement else None) or 0
    return Spending(stopped, saved, still)


def medians_aligned(rows: list[VariantRow]) -> list[VariantRow]:
    for row, text in zip(rows, column([r.median for r in rows])):
        row.median_text = text
    return rows


def ordered(rows: list[VariantRow]) -> list[VariantRow]:
    """Baseline and its A/A copy first, then the others fastest first, unmeasured last."""
    def key(r: VariantRow):
        return (r.role != "baseline", r.role != "twin", r.change_pct is None, r.change_pct or 0)
    return sorted(rows, key=key)


def build_row(v: model.Variant, base_dir: Path, out_dir: Path) -> BuildRow:
    b = v.build
    audit, detail = b.audit, b.detail
    log = base_dir / b.log if b.log else None
    # The A/A twin and the reference arm are copies, not builds: their detail says of what.
    shows = (f"not built: {detail}" if is_control(v.id)
             else "first compile line and problems" if detail else "first compile line")
    return BuildRow(
        id=v.id, status=b.status, verified=bool(b.flags_verified),
        compiles=audit.compiles if audit else None,
        seconds=("reused" if b.reused
                 else f"{b.seconds:.1f}" if b.seconds is not None else ""),
        size=f"{b.size_bytes:,}" if b.size_bytes else "",
        text=f"{b.sizes['text']:,}" if (b.sizes or {}).get("text") else "",
        cpu=f"{b.cpu_seconds:.1f}" if b.cpu_seconds is not None else "",
        mode=", ".join(m for m, on in (("LTO", b.lto), ("PGO", b.pgo and b.pgo.matched))
                       if on),
        compile_line=shlex.join(audit.compile_line) if audit and audit.compile_line else "",
        log_href=link(log, out_dir, base_dir) if log else None,
        log_path=str(b.log or ""),
        detail="" if is_control(v.id) else detail or "", shows=shows,
        tests=tests_text(b.package_tests), tests_tail=(b.package_tests.tail or "")
        if b.package_tests else "")


def tests_text(t: model.PackageTests | None) -> str:
    """The package's own suite in the build table; "" when it was not run."""
    if t is None or t.status == "none":
        return ""
    took = f", {t.seconds:.1f} s" if t.seconds is not None else ""
    return f"{t.status} ({' '.join(t.command or [])}{took})" + (
        f", see {t.log}" if t.status != "passed" and t.log else "")


def foreign(doc: model.Results) -> list[str]:
    """The libraries built with the program (and its flags), then the shared libraries from
    outside the build trees that a built variant's binary loads, the C/C++ runtime left out:
    code in the run that no flag touched."""
    profiled = doc.explain.baseline if doc.explain and doc.explain.baseline else None
    built = next((v.build.dependencies for v in doc.variants if v.build.dependencies), [])
    return dependency.built_with(built) + binaries.foreign(((Path(v.build.binary).name, lib) for v in doc.variants
                             if v.build.binary and not is_control(v.id)
                             for lib in v.build.external_libraries or []),
                            profiled.libraries if profiled else None)


def link(path: Path, out_dir: Path, inside: Path) -> str | None:
    """The href of every link a page makes to a file: relative to the page's folder (so the
    folder can move), to an existing file inside `inside` (the results folder) once every link
    is followed, and percent-encoded, so no part of it is a scheme (javascript:, data:), a query
    or a fragment. None for a path that does not qualify: a results file is input that anyone
    may have written, and the page shows such a path as text instead."""
    try:
        target = path.resolve()
        if not target.is_file() or not target.is_relative_to(inside.resolve()):
            return None
    except (OSError, RuntimeError, ValueError):   # a link loop, a NUL in the path
        return None
    return urllib.parse.quote(Path(os.path.relpath(target, out_dir.resolve())).as_posix())
