"""The history section: each variant's earlier sweeps of this target on this machine
(results.json `history`, written by across.history), one row per variant."""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep.report.formats import ci_pct_text, signed_pct
from flagsweep import model


@dataclass
class HistoryRow:
    label: str
    sweeps: int
    text: str
    verdict: str
    steps: str


def history_row(h: model.HistorySeries, labels: dict[str, str]) -> HistoryRow:
    latest = h.latest
    text = (f"{signed_pct((latest.ratio - 1) * 100)} {ci_pct_text(latest.ci95)} "
            f"against {len(latest.against)} earlier sweep(s)"
            if latest and latest.ratio else "")
    steps = ", ".join(f"{s.run_id} {signed_pct((s.ratio - 1) * 100)}"
                      + (f" ({'; '.join(s.changed)})" if getattr(s, "changed", None) else "")
                      for s in h.steps)
    return HistoryRow(labels.get(h.variant, h.variant), len(h.points), text,
                      latest.verdict if latest else "not-measured", steps)
