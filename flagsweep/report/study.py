"""A reproduced study (recipes with a [study] table, e.g. seed-2003): what the study measured
then beside what this sweep measures now, and the study's question answered."""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep.experiment import recipe
from flagsweep.report.formats import signed_pct, threshold
from flagsweep.report.variants import VariantRow
from flagsweep import model
from flagsweep.model import AA_SUFFIX


@dataclass
class StudyRow:
    label: str
    flags: str
    then: list[str]                  # per study machine: "+112%" or "-"
    now: str
    verdict: str


@dataclass
class ReproducedStudy:
    title: str
    question: str
    machines: list[str]
    baseline: str
    rows: list[StudyRow]
    answer: str                      # the question answered in one paragraph


def published(doc: model.Results) -> recipe.Study | None:
    """The study the sweep's recipe reproduces, as the recipe declared it (results.json keeps
    the recipe's own `study` table)."""
    return recipe.Study.model_validate(doc.study.dump()) if doc.study else None


def then_texts(doc: model.Results) -> dict[str, str]:
    """variant id -> what the study measured for that row, relative to the study's baseline."""
    study = published(doc)
    if not study:
        return {}
    out = {}
    for v in doc.variants:
        row = (v.factors or {}).get(study.factor)
        figures = [f"{signed_pct(then)} on {m.name}" for m in study.machines
                   if (then := _then_pct(m, row, study)) is not None]
        if figures and not v.id.endswith(AA_SUFFIX):
            out[v.id] = "then: " + "; ".join(figures)
    return out


def _then_pct(machine: recipe.StudyMachine, row: str | None,
              study: recipe.Study) -> float | None:
    seconds = machine.seconds
    if row not in seconds or row == study.baseline:
        return None
    return (seconds[row] / seconds[study.baseline] - 1) * 100


def reproduced(doc: model.Results, rows: list[VariantRow]) -> ReproducedStudy | None:
    study = published(doc)
    if not study:
        return None
    by_id = {r.id: r for r in rows}
    out = []
    for v in doc.variants:
        row = (v.factors or {}).get(study.factor)
        if row is None or v.id.endswith(AA_SUFFIX):
            continue
        r = by_id[v.id]
        then = [signed_pct(p) if (p := _then_pct(m, row, study)) is not None
                else ("baseline" if row == study.baseline and row in m.seconds else "-")
                for m in study.machines]
        now = "baseline" if r.role == "baseline" else r.finding
        out.append(StudyRow(row, r.flags, then, now, r.shown))
    return ReproducedStudy(study.title, study.question, [m.name for m in study.machines],
                           study.baseline, out, _answer(out, doc, study.baseline))


ANSWER_PARTS = [("slower", "still slower than {base}"), ("faster", "faster than {base}"),
                ("slower-luck", "slower than {base} in one layout, within layout luck"),
                ("faster-luck", "faster than {base} in one layout, within layout luck"),
                ("equivalent", "noise here (within +-{thr}%)"),
                ("inconclusive", "not resolved at this noise level"),
                ("identical-code", "the same machine code as another row"),
                ("not-measured", "not measured")]


def _answer(rows: list[StudyRow], doc: model.Results, base: str) -> str:
    """'On <cpu> with <compiler>: ...' naming the study's rows under each verdict."""
    m, compilers = doc.machine, doc.compilers or []
    thr = f"{threshold(doc.threshold_pct):g}"
    parts = []
    for verdict, words in ANSWER_PARTS:
        named = [f"{r.label} ({r.now})" if verdict.startswith(("slower", "faster")) else r.label
                 for r in rows if r.verdict == verdict]
        if named:
            parts.append(words.format(base=base, thr=thr) + ": " + ", ".join(named))
    where = (f"On this {m.cpu_model or 'CPU'} (-march=native {m.march_native or '?'})"
             f" with {', '.join(c.name + ' ' + (c.version or '') for c in compilers)}")
    return f"{where}: " + "; ".join(parts) + "." if parts else f"{where}: nothing was compared."
