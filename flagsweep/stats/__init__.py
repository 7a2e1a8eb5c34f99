"""Statistics of samples: what one binary measured (summary), how a variant compares with the
baseline (comparison, with its intervals and significance), what a whole sweep may conclude
(multiplicity, verdicts), and what this machine can resolve at all (power). The practical
threshold travels in percent and becomes a fraction only in threshold.py. The names callers
use are here."""

from flagsweep.stats.comparison import (RatioEstimate, compare, compare_unpaired,
                                        paired_interval, pool)
from flagsweep.stats.intervals import Z95, log_half_width
from flagsweep.stats.means import MeanShift, mean_interval, mean_shift
from flagsweep.stats.multiplicity import fcr_intervals, fewest_decisive_pairs
from flagsweep.stats.power import detectable_pct, noise, rounds_for_precision, rounds_to_detect
from flagsweep.stats.significance import EXACT_MAX_PAIRS, signed_rank_p
from flagsweep.stats.summary import (MedianCI, SampleSummary, mad, median_ci, outlier_indices,
                                     summarize)
from flagsweep.stats.threshold import THRESHOLD_PCT, fraction
from flagsweep.stats.verdicts import ROUNDS_CAP, adjust
from flagsweep.stats.wording import change_text, ci_text, level_text

__all__ = [
    "EXACT_MAX_PAIRS", "ROUNDS_CAP", "THRESHOLD_PCT", "Z95", "MeanShift", "MedianCI",
    "RatioEstimate", "SampleSummary", "adjust", "change_text", "ci_text", "compare",
    "compare_unpaired", "detectable_pct", "fcr_intervals", "fewest_decisive_pairs", "fraction",
    "level_text", "log_half_width", "mad", "mean_interval", "mean_shift", "median_ci", "noise",
    "outlier_indices", "paired_interval", "pool", "rounds_for_precision", "rounds_to_detect",
    "signed_rank_p", "summarize",
]
