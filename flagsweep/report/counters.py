"""The effects table (what each factor does, from the sweep's regression) and the counters
table (per variant rates from perf, or the kernel's counts without a PMU)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from flagsweep import stats
from flagsweep.report.formats import column, p_text, signed_pct
from flagsweep import model
from flagsweep.results import confirmation


@dataclass
class EffectRow:
    name: str
    reference: str
    effect_pct: float
    ci: tuple[float, float] | None
    text: str
    ci_text: str
    p_text: str
    matters: bool
    luck: str = ""                   # within layout luck's reach: its status (results.confirmation)
    luck_why: str = ""

    @property
    def settled(self) -> bool:
        """It matters, and layout luck cannot have made it (beyond the reach, or confirmed)."""
        return self.matters and self.luck in ("", confirmation.CONFIRMED)

    @property
    def matters_text(self) -> str:
        """The "matters" cell: yes, no, or "one layout" for a call layout luck could give."""
        return "yes" if self.settled else "one layout" if self.matters else "no"


@dataclass
class Counters:
    kind: str                        # "hardware" | "software"
    note: str
    columns: list[str]
    rows: list[tuple[str, list[str]]]


def effect_row(e: model.Effect) -> EffectRow:
    """A row with the interval its `matters` was decided on: where the estimate lies beyond
    the threshold, the one adjusted for choosing the rows beyond it (`ci_fcr_pct`, its level
    written before it); else the 95% one, and the row cannot matter."""
    ci95 = e.ci95_pct if e.ci95_pct and None not in e.ci95_pct else None
    fcr = e.ci_fcr_pct if ci95 and e.ci_fcr_pct and None not in e.ci_fcr_pct else None
    ci = tuple(fcr) if fcr else tuple(ci95) if ci95 else None
    # an older results.json kept no level: the interval is the adjusted one all the same
    said = f"{stats.level_text(e.fcr_level) if e.fcr_level else 'adjusted'} " if fcr else ""
    name = e.factor if e.level in (None, "on") else f"{e.factor} = {e.level}"
    return EffectRow(name=name, reference=str(e.reference or ""),
                     effect_pct=e.effect_pct, ci=ci, text=signed_pct(e.effect_pct),
                     ci_text=f"{said}[{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "",
                     p_text=p_text(e.p_adjusted), matters=bool(e.matters),
                     luck=e.layout_luck.status if e.layout_luck else "",
                     luck_why=(e.layout_luck.why or "") if e.layout_luck else "")


def effects_rule(threshold_pct: float) -> str:
    """The effects table's caption: when a level matters, and that the interval shown is the
    one that decided it."""
    return (f"A level matters when its adjusted p is below 0.05 and the interval shown, the one "
            f"the table decided on, lies wholly beyond +-{threshold_pct:g}%. Where the estimate "
            f"lies beyond +-{threshold_pct:g}% that interval is adjusted for choosing the levels "
            "beyond it (false-coverage rate, Benjamini & Yekutieli 2005: level 1 - R 0.05 / m "
            "for R of the m levels, written before it), so it is wider than the 95% CI; a level "
            f"whose estimate lies within +-{threshold_pct:g}% shows its 95% CI and cannot "
            "matter.")


HW_RATES = [("IPC", "instructions", "cycles", 1.0),
            ("branch misses / 1k instr.", "branch_misses", "instructions", 1000.0),
            ("cache misses / 1k instr.", "cache_misses", "instructions", 1000.0)]
SW_COLUMNS = [("task clock (s)", "task_clock_s"), ("context switches", "context_switches"),
              ("page faults", "page_faults"), ("peak RSS (KiB)", "maxrss_kb"),
              ("user (s)", "user_s"), ("sys (s)", "sys_s")]


def counters(doc: model.Results, labels: dict[str, str]) -> Counters | None:
    """Per variant medians of per-run rates: IPC and misses per 1,000 instructions with a PMU
    (the events measured are cycles, instructions, branch-misses, cache-misses), else what the
    kernel counts for every run."""
    measured = [v for v in doc.variants if (v.samples or {}).get("wall_s")]
    if not measured:
        return None
    if any("instructions" in v.samples and "cycles" in v.samples for v in measured):
        rows = _formatted([(labels[v.id], [_rate(v.samples, num, den, k)
                                           for _, num, den, k in HW_RATES]) for v in measured])
        return Counters("hardware", "Hardware counters from perf stat; each figure is the "
                        "median over runs of that run's rate.", [c[0] for c in HW_RATES], rows)
    cols = [(name, key) for name, key in SW_COLUMNS if any(key in v.samples for v in measured)]
    rows = _formatted([(labels[v.id], [_median(v.samples.get(key)) for _, key in cols])
                       for v in measured])
    return Counters("software", "No hardware counters: IPC and miss rates need a PMU. These "
                    "are the kernel's counts for each run (rusage, and perf's software events "
                    "when asked for), as medians.", [c[0] for c in cols], rows)


def _rate(samples: dict, num: str, den: str, k: float) -> float | None:
    a, b = samples.get(num), samples.get(den)
    if not a or not b:
        return None
    rates = [x / y * k for x, y in zip(a, b) if x is not None and y]
    return statistics.median(rates) if rates else None


def _median(values: list | None) -> float | None:
    good = [x for x in values or [] if x is not None]
    return statistics.median(good) if good else None


def _formatted(rows: list[tuple[str, list[float | None]]]) -> list[tuple[str, list[str]]]:
    """Each column in one format (see column)."""
    texts = list(zip(*(column(list(c)) for c in zip(*(cells for _, cells in rows))))) if rows else []
    return [(label, list(cells)) for (label, _), cells in zip(rows, texts)]
