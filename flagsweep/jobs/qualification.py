"""Qualifying a runner before a nightly gate trusts it (`flagsweep calibrate --qualify`).

A qualify run is a calibration run of `runs` x `comparisons` rounds. Its rounds are cut into
`comparisons` disjoint blocks of `runs` consecutive rounds, each a night as a gate would see
it: in every block the A/A twin is compared with the baseline (a repeated A/A comparison: the
same binary twice, so any call is false) and so is each planted change. From them:

- the A/A false-call rate at each practical threshold tried, with its exact binomial interval
  (stats.binomial_interval, Clopper-Pearson): what share of nights a gate there would fail on
  nothing;
- the smallest change called at 80% power at `runs` rounds (stats.noise on each block, its
  median): what a night of that many rounds can see;
- the rounds at which twice a threshold is called at 80% power (stats.noise on the first n
  rounds of the whole run, the smallest such n), the effect size stats.power's own warning
  asks a sweep to resolve;
- which planted changes each block found.

The gate it prints is the smallest threshold tried whose A/A false calls are at most
FALSE_CALLS_PCT of the comparisons and whose 80% power is reached within the rounds this run
measured, with those rounds as `--max-runs`. Nothing here times anything: it reads the
samples of a results document, so tests give it planted ones.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from flagsweep import model, stats
from flagsweep.errors import FlagsweepError
from flagsweep.files import write_atomic
from flagsweep.report.variants import metric_values

# The thresholds a gate is offered, in percent: the default and the steps a team would pick.
THRESHOLDS_PCT = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0)
# The share of A/A nights a gate may fail on nothing: the 5% every 95% statement allows.
FALSE_CALLS_PCT = 5.0
# The planted change a threshold must still see, as a multiple of it (stats.power's warning).
POWER_EFFECT = 2.0

Values = dict[int, float]


def qualify(doc: model.Results, planted: dict[int, str], runs: int, threshold_pct: float,
            results: Path) -> model.Qualification:
    """What doc's rounds say of this runner at `runs` rounds a night; `planted` maps each
    planted effect (percent) to its variant's id."""
    base, twin = _arms(doc)
    blocks = _blocks(sorted(set(base) & set(twin)), runs)
    settings = [_setting(base, twin, blocks, t) for t in sorted({*THRESHOLDS_PCT, threshold_pct})]
    caught = [_caught(pct, vid, arm_values(doc, vid), base, blocks, threshold_pct)
              for pct, vid in sorted(planted.items())]
    gate = next((s for s in settings if s.acceptable), None)
    return model.Qualification(
        results=str(results), metric=doc.metric, runs=runs, comparisons=len(blocks),
        threshold_pct=threshold_pct, settings=settings, planted=caught,
        qualified=gate is not None,
        gate_threshold_pct=gate.threshold_pct if gate else None,
        gate_max_runs=gate.rounds_for_power if gate else None,
        why=_why(gate, settings, len(blocks), runs))


def arm_values(doc: model.Results, vid: str) -> Values:
    """A variant's counted samples of the run's metric, by round."""
    v = next((v for v in doc.variants if v.id == vid), None)
    samples = (v.samples or {}) if v else {}
    return {int(r): float(x) for r, x in zip(samples.get("round") or [],
                                             metric_values(samples, doc.metric))
            if r is not None and x is not None}


def _arms(doc: model.Results) -> tuple[Values, Values]:
    twin = next((v.id for v in doc.variants if v.aa_of == doc.baseline), None)
    if twin is None:
        raise FlagsweepError(f"{doc.target}: the run has no A/A twin of {doc.baseline}; "
                             "qualifying a runner compares the baseline with its twin")
    return arm_values(doc, doc.baseline), arm_values(doc, twin)


def _blocks(rounds: list[int], runs: int) -> list[list[int]]:
    """Disjoint blocks of `runs` consecutive rounds both arms measured; at least two."""
    blocks = [rounds[i:i + runs] for i in range(0, len(rounds) - runs + 1, runs)]
    if len(blocks) < 2:
        raise FlagsweepError(f"{len(rounds)} rounds measured both the baseline and its twin: "
                             f"expected at least {2 * runs} (two comparisons of {runs})")
    return blocks


def _part(values: Values, rounds: list[int]) -> Values:
    return {r: values[r] for r in rounds if r in values}


def _verdict(arm: Values, base: Values, rounds: list[int], threshold_pct: float) -> str:
    """What a sweep of these rounds alone calls arm against the baseline (one comparison)."""
    c = stats.compare(_part(arm, rounds), _part(base, rounds))
    stats.adjust([c], threshold_pct)
    return c.verdict


def _setting(base: Values, twin: Values, blocks: list[list[int]],
             threshold_pct: float) -> model.GateSetting:
    false = sum(_verdict(twin, base, b, threshold_pct) in ("faster", "slower") for b in blocks)
    low, high = stats.binomial_interval(false, len(blocks))
    detectable = [stats.noise(_part(base, b), _part(twin, b), threshold_pct)["mde_pct"]
                  for b in blocks]
    middle = float(np.median([math.inf if d is None else d for d in detectable]))
    rounds = _rounds_for_power(base, twin, [r for b in blocks for r in b], threshold_pct)
    measured = sum(map(len, blocks))
    return model.GateSetting(
        threshold_pct=threshold_pct, aa_false_calls=false,
        aa_false_pct=100 * false / len(blocks), aa_false_ci95=[100 * low, 100 * high],
        detectable_pct=middle if math.isfinite(middle) else None, rounds_for_power=rounds,
        acceptable=(100 * false / len(blocks) <= FALSE_CALLS_PCT
                    and rounds is not None and rounds <= measured))


def _rounds_for_power(base: Values, twin: Values, rounds: list[int],
                      threshold_pct: float) -> int | None:
    """The fewest leading rounds at which POWER_EFFECT x the threshold is called at 80%
    power; past the rounds measured, stats.noise's own estimate of them (None: none)."""
    effect = POWER_EFFECT * threshold_pct

    def enough(n: int) -> bool:
        mde = stats.noise(_part(base, rounds[:n]), _part(twin, rounds[:n]), threshold_pct)
        return mde["mde_pct"] is not None and mde["mde_pct"] <= effect

    if not enough(len(rounds)):
        return stats.noise(_part(base, rounds), _part(twin, rounds), threshold_pct)["rounds_needed"]
    low, high = 2, len(rounds)             # enough(high); the fewest such n, by bisection
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


def _caught(pct: int, vid: str, arm: Values, base: Values, blocks: list[list[int]],
            threshold_pct: float) -> model.PlantCaught:
    found = sum(_verdict(arm, base, b, threshold_pct) == "slower" for b in blocks) if arm else 0
    return model.PlantCaught(planted_pct=pct, variant=vid, found=found, comparisons=len(blocks))


def _why(gate: model.GateSetting | None, settings: list[model.GateSetting], k: int,
         runs: int) -> str:
    measured = k * runs
    if gate is not None:
        effect = POWER_EFFECT * gate.threshold_pct
        return (f"the smallest threshold tried with at most {FALSE_CALLS_PCT:g}% false A/A "
                f"calls in {k} comparisons of {runs} rounds, and +{effect:g}% called at 80% "
                f"power within the {measured} rounds measured")
    last = settings[-1]
    needs = f"{last.rounds_for_power} rounds" if last.rounds_for_power else "more rounds"
    return (f"no threshold up to {last.threshold_pct:g}% qualifies: at it "
            f"{last.aa_false_calls} of {k} A/A comparisons were called different and "
            f"+{POWER_EFFECT * last.threshold_pct:g}% needs {needs} ({measured} measured); "
            "quiet the machine (flagsweep system --tune), or qualify with more rounds")


def write(q: model.Qualification, folder: Path) -> Path:
    """FOLDER/qualify.json: the answer for a machine (`flagsweep schema qualify`)."""
    text = json.dumps(q.model_dump(mode="json", by_alias=True), indent=1)
    return write_atomic(folder / "qualify.json", text + "\n")


def lines(q: model.Qualification) -> list[str]:
    """The answer in words, for the terminal."""
    asked = next(s for s in q.settings if s.threshold_pct == q.threshold_pct)
    low, high = asked.aa_false_ci95
    mde = f"{asked.detectable_pct:.1f}%" if asked.detectable_pct is not None else "none"
    found = ", ".join(f"+{p.planted_pct:g}% in {p.found} of {p.comparisons}" for p in q.planted)
    out = [f"on this runner, at {q.runs} rounds, threshold {q.threshold_pct:g}%:",
           f"  A/A false calls: {asked.aa_false_calls} of {q.comparisons} comparisons, "
           f"{asked.aa_false_pct:.0f}% (95% CI {low:.0f}-{high:.0f}%, Clopper-Pearson)",
           f"  smallest change called at 80% power: {mde}",
           f"  planted changes found: {found or 'none planted'}",
           "  threshold  A/A false calls  called at 80% power  rounds for 80% power at 2x"]
    for s in q.settings:
        shown = f"{s.detectable_pct:.1f}%" if s.detectable_pct is not None else "none"
        out.append(f"  {s.threshold_pct:>8g}%  {s.aa_false_calls:>3} of {q.comparisons:<9}  "
                   f"{shown:<19}  {s.rounds_for_power or '-'}" + ("  ok" if s.acceptable else ""))
    if q.qualified:
        out.append(f"gate: flagsweep run ... --max-runs {q.gate_max_runs}; flagsweep history "
                   f"--check --threshold {q.gate_threshold_pct:g}  ({q.why})")
    else:
        out.append(f"not qualified: {q.why}")
    return out
