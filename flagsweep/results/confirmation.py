"""A small "Use X" confirmed over code layouts before it is printed.

A sweep of one build a variant measures each binary in one code layout. Link order and section
placement move a program's speed by a few percent with no change to its code (Mytkowicz, Diwan,
Hauswirth & Sweeney, ASPLOS 2009; Curtsinger & Berger, STABILIZER, ASPLOS 2013), and no number of
runs averages that draw away (Kalibera & Jones, ISMM 2013). So a recommended change whose effect
is within reach of layout luck is measured again over layouts, the winner and the baseline K
relinked layouts each (flagsweep.compilation.layout, compared by flagsweep.stats.layout), before the
report says "Use X". This module holds the rule (when a confirmation is needed), the record it
leaves in results.json (`recommendation.confirmation`) and what that record does to the
recommendation; the stage that runs it is in flagsweep.jobs.sweep.

The rule. With L ~ N(0, s^2) the layout effect of one build (the spread between layouts of one
variant, measured by a sweep with --layouts), a one-build comparison carries L_v - L_b, whose sd
is sqrt(2) s; 95% of such draws lie within 1.96 sqrt(2) s of the true effect. That is the
*reach* of layout luck. s is the latest measured spread of this target on this machine (a run
with --layouts, its A/A twin's layouts: `noise.sd_log_diff`), else DEFAULT_REACH_PCT: the reach
of a spread of about 1.8%, between gzip's +-1.1% and the bundled tiny's +-2-3%
(docs/layout-study.md). The winner's interval with that luck in it, adjusted for choosing it
among the sweep's comparisons (results.estimate.with_luck), decides: wholly beyond the
threshold, the flags' effect is shown without relinking, and that interval is what "Use X"
prints; else the winner is confirmed. The winner is the luckiest of many one-build comparisons,
so a rule on its own 95% interval against the 95% reach let a lucky link through (a no-effect
set printed "Use X" in up to 2.7% of simulated sweeps, its interval covering the truth in none:
bench/intervals.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from flagsweep import stats
from flagsweep.errors import FlagsweepError
from flagsweep.measure.options import DEFAULT_LAYOUTS
from flagsweep.results import contract, estimate, reader

if TYPE_CHECKING:                    # the report reads records without opening a store
    from flagsweep.results.store import Store

DEFAULT_REACH_PCT = 5.0
Z95 = 1.959964
# The statuses of `recommendation.confirmation`; only "not-distinguishable" changes the answer.
CONFIRMED, LUCK = "confirmed", "not-distinguishable"
PENDING, SKIPPED, NOT_NEEDED = "running", "skipped", "not-needed"
FAILED, INTERRUPTED = "failed", "interrupted"


def reach_of_spread(sd_log: float) -> float:
    """The reach of layout luck in percent, from one build's layout sd (log scale)."""
    return 100 * math.expm1(Z95 * math.sqrt(2) * sd_log)


def spread_of_reach(reach_pct: float) -> float:
    """The layout sd (log scale) whose reach is `reach_pct`: reach_of_spread's inverse."""
    return math.log1p(reach_pct / 100) / (Z95 * math.sqrt(2))


def measured_reach(store: Store, target: str,
                   machine: contract.Machine) -> tuple[float, str] | None:
    """(reach %, where it comes from) from the newest complete --layouts run of `target` on
    this machine whose results.json still says its layout spread; None when there is none."""
    found = measured_spread(store, target, machine)
    return None if found is None else (reach_of_spread(found[0]), found[1])


def measured_spread(store: Store, target: str,
                    machine: contract.Machine) -> tuple[float, str] | None:
    """(layout sd on the log scale, where it comes from), as measured_reach finds it."""
    from flagsweep.results import stored    # here: the report imports this without a store

    for run in reversed(store.runs_of(target)):
        layouts = ((run.get("options") or {}).get("measure") or {}).get("layouts")
        if run["status"] != "complete" or not layouts or not _same_machine(run["machine"], machine):
            continue
        try:
            # A row names the folder read here: only one that shows it is the run's.
            folder = stored.out_dir(store, run["run_id"], run)
        except FlagsweepError:
            continue
        sd = _spread(folder / "results.json")
        if sd is not None:
            return sd, (f"layout spread +-{100 * math.expm1(sd):.1f}% measured by run "
                        f"{run['run_id']} ({layouts} layouts)")
    return None


def _same_machine(stored: dict | None, machine: contract.Machine) -> bool:
    """A run's machine as the store keeps it (its probed state) is this one."""
    stored = stored or {}
    return all(stored.get(k) == getattr(machine, k) for k in ("hostname", "cpu_model"))


def _spread(path: Path) -> float | None:
    try:
        statement = reader.load(path).noise
    except FlagsweepError:
        return None
    sd = statement.sd_log_diff if statement is not None else None
    return sd if isinstance(sd, (int, float)) and sd > 0 else None


def record(stored: dict) -> contract.Confirmation:
    """A confirmation record as the run's options keep it, as results.json's model."""
    return contract.Confirmation.model_validate(stored)


def plan(doc: contract.Results, reach: tuple[float, str] | None, enabled: bool,
         k: int = DEFAULT_LAYOUTS) -> contract.Confirmation:
    """The record a sweep starts its confirmation with: status `running` when it is needed,
    else why not (`not-needed`, or `skipped` with --no-confirm)."""
    reach_pct, source = reach or (DEFAULT_REACH_PCT, "the default: no layout spread measured "
                                                     "for this program on this machine")
    start = {"status": NOT_NEEDED, "variant": doc.recommendation.variant
             if doc.recommendation else None, "layouts": k, "reach_pct": reach_pct,
             "reach_source": source, "one_layout": None, "over_layouts": None, "run_id": None,
             "results": None, "seconds": None}
    if doc.measurement is not None and doc.measurement.layouts:
        return record({**start, "why": "the sweep compared every variant over its layouts "
                                       "already"})
    winner = _winner(doc)
    if winner is None:
        return record({**start, "why": "the recommendation keeps the baseline"})
    vs = winner.vs_baseline
    start |= {"one_layout": {"ratio": vs.ratio, "ci95": vs.ci95, "ci_fcr": vs.ci_fcr,
                             "fcr_level": vs.fcr_level}}
    lucky = estimate.with_luck(doc, winner.id, reach_pct)
    interval = (f"{stats.level_text(lucky.level)} CI {stats.ci_text(lucky.ci)}"
                if lucky is not None else "none")
    threshold = estimate.threshold_of(doc)
    if estimate.faster_beyond(lucky, threshold):
        return record({**start, "why": f"its interval with one build's layout luck, {interval}, "
                                       f"lies beyond the {threshold:g}% threshold "
                                       f"(layout luck reaches {reach_pct:.1f}%, {source})"})
    if not enabled:
        return record({**start, "status": SKIPPED,
                       "why": f"not confirmed over layouts (--no-confirm): an effect this close "
                              f"to no change can be layout luck (reach {reach_pct:.1f}%, "
                              f"{source})"})
    return record({**start, "status": PENDING,
                   "why": f"being confirmed over {k} layouts each of it and the baseline: with "
                          f"one build's layout luck its interval, {interval}, reaches within "
                          f"{threshold:g}% of no change (layout luck reaches "
                          f"{reach_pct:.1f}%, {source})"})


def _winner(doc: contract.Results) -> contract.Variant | None:
    rec = doc.recommendation
    if rec is None or not rec.variant or rec.variant == doc.baseline:
        return None
    v = next((v for v in doc.variants if v.id == rec.variant), None)
    return v if v and v.vs_baseline is not None and v.vs_baseline.ratio else None


def nearest_pct(ci: list | tuple | None) -> float | None:
    """How far from no change a 95% interval's nearer end lies, in percent; None without one."""
    if not ci or None in ci:
        return None
    lo, hi = ci
    return 0.0 if lo <= 1 <= hi else 100 * min(abs(lo - 1), abs(hi - 1))


def within_reach(ci: list | tuple | None, reach_pct: float) -> bool:
    """A decided effect that layout luck alone could give: its interval comes nearer to no
    change than the reach (an interval that is not there cannot be said beyond it)."""
    nearest = nearest_pct(ci)
    return nearest is None or nearest < reach_pct


def outcome(stored: dict, confirm_doc: contract.Results, seconds: float,
            results: Path) -> contract.Confirmation:
    """The record (as the run's options keep it) once the confirmation sweep (its
    results.json, `confirm_doc`) has its answer: confirmed only when it calls the winner faster
    over the layouts, after its own A/A gate; anything else is not distinguishable from layout
    luck."""
    start = record(stored)
    v = next((v for v in confirm_doc.variants if v.id == start.variant), None)
    vs = (v.vs_baseline if v else None) or contract.VsBaseline(verdict="")
    over = contract.LayoutEstimate(ratio=vs.ratio, ci95=vs.ci95, verdict=vs.verdict or None,
                                   layouts=getattr(vs, "layouts", None),
                                   layout_sd_pct=vs.layout_sd_pct, p_adjusted=vs.p_adjusted,
                                   ci_fcr=vs.ci_fcr, fcr_level=vs.fcr_level)
    done = start.model_copy()
    done.over_layouts, done.run_id = over, confirm_doc.run_id
    done.results, done.seconds = str(results), round(seconds, 1)
    one = _text(start.one_layout)
    many = f"{_text(over)} over {over.layouts or start.layouts} layouts each"
    if vs.verdict == "faster":
        done.status, done.why = CONFIRMED, f"confirmed over layouts: {many} (one layout: {one})"
        return done
    done.status = LUCK
    done.why = (f"not distinguishable from layout luck: {one} in one layout, but {many} "
                f"({vs.verdict or 'not measured'})")
    return done


def ended(stored: dict, status: str, why: str,
          run_id: str | None = None) -> contract.Confirmation:
    """The record of a confirmation that did not finish (failed, interrupted)."""
    done = record(stored)
    done.status, done.why, done.run_id = status, why, run_id or done.run_id
    return done


def _text(c: contract.LayoutEstimate | None) -> str:
    if c is None or c.ratio is None:
        return "no estimate"
    return stats.change_text(c.ratio, c.ci95)


def apply(doc: contract.Results, stored: dict | None) -> None:
    """The record (as the run's options keep it) into results.json's recommendation. A winner
    not distinguishable from layout luck is not recommended: the answer is the baseline's
    flags, saying why."""
    rec = doc.recommendation
    if not stored or not rec:
        return
    rec.confirmation = confirmed = record(stored)
    if confirmed.variant != rec.variant:
        return
    _estimate(doc, confirmed)
    if confirmed.status != LUCK:
        return
    base = next(v for v in doc.variants if v.id == doc.baseline)
    winner = " ".join(next((v.flags for v in doc.variants if v.id == confirmed.variant),
                           [confirmed.variant]))
    rec.why = (f"{winner} is {confirmed.why}. Keep the baseline's flags. (Before the "
               f"confirmation: {rec.why})")
    rec.flags, rec.variant, rec.estimate = base.flags, base.id, None


def _estimate(doc: contract.Results, confirmed: contract.Confirmation) -> None:
    """What the recommendation prints once its confirmation is known (results.estimate): the
    confirmation's estimate over layouts; or, where none was needed, the one build's interval
    with layout luck, the interval the rule found beyond the threshold."""
    rec = doc.recommendation
    if confirmed.status == CONFIRMED and confirmed.over_layouts is not None:
        rec.estimate = estimate.over_layouts(confirmed.over_layouts, confirmed.layouts)
    elif confirmed.status == NOT_NEEDED and confirmed.one_layout and rec.estimate:
        rec.estimate = estimate.with_luck(doc, rec.variant,
                                          confirmed.reach_pct or DEFAULT_REACH_PCT)
