"""Every faster or slower call within reach of layout luck, confirmed over code layouts or
labelled so.

A sweep of one build a variant measures each binary in one code layout. Link order and section
placement move a program's speed by a few percent with no change to its code (Mytkowicz, Diwan,
Hauswirth & Sweeney, ASPLOS 2009; Curtsinger & Berger, STABILIZER, ASPLOS 2013), and no number of
runs averages that draw away (Kalibera & Jones, ISMM 2013). So each faster or slower row whose
effect is within reach of layout luck is measured again over layouts: one sweep of those rows and
the baseline, K relinked layouts each, and the A/A twin's K (flagsweep.compilation.layout,
compared by flagsweep.stats.layout), before the report calls them settled. A row it calls the
same way is `confirmed`; one it does not is `not-distinguishable` from layout luck; one not
measured again (--no-confirm, beyond the cap of rows or the budget, a confirmation that failed)
stays `one-layout`. Both of the latter read "faster (one layout, within layout luck)" and feed
neither "Use X" nor "flags that matter" as settled. This module holds the rule, the plan (which
rows, how many layouts), the record it leaves in results.json (`recommendation.confirmation`,
and on each row `vs_baseline.layout_luck`); the stage that runs it is in flagsweep.jobs.sweep.

The rule. With L ~ N(0, s^2) the layout effect of one build (the spread between layouts of one
variant, measured by a sweep with --layouts), a one-build comparison carries L_v - L_b, whose sd
is sqrt(2) s; 95% of such draws lie within 1.96 sqrt(2) s of the true effect. That is the
*reach* of layout luck. s is the latest measured spread of this target on this machine (a run
with --layouts, its A/A twin's layouts: `noise.sd_log_diff`), else DEFAULT_REACH_PCT: the reach
of a spread of about 1.8%, between gzip's +-1.1% and the bundled tiny's +-2-3%
(docs/layout-study.md). Each faster or slower row's interval with that luck in it, adjusted for
choosing among the sweep's comparisons (results.estimate.with_luck_all), decides: wholly beyond
the threshold on its side, the flags' effect stands without relinking (and for the recommended
row that interval is what "Use X" prints); else the row is measured again. A rule on a row's own
95% interval against the 95% reach let the luckiest of many one-build comparisons through (a
no-effect set printed "Use X" in up to 2.7% of simulated sweeps: bench/intervals.py).

The size. K is the fewest layouts a side at which an effect as large as the reach is called at
POWER over the confirmation's comparisons (stats.layout.power: Welch's test on the layouts'
levels, the runs' share of a level's spread included), between FEWEST_LAYOUTS and
MOST_LAYOUTS, unless --confirm-layouts gives it; then as many rows as --confirm-rows allows and
the run's --budget affords (its builds and ROUNDS rounds, compilation.layout.cost), the most
doubtful first.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flagsweep import stats
from flagsweep.compilation import layout
from flagsweep.errors import FlagsweepError
from flagsweep.measure.options import MeasureOptions
from flagsweep import model
from flagsweep.results import estimate, reader
from flagsweep.model import is_control
from flagsweep.stats import layout as spread

if TYPE_CHECKING:                    # the report reads records without opening a store
    from flagsweep.results.store import Store

DEFAULT_REACH_PCT = 5.0
Z95 = 1.959964
# The statuses of `recommendation.confirmation`: not-needed, skipped (--no-confirm), running,
# failed, interrupted, over-budget; once measured: confirmed or not-distinguishable (of the
# recommended variant), measured (the recommendation's own row was not within the reach).
CONFIRMED, LUCK = "confirmed", "not-distinguishable"
PENDING, SKIPPED, NOT_NEEDED = "running", "skipped", "not-needed"
FAILED, INTERRUPTED = "failed", "interrupted"
MEASURED, OVER_BUDGET = "measured", "over-budget"
# A row's `layout_luck.status` besides confirmed and not-distinguishable: not measured again.
ONE_LAYOUT = "one-layout"
CALLED = ("faster", "slower")
POWER = 0.8
FEWEST_LAYOUTS, MOST_LAYOUTS = 3, 16
# A confirmation's rounds, at most: past a few, its interval is as wide as the layouts' spread
# makes it, whatever the rounds (a gzip confirmation over 7 layouts a side stayed at +-1.3% from
# round 9 to 11, at 70 s a round), so the sweep's own stopping rule would go on to --max-runs.
# K is sized for these rounds, and bench/layout_rows.py simulates them.
ROUNDS = 10
DEFAULT_SOURCE = "the default: no layout spread measured for this program on this machine"
NO_CONFIRM = "--no-confirm"


def reach_of_spread(sd_log: float) -> float:
    """The reach of layout luck in percent, from one build's layout sd (log scale)."""
    return 100 * math.expm1(Z95 * math.sqrt(2) * sd_log)


def spread_of_reach(reach_pct: float) -> float:
    """The layout sd (log scale) whose reach is `reach_pct`: reach_of_spread's inverse."""
    return math.log1p(reach_pct / 100) / (Z95 * math.sqrt(2))


def measured_reach(store: Store, target: str,
                   machine: model.Machine) -> tuple[float, str] | None:
    """(reach %, where it comes from) from the newest complete --layouts run of `target` on
    this machine whose results.json still says its layout spread; None when there is none."""
    found = measured_spread(store, target, machine)
    return None if found is None else (reach_of_spread(found[0]), found[1])


def measured_spread(store: Store, target: str,
                    machine: model.Machine) -> tuple[float, str] | None:
    """(layout sd on the log scale, where it comes from), as measured_reach finds it."""
    from flagsweep.results import stored    # here: the report imports this without a store

    for run in reversed(store.runs_of(target)):
        layouts = run.options.measure.get("layouts")
        if run.status != "complete" or not layouts or not _same_machine(run.machine, machine):
            continue
        try:
            # A row names the folder read here: only one that shows it is the run's.
            folder = stored.out_dir(store, run.run_id, run)
        except FlagsweepError:
            continue
        sd = _spread(folder / "results.json")
        if sd is not None:
            return sd, (f"layout spread +-{100 * math.expm1(sd):.1f}% measured by run "
                        f"{run.run_id} ({layouts} layouts)")
    return None


def _same_machine(stored: model.Machine | None, machine: model.Machine) -> bool:
    """A run's machine as the store keeps it (its probed state) is this one."""
    return stored is not None and (stored.hostname, stored.cpu_model) == \
        (machine.hostname, machine.cpu_model)


def _spread(path: Path) -> float | None:
    try:
        statement = reader.load(path).noise
    except FlagsweepError:
        return None
    sd = statement.sd_log_diff if statement is not None else None
    return sd if isinstance(sd, (int, float)) and sd > 0 else None


def record(stored: dict) -> model.Confirmation:
    """A confirmation record as the run's options keep it, as results.json's model."""
    return model.Confirmation.model_validate(stored)


# ---- the plan: which rows, how many layouts --------------------------------------------------

def plan(doc: model.Results, reach: tuple[float, str] | None,
         opts: MeasureOptions | None = None, off: str | None = None) -> model.Confirmation:
    """The record a sweep starts its confirmation with: status `running` with the rows to
    measure again when any faster or slower row's interval with layout luck reaches within
    the threshold, else why not (`not-needed`; `skipped` with --no-confirm, or `off`: why this
    sweep cannot run one; `over-budget`)."""
    opts = opts or MeasureOptions()
    reach_pct, source = reach or (DEFAULT_REACH_PCT, DEFAULT_SOURCE)
    start = {"status": NOT_NEEDED, "variant": doc.recommendation.variant
             if doc.recommendation else None, "layouts": opts.confirm_layouts or None,
             "reach_pct": reach_pct, "reach_source": source, "one_layout": None,
             "over_layouts": None, "run_id": None, "results": None, "seconds": None,
             "variants": [], "left_out": [], "left_out_why": None, "rows": None,
             "power": None, "sizing": None, "estimated_s": None}
    if doc.measurement is not None and doc.measurement.layouts:
        return record({**start, "why": "the sweep compared every variant over its layouts "
                                       "already"})
    if opts.same_layout:
        return record({**start, "why": "the variants share one code layout (they differ in "
                                       "data only), so layout luck cannot tell them apart"})
    winner = _winner(doc)
    if winner is not None:
        vs = winner.vs_baseline
        start |= {"one_layout": {"ratio": vs.ratio, "ci95": vs.ci95, "ci_fcr": vs.ci_fcr,
                                 "fcr_level": vs.fcr_level}}
    lucky = estimate.with_luck_all(doc, reach_pct)
    rows = within(doc, lucky)
    threshold = estimate.threshold_of(doc)
    if not rows:
        return record({**start, "why": _none_within(doc, winner, lucky, reach_pct, source)})
    if off or not opts.layout_confirm:
        off = off or NO_CONFIRM
        return record({**start, "status": SKIPPED, "left_out": [v.id for v in rows],
                       "why": f"not confirmed over layouts ({off}): an effect this close "
                              f"to no change can be layout luck (reach {reach_pct:.1f}%, "
                              f"{source})", "left_out_why": off})
    size = sized(doc, rows, reach_pct, opts)
    if not size.rows:
        return record({**start, "status": OVER_BUDGET, "left_out": [v.id for v in rows],
                       "left_out_why": size.why, "sizing": size.why, "layouts": size.k,
                       "why": f"not confirmed over layouts: {size.why}"})
    chosen = [v.id for v in rows[:size.rows]]
    left = [v.id for v in rows[size.rows:]]
    return record({**start, "status": PENDING, "layouts": size.k, "power": size.power,
                   "sizing": size.why, "estimated_s": size.seconds, "variants": chosen,
                   "left_out": left, "left_out_why": size.left_why if left else None,
                   "why": f"measuring {_names([v for v in rows if v.id in chosen])} again over "
                          f"{size.k} layouts a side: with one build's layout luck their "
                          f"intervals reach within the {threshold:g}% threshold (layout luck "
                          f"reaches {reach_pct:.1f}%, {source})"
                          + (f"; not {names_of(doc, left)} ({size.left_why})" if left else "")})


def _compared(doc: model.Results) -> list[model.Variant]:
    """The rows compared with the baseline: the designed variants with a verdict of their own."""
    return [v for v in doc.variants if not is_control(v.id) and v.vs_baseline is not None
            and v.vs_baseline.verdict in estimate.COMPARED]


def within(doc: model.Results, lucky: dict[str, model.Estimate]
           ) -> list[model.Variant]:
    """The faster and slower rows whose interval with layout luck (`lucky`:
    estimate.with_luck_all) does not lie beyond the threshold on their side, in the order they
    are measured again: the recommended one, the faster ones fastest first, then the slower
    ones most doubtful first."""
    threshold = estimate.threshold_of(doc)
    rows = [v for v in _compared(doc) if v.vs_baseline.verdict in CALLED
            and not estimate.beyond(lucky.get(v.id), threshold, v.vs_baseline.verdict)]
    named = doc.recommendation.variant if doc.recommendation else None

    def key(v: model.Variant):
        vs = v.vs_baseline
        slower = vs.verdict == "slower"
        return (v.id != named, slower, nearest_pct(vs.ci95) if slower else (vs.ratio or 1.0))
    return sorted(rows, key=key)


def _none_within(doc: model.Results, winner: model.Variant | None,
                 lucky: dict[str, model.Estimate], reach_pct: float, source: str) -> str:
    threshold = estimate.threshold_of(doc)
    luck = f"layout luck reaches {reach_pct:.1f}%, {source}"
    if winner is not None:
        e = lucky[winner.id]
        return (f"its interval with one build's layout luck, {stats.level_text(e.level)} CI "
                f"{stats.ci_text(e.ci)}, lies beyond the {threshold:g}% threshold ({luck})")
    if any(v.vs_baseline.verdict in CALLED for v in _compared(doc)):
        return (f"every faster or slower row's interval with one build's layout luck lies "
                f"beyond the {threshold:g}% threshold ({luck})")
    return "the recommendation keeps the baseline, and no row was called faster or slower"


def _winner(doc: model.Results) -> model.Variant | None:
    rec = doc.recommendation
    if rec is None or not rec.variant or rec.variant == doc.baseline:
        return None
    v = next((v for v in doc.variants if v.id == rec.variant), None)
    return v if v and v.vs_baseline is not None and v.vs_baseline.ratio else None


@dataclass(frozen=True)
class Size:
    """A confirmation's size: its first `rows` rows, `k` layouts a side, the power at the
    reach's edge, its estimated seconds (None: not known), and why, in words."""
    rows: int
    k: int
    power: float
    seconds: float | None
    why: str
    left_why: str = ""


def sized(doc: model.Results, rows: list[model.Variant], reach_pct: float,
          opts: MeasureOptions) -> Size:
    """How many layouts a side, and how many of `rows`, the confirmation measures: K by power
    (or --confirm-layouts), the rows by --confirm-rows, then both cut to the run's --budget,
    rows first (the most doubtful kept), then K down to FEWEST_LAYOUTS; no rows when even one
    row at that K does not fit. The power is that of calling an effect as large as the reach
    (a gain of reach / (1 + reach)) faster over the layouts."""
    level = _level_sd(doc, spread_of_reach(reach_pct), opts)
    threshold_pct = estimate.threshold_of(doc)
    gain = 100 * reach_pct / (100 + reach_pct)

    def power(k: int, n: int) -> float:
        return spread.power(k, level, gain, threshold_pct, n + 1)
    n = min(len(rows), max(1, opts.confirm_rows))
    k = opts.confirm_layouts or spread.layouts_for(level, gain, threshold_pct, n + 1, POWER,
                                                   MOST_LAYOUTS, FEWEST_LAYOUTS)
    left_why = f"--confirm-rows {opts.confirm_rows}" if n < len(rows) else ""
    named = _winner(doc)
    cost = _costs(doc, opts, winner=named is not None and rows[0].id == named.id)
    if cost is not None:
        while n > 1 and cost(n, k) > cost.budget:
            n, left_why = n - 1, f"{n - 1} row(s) fit {cost.bound}"
        while cost(n, k) > cost.budget and k > FEWEST_LAYOUTS and not opts.confirm_layouts:
            k -= 1
        if cost(n, k) > cost.budget:
            return Size(0, k, power(k, 1), cost(n, k),
                        f"one row over {k} layouts a side would take about {cost(n, k):.0f} s "
                        f"with its builds, more than {cost.bound}")
    how = (f"--confirm-layouts {k}" if opts.confirm_layouts
           else f"the fewest at which it reaches {POWER:.0%}" if power(k, n) >= POWER
           else f"cut to what {cost.bound} affords" if k < MOST_LAYOUTS and cost is not None
           else f"at most {MOST_LAYOUTS}")
    why = (f"{k} layouts a side ({how}): an effect as large as layout luck's reach, "
           f"{reach_pct:.1f}%, is confirmed with {power(k, n):.0%} power among {n + 1} "
           f"comparisons")
    if cost is not None:
        why += f"; about {cost(n, k):.0f} s with its builds, within {cost.bound}"
    return Size(n, k, power(k, n), cost(n, k) if cost else None, why, left_why)


def _level_sd(doc: model.Results, layout_sd: float, opts: MeasureOptions) -> float:
    """The sd of one layout's level (log scale): the layouts' own spread and the runs' share
    of it, the median of max_runs runs at the baseline's CV (pi/2: the median's variance on
    normal data)."""
    cv = doc.noise.baseline_cv if doc.noise is not None else None
    runs = (cv or 0.0) ** 2 * math.pi / 2 / max(1, rounds_of(opts))
    return math.sqrt(layout_sd ** 2 + runs)


def rounds_of(opts: MeasureOptions) -> int:
    """The rounds a confirmation takes at most: ROUNDS, or fewer when --max-runs says so."""
    return min(opts.max_runs, ROUNDS)


@dataclass(frozen=True)
class _Cost:
    """Seconds of a confirmation of n rows over k layouts a side: its builds and rounds; the
    seconds it may take (`budget`) and what sets them, in words (`bound`)."""
    build_s: float
    run_s: float
    rounds: int
    budget: float
    bound: str

    def __call__(self, n: int, k: int) -> float:
        return sum(layout.cost(n + 1, k, self.build_s, self.run_s, self.rounds))


def _costs(doc: model.Results, opts: MeasureOptions, winner: bool) -> _Cost | None:
    """The run's own build and run times, for what a confirmation costs, and what it may
    spend; None without a budget or without them (nothing then bounds it but the caps).

    It may spend what is left of the run's --budget once the sweep has taken its share. A
    confirmation of the recommended row may take all of that: "Use X" is not said unconfirmed.
    One of other rows alone (a sweep that keeps the baseline) takes at most as long again as
    the sweep itself did, so the labels cost no more than the answer: on a 2-vCPU VM gzip's
    olevels sweep took 10 minutes and confirming its two slower rows would have taken 17 more;
    beyond that the rows read "one layout, within layout luck", as --no-confirm leaves them."""
    builds = [v.build.seconds for v in doc.variants
              if not is_control(v.id) and v.build.status == "ok" and v.build.seconds]
    base = next((v for v in doc.variants if v.id == doc.baseline), None)
    walls = [x for x in ((base.samples or {}).get("wall_s") or [] if base else []) if x]
    if opts.budget is None or not builds or not walls:
        return None
    spent = _spent(doc)
    budget, bound = opts.budget, f"the run's --budget of {opts.budget:.0f} s"
    if spent is not None:
        budget = max(0.0, opts.budget - spent)
        bound = f"the {budget:.0f} s left of the run's --budget of {opts.budget:.0f} s"
        if not winner and spent < budget:
            budget, bound = spent, (f"{spent:.0f} s, as long again as the sweep took (a "
                                    "confirmation of rows that are not the answer)")
    return _Cost(statistics.median(builds), statistics.median(walls),
                 rounds_of(opts) + opts.warmup, budget, bound)


def _spent(doc: model.Results) -> float | None:
    """The seconds the sweep's builds and runs took, run by run (a resumed sweep's pauses
    are not spent; two runs of a duet count twice, erring towards a smaller confirmation),
    and its schedule's pilot; None when it recorded no build time."""
    builds = [v.build.seconds for v in doc.variants if v.build.seconds]
    if not builds:
        return None
    runs = sum(x for v in doc.variants for x in (v.samples or {}).get("wall_s") or [] if x)
    schedule = doc.measurement.schedule if doc.measurement is not None else None
    pilot = schedule.pilot.seconds if schedule and schedule.pilot else None
    return sum(builds) + runs + (pilot or 0.0)


def _names(rows: list[model.Variant]) -> str:
    return ", ".join(" ".join(v.flags) or v.id for v in rows)


def names_of(doc: model.Results, ids: list[str]) -> str:
    """The rows `ids` by their flags, as the sentences name them."""
    by_id = {v.id: v for v in doc.variants}
    return _names([by_id[i] for i in ids if i in by_id])


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


# ---- the answer ------------------------------------------------------------------------------

def outcome(stored: dict, confirm_doc: model.Results, seconds: float,
            results: Path) -> model.Confirmation:
    """The record (as the run's options keep it) once the confirmation sweep (its
    results.json, `confirm_doc`) has its answer: each row's estimate over the layouts (a row is
    confirmed when they call it as its one build did, after their own A/A gate); the status
    that of the recommended variant when it was measured again, else `measured`."""
    start = record(stored)
    done = start.model_copy()
    done.rows = {vid: _over(confirm_doc, vid) for vid in start.variants or [start.variant]}
    done.run_id, done.results, done.seconds = confirm_doc.run_id, str(results), round(seconds, 1)
    over = done.rows.get(start.variant)
    if over is None:
        called = [vid for vid, e in done.rows.items() if e.verdict in CALLED]
        done.status = MEASURED
        done.why = (f"measured {len(done.rows)} row(s) again over {start.layouts} layouts a "
                    f"side: {len(called)} called faster or slower there too")
        return done
    done.over_layouts = over
    if over.verdict == "faster":
        done.status, done.why = CONFIRMED, _held(start.one_layout, over, start.layouts)
        return done
    done.status, done.why = LUCK, _not_held(start.one_layout, over, start.layouts)
    return done


def _over(doc: model.Results, vid: str) -> model.LayoutEstimate:
    v = next((v for v in doc.variants if v.id == vid), None)
    vs = (v.vs_baseline if v else None) or model.VsBaseline(verdict="")
    return model.LayoutEstimate(ratio=vs.ratio, ci95=vs.ci95, verdict=vs.verdict or None,
                                   layouts=getattr(vs, "layouts", None),
                                   layout_sd_pct=vs.layout_sd_pct, p_adjusted=vs.p_adjusted,
                                   ci_fcr=vs.ci_fcr, fcr_level=vs.fcr_level)


def _held(one: model.LayoutEstimate | None, over: model.LayoutEstimate, k) -> str:
    return f"confirmed over layouts: {_many(over, k)} (one layout: {_text(one)})"


def _not_held(one: model.LayoutEstimate | None, over: model.LayoutEstimate, k) -> str:
    return (f"not distinguishable from layout luck: {_text(one)} in one layout, but "
            f"{_many(over, k)} ({over.verdict or 'not measured'})")


def _many(over: model.LayoutEstimate, k) -> str:
    return f"{_text(over)} over {over.layouts or k} layouts each"


def ended(stored: dict, status: str, why: str,
          run_id: str | None = None) -> model.Confirmation:
    """The record of a confirmation that did not finish (failed, interrupted)."""
    done = record(stored)
    done.status, done.why, done.run_id = status, why, run_id or done.run_id
    return done


def _text(c: model.LayoutEstimate | None) -> str:
    if c is None or c.ratio is None:
        return "no estimate"
    return stats.change_text(c.ratio, c.ci95)


# ---- the rows' labels ------------------------------------------------------------------------

def label(doc: model.Results, stored: dict | None) -> None:
    """Each faster or slower row whose interval with layout luck does not lie beyond the
    threshold (within, at the record's reach) gets its `layout_luck`: confirmed, not
    distinguishable from layout luck, or one layout (not measured again, and why). No record
    (a run before its plan, an older run): no labels."""
    if not stored:
        return
    c = record(stored)
    if c.status == NOT_NEEDED or c.reach_pct is None:
        return
    measured = dict(c.rows or {})
    if not measured and c.status in (CONFIRMED, LUCK) and c.over_layouts is not None:
        measured[c.variant] = c.over_layouts          # a record of one row (an older run)
    for v in within(doc, estimate.with_luck_all(doc, c.reach_pct)):
        vs = v.vs_baseline
        one = model.LayoutEstimate(ratio=vs.ratio, ci95=vs.ci95, verdict=vs.verdict)
        over = measured.get(v.id)
        if over is None:
            status, why = ONE_LAYOUT, _unmeasured(c, v.id)
        elif over.verdict == vs.verdict:
            status, why = CONFIRMED, _held(one, over, c.layouts)
        else:
            status, why = LUCK, _not_held(one, over, c.layouts)
        vs.layout_luck = model.LayoutLuck(status=status, reach_pct=c.reach_pct, why=why,
                                             over_layouts=over)


def _unmeasured(c: model.Confirmation, vid: str) -> str:
    """Why a row within the reach was not measured again, as the words after "faster (one
    layout, within layout luck): "."""
    if c.status in (SKIPPED, OVER_BUDGET, FAILED, INTERRUPTED):
        return c.why or c.status
    if vid in (c.left_out or []):
        return f"not measured again over layouts ({c.left_out_why})"
    if c.status == PENDING:
        return (f"being confirmed over {c.layouts} layouts a side: with one build's layout "
                f"luck its interval reaches within the threshold (layout luck reaches "
                f"{c.reach_pct:.1f}%, {c.reach_source})")
    return "not measured again over layouts"


def label_effects(doc: model.Results, stored: dict | None) -> None:
    """Each effect that matters follows its row: a one-change level is its variant's
    comparison, so its label is the row's. A model's effect (a factorial, a screen) averages
    builds, whose luck averages too: its 95% interval is widened by one comparison's luck times
    sqrt((1/n + 1/n_ref) / 2), for the n builds at its level and n_ref at the reference (their
    means' difference), added in variance as results.estimate widens a row's; not beyond the
    threshold so, it is one layout (a confirmation measures rows, not a model: --layouts K
    compares the whole design)."""
    if not stored or not doc.effects:
        return
    c = record(stored)
    if c.status == NOT_NEEDED or c.reach_pct is None:
        return
    rows = {v.id: v for v in doc.variants}
    built = [v for v in _compared(doc) + [rows[doc.baseline]] if not v.build.identical_to]
    for e in doc.effects:
        row = rows.get(getattr(e, "variant", None) or "")
        if row is not None and row.vs_baseline is not None:
            e.layout_luck = row.vs_baseline.layout_luck
            continue
        if not e.matters or not e.ci95_pct:
            continue
        at = sum((v.factors or {}).get(e.factor) == e.level for v in built)
        ref = sum((v.factors or {}).get(e.factor) == e.reference for v in built) \
            if e.reference is not None else len(built) - at
        scale = math.sqrt((1 / max(1, at) + 1 / max(1, ref)) / 2)
        reach = 100 * math.expm1(math.log1p(c.reach_pct / 100) * scale)
        lo, hi = _widened_pct(e.effect_pct, e.ci95_pct, math.log1p(reach / 100) / Z95)
        t = estimate.threshold_of(doc)
        if not (hi < -t if e.effect_pct < 0 else lo > t):
            e.layout_luck = model.LayoutLuck(
                status=ONE_LAYOUT, reach_pct=reach,
                why=f"a model's effect over one build a variant ({at} at this level, {ref} at "
                    f"{e.reference or 'the others'}): with their layout luck (reach "
                    f"{reach:.1f}%) its 95% CI, [{lo:+.1f}, {hi:+.1f}], reaches within the "
                    f"{t:g}% threshold; --layouts K compares the design over layouts")


def _widened_pct(effect_pct: float, ci_pct: list, luck: float) -> tuple[float, float]:
    """A 95% interval of a percent change, each side's standard error and a luck of sd `luck`
    (log scale) added in variance."""
    est = math.log1p(effect_pct / 100)
    lo, hi = (math.log1p(x / 100) for x in ci_pct)
    return tuple(100 * math.expm1(est + s * Z95 * math.hypot(abs(end - est) / Z95, luck))
                 for s, end in ((-1, lo), (1, hi)))


def settled(luck: model.LayoutLuck | None) -> bool:
    """A call that stands: beyond layout luck's reach (no label) or confirmed over layouts."""
    return luck is None or luck.status == CONFIRMED


def measured_again(doc: model.Results) -> bool:
    """Whether a confirmation measured any of this sweep's rows again over layouts."""
    return any(v.vs_baseline is not None and v.vs_baseline.layout_luck is not None
               and v.vs_baseline.layout_luck.over_layouts is not None for v in doc.variants)


def final_verdict(vs: model.VsBaseline | None) -> str | None:
    """The verdict a reader of results.json may act on: a faster or slower call within layout
    luck's reach that was not confirmed over layouts is not decided (inconclusive)."""
    if vs is None:
        return None
    if vs.verdict in CALLED and not settled(getattr(vs, "layout_luck", None)):
        return "inconclusive"
    return vs.verdict


def apply(doc: model.Results, stored: dict | None) -> None:
    """The record (as the run's options keep it) into results.json's recommendation; the
    rows' labels and what they do to the recommendation are the analysis's (label,
    analysis.apply)."""
    rec = doc.recommendation
    if not stored or not rec:
        return
    rec.confirmation = confirmed = record(stored)
    _estimate(doc, confirmed)


def _estimate(doc: model.Results, confirmed: model.Confirmation) -> None:
    """What the recommendation prints once its row's place against layout luck is known
    (results.estimate): a row confirmed over layouts, the confirmation's estimate; a row whose
    interval with one build's layout luck lies beyond the threshold, that interval; a row not
    measured again keeps the selection-adjusted interval its verdict used."""
    rec = doc.recommendation
    row = next((v for v in doc.variants if v.id == rec.variant), None)
    if row is None or row.id == doc.baseline or row.vs_baseline is None or not rec.estimate:
        return
    luck = row.vs_baseline.layout_luck
    if luck is not None and luck.status == CONFIRMED and luck.over_layouts is not None:
        rec.estimate = estimate.over_layouts(luck.over_layouts, confirmed.layouts)
    elif luck is None and confirmed.one_layout is not None:
        rec.estimate = estimate.with_luck(doc, rec.variant,
                                          confirmed.reach_pct or DEFAULT_REACH_PCT)
