"""What the statistics conclude: summaries, comparisons with the baseline, effects, the A/A
gate, the noise, a recommendation and its confirmation over layouts (stats, results).
"""

from __future__ import annotations

from pydantic import Field

from flagsweep.model.values import Bool, Num, Record, Pair, Str


class LayoutSummary(Record):
    id: Str
    seed: Num
    code_sha256: Str | None = None
    median: Num = None
    n: Num = None


class Summary(Record):
    n: Num = None
    median: Num = None
    mean: Num = None
    ci95: Pair = None
    cv: Num = None
    outliers: Num = None
    disturbed: Num = None
    retaken: Num = None
    stopped_at: Num = None                 # stopped early: the counted rounds it ran
    stopped_why: Str | None = None
    layouts: list[LayoutSummary] | None = None  # with layouts: each layout's median and n
    outlier_rounds: list[Num] | None = None     # the rounds of its outliers


class LayoutEstimate(Record):
    """A winner against the baseline in one layout, or over K layouts each."""
    ratio: Num = None
    ci95: Pair = None
    verdict: Str | None = None
    layouts: Num = None
    layout_sd_pct: Num = None
    p_adjusted: Num = None
    ci_fcr: Pair = None                      # the interval its verdict used, and its level
    fcr_level: Num = None


class LayoutLuck(Record):
    """A faster or slower call whose 95% CI comes within the reach of layout luck, i.e. of what
    one build's code layout alone can do (flagsweep.results.confirmation): `confirmed` (called
    the same over K layouts a side: the verdict stands), `not-distinguishable` (measured again
    over layouts and not called the same) or `one-layout` (not measured again; `why` says why).
    Only a confirmed call is settled: the others read "faster (one layout, within layout
    luck)" and no reader should act on them as decided."""
    status: Str
    reach_pct: Num = None                     # the reach it came within, in percent
    why: Str | None = None
    over_layouts: LayoutEstimate | None = None   # the confirmation's estimate, when measured


class Comparison(Record):
    """A ratio to a reference with its intervals and verdict: a variant's vs_baseline, a
    suite row's pooled estimate."""
    verdict: Str
    ratio: Num = None
    ci95: Pair = None
    ci90: Pair = None
    p_value: Num = None
    p_adjusted: Num = None
    n_pairs: Num = None
    rounds_needed: Num = None
    why: Str | None = None
    # Where the estimate lies beyond the threshold: the false-coverage-rate adjusted interval
    # a faster/slower verdict needs wholly beyond it, and its level (stats.fcr_intervals).
    ci_fcr: Pair = None
    fcr_level: Num = None
    ci_tost: Pair = None                   # equivalence's interval when tost_level < 0.05
    tost_level: Num = None
    layouts: Num = None                    # with layouts: over this many a side


class VsBaseline(Comparison):
    identical_to: Str | None = None
    layout_sd_pct: Num = None
    # a faster/slower call of a sweep of one build a variant, within layout luck's reach
    layout_luck: LayoutLuck | None = None


class Effect(Record):
    factor: Str
    level: Str
    reference: Str | None = None
    effect_pct: Num = None
    ci95_pct: Pair = None
    p_value: Num = None
    p_adjusted: Num = None
    matters: Bool | None = None
    ci_fcr_pct: Pair = None
    fcr_level: Num = None                  # ci_fcr_pct's level, 1 - R 0.05 / m
    layout_luck: LayoutLuck | None = None    # "matters" within layout luck's reach: settled
                                             # only when its status is `confirmed`
    variant: Str | None = None               # one change a variant: the variant it is
    verdict: Str | None = None               # ... and that variant's verdict


class AA(Record):
    variant: Str
    verdict: Str
    ratio: Num = None
    ci95: Pair = None
    p_value: Num = None
    bound_pct: Num = None
    is_: Str | None = Field(None, alias="is")    # what the twin is (its own binary again ...)
    warning: Str | None = None
    unstable: Bool | None = None             # its call was faster or slower: nothing stands
    gated: list[Str] = []                    # the calls it overruled


class Noise(Record):
    baseline_cv: Num = None
    mde_pct: Num = None
    sd_log_diff: Num = None
    power: Num = None
    n_pairs: Num = None
    comparisons: Num = None
    rounds_needed: Num = None
    source: Str | None = None                # whose spread: the A/A twin's, else the baseline's
    warning: Str | None = None


class Excluded(Record):
    """A variant called faster but left out of the recommendation: its output did not pass."""
    variant: Str
    flags: list[Str]
    ratio: Num = None
    ci95: Pair = None
    check: Str | None = None                 # its check's status (differs, failed)
    why: Str | None = None                   # its check's detail


class Confirmation(Record):
    """A recommendation's confirmation over code layouts (flagsweep.results.confirmation)."""
    status: Str
    variant: Str | None = None
    why: Str | None = None
    layouts: Num = None
    reach_pct: Num = None
    reach_source: Str | None = None
    one_layout: LayoutEstimate | None = None      # the sweep's own comparison
    over_layouts: LayoutEstimate | None = None    # the confirmation's, over the layouts
    run_id: Str | None = None
    results: Str | None = None
    seconds: Num = None
    # Every faster/slower row within the reach is measured again in the same sweep: which
    # (`variants`), which were not and why (`left_out`, `left_out_why`), each one's estimate
    # over the layouts (`rows`), and how K was sized (`power` at the reach's edge, `sizing`).
    variants: list[Str] | None = None
    left_out: list[Str] | None = None
    left_out_why: Str | None = None
    rows: dict[str, LayoutEstimate] | None = None
    power: Num = None
    sizing: Str | None = None
    estimated_s: Num = None                       # its builds and least rounds, estimated


class Estimate(Record):
    """The estimate and interval a recommendation prints (flagsweep.results.estimate): the
    interval its verdict used, adjusted for choosing the winner, and which kind it is."""
    ratio: Num = None
    ci: Pair = None
    level: Num = None
    kind: Str                     # selection-adjusted | with-layout-luck | over-layouts | unadjusted
    layouts: Num = None           # over this many layouts each; null: one build each
    comparisons: Num = None       # how many comparisons the adjustment chose among
    p_adjusted: Num = None        # of the comparison it comes from
    why: Str | None = None        # which interval this is and why, in words


class Recommendation(Record):
    flags: list[Str] | None = None
    variant: Str | None = None
    why: Str
    excluded: list[Excluded] | None = None   # fastest first
    confirmation: Confirmation | None = None
    estimate: Estimate | None = None         # what the headline prints; null: keep the baseline
