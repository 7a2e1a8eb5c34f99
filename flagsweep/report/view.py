"""The report's view model: every decision the page shows is made here, from results.json alone.

What counts as a finding, which warnings apply, how a number is written, in what order rows
come: made by the modules beside this one (variants, headline, counters, method, layouts,
study, history, explanation), as plain dataclasses, and gathered here into one view of the
sweep. The templates (HTML, Markdown) and the terminal table only lay these out, so the three
never disagree and a test can check a decision without parsing HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flagsweep.report import counters, explanation, headline, history, layouts, method, study
from flagsweep.report import variants as rows
from flagsweep.report.formats import UNITS, threshold
from flagsweep import model


@dataclass
class SweepView:
    """One sweep as its page, its summary and its terminal table show it."""
    headline: headline.Headline
    metric: str
    unit: str
    threshold_pct: float
    variants: list[rows.VariantRow]
    effects: list[counters.EffectRow]
    effects_note: str
    effects_rule: str                # when a level matters, and which interval the table shows
    counters: counters.Counters | None
    machine: list[tuple[str, str]]
    method: list[tuple[str, str]]
    reproduce: str
    builds: list[rows.BuildRow]
    foreign: list[str]               # libraries from outside the build trees the binaries load
    skipped: list[tuple[str, str]]
    study: study.ReproducedStudy | None
    history: list[history.HistoryRow]
    baseline_label: str
    results_href: str
    samples_href: str | None
    layouts: layouts.LayoutPanel | None = None
    spending: rows.Spending | None = None
    explained: explanation.Explained | None = None          # run --explain's profiles
    schedule: str | None = None        # duet or serial rounds, and why (method.schedule_line)
    luck_note: str = ""              # what "one layout, within layout luck" means, when shown
    results: model.Results | None = field(repr=False, default=None)  # the plots' samples


def build(doc: model.Results, results_path: Path, out_dir: Path) -> SweepView:
    """The view model of one results.json, for a page written into out_dir."""
    base_dir = results_path.parent
    variants = [rows.variant_row(v, doc) for v in doc.variants]
    labels = {r.id: r.label for r in variants}
    return SweepView(
        headline=headline.headline(doc, variants),
        metric=doc.metric, unit=UNITS.get(doc.metric, ""),
        threshold_pct=threshold(doc.threshold_pct),
        variants=rows.ordered(rows.medians_aligned(variants)),
        effects=sorted((counters.effect_row(e) for e in doc.effects or []),
                       key=lambda e: e.effect_pct),
        effects_note=doc.effects_design.note if doc.effects_design else "",
        effects_rule=counters.effects_rule(threshold(doc.threshold_pct)),
        counters=counters.counters(doc, labels),
        machine=method.machine_rows(doc.machine, doc.compilers or []),
        method=method.method_rows(doc), reproduce=method.reproduce_command(doc),
        builds=[rows.build_row(v, base_dir, out_dir) for v in doc.variants],
        foreign=rows.foreign(doc),
        skipped=[(" ".join(s.flags), s.reason) for s in doc.skipped or []],
        study=study.reproduced(doc, variants),
        history=[history.history_row(h, labels) for h in doc.history or []],
        baseline_label=labels.get(doc.baseline, doc.baseline),
        results_href=rows.link(results_path, out_dir, base_dir) or "results.json",
        samples_href=rows.link(base_dir / "samples.csv", out_dir, base_dir),
        spending=rows.spending(doc, variants),
        layouts=layouts.panel(doc, labels),
        explained=explanation.explained(doc, labels),
        schedule=method.schedule_line(doc),
        luck_note=rows.luck_note(doc, variants),
        results=doc)
