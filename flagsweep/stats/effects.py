"""Which flags matter: the effect of each factor level (or on/off flag) on the primary metric.

The model (docs/statistics.md, section 5) is a main-effects linear model of
log(metric) with the recipe's factors in treatment coding against the baseline's levels and the
rounds as blocks:

    log(y) ~ C(axis1, Treatment(ref1)) + C(axis2, Treatment(ref2)) + ... + C(round)

fitted robustly, by Huber M-estimation (Huber, "Robust estimation of a location parameter",
Ann. Math. Statist. 1964; Robust Statistics, Wiley, 1981, ch. 7) with the residual scale
estimated by the MAD: a machine that stalls now and then makes a few samples 10-30% slower, and
least squares chases those outliers (the paired comparisons, stats.comparison, are rank-based
for the same reason), while Huber's estimator down-weights them and behaves almost like least squares
(95% efficiency) on normal noise.

Timings are multiplicative (a flag saves a fraction, not a number of seconds), so on the log
scale effects add, and exp(beta) is the ratio of the metric at that level to the reference level;
100 (exp(beta) - 1) is the percent change reported, its 95% CI the exp of the coefficient's
asymptotic (normal) interval from the M-estimator's covariance. Each round is one shuffled pass over all variants, so a round is a block: drift that
hits every variant in a round (thermal state, a noisy neighbour) is removed instead of inflating
the error. (Montgomery, Design and Analysis of Experiments, Wiley, 9th ed. 2017, ch. 4 on
blocking and ch. 5-6 on factorial designs.) p-values are adjusted across every row with the
Benjamini-Hochberg procedure (Benjamini & Hochberg, J. Royal Statistical Society B, 1995).

A design matrix that is not of full column rank is fitted on a full-rank subset of its columns,
and only the estimable coefficients are reported: a coefficient is estimable exactly when its
unit vector lies in the row space of the design matrix, and then its estimate and standard error
do not depend on which columns (or generalized inverse) were used (Searle, Linear Models, Wiley,
1971, ch. 5).

Screening many on/off flags uses Plackett-Burman designs (Plackett & Burman, Biometrika 1946):
k flags in the next multiple of 4 above k builds, each flag's main effect estimated from all of
them (Yi, Lilja & Hawkins, HPCA 2003, for computer performance; Pinkers, Knijnenburg, Haneda &
Wijshoff, MASCOTS 2004, for compiler options).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as sps

from flagsweep import stats

# |P_jj - 1| below this (P the projection on X's row space) means coefficient j is estimable;
# design matrices here are 0/1 or +-1 columns, so anything real is far from the cut.
ESTIMABLE_TOL = 1e-6

# The robust fit is skipped (OLS used) when the MAD of the OLS residuals is below this times
# max(1, |log y|): a deterministic metric leaves only floating-point residue.
ZERO_SCALE_TOL = 1e-12
# A sample whose Huber weight is below this (residual beyond 1.345 / 0.5 = 2.7 robust SDs) is
# counted as down-weighted in the note; normal noise puts about 0.7% of samples there.
LOW_WEIGHT = 0.5
ROBUST_SKIPPED = -1

PB_NOTE = ("Plackett-Burman screening: main effects only, each aliased with many two-factor "
           "interactions (partial aliasing); confirm survivors one at a time (--confirm).")


@dataclass(frozen=True)
class FactorEffect:
    """The effect of one factor level against its reference; the results layer turns it into
    the contract's Effect (to_json is that row)."""

    factor: str
    level: str
    reference: str
    effect_pct: float                  # percent change of the metric vs the reference (negative = faster)
    ci95_pct: tuple[float, float]
    p_value: float
    p_adjusted: float | None = None    # Benjamini-Hochberg across all rows of the result
    matters: bool | None = None        # significant after adjustment and beyond the threshold
    # where the estimate lies beyond the threshold: the interval, adjusted for the rows
    # selected as beyond it (stats.fcr_intervals), that `matters` needs wholly beyond it
    ci_fcr_pct: tuple[float, float] | None = None
    fcr_level: float | None = None     # ci_fcr_pct's level, 1 - R alpha / m

    def to_json(self) -> dict:
        """The results contract's `effects` row (plus the unadjusted p_value)."""
        return {"factor": self.factor, "level": self.level, "reference": self.reference,
                "effect_pct": self.effect_pct, "ci95_pct": [self.ci95_pct[0], self.ci95_pct[1]],
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "matters": self.matters,
                "ci_fcr_pct": None if self.ci_fcr_pct is None else list(self.ci_fcr_pct),
                "fcr_level": self.fcr_level}


@dataclass(frozen=True)
class EffectsResult:
    design: str     # full-factorial | fractional-factorial | plackett-burman | one-at-a-time | not-estimable
    effects: list[FactorEffect]
    note: str

    def to_json(self) -> dict:
        return {"design": self.design, "note": self.note, "rows": [e.to_json() for e in self.effects]}


@dataclass(frozen=True)
class _Coef:
    beta: float
    low: float
    high: float
    p: float


@dataclass(frozen=True)
class _Fit:
    coefs: list[_Coef | None]          # one per effect column; None = not estimable
    df_resid: int
    rss: float                         # OLS residual sum of squares (for the lack-of-fit test)
    low_weight: int                    # samples with Huber weight < LOW_WEIGHT; ROBUST_SKIPPED = OLS


# ---------------------------------------------------------------------------------------------
# Factor-level effects


def estimate(samples: dict[str, dict[int, float]], factors: dict[str, dict[str, str]],
             reference: dict[str, str], threshold_pct: float = stats.THRESHOLD_PCT,
             alpha: float = 0.05) -> EffectsResult:
    """Main effect of every non-reference factor level, in percent of the metric, with its 95% CI.

    samples: variant id -> {round: metric value} (measured, good samples only; warmups excluded);
    factors: variant id -> {axis: level}; reference: the baseline's levels. Huber M-estimation
    (robust regression, Huber 1964/1981) of log(metric) on the factors (treatment coding) and
    the rounds (blocks), main effects only (Montgomery, Design and Analysis of Experiments, 9th
    ed. 2017); CIs asymptotic normal. Axes with one level, levels without data and
    coefficients the design cannot estimate are left out and named in the note. p-values are
    Benjamini-Hochberg adjusted (J. R. Stat. Soc. B, 1995); `matters` needs p_adjusted < alpha,
    |effect_pct| > threshold_pct and a CI that excludes 0.
    """
    measured = _measured(samples, factors)
    axes, notes, measured = _active_axes(measured, factors, reference)
    if not axes:
        return EffectsResult("not-estimable", [], " ".join(
            ["No factor has two measured levels, so there is no contrast to estimate."] + notes))
    vids, rounds, y = _observations(samples, measured)
    x_fac, labels = _level_columns(vids, factors, axes)
    x_blk = _block_columns(rounds)
    fit = _fit(y, _design_matrix(x_fac, x_blk), len(labels))
    if fit is None:
        return _no_replication(notes)
    cells = [tuple(factors[v][a] for a in axes) for v in vids]
    design = _classify(set(cells), axes)
    notes = [_design_note(design, axes, set(cells))] + notes
    notes += _lack_of_fit_note(y, x_fac, x_blk, cells, fit, alpha)
    notes += _dropped_note(labels, fit) + _robust_note(fit)
    rows = [_effect(a, lvl, axes[a][0], c, 1.0) for (a, lvl), c in zip(labels, fit.coefs) if c]
    return _finish(design, rows, notes, threshold_pct, alpha)


def _measured(samples: dict[str, dict[int, float]], factors: dict[str, dict[str, str]]) -> list[str]:
    """Variants with at least one value, in the order given; every one must carry its factors."""
    missing = [v for v, s in samples.items() if s and v not in factors]
    if missing:
        raise ValueError(f"samples for {missing} but no factors for them")
    return [v for v, s in samples.items() if s]


Axes = dict[str, tuple[str, list[str]]]     # axis -> (reference level, other levels)


def _active_axes(measured: list[str], factors: dict[str, dict[str, str]],
                 reference: dict[str, str]) -> tuple[Axes, list[str], list[str]]:
    """Axes with a contrast: axis -> (reference level, non-reference levels in first-seen order).

    Returns the axes, notes on what was left out, and the measured variants usable in the model
    (a variant that lacks an axis has no level for it, so it cannot sit in the same model)."""
    notes: list[str] = []
    candidates = [a for a in reference if any(a in factors[v] for v in measured)]
    lacking = [v for v in measured if any(a not in factors[v] for a in candidates)]
    if lacking:
        notes.append(f"Left out {len(lacking)} variant(s) that lack one of the axes "
                     f"{candidates}: {', '.join(lacking)}.")
    used = [v for v in measured if v not in lacking]
    unref = sorted({a for v in used for a in factors[v]} - set(reference))
    if unref:
        notes.append(f"Axes without a baseline level, so without a reference, not modelled: {unref}.")
    axes = {}
    for a in candidates:
        kept, note = _axis_levels(a, reference[a], used, factors)
        notes += note
        if kept is not None:
            axes[a] = kept
    return axes, notes, used


def _axis_levels(axis: str, ref: str, used: list[str], factors: dict[str, dict[str, str]]
                 ) -> tuple[tuple[str, list[str]] | None, list[str]]:
    """One axis's reference and contrasted levels, or None with the reason it has no contrast."""
    seen = list(dict.fromkeys(factors[v][axis] for v in used))
    # Levels named by variants the caller passed but did not measure (identical code, failed build).
    declared = dict.fromkeys(f[axis] for f in factors.values() if axis in f)
    notes = []
    empty = [lvl for lvl in declared if lvl not in seen]
    if empty:
        notes.append(f"{axis}: no measured data for {empty} (identical-code variants are not timed; "
                     "if that is why, their effect is zero by construction).")
    if len(seen) < 2:
        notes.append(f"{axis}: only one measured level ({seen[0] if seen else 'none'}), no contrast.")
        return None, notes
    if ref not in seen:
        notes.append(f"{axis}: the reference level {ref!r} has no measured data, so no effect "
                     "against it can be estimated.")
        return None, notes
    return (ref, [lvl for lvl in seen if lvl != ref]), notes


def _observations(samples: dict[str, dict[int, float]], vids: list[str]
                  ) -> tuple[list[str], list[int], np.ndarray]:
    """One row per sample: its variant, its round, and log(value)."""
    rows = [(v, r, float(x)) for v in vids for r, x in sorted(samples[v].items())]
    bad = [(v, r, x) for v, r, x in rows if not (math.isfinite(x) and x > 0)]
    if bad:
        raise ValueError(f"metric values must be finite and positive (lower is better); got {bad[:3]}")
    return [v for v, _, _ in rows], [r for _, r, _ in rows], np.log([x for _, _, x in rows])


def _level_columns(vids: list[str], factors: dict[str, dict[str, str]],
                   axes: Axes) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Treatment-coded indicator columns: one per non-reference level."""
    labels = [(a, lvl) for a, (_, levels) in axes.items() for lvl in levels]
    x = np.array([[factors[v][a] == lvl for a, lvl in labels] for v in vids], dtype=float)
    return x.reshape(len(vids), len(labels)), labels


def _block_columns(rounds: list[int]) -> np.ndarray:
    """Round indicators, the first round absorbed in the intercept."""
    levels = sorted(set(rounds))[1:]
    x = np.array([[r == b for b in levels] for r in rounds], dtype=float)
    return x.reshape(len(rounds), len(levels))


def _design_matrix(x_effects: np.ndarray, x_blocks: np.ndarray) -> np.ndarray:
    return np.column_stack([x_effects, np.ones(len(x_effects)), x_blocks])


def _classify(cells: set[tuple[str, ...]], axes: Axes) -> str:
    """full-factorial if every combination was measured; one-at-a-time if each variant moves at
    most one factor away from the baseline; anything else is a fraction of the factorial."""
    if len(cells) == math.prod(1 + len(levels) for _, levels in axes.values()):
        return "full-factorial"
    refs = tuple(ref for ref, _ in axes.values())
    if all(sum(c != r for c, r in zip(cell, refs)) <= 1 for cell in cells):
        return "one-at-a-time"
    return "fractional-factorial"


def _design_note(design: str, axes: Axes, cells: set) -> str:
    names = ", ".join(axes)
    model = "robust (Huber) regression of log(metric) with rounds as blocks"
    if len(axes) == 1:
        (axis, (ref, _)), = axes.items()
        return (f"One factor ({axis}): each level's effect is its variant(s) against {ref!r}, "
                f"{model}. A level that bundles several flags is one effect: the flags inside it "
                "are not separated.")
    if design == "full-factorial":
        return (f"Full factorial over {names}: main effects, {model}; each effect is an average "
                "over the other factors' levels, and interactions are not in the model.")
    if design == "one-at-a-time":
        return (f"One factor at a time from the baseline over {names}, {model}: each effect is one "
                "change from the baseline; interactions cannot be separated (a level's effect may "
                "differ when another factor is changed too).")
    total = math.prod(1 + len(levels) for _, levels in axes.values())
    return (f"Fractional factorial over {names} ({len(cells)} of {total} combinations measured): "
            f"main effects, {model}; they may be aliased with interactions (an effect can carry "
            "part of an interaction between other factors).")


def _dropped_note(labels: list[tuple[str, str]], fit: _Fit) -> list[str]:
    lost = [f"{a}={lvl}" for (a, lvl), c in zip(labels, fit.coefs) if c is None]
    if not lost:
        return []
    return [f"Not estimable from these variants (confounded with other levels: no variant "
            f"separates them): {', '.join(lost)}; left out."]


# ---------------------------------------------------------------------------------------------
# Plackett-Burman screening


def screen(samples: dict[str, dict[int, float]], rows_by_variant: dict[str, list[bool]],
           flags: list[str], threshold_pct: float = stats.THRESHOLD_PCT, alpha: float = 0.05,
           levels: dict[str, tuple[str, str]] | None = None) -> EffectsResult:
    """Main effect of each flag (off -> on) from a Plackett-Burman design; `levels` names the
    (on, off) levels of a column that is not a flag (the compiler: ("clang", "gcc")).

    Huber M-estimation (robust regression, as in `estimate`) of log(metric) on the flags coded
    -1 (off) / +1 (on) plus round blocks. With that coding
    beta is half the on-minus-off difference on the log scale, so on/off = exp(2 beta) and
    effect_pct = 100 (exp(2 beta) - 1), the CI transformed the same way. PB designs for computer
    performance: Yi, Lilja & Hawkins, HPCA 2003; for compiler options: Pinkers et al., MASCOTS 2004.
    Every main effect is partially aliased with two-factor interactions (Hamada & Wu, J. Quality
    Technology, 1992), so this screens; it does not settle.
    """
    measured = _pb_measured(samples, rows_by_variant, flags)
    if not measured:
        return EffectsResult("not-estimable", [], f"{PB_NOTE} No design row has measured data.")
    vids, rounds, y = _observations(samples, measured)
    x_all = np.array([[1.0 if on else -1.0 for on in rows_by_variant[v]] for v in vids])
    varied = [j for j in range(len(flags)) if len(set(x_all[:, j])) == 2]
    notes = [PB_NOTE] + _pb_constant_note(flags, varied, measured, rows_by_variant)
    if not varied:
        return EffectsResult("not-estimable", [], " ".join(notes))
    x_fac = x_all[:, varied]
    x_blk = _block_columns(rounds)
    fit = _fit(y, _design_matrix(x_fac, x_blk), len(varied))
    if fit is None:
        return _no_replication(notes)
    labels = [(flags[j], "on") for j in varied]
    cells = [tuple(rows_by_variant[v]) for v in vids]
    notes += _lack_of_fit_note(y, x_fac, x_blk, cells, fit, alpha)
    notes += _dropped_note(labels, fit) + _robust_note(fit)
    named = levels or {}
    rows = [_effect(f, *named.get(f, ("on", "off")), c, 2.0)
            for (f, _), c in zip(labels, fit.coefs) if c]
    return _finish("plackett-burman", rows, notes, threshold_pct, alpha)


def _pb_measured(samples: dict[str, dict[int, float]], rows_by_variant: dict[str, list[bool]],
                 flags: list[str]) -> list[str]:
    missing = [v for v, s in samples.items() if s and v not in rows_by_variant]
    if missing:
        raise ValueError(f"samples for {missing} but no design row for them")
    wrong = [v for v, row in rows_by_variant.items() if len(row) != len(flags)]
    if wrong:
        raise ValueError(f"design rows of {wrong} do not have one entry per flag ({len(flags)})")
    return [v for v, s in samples.items() if s]


def _pb_constant_note(flags: list[str], varied: list[int], measured: list[str],
                      rows_by_variant: dict[str, list[bool]]) -> list[str]:
    notes = []
    lost_rows = len(rows_by_variant) - len(measured)
    if lost_rows:
        # A saturated PB design that loses a run loses the orthogonality that made it work.
        notes.append(f"{lost_rows} of {len(rows_by_variant)} design rows have no measured data; "
                     "the remaining rows are no longer orthogonal, and a saturated design (one "
                     "run more than flags) then estimates no flag at all: measure every row, "
                     "including one whose code is identical to another row's.")
    constant = [f for j, f in enumerate(flags) if j not in varied]
    if constant:
        notes.append(f"Never measured both on and off, no contrast: {constant}.")
    return notes


# ---------------------------------------------------------------------------------------------
# Shared: fitting, lack of fit, adjustment


def _fit(y: np.ndarray, x: np.ndarray, k: int) -> _Fit | None:
    """Robust (Huber M-) regression of y on x; estimates for the first k columns where estimable.

    Huber's M-estimator (Huber, Ann. Math. Statist. 1964; Robust Statistics, Wiley, 1981, ch. 7),
    statsmodels RLM with HuberT (c = 1.345, 95% efficiency under normal errors) and the scale
    re-estimated by the normalized MAD of the residuals at each IRLS step: a sample slowed by a
    stall gets weight c s / |r| instead of pulling the mean, while normal noise is treated almost
    as by OLS. Intervals are estimate +- z(0.975) SE, SE from RLM's asymptotic covariance
    (Huber's H1, small-sample corrected), p-values two-sided normal: asymptotic, not exact t.

    A rank-deficient x is fitted on a full-rank subset of its columns that keeps every estimable
    one: the fitted values (hence the residuals, the scale and the M-estimate of every estimable
    coefficient, which is a function of the fitted values) depend only on x's column space.
    When the residual scale is zero (a deterministic metric), the OLS fit is exact and is used.

    None when there are no residual degrees of freedom: no error estimate, no intervals.
    `rss` stays the OLS residual sum of squares, for the lack-of-fit F-test."""
    rank = int(np.linalg.matrix_rank(x))
    df = len(y) - rank
    if df <= 0:
        return None
    with warnings.catch_warnings():
        # Rank deficiency is expected and handled: only estimable coefficients are reported.
        sm = _statsmodels()
        warnings.simplefilter("ignore", sm.SingularMatrixWarning)
        ols = sm.OLS(y, x).fit(method="pinv")
    ok = _estimable(x)[:k]
    if stats.mad(ols.resid) <= ZERO_SCALE_TOL * max(1.0, float(np.max(np.abs(y)))):
        # No robust residual variation (a deterministic metric, or one that varies in fewer
        # than half the samples): RLM's MAD scale would be 0, so fit by OLS as exactly as it goes.
        dist = sps.t(df)
        coefs = [_coef(ols.params[j], ols.bse[j], dist) if ok[j] else None for j in range(k)]
        return _Fit(coefs, df, float(ols.ssr), ROBUST_SKIPPED)
    cols = _basis_columns(x, np.concatenate([ok, np.zeros(x.shape[1] - k, dtype=bool)]))
    res = sm.RLM(y, x[:, cols], M=sm.HuberT()).fit()
    dist = sps.norm()
    where = {c: i for i, c in enumerate(cols)}
    coefs = [_coef(res.params[where[j]], res.bse[where[j]], dist) if ok[j] else None
             for j in range(k)]
    low_weight = int(np.sum(res.weights < LOW_WEIGHT))
    return _Fit(coefs, df, float(ols.ssr), low_weight)


def _basis_columns(x: np.ndarray, keep: np.ndarray) -> list[int]:
    """Indices of linearly independent columns spanning x's column space, every `keep` column
    among them (an estimable column is never in the span of the others, so this always works)."""
    cols: list[int] = []
    for j in [*np.flatnonzero(keep), *np.flatnonzero(~keep)]:
        if int(np.linalg.matrix_rank(x[:, cols + [j]])) > len(cols):
            cols.append(int(j))
    return sorted(cols)


def _estimable(x: np.ndarray) -> np.ndarray:
    """Coefficient j is estimable iff e_j is in the row space of x (Searle, Linear Models, 1971):
    the projection onto that space, pinv(x) @ x, then has 1 on its diagonal at j."""
    proj_diag = np.diag(np.linalg.pinv(x) @ x)
    return np.abs(proj_diag - 1.0) < ESTIMABLE_TOL


def _coef(beta: float, se: float, dist) -> _Coef:
    """Estimate +- q(0.975) SE and the two-sided p-value, both from `dist` (a frozen t or normal)."""
    if se == 0.0:
        # No residual variation at all (a deterministic metric such as an instruction count):
        # the estimate is exact.
        return _Coef(float(beta), float(beta), float(beta), 0.0 if beta != 0 else 1.0)
    q = dist.ppf(0.975)
    p = 2 * dist.sf(abs(beta / se))
    return _Coef(float(beta), float(beta - q * se), float(beta + q * se), float(p))


def _robust_note(fit: _Fit) -> list[str]:
    if fit.low_weight == ROBUST_SKIPPED:
        return ["Residual scale (MAD) is zero, as for a deterministic metric: fitted by OLS "
                "(exact when nothing varies), not by the robust fit."]
    return [f"Robust fit (Huber M-estimation, MAD scale; asymptotic normal CIs): {fit.low_weight} "
            f"sample(s) down-weighted below {LOW_WEIGHT} (residual beyond "
            f"{1.345 / LOW_WEIGHT:.1f} robust SDs, e.g. stalls)."]


def _effect(factor: str, level: str, ref: str, c: _Coef, scale: float) -> FactorEffect:
    """Coefficient on the log scale -> percent change; scale 2 for +-1 coded columns."""
    pct = lambda b: 100.0 * math.expm1(scale * b)
    return FactorEffect(factor, level, ref, pct(c.beta), (pct(c.low), pct(c.high)), c.p)


def _lack_of_fit_note(y: np.ndarray, x_fac: np.ndarray, x_blk: np.ndarray, cells: list[tuple],
                      fit: _Fit, alpha: float) -> list[str]:
    """Test the main-effects model against one mean per measured combination (both with blocks).

    The extra sum of squares F-test (Draper & Smith, Applied Regression Analysis, Wiley, 3rd ed.
    1998, ch. 6 on extra sums of squares): what the cell means explain beyond the main effects is
    interaction (or aliasing). Only possible when there are more combinations than parameters."""
    uniq = list(dict.fromkeys(cells))
    x_cells = np.array([[c == u for u in uniq[1:]] for c in cells], dtype=float)
    x_cells = x_cells.reshape(len(cells), len(uniq) - 1)
    x_full = _design_matrix(x_cells, x_blk)
    rank_main = len(y) - fit.df_resid
    rank_full = int(np.linalg.matrix_rank(x_full))
    df1, df2 = rank_full - rank_main, len(y) - rank_full
    if df1 <= 0 or df2 <= 0:
        return []
    with warnings.catch_warnings():
        sm = _statsmodels()
        warnings.simplefilter("ignore", sm.SingularMatrixWarning)
        rss_full = float(sm.OLS(y, x_full).fit(method="pinv").ssr)
    if rss_full <= 0:
        return []
    f = ((fit.rss - rss_full) / df1) / (rss_full / df2)
    p = float(sps.f.sf(f, df1, df2))
    verdict = ("present: effects here average over them, so read the per-variant comparisons too"
               if p < alpha else "not detected")
    return [f"Interactions (main effects vs one mean per combination): F({df1}, {df2}) = "
            f"{f:.2f}, p = {p:.3g}, {verdict}."]


def _finish(design: str, rows: list[FactorEffect], notes: list[str], threshold_pct: float,
            alpha: float) -> EffectsResult:
    """Benjamini-Hochberg across the rows, then the practical-and-significant verdict."""
    if not rows:
        return EffectsResult("not-estimable", [], " ".join(notes + ["No effect is estimable."]))
    p_adj = sps.false_discovery_control([e.p_value for e in rows], method="bh")
    adjusted = _fcr_pct(rows, threshold_pct, alpha)
    out = [replace(e, p_adjusted=float(pa), ci_fcr_pct=ci, fcr_level=level,
                   matters=_matters(float(pa), ci, threshold_pct, alpha))
           for e, pa, (ci, level) in zip(rows, p_adj, adjusted)]
    return EffectsResult(design, out, " ".join(notes))


def _fcr_pct(rows: list[FactorEffect], threshold_pct: float, alpha: float
             ) -> list[tuple[tuple[float, float] | None, float | None]]:
    """Each row's interval adjusted for selecting the rows beyond the threshold (Benjamini &
    Yekutieli, JASA 2005; stats.fcr_intervals), in percent, and its level. A row's interval is
    exp of a normal interval on the log scale, the form fcr_intervals reads from a 95% one."""
    as_ratios = [stats.RatioEstimate(1 + e.effect_pct / 100,
                                     (1 + e.ci95_pct[0] / 100, 1 + e.ci95_pct[1] / 100),
                                     (math.nan, math.nan), e.p_value, 0) for e in rows]
    stats.fcr_intervals(as_ratios, threshold_pct, alpha)
    return [(None, None) if c.ci_fcr is None else
            ((100 * (c.ci_fcr[0] - 1), 100 * (c.ci_fcr[1] - 1)), c.fcr_level)
            for c in as_ratios]


def _matters(p_adjusted: float, ci_fcr_pct: tuple[float, float] | None, threshold_pct: float,
             alpha: float) -> bool:
    """Significant after adjustment, and beyond the threshold as a faster/slower call is: its
    whole adjusted interval, not only the estimate (a row at exactly the threshold has an
    estimate beyond it half the time)."""
    if ci_fcr_pct is None:
        return False
    beyond = ci_fcr_pct[1] < -threshold_pct or ci_fcr_pct[0] > threshold_pct
    return p_adjusted < alpha and beyond


def _no_replication(notes: list[str]) -> EffectsResult:
    why = ("No residual degrees of freedom: as many parameters as observations, so no error "
           "estimate and no intervals; measure more rounds.")
    return EffectsResult("not-estimable", [], " ".join([why] + notes))


@functools.cache
def _statsmodels():
    """statsmodels' OLS, RLM and HuberT, imported on first use: loading statsmodels takes
    about 0.7 s, which every command that only refuses its arguments or reads a contract
    would pay at start-up."""
    from types import SimpleNamespace

    from statsmodels.regression.linear_model import OLS
    from statsmodels.robust.norms import HuberT
    from statsmodels.robust.robust_linear_model import RLM
    from statsmodels.tools.sm_exceptions import SingularMatrixWarning
    return SimpleNamespace(OLS=OLS, RLM=RLM, HuberT=HuberT,
                           SingularMatrixWarning=SingularMatrixWarning)
