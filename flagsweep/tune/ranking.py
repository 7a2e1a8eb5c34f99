"""The search's sets ranked: each distinct measured set by the geometric mean of its estimates
(its own batch's and those of the batches it was the baseline of), fastest first, and how a
set's ratio is said."""

from __future__ import annotations

import math

from flagsweep import stats
from flagsweep.model.tune import Remeasurement
from flagsweep.tune import batch, search
from flagsweep.tune.record import Tuning, trial_record


def short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def pct(ratio: float) -> str:
    return f"{100 * (ratio - 1):+.1f}%"


def known_flags(tune: Tuning) -> dict[tuple[str, ...], tuple[int, float | None]]:
    """Flag sets told before: their first trial and its ratio."""
    out = {}
    for t in search.trials(tune.study):
        r = trial_record(t)
        if r.state in ("measured", "identical", "failed-build",
                       "failed-check") and r.flags is not None:
            out.setdefault(tuple(r.flags), (t.number, r.ratio))
    return out


def ranked(tune: Tuning, upto: int | None = None) -> list[tuple[int, tuple[str, ...], float]]:
    """Distinct measured sets, fastest first, each by the geometric mean of its estimates (of
    the batches up to `upto`, when given)."""
    return [(n, flags, ratio) for n, flags, ratio, _ in estimated(tune, upto)]


def estimated(tune: Tuning, upto: int | None) -> list[tuple]:
    """(trial, flags, ratio, 95% interval) of each distinct measured set, fastest first: a set
    measured in k batches has the geometric mean of its k ratios and that mean's interval (the
    batches' sweeps are independent estimates: stats.pool)."""
    seen, out = set(), []
    again = tune.state.again
    for t in search.trials(tune.study):
        a = trial_record(t)
        if a.state != "measured" or a.ratio is None:
            continue
        if upto is not None and (a.batch is None or a.batch > upto):
            continue
        flags = tuple(a.flags)
        if flags in seen:
            continue
        seen.add(flags)
        estimates = [(a.batch, a.ratio, batch.finite_pair(a.ci95))]
        estimates += [estimate(e) for e in again.get(str(t.number), [])]
        estimates = [e for e in estimates if upto is None or (e[0] is not None and e[0] <= upto)]
        out.append((t.number, flags, *_combined(estimates)))
    return sorted(out, key=lambda x: x[2])


def estimate(entry) -> tuple:
    """A re-measurement: (batch, ratio, 95% interval); a bare ratio from an older record."""
    if isinstance(entry, Remeasurement):
        return entry.batch, entry.ratio, batch.finite_pair(entry.ci95)
    return None, entry, None


def _combined(estimates: list[tuple]) -> tuple[float, list[float] | None]:
    """The geometric mean of the ratios, with its interval when every estimate has one."""
    mean = math.exp(sum(math.log(r) for _, r, _ in estimates) / len(estimates))
    if len(estimates) == 1 or any(ci is None for _, _, ci in estimates):
        return mean, estimates[0][2] if len(estimates) == 1 else None
    pooled = stats.pool([(r, tuple(ci)) for _, r, ci in estimates])
    return mean, [float(x) for x in pooled.ci95] if pooled else None


def best(tune: Tuning):
    found = ranked(tune)
    return found[0] if found and found[0][2] < 1.0 else None
