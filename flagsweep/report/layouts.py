"""The layouts section of a sweep run with --layouts: each variant's layouts side by side,
against what layout alone does to the program."""

from __future__ import annotations

import math
from dataclasses import dataclass

from flagsweep.report.formats import ci_pct_text, pct, pct_pair, signed_pct
from flagsweep import model
from flagsweep.model import AA_SUFFIX


@dataclass
class LayoutRow:
    id: str
    label: str
    seeds: list[int]
    levels: list[float]              # each layout's median, % from the baseline's layouts' mean
    spread_pct: float | None         # the spread between this comparison's layouts (one sd)
    change_pct: float | None         # the variant against the baseline over the layouts
    ci: tuple[float, float] | None
    verdict: str
    sentence: str


@dataclass
class LayoutPanel:
    k: int
    alone_pct: float | None          # what layout alone does to this program (the A/A twin)
    rows: list[LayoutRow]
    note: str


def _layouts_of(v: model.Variant | None) -> list[model.LayoutSummary]:
    return (v.summary.layouts if v and v.summary else None) or []


def panel(doc: model.Results, labels: dict[str, str]) -> LayoutPanel | None:
    """Each variant's layouts side by side, against what layout alone does: the finding of a
    sweep with --layouts, in one sentence per variant."""
    made = doc.measurement.layouts if doc.measurement else None
    k = made.k if made else None
    if not k:
        return None
    by_id = {v.id: v for v in doc.variants}
    medians = [x.median for x in _layouts_of(by_id.get(doc.baseline)) if x.median]
    if not medians:
        return None
    center = math.exp(sum(math.log(x) for x in medians) / len(medians))
    twin = by_id.get(doc.baseline + AA_SUFFIX)
    alone = twin.vs_baseline.layout_sd_pct if twin and twin.vs_baseline else None
    rows = [_row(v, doc, labels, center, alone) for v in doc.variants if _layouts_of(v)]
    note = (f"Each variant was built {k} times: the same code (every function the same size), "
            f"linked in {k} seeded orders. A dot is one layout's median run; the bar, the "
            "variant against the baseline over its layouts (95% CI). A verdict needs the "
            "change to stand out from the spread between layouts, which more rounds do not "
            "shrink.")
    return LayoutPanel(k, alone, rows, note)


def _row(v: model.Variant, doc: model.Results, labels: dict[str, str], center: float,
         alone: float | None) -> LayoutRow:
    c = v.vs_baseline
    reps = v.summary.layouts
    levels = [(x.median / center - 1) * 100 for x in reps if x.median]
    change = pct(c.ratio if c else None)
    ci = pct_pair(c.ci95 if c else None)
    label = labels.get(v.id, v.id)
    own = c.layout_sd_pct if c else None
    if v.id == doc.baseline:
        sentence = f"{label}: the baseline, {len(reps)} layouts"
    elif change is None:
        sentence = f"{label}: {c.verdict if c else 'not measured'}"
    else:
        sentence = (f"{label} vs {labels.get(doc.baseline, doc.baseline)}: "
                    f"{signed_pct(change)} {ci_pct_text(c.ci95)} across {len(reps)} "
                    f"layouts ({c.verdict})")
        spread = alone if alone is not None else own
        if spread is not None:
            sentence += f"; layout alone moves this program by +-{spread:.1f}%"
    return LayoutRow(v.id, label, [x.seed for x in reps], levels, own, change, ci,
                     (c.verdict if c else None) or "baseline", sentence)
