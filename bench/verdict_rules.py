"""Seeded simulations of flagsweep's verdict rules, calling the functions a sweep calls.

    nice -n 19 .venv/bin/python bench/verdict_rules.py            # every table, a few minutes
    nice -n 19 .venv/bin/python bench/verdict_rules.py --scale 0.25 stopping   # fewer sweeps, one table

A simulated sweep: baseline, its A/A twin and the variants, each sample
exp(true log effect + the round's shared drift + noise), rounds in `rounds.order`'s shuffle.
It stops where `rounds.decided` (the run's own rule) says, or after a fixed n; then every
variant is compared with the baseline by `stats.compare` and the sweep adjusted by
`stats.adjust`, as `analysis.apply` does. The noise statement is `stats.noise` on the baseline
and twin. History feeds `history.Series`/`Point` (as `history._points` builds them) to
`history._detect` and `history.regressions`, night after night. Rates carry one binomial
standard error (+-) and an exact Clopper-Pearson 95% interval in brackets. Everything is
seeded: the same command prints the same tables.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep import stats  # noqa: E402
from flagsweep.stats import significance  # noqa: E402
from flagsweep.across import history
from flagsweep.measure import rounds

SEED = 20261123
THRESHOLD_PCT = stats.THRESHOLD_PCT
THRESHOLD = stats.fraction(THRESHOLD_PCT)
STALL = math.log(1.3)
MIN_TRUSTED = history.MIN_SPREAD_RUNS         # nights (from 1) judged before the t test applies


# ---- noise models ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Noise:
    """Per-sample log noise: log-normal with this CV or Student t3 scaled to this sd, plus
    stalls (x1.3) on a share of samples, plus a random walk over the executions in their
    shuffled order (sd per round)."""

    cv: float = 0.01
    t3: bool = False
    stalls: float = 0.0
    walk: float = 0.0

    @property
    def name(self) -> str:
        text = f"t3 sd {100 * self.cv:g}%" if self.t3 else f"LN cv {100 * self.cv:g}%"
        if self.stalls:
            text += f", {100 * self.stalls:g}% stalls x1.3"
        if self.walk:
            text += f", drift rw_exec {100 * self.walk:g}%"
        return text

    def draw(self, rng: np.random.Generator, plan: rounds.Plan, n_rounds: int) -> dict[str, np.ndarray]:
        ids = plan.variant_ids
        if self.t3:
            e = rng.standard_t(3, size=(len(ids), n_rounds)) * self.cv / math.sqrt(3)
        else:
            e = rng.normal(0, math.sqrt(math.log(1 + self.cv ** 2)), size=(len(ids), n_rounds))
        if self.stalls:
            e += STALL * (rng.random(e.shape) < self.stalls)
        e += rng.normal(0, 0.03, size=n_rounds)          # round drift: pairing must cancel it
        if self.walk:
            steps = rng.normal(0, self.walk / math.sqrt(len(ids)), size=len(ids) * n_rounds)
            walk = np.cumsum(steps)
            index = {vid: k for k, vid in enumerate(ids)}
            for r in range(n_rounds):
                for pos, vid in enumerate(rounds.order(plan, r)):
                    e[index[vid], r] += walk[r * len(ids) + pos]
        return {vid: e[k] for k, vid in enumerate(ids)}


# ---- one simulated sweep ---------------------------------------------------------------------

def sweep(rng: np.random.Generator, noise: Noise, effects: dict[str, float], runs: int | None,
          seed: int) -> tuple[dict[str, stats.RatioEstimate], int, dict]:
    """(comparisons as the analysis makes them, rounds measured, stats.noise's statement)."""
    ids = ["base", "base.aa", *effects]
    plan = rounds.Plan(ids, seed=seed, warmup=0, baseline="base", threshold_pct=THRESHOLD_PCT,
                       min_runs=runs or 5, max_runs=runs or 30)
    logs = noise.draw(rng, plan, plan.max_runs)
    for vid, ratio in effects.items():
        logs[vid] = logs[vid] + math.log(ratio)
    values = {vid: {r: float(math.exp(x)) for r, x in enumerate(logs[vid])} for vid in ids}
    n = plan.max_runs
    for k in range(rounds.first_stop(plan), plan.max_runs + 1):
        if rounds.decided(plan, rounds.first_rounds(values, k), k) is not None:
            n = k
            break
    measured = rounds.first_rounds(values, n)
    comparisons = _analysed(measured, plan)
    statement = stats.noise(measured["base"], measured["base.aa"], THRESHOLD_PCT, m=len(ids) - 1)
    return comparisons, n, statement


def looped(values: dict[str, dict[int, float]], plan: rounds.Plan
           ) -> tuple[dict[str, stats.RatioEstimate], int, rounds.Outcome]:
    """A sweep through `rounds.rounds` itself, the run's own loop with its stops, over values
    drawn beforehand: (comparisons as the analysis makes them on what was measured, runs
    taken, the loop's outcome)."""
    measured: dict[str, dict[int, float]] = {}

    def measure(vid, rnd, pos, pad):
        measured.setdefault(vid, {})[rnd] = values[vid][rnd]

    outcome = rounds.rounds(plan, set(), measure, lambda: measured)
    return _analysed(measured, plan), sum(len(v) for v in measured.values()), outcome


def _analysed(measured: dict[str, dict[int, float]], plan: rounds.Plan) -> dict[str, stats.RatioEstimate]:
    """The analysis at the end, as analysis.apply makes it with the design the sweep spent
    (rounds._comparisons: stats.compare, then stats.adjust, at the sweep's levels)."""
    return rounds._comparisons(plan, measured)


# ---- rates -----------------------------------------------------------------------------------

def rate(hits: int, n: int) -> str:
    """'12.3% +-1.0 [10.4, 14.4]': the share, one binomial s.e., the exact 95% interval."""
    p = hits / n
    se = math.sqrt(p * (1 - p) / n)
    lo = sps.beta.ppf(0.025, hits, n - hits + 1) if hits else 0.0
    hi = sps.beta.ppf(0.975, hits + 1, n - hits) if hits < n else 1.0
    return f"{100 * p:.1f}% +-{100 * se:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def quantiles(xs: list[int]) -> str:
    q = np.percentile(xs, [10, 50, 90])
    return "/".join(f"{x:g}" for x in q)


def table(head: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(flush=True)


# ---- the tables ------------------------------------------------------------------------------

def stopping(scale: float) -> None:
    """Quiet machines: the cells where the median-precision rule stopped at 6 rounds."""
    print("### Stopping and power: baseline + twin + one variant (m = 2), default options\n")
    rows = []
    cells = [(Noise(0.003), 1.03), (Noise(0.003), 1.10), (Noise(0.005), 1.03), (Noise(0.005), 1.10),
             (Noise(0.007), 1.03), (Noise(0.007), 1.10), (Noise(0.01), 1.03), (Noise(0.01), 0.97),
             (Noise(0.02), 1.03), (Noise(0.01, t3=True), 1.03), (Noise(0.01, stalls=0.05), 1.03),
             (Noise(0.01, walk=0.01), 1.03)]
    for k, (noise, effect) in enumerate(cells):
        n = _sweeps(400 if noise.cv < 0.02 and not noise.stalls else 150, scale)
        rng = np.random.default_rng([SEED, 1, k])
        want = "slower" if effect > 1 else "faster"
        right, edge, used = 0, 0, []
        for i in range(n):
            cs, r, _ = sweep(rng, noise, {"var": effect}, None, seed=i)
            right += cs["var"].verdict == want
            lo, hi = cs["var"].ci95
            edge += cs["var"].verdict == "inconclusive" and (lo > 1 + THRESHOLD or hi < 1 - THRESHOLD)
            used.append(r)
        rows.append([noise.name, f"{100 * (effect - 1):+g}%", str(n), rate(right, n), rate(edge, n),
                     quantiles(used), f"{np.mean(np.array(used) == 30):.2f}"])
    table(["noise", "effect", "sweeps", "P(right verdict)", "inconclusive with the 95% CI beyond 1%",
           "rounds q10/50/90", "share at max 30"], rows)


def aa(scale: float) -> None:
    print("### A/A: baseline + twin (m = 1); and the twin + 9 null variants (m = 10)\n")
    rows = []
    cells = [(Noise(0.005), 0), (Noise(0.02), 0), (Noise(0.05), 0), (Noise(0.02, stalls=0.05), 0),
             (Noise(0.02, t3=True), 0), (Noise(0.01), 9)]
    for k, (noise, extra) in enumerate(cells):
        for runs in (10, None):
            n = _sweeps(400 if runs or noise.cv < 0.01 else 150, scale)
            rng = np.random.default_rng([SEED, 2, k, runs or 0])
            effects = {f"null{j}": 1.0 for j in range(extra)}
            any_fp, fp, total, used = 0, 0, 0, []
            for i in range(n):
                cs, r, _ = sweep(rng, noise, effects, runs, seed=i)
                calls = sum(c.verdict in ("faster", "slower") for c in cs.values())
                any_fp += calls > 0
                fp += calls
                total += len(cs)
                used.append(r)
            rows.append([noise.name, str(extra + 1), str(runs or "adaptive"), str(n),
                         rate(any_fp, n), f"{100 * fp / total:.2f}%", f"{np.mean(used):.1f}"])
    table(["noise", "m", "n", "sweeps", "sweeps with a false faster/slower",
           "comparisons", "mean rounds"], rows)


def band_edge(scale: float) -> None:
    print("### TOST at the band edge: P(equivalent) for a true ratio of exactly 1.01, m = 2\n")
    rows = []
    cells = [Noise(0.005), Noise(0.01), Noise(0.015), Noise(0.01, walk=0.01),
             Noise(0.005, t3=True), Noise(0.005, stalls=0.05)]
    pooled = [0, 0]
    for k, noise in enumerate(cells):
        n = _sweeps(1000 if noise.cv <= 0.005 and not noise.stalls else 400, scale)  # cheap: 9 rounds
        rng = np.random.default_rng([SEED, 3, k])
        hits, used = 0, []
        for i in range(n):
            cs, r, _ = sweep(rng, noise, {"var": 1 + THRESHOLD}, None, seed=i)
            hits += cs["var"].verdict == "equivalent"
            used.append(r)
        pooled[0] += hits
        pooled[1] += n
        rows.append([noise.name, str(n), rate(hits, n), quantiles(used)])
    rows.append(["pooled", str(pooled[1]), rate(*pooled), ""])
    table(["noise", "sweeps", "P(equivalent) at ratio 1.01, adaptive", "rounds q10/50/90"], rows)


def statement(scale: float) -> None:
    """Each sweep states its smallest effect called at 80% power; the same sweep's variant then
    carries exactly that effect (its noise drawn first, so the effect does not steer it), a
    slowdown in even sweeps and a speedup in odd ones, since the statement is for either."""
    print("### The noise statement: does the stated effect get called 80% of the time?\n")
    rows = []
    cells = [(Noise(0.005), 10), (Noise(0.01), 10), (Noise(0.01), 20), (Noise(0.02), 30),
             (Noise(0.01, stalls=0.05), 10), (Noise(0.01, stalls=0.10), 10),
             (Noise(0.01, stalls=0.10), 20), (Noise(0.01, t3=True), 10), (Noise(0.005), 30)]
    for k, (noise, runs) in enumerate(cells):
        n = _sweeps(300, scale)
        rng = np.random.default_rng([SEED, 4, k])
        called, stated = 0, []
        for i in range(n):
            plan = rounds.Plan(["base", "base.aa", "var"], seed=i, warmup=0, baseline="base",
                               min_runs=runs, max_runs=runs)
            logs = noise.draw(rng, plan, runs)
            base = {r: float(math.exp(x)) for r, x in enumerate(logs["base"])}
            twin = {r: float(math.exp(x)) for r, x in enumerate(logs["base.aa"])}
            said = stats.noise(base, twin, THRESHOLD_PCT, m=2)
            if said["mde_pct"] is None:
                continue
            stated.append(said["mde_pct"])
            sign, verdict = (1, "slower") if i % 2 == 0 else (-1, "faster")
            effect = sign * math.log(1 + said["mde_pct"] / 100)
            var = {r: float(math.exp(x + effect)) for r, x in enumerate(logs["var"])}
            cs = [stats.compare(twin, base, seed=i), stats.compare(var, base, seed=i)]
            stats.adjust(cs, threshold_pct=THRESHOLD_PCT)
            called += cs[1].verdict == verdict
        rows.append([noise.name, str(runs), str(len(stated)), f"{np.median(stated):.2f}%",
                     f"{np.percentile(stated, 10):.2f}..{np.percentile(stated, 90):.2f}%",
                     rate(called, len(stated))])
    table(["noise", "n", "sweeps", "stated effect (median)", "q10..q90",
           "called at the stated effect, half slower, half faster (goal 75-85%)"], rows)


def sequential(scale: float) -> None:
    """Stopping decided variants (rounds.stops) with the peeking it implies, through the run's
    own loop. Each sweep is drawn once and run twice, with and without the stops, so the runs
    and the verdicts compare like for like; the fixed design is every binary in all 30 rounds.
    A false discovery is faster/slower for a true ratio within the band (its edge included) or
    on the wrong side; a false equivalence is "equivalent" for a true ratio at or beyond the
    band's edge."""
    print("### Stopping decided variants: baseline + twin + 6 variants (m = 7), 30 rounds at "
          "most\n")
    far = {"far1": 1.35, "far2": 0.80, "far3": 1.10}
    cells = [("half far, half null", Noise(0.01), {**far, "null1": 1.0, "null2": 1.0, "null3": 1.0}),
             ("half far, half null", Noise(0.03), {**far, "null1": 1.0, "null2": 1.0, "null3": 1.0}),
             ("half far, half null", Noise(0.02, stalls=0.05),
              {**far, "null1": 1.0, "null2": 1.0, "null3": 1.0}),
             ("half far, half at the edge", Noise(0.005), {**far, "edge1": 1.01, "edge2": 0.99,
                                                           "edge3": 1.01}),
             ("half far, half at the edge", Noise(0.01), {**far, "edge1": 1.01, "edge2": 0.99,
                                                          "edge3": 1.01}),
             ("all null", Noise(0.005), {f"null{j}": 1.0 for j in range(6)}),
             ("all null", Noise(0.02, t3=True), {f"null{j}": 1.0 for j in range(6)})]
    head = ["variants", "noise", "sweeps", "FDR (mean false share of calls)",
            "false equivalence (true ratio at or beyond the edge)", "variants stopped a sweep",
            "runs: stops / no stops / fixed 30", "fewer than fixed", "fewer than no stops",
            "sweeps with the same verdicts without stops", "sweeps where both decided differently"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head), flush=True)
    for k, (what, noise, effects) in enumerate(cells):
        n = _sweeps(200, scale)
        rng = np.random.default_rng([SEED, 7, k])
        ids = ["base", "base.aa", *effects]
        truth = {"base.aa": 1.0, **effects}
        fdp, false_eq, beyond, runs, agree, stopped, calls = [], 0, 0, {True: [], False: []}, 0, 0, 0
        conflicts = 0
        for i in range(n):
            plan = rounds.Plan(ids, seed=i, warmup=0, baseline="base", threshold_pct=THRESHOLD_PCT)
            logs = noise.draw(rng, plan, plan.max_runs)
            values = {vid: {r: float(math.exp(x + math.log(truth.get(vid, 1.0))))
                            for r, x in enumerate(logs[vid])} for vid in ids}
            verdicts = {}
            for drop in (True, False):
                plan = rounds.Plan(ids, seed=i, warmup=0, baseline="base", threshold_pct=THRESHOLD_PCT,
                                   drop=drop, keep=frozenset({"base", "base.aa"}))
                cs, used, outcome = looped(values, plan)
                runs[drop].append(used)
                verdicts[drop] = {vid: c.verdict for vid, c in cs.items()}
                if not drop:
                    continue
                stopped += len(outcome.stopped)
                said = [vid for vid, c in cs.items() if c.verdict in ("faster", "slower")]
                wrong = [vid for vid in said if abs(math.log(truth[vid])) <= math.log1p(THRESHOLD)
                         + 1e-12 or (cs[vid].verdict == "faster") != (truth[vid] < 1)]
                calls += len(said)
                fdp.append(len(wrong) / max(1, len(said)))
                edge = [vid for vid in cs if abs(math.log(truth[vid])) >= math.log1p(THRESHOLD)
                        - 1e-3]
                beyond += len(edge)
                false_eq += sum(cs[vid].verdict == "equivalent" for vid in edge)
            agree += verdicts[True] == verdicts[False]
            conflicts += any(verdicts[True][v] != verdicts[False][v] and "inconclusive" not in
                             (verdicts[True][v], verdicts[False][v]) for v in verdicts[True])
        fixed = len(ids) * 30
        seq, plain = np.mean(runs[True]), np.mean(runs[False])
        row = [what, noise.name, str(n), f"{100 * np.mean(fdp):.2f}%",
               rate(false_eq, beyond) if beyond else "none there", f"{stopped / n:.1f}",
               f"{seq:.0f} / {plain:.0f} / {fixed}", f"{100 * (1 - seq / fixed):.0f}%",
               f"{100 * (1 - seq / plain):.0f}%", f"{100 * agree / n:.1f}%",
               f"{100 * conflicts / n:.1f}%"]
        print("| " + " | ".join(row) + " |", flush=True)
    print()


def nights(scale: float) -> None:
    print("### History: 20 nights, 10 samples per night (CV 1%), `history --check` each night\n")
    rows_null, rows_step = [], []
    cells = [(0.005, 1.0, False), (0.02, 3.0, False), (0.03, 3.0, False), (0.03, 5.0, False),
             (0.02, 3.0, True), (0.03, 3.0, True), (0.03, 1.0, True)]
    for k, (day, thr, ref) in enumerate(cells):
        n = _sweeps(250, scale)
        rng = np.random.default_rng([SEED, 5, k])
        alarms = [_series(rng, day, thr, None, ref)[0] for _ in range(n)]
        arm = "yes" if ref else "no"
        rows_null.append([f"{100 * day:g}%", arm, f"{thr:g}%", str(n),
                          rate(sum(map(bool, alarms)), n),
                          rate(sum(any(k < MIN_TRUSTED for k in a) for a in alarms), n),
                          rate(sum(any(k >= MIN_TRUSTED for k in a) for a in alarms), n)])
        right, placed, later, never, early = 0, 0, 0, 0, 0
        for _ in range(n):
            before, fired = _series(rng, day, thr, 14, ref)
            early += bool(before)
            right += fired == "on"
            placed += fired == "placed"
            later += fired == "elsewhere"
            never += fired is None
        rows_step.append([f"{100 * day:g}%", arm, f"{thr:g}%", str(n), rate(right, n),
                          rate(right + placed, n),
                          rate(later, n), rate(never, n), rate(early, n)])
    table(["day-to-day", "reference arm", "--threshold", "series", ">= 1 false alarm in 20 nights",
           f"... on nights 2-{MIN_TRUSTED} (spread not yet trusted)",
           f"... on nights {MIN_TRUSTED + 1}-20"], rows_null)
    print("A +5% step on night 15 (the target's version changes that night):\n")
    table(["day-to-day", "reference arm", "--threshold", "series", "fails on night 15",
           "found by night 20 and placed on night 15", "found but placed on another night",
           "never found", ">= 1 false alarm on nights 2-14"], rows_step)


def _series(rng: np.random.Generator, day: float, thr: float, step_at: int | None,
            reference: bool = False):
    """(the nights, counted from 0, whose check failed before the step; how the step was found:
    'on' night 15 itself, 'placed' there by a later night's check, 'elsewhere', or None). One
    pass of _detect over the 20 nights: it never looks ahead, so the steps it finds with night
    k (Step.found_in) are what `history --check` run on night k reports. With a reference arm
    the same night's level moves a fixed binary's 10 samples too (its own 1% noise), and each
    value goes through history._against_reference, as the store's sweeps do."""
    levels = rng.normal(0, day, 20)
    s = history.Series("v", [], "m")
    docs = [{"id": "v"}, {"id": "v.ref", "build": {"reference_sha256": "r"}}]
    for night in range(20):
        late = step_at is not None and night >= step_at
        x = np.exp(levels[night] + (math.log(1.05) if late else 0.0) + rng.normal(0, 0.01, 10))
        if reference:
            ref = np.exp(levels[night] + rng.normal(0, 0.01, 10))
            values = {"v": dict(enumerate(map(float, x))), "v.ref": dict(enumerate(map(float, ref)))}
            x = np.array(list(history._against_reference(docs, values)[0]["v"].values()))
        s.points.append(history.Point(f"n{night}", float(night), list(map(float, x)),
                                      float(np.median(x)), None, {"target": "1.1" if late else "1.0"}))
    history._detect([s], thr)
    alarms, fired = [], None
    for step in s.steps:
        if step.verdict != "slower":
            continue
        night = int(step.found_in[1:])
        if step_at is None or night < step_at:
            alarms.append(night)
        elif fired is None:
            fired = "on" if night == step_at else (
                "placed" if step.run_id == f"n{step_at}" else "elsewhere")
    return alarms, fired


def cost(scale: float) -> None:
    print("### Cost of the stopping rule: 30 variants + twin at 30 rounds, one evaluation\n")
    rng = np.random.default_rng([SEED, 6])
    ids = ["base", "base.aa", *(f"v{j}" for j in range(30))]
    plan = rounds.Plan(ids, seed=1, warmup=0, baseline="base")
    values = {vid: {r: float(x) for r, x in enumerate(rng.lognormal(0, 0.01, 30))} for vid in ids}
    t0 = time.process_time()
    for _ in range(3):
        rounds.decided(plan, values, 30)
    print(f"rounds.decided: {(time.process_time() - t0) / 3:.2f} s CPU per round\n")


# ---- "beyond the threshold" across many variants -------------------------------------------

def _unadjusted(c: stats.RatioEstimate) -> str | None:
    """The verdict as it was before false-coverage adjustment: BH-significant and the plain
    95% interval beyond the threshold. The stop does not depend on it (the rule settles on
    equivalence and widths), so one simulated sweep gives both verdicts, paired."""
    if c.p_adjusted is None or c.p_adjusted >= 0.05:
        return None
    if c.ci95[1] < 1 - THRESHOLD:
        return "faster"
    return "slower" if c.ci95[0] > 1 + THRESHOLD else None


def beyond(scale: float) -> None:
    """10 variants all exactly at the threshold (+1%): every "slower" claims an effect beyond
    the threshold that is not there. m = 11 with the twin. The rule's own stop (max 30 rounds)
    at CV 1%; a fixed 20 rounds at CV 3% and 10% (the rule would run to 30 there, at 20 times
    the cost of evaluating it every round)."""
    print("### Beyond the threshold: 10 variants at exactly +1% (threshold 1%), m = 11\n")
    rows = []
    at_edge = {f"edge{j}": 1 + THRESHOLD for j in range(10)}
    for k, (noise, runs) in enumerate([(Noise(0.01), None), (Noise(0.03), 20),
                                       (Noise(0.10), 20)]):
        n = _sweeps(1000, scale)
        rng = np.random.default_rng([SEED, 8, k])
        sweeps, calls, used = {"95%": 0, "FCR": 0}, {"95%": 0, "FCR": 0}, []
        for i in range(n):
            cs, r, _ = sweep(rng, noise, at_edge, runs, seed=i)
            said = {"95%": sum(_unadjusted(cs[v]) is not None for v in at_edge),
                    "FCR": sum(cs[v].verdict in ("faster", "slower") for v in at_edge)}
            for rule, x in said.items():
                sweeps[rule] += x > 0
                calls[rule] += x
            used.append(r)
        total = n * len(at_edge)
        rows.append([noise.name, str(runs or "adaptive"), str(n), rate(sweeps["95%"], n),
                     rate(sweeps["FCR"], n), f"{100 * calls['95%'] / total:.2f}%",
                     f"{100 * calls['FCR'] / total:.2f}%", quantiles(used)])
    table(["noise", "n", "sweeps", "sweeps with any beyond-threshold call: 95% CI (before)",
           "... FCR-adjusted CI (now; goal <= 5%)", "comparisons: before", "now",
           "rounds q10/50/90"], rows)


def matters(scale: float) -> None:
    """Effects rows at exactly the threshold: a 2^4 factorial of on/off flags, every flag +1%
    (threshold 1%), CV 1%, 10 rounds, fitted by stats.effects as a sweep does. "Before" is the
    old rule (BH-significant, the estimate beyond the threshold, the 95% CI excluding 0), "now"
    the row's false-coverage adjusted interval wholly beyond it, from the same fits."""
    from flagsweep.stats import effects
    print("### Effects that matter: 4 flags at exactly +1% in a 2^4 factorial, CV 1%, 10 rounds\n")
    flags = [f"f{j}" for j in range(4)]
    combos = [tuple((i >> j) & 1 for j in range(4)) for i in range(16)]
    factors = {f"v{i}": {f: "on" if bit else "off" for f, bit in zip(flags, c)}
               for i, c in enumerate(combos)}
    reference = {f: "off" for f in flags}
    n = _sweeps(1000, scale)
    rng = np.random.default_rng([SEED, 12])
    tables, rows_hit = {"before": 0, "now": 0}, {"before": 0, "now": 0}
    for _ in range(n):
        level = rng.normal(0, 0.01, 10)
        values = {vid: {r: float(math.exp(level[r] + sum(bit for bit in c) * math.log1p(THRESHOLD)
                                           + rng.normal(0, 0.01))) for r in range(10)}
                  for vid, c in zip(factors, combos)}
        rows = effects.estimate(values, factors, reference, threshold_pct=THRESHOLD_PCT).effects
        old = sum(bool(e.p_adjusted is not None and e.p_adjusted < 0.05
                       and abs(e.effect_pct) > THRESHOLD_PCT
                       and (e.ci95_pct[0] > 0 or e.ci95_pct[1] < 0)) for e in rows)
        new = sum(bool(e.matters) for e in rows)
        for rule, x in (("before", old), ("now", new)):
            tables[rule] += x > 0
            rows_hit[rule] += x
    table(["tables", "with any row 'matters': before", "now (goal <= 5%)", "rows: before", "now"],
          [[str(n), rate(tables["before"], n), rate(tables["now"], n),
            f"{100 * rows_hit['before'] / (4 * n):.1f}%", f"{100 * rows_hit['now'] / (4 * n):.1f}%"]])


def beyond_power(scale: float) -> None:
    """What the false-coverage control costs: P(slower) for a real +2%, +3% or +5% (threshold
    1%), alone among 9 null variants (the adjustment's dearest case: one selected of m = 11,
    judged on its 1 - 0.05/11 interval) and as one of 10 alike (its cheapest). The rule's own
    stop at CV 1%, a fixed 20 rounds at CV 3%."""
    print("### Beyond the threshold: power at +2% to +5% (threshold 1%), m = 11\n")
    rows = []
    cells = [(Noise(0.01), 1.02, "alone", None), (Noise(0.03), 1.03, "alone", 20),
             (Noise(0.03), 1.05, "alone", 20), (Noise(0.03), 1.03, "all 10", 20)]
    for k, (noise, effect, how, runs) in enumerate(cells):
        n = _sweeps(1000, scale)
        rng = np.random.default_rng([SEED, 9, k])
        others = 1.0 if how == "alone" else effect
        effects = {"var": effect, **{f"other{j}": others for j in range(9)}}
        before, now, wrong, used = 0, 0, 0, []
        for i in range(n):
            cs, r, _ = sweep(rng, noise, effects, runs, seed=i)
            before += _unadjusted(cs["var"]) == "slower"
            now += cs["var"].verdict == "slower"
            wrong += any(c.verdict == "faster" or _unadjusted(c) == "faster" for c in cs.values())
            used.append(r)
        rows.append([noise.name, f"{100 * (effect - 1):+g}%", how, str(runs or "adaptive"),
                     str(n), rate(before, n), rate(now, n), rate(wrong, n), quantiles(used)])
    table(["noise", "effect", "variants at it", "n", "sweeps",
           "P(slower): 95% CI (before)", "FCR-adjusted CI (now)",
           "sweeps with a faster call (either)", "rounds q10/50/90"], rows)


# ---- the stops and the sweep's rule: verdicts in reach, equivalence, alpha, many comparisons ---

class _ExactP:
    """Within it, the analysis's sign-flip p is the exact p its Monte Carlo estimates beyond 14
    pairs (the signed sum's null distribution by the subset-sum recurrence, as
    stats.signed_rank_p): the same test without the Monte Carlo's noise and 20000 sign vectors
    a call, which made these tables hours long. Not for the table of stops among many
    comparisons, whose point is the Monte Carlo's floor."""

    def __enter__(self):
        self.saved = significance.signflip_p
        significance.signflip_p = lambda d, rng: _exact(d)

    def __exit__(self, *exc):
        significance.signflip_p = self.saved


def _exact(d: np.ndarray) -> float:
    w2 = np.rint(2 * sps.rankdata(np.abs(d)) * (d != 0)).astype(int)
    t_obs = abs(int(np.sign(d) @ w2))
    if t_obs == 0:
        return 1.0
    tail = _tails(tuple(sorted(w2[w2 > 0])))
    return float(min(1.0, tail[t_obs]))


@functools.lru_cache(maxsize=4096)
def _tails(weights: tuple[int, ...]) -> np.ndarray:
    """P(|signed sum| >= t) for every t, for these doubled ranks (no ties: one per n)."""
    top = sum(weights)
    dist = np.zeros(top + 1)
    dist[0] = 1.0
    for w in weights:
        dist[w:] = (dist[w:] + dist[:top + 1 - w]) / 2
        dist[:w] /= 2
    t = np.abs(2 * np.arange(top + 1) - top)
    by_t = np.bincount(t, weights=dist, minlength=top + 2)
    return np.cumsum(by_t[::-1])[::-1]


DROPS = (True, False)  # band-stops: with the variant stops and without
PART = (0, 1)          # --part k/K: this process runs the sweeps i with i % K == k


def _mine(n: int) -> list[int]:
    """The sweeps of a cell this process runs; each draws from its own generator, so parts run
    apart add up to the whole table (their counts are printed to be summed)."""
    return [i for i in range(n) if i % PART[1] == PART[0]]


def _world(rng: np.random.Generator, noise: Noise, truth: dict[str, float], seed: int,
           start: dict[str, int] | None = None) -> tuple[list[str], dict[str, dict[int, float]]]:
    """One sweep's values for baseline, twin and `truth`'s variants over 30 rounds; a variant
    in `start` takes its effect only from that round on (a program that changes mid-sweep)."""
    ids = ["base", "base.aa", *truth]
    plan = rounds.Plan(ids, seed=seed, warmup=0, baseline="base")
    logs = noise.draw(rng, plan, plan.max_runs)
    values = {}
    for vid in ids:
        effect = math.log(truth.get(vid, 1.0))
        values[vid] = {r: float(math.exp(x + (effect if r >= (start or {}).get(vid, 0) else 0.0)))
                       for r, x in enumerate(logs[vid])}
    return ids, values


def _run(ids: list[str], values, seed: int, drop: bool):
    plan = rounds.Plan(ids, seed=seed, warmup=0, baseline="base", threshold_pct=THRESHOLD_PCT,
                       drop=drop, keep=frozenset({"base", "base.aa"}))
    return looped(values, plan)


def _in_reach(cs: dict[str, stats.RatioEstimate], outcome: rounds.Outcome, max_runs: int = 30) -> bool:
    """The sweep said "decided" while an undecided comparison was projected to decide within
    the rounds it had left."""
    return outcome.stop_reason.startswith("decided") and any(
        c.verdict == "inconclusive" and c.rounds_needed is not None
        and c.rounds_needed <= max_runs for vid, c in cs.items() if vid not in outcome.stopped)


def reach(scale: float) -> None:
    with _ExactP():
        _reach(scale)


def _reach(scale: float) -> None:
    """Olevels-like sweeps through the run's own loop with its stops (the default local sweep):
    how often it says "decided" with a verdict in reach, what it calls, and its rounds."""
    print("### Verdicts in reach at the stop: baseline + twin + 4 variants (m = 5), stops on\n")
    truth = {"v2": 1.02, "v15": 1.015, "vm15": 0.985, "far": 1.30}
    rows = []
    for k, noise in enumerate([Noise(0.01)]):          # the cell the shared machine allowed
        n = _sweeps(1000, scale)
        in_reach, right, beyond, false, calls, used, decided = 0, 0, 0, 0, 0, [], 0
        n = len(_mine(n))
        for i in _mine(_sweeps(1000, scale)):
            ids, values = _world(np.random.default_rng([SEED, 20, k, i]), noise, truth, i)
            cs, runs, outcome = _run(ids, values, i, drop=True)
            in_reach += _in_reach(cs, outcome)
            decided += outcome.stop_reason.startswith("decided")
            for vid, c in cs.items():
                t = {"base.aa": 1.0, **truth}[vid]
                called = c.verdict in ("faster", "slower")
                calls += called
                if abs(math.log(t)) > math.log1p(THRESHOLD):
                    beyond += 1
                    right += c.verdict == ("slower" if t > 1 else "faster")
                false += called and (abs(math.log(t)) <= math.log1p(THRESHOLD)
                                     or (c.verdict == "slower") != (t > 1))
            used.append(outcome.rounds)
        rows.append([noise.name, str(n), rate(in_reach, n), rate(decided, n), rate(right, beyond),
                     rate(false, max(1, calls)), quantiles(used), f"{np.mean(used):.1f}"])
        print(f"counts: in_reach {in_reach} decided {decided} right {right}/{beyond} "
              f"false {false}/{calls} rounds_sum {sum(used)} n {n}")
    table(["noise", "sweeps", "said decided with a verdict in reach", "said decided",
           "power: beyond-threshold variants called right", "false share of faster/slower calls",
           "rounds q10/50/90", "mean rounds"], rows)


def band_stops(scale: float) -> None:
    with _ExactP():
        _band_stops(scale)


def _band_stops(scale: float) -> None:
    """The issue's configuration: two-variant sweeps (twin + one at exactly +1%) through the
    run's loop, with and without the variant stops, P(equivalent) for the +1% variant."""
    print("### Equivalence at the band edge under the adaptive rule: twin + one variant at "
          "exactly +1% (m = 2)\n")
    rows = []
    for k, noise in enumerate([Noise(0.01)]):          # the CV 1%; 1.5% costs 3x
        n = _sweeps(1000, scale)
        hits, used = {True: 0, False: 0}, {True: [], False: []}
        n = len(_mine(n))
        for i in _mine(_sweeps(1000, scale)):
            ids, values = _world(np.random.default_rng([SEED, 21, k, i]), noise,
                                 {"var": 1 + THRESHOLD}, i)
            for drop in DROPS:
                cs, _, outcome = _run(ids, values, i, drop)
                hits[drop] += cs["var"].verdict == "equivalent"
                used[drop].append(outcome.rounds)
        for drop in DROPS:
            rows.append([noise.name, "yes" if drop else "no", str(n), rate(hits[drop], n),
                         quantiles(used[drop])])
            print(f"counts: drop {drop} equivalent {hits[drop]} n {n} rounds_sum {sum(used[drop])}")
    table(["noise", "variant stops", "sweeps", "P(equivalent) at ratio 1.01", "rounds q10/50/90"],
          rows)


def aa_paired(scale: float) -> None:
    with _ExactP():
        _aa_paired(scale)


def _aa_paired(scale: float) -> None:
    """The same A/A worlds run with and without the stops: sweeps with a false faster/slower."""
    print("### Paired A/A at CV 10%: twin + 1 null variant (m = 2), the same worlds with and "
          "without stops\n")
    got = {True: [], False: []}
    n = len(_mine(_sweeps(1000, scale)))
    for i in _mine(_sweeps(1000, scale)):
        ids, values = _world(np.random.default_rng([SEED, 22, i]), Noise(0.10), {"null1": 1.0}, i)
        for drop in (True, False):
            cs, _, _ = _run(ids, values, i, drop)
            got[drop].append(any(c.verdict in ("faster", "slower") for c in cs.values()))
    only_with = sum(a and not b for a, b in zip(got[True], got[False]))
    only_without = sum(b and not a for a, b in zip(got[True], got[False]))
    p = sps.binomtest(only_with, only_with + only_without).pvalue if only_with + only_without else 1.0
    print(f"counts: with {sum(got[True])} without {sum(got[False])} only_with {only_with} "
          f"only_without {only_without} n {n}")
    table(["sweeps", "false faster/slower, with stops", "without stops", "only with",
           "only without", "McNemar exact p"],
          [[str(n), rate(sum(got[True]), n), rate(sum(got[False]), n), str(only_with),
            str(only_without), f"{p:.2g}"]])


def many(scale: float) -> None:
    """A +20% variant among m comparisons, its baseline stalled (x1.3) once in a round before
    the first look: its stop by the stops' own rule (sequential.final, as rounds.stops asks)."""
    print("### A stop among many comparisons: +20% at CV 1%, the baseline stalled once before "
          "round 9\n")
    from flagsweep.stats import sequential as seq
    rows = []
    for k, m in enumerate((11, 51)):
        n = len(_mine(_sweeps(1000, scale)))
        first = seq.looks(m, 30).first
        at = []
        for i in _mine(_sweeps(1000, scale)):
            rng = np.random.default_rng([SEED, 23, k, i])
            base = np.exp(rng.normal(0, 0.01, 30))
            base[rng.integers(0, 8)] *= 1.3
            var = 1.2 * np.exp(rng.normal(0, 0.01, 30))
            stop = next((r for r in range(first, 31)
                         if seq.final({j: float(var[j]) for j in range(r)},
                                      {j: float(base[j]) for j in range(r)}, round_count=r, m=m,
                                      max_rounds=30, threshold_pct=THRESHOLD_PCT, seed=i)), None)
            at.append(stop)
        stopped = [r for r in at if r is not None]
        print(f"counts: m {m} stopped {len(stopped)} n {n} rounds {sorted(stopped)[:0]}")
        rows.append([str(m), str(n), rate(len(stopped), n),
                     quantiles(stopped) if stopped else "-"])
    table(["m", "sweeps", "stops by round 30", "at round q10/50/90"], rows)


def changing(scale: float) -> None:
    with _ExactP():
        _changing(scale)


def _changing(scale: float) -> None:
    """A program that changes during the sweep: the variant's +5% starts at round 10."""
    print("### A change mid-sweep: twin + a variant whose +5% starts at round 10 (m = 2), "
          "CV 1%, stops on\n")
    n = _sweeps(1000, scale)
    rng = np.random.default_rng([SEED, 24])
    early, final_eq = 0, 0
    for i in range(n):
        ids, values = _world(rng, Noise(0.01), {"var": 1.05}, i, start={"var": 10})
        cs, _, outcome = _run(ids, values, i, drop=True)
        s = outcome.stopped.get("var")
        early += bool(s and s.verdict == "equivalent" and s.rounds < 10)
        final_eq += cs["var"].verdict == "equivalent"
    table(["sweeps", "frozen equivalent before round 10", "equivalent at the end"],
          [[str(n), rate(early, n), rate(final_eq, n)]])


def _sweeps(n: int, scale: float) -> int:
    return max(20, int(n * scale))


TABLES = {"stopping": stopping, "aa": aa, "band": band_edge, "statement": statement,
          "sequential": sequential, "history": nights, "cost": cost,
          "beyond": beyond, "beyond_power": beyond_power, "matters": matters, "reach": reach,
          "band-stops": band_stops, "aa-paired": aa_paired, "many": many, "changing": changing}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", metavar="TABLE",
                    help=f"which tables (default: all): {', '.join(TABLES)}")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every cell's sweeps")
    ap.add_argument("--part", default="0/1", help="k/K: run every K-th sweep from k (the stops' "
                    "tables), to run a table in parts and add their counts")
    ap.add_argument("--no-stops-arm", action="store_true",
                    help="band-stops: only the sweeps with the variant stops")
    args = ap.parse_args()
    global PART, DROPS
    k, parts = map(int, args.part.split("/"))
    PART, DROPS = (k, parts), ((True,) if args.no_stops_arm else (True, False))
    unknown = set(args.tables) - set(TABLES)
    if unknown:
        ap.error(f"unknown table(s): {', '.join(sorted(unknown))}")
    started = time.monotonic()
    for name in args.tables or TABLES:
        TABLES[name](args.scale)
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
