"""The pages of several sweeps as heatmaps: a merge (a cell per variant and machine) and a
suite (a row per variant, the suite's pooled cell first, then each program's own)."""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep.report.formats import VERDICT_TEXT, pct_pair, signed_pct
from flagsweep import model


@dataclass
class MergeRow:
    label: str


@dataclass
class HeatCell:
    change_pct: float | None
    text: str
    ci_text: str
    color: str
    strong: bool
    verdict: str


HEAT_SPAN_PCT = 10.0                 # full colour at +-10%: the effects that matter are small


def heat_cell(change_pct: float | None, ci, verdict: str) -> HeatCell:
    """Colour by the size of the change, mark by what the sweep concluded about it."""
    if change_pct is None:
        return HeatCell(None, VERDICT_TEXT.get(verdict, verdict), "", "transparent", False, verdict)
    mark = {"equivalent": "\u2248 ", "inconclusive": "? "}.get(verdict, "")
    text = "baseline" if verdict == "baseline" else mark + signed_pct(change_pct)
    ci_text = f"[{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else ""
    return HeatCell(change_pct, text, ci_text, _heat(change_pct), verdict in ("faster", "slower"),
                    verdict)


def _heat(pct: float) -> str:
    """Green for faster, red for slower, alpha by size (capped at HEAT_SPAN_PCT)."""
    alpha = min(abs(pct) / HEAT_SPAN_PCT, 1.0) * 0.55
    rgb = "26,127,55" if pct < 0 else "207,34,46"
    return f"rgba({rgb},{alpha:.2f})"


@dataclass
class SuiteRow:
    label: str
    suite: HeatCell
    why: str                         # the suite verdict's reasoning (hover), or why there is none
    programs: list[HeatCell]
    slower_on: list[str]
    faster_on: list[str]


def _cell(c: model.Comparison | model.ProgramCell | None) -> HeatCell:
    if c is None or c.ratio is None:
        return heat_cell(None, None, c.verdict if c else "not-measured")
    return heat_cell((c.ratio - 1) * 100, pct_pair(c.ci95), c.verdict)


def suite_rows(doc: model.Suite) -> list[SuiteRow]:
    """The suite's rows, best pooled estimate first; rows without one last."""
    several = len({v.compiler for v in doc.variants}) > 1
    out = []
    def key(v: model.SuiteVariant):
        return (v.suite is None, (v.suite.ratio or 0) if v.suite else 0)
    for v in sorted(doc.variants, key=key):
        flags = " ".join(v.flags) or "(no flags)"
        label = getattr(v, "label", None) or (f"{v.compiler} {flags}" if several else flags)
        out.append(SuiteRow(label, _cell(v.suite), v.suite.why if v.suite else v.missing,
                            [_cell(c) for c in v.per_program.values()], v.slower_on,
                            v.faster_on))
    return out
