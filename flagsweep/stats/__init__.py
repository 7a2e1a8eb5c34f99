"""Statistics of samples: what one binary measured (summary), how a variant compares with the
baseline (comparison, with its intervals and significance), what a whole sweep may conclude
(multiplicity, verdicts), and what this machine can resolve at all (power). The practical
threshold travels in percent and becomes a fraction only in threshold.py. The names callers
use are here, each loaded from its module on first use."""

from __future__ import annotations

import importlib

# name -> the module of stats/ that defines it. Loaded when first asked for, so that what only
# needs the threshold (the command line's defaults, the machine advice) does not load SciPy.
NAMES = {
    "EXACT_MAX_PAIRS": "significance",
    "MeanShift": "means",
    "MedianCI": "summary",
    "ROUNDS_CAP": "verdicts",
    "RatioEstimate": "comparison",
    "SampleSummary": "summary",
    "THRESHOLD_PCT": "threshold",
    "Z95": "intervals",
    "adjust": "verdicts",
    "binomial_interval": "intervals",
    "change_text": "wording",
    "ci_text": "wording",
    "compare": "comparison",
    "compare_unpaired": "comparison",
    "detectable_pct": "power",
    "fcr_intervals": "multiplicity",
    "fewest_decisive_pairs": "multiplicity",
    "fraction": "threshold",
    "level_text": "wording",
    "log_half_width": "intervals",
    "mad": "summary",
    "mean_interval": "means",
    "mean_shift": "means",
    "median_ci": "summary",
    "noise": "power",
    "outlier_indices": "summary",
    "paired_interval": "comparison",
    "pool": "comparison",
    "rounds_for_precision": "power",
    "rounds_to_detect": "power",
    "signed_rank_p": "significance",
    "summarize": "summary",
}
__all__ = sorted(NAMES)


def __getattr__(name: str):
    module = NAMES.get(name, name)
    try:
        found = importlib.import_module(f"flagsweep.stats.{module}")
    except ModuleNotFoundError as e:
        if e.name != f"flagsweep.stats.{module}":
            raise                               # a library the module needs is missing
        raise AttributeError(f"module 'flagsweep.stats' has no attribute {name!r}") from None
    value = found if module == name else getattr(found, name)
    globals()[name] = value
    return value
