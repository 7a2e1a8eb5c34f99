"""Analysis: a run's samples become the results contract's statistics fields.

Per variant `summary` and `vs_baseline` (ratio with CI, adjusted p, verdict), then `aa` (the
baseline's twin, compared like any variant), `noise` (how small an effect this sweep could
resolve), `effects` (which factor levels matter, from flagsweep.stats.effects) and `recommendation`.
The methods live in flagsweep.stats and flagsweep.stats.effects; this module only decides what is
compared with what and words the outcome.
"""

from __future__ import annotations

from flagsweep import stats
from flagsweep.compilation.variants import LINKER_SAYS
from flagsweep.host import advice as machine_advice
from flagsweep.measure import metric as metric_mod
from flagsweep.measure.metric import values_by_round
from flagsweep.measure.sample import Sample
from flagsweep import model
from flagsweep.results import confirmation, estimate
from flagsweep.model import AA_SUFFIX, is_control
from flagsweep.stats import effects as effects_mod
from flagsweep.stats import gate as gate_mod
from flagsweep.stats import layout, sequential


def apply(doc: model.Results, values: dict[str, dict[int, float]], seed: int,
          replicates: dict[str, dict[str, dict[int, float]]] | None = None,
          refused: dict[str, str] | None = None,
          design: sequential.Design | None = None, luck: dict | None = None) -> None:
    """Fill summary/vs_baseline on doc's variants and the sweep-level statistics fields, at
    the document's own practical threshold (`doc.threshold_pct`).

    `replicates` (run --layouts): variant -> its layouts' values. The comparisons are then made
    over the layouts (flagsweep.stats.layout), and `values` holds each variant's per-round
    geometric mean of its layouts, for the summaries.

    `refused`: variant -> why its samples judge nothing (its binary was replaced during the
    sweep). Its summary still says what was timed; it is compared with nothing, and when it is
    the baseline nothing is compared at all.

    `design`: the error the sweep spent (stats.sequential.Design, kept with the run): with
    variant stops, Benjamini-Hochberg at what they left; in a sweep that could stop at several
    rounds, equivalence at the level of a test repeated at each. None: a single look at 0.05.

    `luck`: the run's confirmation over layouts (results.confirmation, as its options keep it):
    each faster/slower row within layout luck's reach gets its label from it, and the effects
    and the recommendation follow the labels."""
    design = design or sequential.Design()
    baseline, threshold_pct = doc.baseline, doc.threshold_pct
    variants = {v.id: v for v in doc.variants}
    refused = _refusals(refused or {}, variants, baseline)
    summarized = values
    values = {vid: vals for vid, vals in values.items() if vid not in refused}
    if replicates is not None:
        replicates = {vid: reps for vid, reps in replicates.items() if vid not in refused}
    comparisons: dict[str, stats.RatioEstimate] = {}
    for vid, v in variants.items():
        v.summary = summary(stats.summarize(summarized.get(vid, {})))
        if replicates is not None:
            v.summary.layouts = _layout_summaries(v, replicates.get(vid, {}))
        elif vid != baseline and vid in values and baseline in values:
            comparisons[vid] = stats.compare(values[vid], values[baseline], seed=seed,
                                             tost=design.tost)
    if replicates is not None:
        comparisons = layout.compare_arms(replicates, baseline)
    stats.adjust(list(comparisons.values()), threshold_pct=threshold_pct,
                 alpha=design.alpha if replicates is None else 0.05)
    twin = baseline + AA_SUFFIX
    twin_is = gate_mod.TWIN_IS[replicates is not None]
    gate = gate_mod.aa_gate(comparisons, twin, threshold_pct, twin_is)
    for vid, v in variants.items():
        v.vs_baseline = _vs_baseline(v, baseline, comparisons)
        if vid in refused and vid != baseline and not v.build.identical_to:
            v.vs_baseline = model.VsBaseline(verdict="not-measured", why=refused[vid])
    confirmation.label(doc, luck)
    doc.aa = _aa(twin, comparisons.get(twin), gate, twin_is)
    if replicates is None:
        doc.noise = noise(stats.noise(values.get(baseline, {}), values.get(twin), threshold_pct,
                                      m=len(comparisons)))
    else:
        doc.noise = noise(layout.noise(replicates.get(baseline, {}), replicates.get(twin),
                                       threshold_pct, m=len(comparisons)))
    effect_values = values if replicates is None else layout.level_values(replicates, baseline)
    doc.effects, doc.effects_design = _effects(doc, effect_values, comparisons, gate,
                                               layouts=replicates is not None)
    confirmation.label_effects(doc, luck)
    doc.recommendation = _recommend(doc, refused)


# ---- the statistics' own classes as the contract's: one conversion each -------------------------

def summary(s: stats.SampleSummary) -> model.Summary:
    """A variant's summary (stats.summarize) as results.json has it."""
    return model.Summary.model_validate(s.to_json())


def vs_baseline(c: stats.RatioEstimate) -> model.VsBaseline:
    """A comparison with the baseline (stats.compare, adjusted) as a variant's vs_baseline;
    its to_json makes a non-finite value null: results.json stays strict JSON."""
    return model.VsBaseline.model_validate(c.to_json())


def effect(row: effects_mod.FactorEffect) -> model.Effect:
    """A model's effect row (stats.effects) as an `effects` row."""
    return model.Effect.model_validate(row.to_json())


def noise(statement: dict) -> model.Noise:
    """The noise statement (stats.noise, stats.layout.noise) as results.json's `noise`."""
    return model.Noise.model_validate(statement)


def _refusals(refused: dict[str, str], variants: dict[str, model.Variant],
              baseline: str) -> dict[str, str]:
    """Every variant is judged against the baseline: with its binary replaced, none is."""
    if baseline not in refused:
        return refused
    why = f"the baseline {refused[baseline]}"
    return {vid: refused.get(vid, why) for vid in variants}


def _layout_summaries(v: model.Variant,
                      reps: dict[str, dict[int, float]]) -> list[model.LayoutSummary]:
    """Each layout of a variant: its seed, its binary's code hash, its median and run count."""
    out = []
    for b in v.build.layouts or []:
        s = stats.summarize(reps.get(b.id, {}))
        out.append(model.LayoutSummary(id=b.id, seed=b.seed, code_sha256=b.code_sha256,
                                          median=s.median, n=s.n))
    return out


# A budget a user can spend: a night. Beyond it "--max-runs N" is no advice (10204 rounds, days
# of measuring, was once suggested); the sweep says the machine cannot resolve the effect.
NIGHT_S = 12 * 3600
# Another metric is worth naming when it states an effect at most this share of the current one.
BETTER_METRIC = 0.75


def advise(doc: model.Results, samples: list[Sample]) -> None:
    """Follow the noise warning with what would help this sweep, only what can be done: a
    metric whose A/A noise is lower on these very samples, the machine settings that add noise
    (host.advice), an isolated CPU, and more rounds only when they fit in a night at this
    sweep's pace; else that this machine cannot resolve the effect for this program."""
    statement = doc.noise
    if statement is None or not getattr(statement, "warning", None):
        return
    ways = [*_other_metrics(doc, samples, statement),
            *_machine_ways(doc.machine, doc.threshold_pct),
            _more_rounds(statement, _pace_s(samples), doc.threshold_pct)]
    statement.warning += ". What would help: " + "; ".join(w for w in ways if w)


def _other_metrics(doc: model.Results, samples: list[Sample],
                   statement: model.Noise) -> list[str]:
    """The noise statement re-made on each other time-like metric the samples carry."""
    if doc.metric != "wall_s":
        return []
    choice = doc.measurement.metric_choice if doc.measurement else None
    baseline, twin = doc.baseline, doc.baseline + AA_SUFFIX
    out = []
    for name, option in (("cpu_s", "cpu"), ("cycles", "cycles")):
        values = values_by_round(samples, lambda s, n=name: metric_mod.metric_of(s, n))
        if twin not in values or baseline not in values:
            continue
        other = noise(stats.noise(values[baseline], values[twin], doc.threshold_pct,
                                  m=statement.comparisons or 1)).mde_pct
        if other is None or (statement.mde_pct is not None
                             and other > BETTER_METRIC * statement.mde_pct):
            continue
        if option == "cpu" and choice and choice.metric == "wall":
            out.append(f"`--metric cpu` would call {other:.1f}% on these samples, but this "
                       f"workload is not one for it ({choice.why})")
            continue
        what = ("CPU time leaves out the waits a busy machine adds; right for a program that "
                "computes on one thread" if option == "cpu" else "cycles do not count the waits")
        out.append(f"`--metric {option}` would call {other:.1f}% on these samples ({what})")
    return out


def _machine_ways(machine: model.Machine, threshold_pct: float) -> list[str]:
    out = []
    if any(machine_advice.TUNE_COMMAND in w
           for w in machine_advice.warnings(machine, threshold_pct)):
        out.append(f"{machine_advice.TUNE_COMMAND} (as root; `flagsweep system` lists what it "
                   "changes)")
    isolated = machine.isolated_cpus or []
    free = machine_advice.free_isolated(machine)
    if isolated and machine.pinned_cpu not in isolated:
        out.append(f"`--cpu {free}`, a CPU the kernel keeps other tasks off" if free is not None
                   else f"`--cpu {isolated[0]} --wait`, a CPU the kernel keeps other tasks off "
                        "(another sweep held every isolated one)")
    elif not isolated and (machine.cpu_count or 0) > 1:
        out.append("a CPU kept free of other tasks (isolcpus= on the kernel command line; "
                   "sweeps then measure there without --cpu)")
    return out


def _pace_s(samples: list[Sample]) -> float | None:
    """Seconds a round took, measuring and everything between: from the first round's start to
    the last one's, over the rounds between."""
    starts: dict[int, float] = {}
    for s in samples:
        if s.ok and s.round >= 0 and s.taken_at:
            starts[s.round] = min(starts.get(s.round, s.taken_at), s.taken_at)
    if len(starts) < 2:
        return None
    span = starts[max(starts)] - starts[min(starts)]
    return span / (len(starts) - 1) if span > 0 else None


def _more_rounds(statement: model.Noise, pace_s: float | None,
                 threshold_pct: float) -> str | None:
    rounds = statement.rounds_needed
    if not rounds:
        return None
    if pace_s is None:
        return f"--max-runs {rounds}"
    total = rounds * pace_s
    if total <= NIGHT_S:
        return (f"--max-runs {rounds} (about {_duration(total)} at this sweep's "
                f"{pace_s:.1f} s a round)")
    return (f"not more rounds: {rounds} would take about {_duration(total)} at "
            f"{pace_s:.1f} s a round, so this machine cannot resolve {2 * threshold_pct:g}% for "
            "this program in a night")


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{max(1, round(seconds / 60))} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} days"


# Check statuses of an output that passed: the baseline's bytes, or other bytes as good a result
# (the quality check's `equivalent`).
PASSED = ("ok", "equivalent")


def output_ok(v: model.Variant) -> bool:
    """Whether a variant's output passed its check: a program that computes something else is
    shown and (without --strict-check) timed, but it is never a flag set to choose."""
    return v.check is not None and v.check.status in PASSED


def _vs_baseline(v: model.Variant, baseline: str,
                 comparisons: dict[str, stats.RatioEstimate]) -> model.VsBaseline | None:
    if v.id == baseline:
        return None
    rep = v.build.identical_to
    if rep:
        base = comparisons.get(rep)
        return model.VsBaseline(verdict="identical-code", identical_to=rep,
                                   ratio=base.ratio if base else (1.0 if rep == baseline else None))
    if v.id in comparisons:
        return vs_baseline(comparisons[v.id])
    return model.VsBaseline(verdict="not-measured", why=_why_not_measured(v))


def _why_not_measured(v: model.Variant) -> str:
    if v.build.status != "ok":
        return f"build {v.build.status}: {build_reason(getattr(v.build, 'detail', None))}"
    if v.check is not None and v.check.status in ("failed", "differs"):
        return f"output check {v.check.status}: {v.check.detail or ''}"
    return "no successful samples"


def build_reason(detail: str | None) -> str:
    """Why a build is not usable, in one line, from its detail: the first compiler or linker
    error the detail quotes (the lines after "...; build.log:"), else its first line."""
    lines = [line.strip() for line in (detail or "").splitlines() if line.strip()]
    quoted = [line for line in lines[1:] if "error" in line.lower() or LINKER_SAYS.search(line)]
    return (quoted or lines or ["no detail recorded"])[0]


def _aa(twin: str, c: stats.RatioEstimate | None, gate: gate_mod.Ruling,
        twin_is: str = gate_mod.TWIN_IS[False]) -> model.AA | None:
    if c is None:
        return None
    warning = None
    if c.verdict in ("faster", "slower"):
        warning = (f"the machine was unstable during this sweep: the A/A arm ({twin_is}) "
                   f"came out {c.verdict} by {abs(c.ratio - 1) * 100:.1f}%, "
                   f"so every verdict is reported as inconclusive ({len(gate.gated)} "
                   "overruled); measure again on a quieter machine")
    elif gate.gated:
        warning = (f"{len(gate.gated)} faster/slower call(s) overruled: their intervals reach "
                   f"into the +-{gate.bound_pct:.1f}% by which the A/A arm moved by itself")
    estimate = vs_baseline(c)
    return model.AA(variant=twin, is_=twin_is, verdict=c.verdict, ratio=estimate.ratio,
                    ci95=estimate.ci95, p_value=c.p_value, warning=warning,
                    unstable=gate.unstable, bound_pct=gate.bound_pct, gated=gate.gated)


def _effects(doc: model.Results, values: dict[str, dict[int, float]],
             comparisons: dict[str, stats.RatioEstimate], gate: gate_mod.Ruling,
             layouts: bool = False) -> tuple[list[model.Effect], model.EffectsDesign]:
    """Which flags matter, over the measured, distinct, non-twin variants whose output is right.

    The rows must tell the same story as the variants table. Where every measured variant
    changes one factor of the baseline, a level's effect is that variant's comparison: the
    table's own estimate, interval, adjusted p and verdict. Otherwise (a factorial, a screen:
    an effect averages over several variants) the model's effects are held to the table's
    rules: no interval and nothing called below the rounds a 95% interval needs, and nothing
    called that the A/A arm overrules."""
    # Every variant's levels go in (a level whose variants were not timed is then named in the
    # note); samples only from distinct, measured binaries, never the A/A twin.
    designed = {v.id: v for v in doc.variants if not is_control(v.id)}
    wrong = [vid for vid in designed if vid in values and not output_ok(designed[vid])]
    values = {vid: s for vid, s in values.items() if vid not in wrong}
    notes = [f"Left out, their output did not pass the check: {', '.join(wrong)}."] \
        if wrong else []
    # Over layouts a model's observations are the layouts' levels, one per layout: its own
    # intervals then carry the layout level, and rounds say nothing of them.
    undecided = None if layouts else _undecided(values.get(doc.baseline, {}))
    if layouts:
        notes.append("Each observation is one layout's level (its median over the rounds "
                     "against the round's baseline), so the effects carry the layout level.")
    screen = doc.design == "plackett-burman"
    paired = None if screen else _one_change_rows(doc, designed, values, comparisons, wrong)
    if paired is not None:
        rows, design = paired
    else:
        rows, design = (_screen if screen else _factorial)(doc, designed, values)
        rows = [_held_to_table(row, undecided, gate, doc.threshold_pct) for row in rows]
    design = model.EffectsDesign.model_validate(design)
    if undecided and rows:
        design.undecided = undecided
        notes.append(f"{undecided[0].upper()}{undecided[1:]}, so no effect is called.")
    design.note = " ".join([design.note, *notes])
    return rows, design


def _factorial(doc: model.Results, designed: dict[str, model.Variant],
               values: dict[str, dict[int, float]]):
    """Main effects of the recipe's factors (flagsweep.stats.effects.estimate)."""
    measured = {vid for vid, v in designed.items()
                if vid in values and not v.build.identical_to}
    base = designed.get(doc.baseline)
    if base is None or len(measured) < 2:
        return [], {"design": "not-estimable", "note": "fewer than two measured variants"}
    result = effects_mod.estimate({vid: values[vid] for vid in measured},
                                  {vid: v.factors for vid, v in designed.items()},
                                  base.factors, threshold_pct=doc.threshold_pct)
    return [effect(e) for e in result.effects], {"design": result.design, "note": result.note}


def _one_change_rows(doc: model.Results, designed: dict[str, model.Variant],
                     values: dict[str, dict[int, float]],
                     comparisons: dict[str, stats.RatioEstimate], left_out: list[str]):
    """(rows, design) when each measured variant changes exactly one factor of the baseline,
    no two to the same level; else None. Such a level's effect is its variant against the
    baseline, paired by round: what the variants table already says of it."""
    base = designed.get(doc.baseline)
    if base is None or doc.baseline not in values:
        return None
    ref = base.factors
    changes: dict[str, tuple[str, str]] = {}
    for vid, v in designed.items():
        if vid == doc.baseline or vid not in values or v.build.identical_to:
            continue
        moved = [a for a in ref if v.factors.get(a) != ref[a]]
        if set(v.factors) != set(ref) or len(moved) != 1 or vid not in comparisons:
            return None
        change = (moved[0], v.factors[moved[0]])
        if change in changes.values():
            return None
        changes[vid] = change
    if not changes:
        return None
    rows = [_compared_row(vs_baseline(comparisons[vid]), vid, axis, level, ref[axis])
            for vid, (axis, level) in changes.items()]
    unmeasured = [vid for vid in designed
                  if vid not in (doc.baseline, *changes, *left_out)]
    axes = {axis for axis, _ in changes.values()}
    note = ("Each level here is one variant that changes only that factor of the baseline, so "
            "its effect is that variant's comparison with the baseline, paired by round, as in "
            "the variants table: the same estimate, intervals, adjusted p and verdict; it "
            "matters when the table calls it faster or slower.")
    if unmeasured:
        note += (f" Not measured, so no effect of their own: {', '.join(unmeasured)} (failed "
                 "build or check, or identical code to another variant).")
    return [r for r in rows if r.effect_pct is not None], \
        {"design": "one-factor" if len(axes) == 1 else "one-at-a-time", "note": note}


def _compared_row(c: model.VsBaseline, vid: str, axis: str, level: str,
                  reference: str) -> model.Effect:
    """A comparison (ratio, ci95 as ratios) as an effects row (percent changes)."""
    def pct(ratio):
        return None if ratio is None else 100 * (ratio - 1)

    def pcts(ci):
        return [pct(ci[0]), pct(ci[1])] if ci and None not in ci else None
    return model.Effect(factor=axis, level=level, reference=reference,
                           effect_pct=pct(c.ratio), ci95_pct=pcts(c.ci95),
                           ci_fcr_pct=pcts(c.ci_fcr), fcr_level=c.fcr_level, p_value=c.p_value,
                           p_adjusted=c.p_adjusted, matters=c.verdict in ("faster", "slower"),
                           variant=vid, verdict=c.verdict)


def _undecided(baseline: dict[int, float]) -> str | None:
    """Why no effect has an interval yet: fewer rounds than a 95% interval needs even for one
    comparison (stats.fewest_decisive_pairs); else None. Below that the variants table shows
    no interval, and a model's asymptotic one (or an exact-looking zero-width one, when the
    few values happen to be equal) would claim what the table cannot."""
    need = stats.fewest_decisive_pairs(1)
    if len(baseline) >= need:
        return None
    return f"{len(baseline)} round(s) are too few for a 95% interval (at least {need} are needed)"


def _held_to_table(row: model.Effect, undecided: str | None, gate: gate_mod.Ruling,
                   threshold_pct: float) -> model.Effect:
    """A model's effect row, held to the rules of the variants table: with too few rounds it
    has no interval and does not matter; when the A/A arm says the machine moved nothing
    matters; and a call must clear the A/A arm's own offset where that is beyond the threshold."""
    if undecided:
        row.ci95_pct = row.p_value = row.p_adjusted = None
        row.matters = False
        return row
    bound = gate.bound_pct
    lo, hi = row.ci95_pct
    inside = bound is not None and bound > threshold_pct and lo <= bound and hi >= -bound
    row.matters = bool(row.matters) and not gate.unstable and not inside
    return row


def _screen(doc: model.Results, designed: dict[str, model.Variant],
            values: dict[str, dict[int, float]]):
    """Main effects of the screened flags. A saturated design needs every row, so a row with
    identical code to another is given that row's samples: it is the very same binary."""
    base = designed[doc.baseline].factors
    flags = list(base)
    # A second compiler is one more two-level column: "on" is the other compiler.
    levels = {"compiler": (other, base["compiler"]) for other in
              {v.factors["compiler"] for v in designed.values()} - {base["compiler"]}
              } if "compiler" in base else {}
    samples, rows = {}, {}
    for vid, v in designed.items():
        source = v.build.identical_to or vid
        if source in values:
            samples[vid] = values[source]
            rows[vid] = [v.factors[f] == (levels[f][0] if f in levels else "on") for f in flags]
    if len(samples) < 2:
        return [], {"design": "not-estimable", "note": "fewer than two measured rows"}
    result = effects_mod.screen(samples, rows, flags, threshold_pct=doc.threshold_pct,
                                levels=levels)
    return [effect(e) for e in result.effects], {"design": result.design, "note": result.note}


def _recommend(doc: model.Results,
               refused: dict[str, str] | None = None) -> model.Recommendation:
    """The fastest significantly-faster variant, and the simplest one within the threshold of it;
    only among programs whose output passed the check, whatever --strict-check said about
    timing them, and never a baseline whose own output failed it, nor one whose binary was
    replaced during the sweep."""
    refused, threshold_pct = refused or {}, doc.threshold_pct
    base = next(v for v in doc.variants if v.id == doc.baseline)
    if base.id in refused:
        return model.Recommendation(
            flags=None, variant=None,
            why=f"No recommendation: the baseline was {refused[base.id]}.")
    rows = [v for v in doc.variants if _verdict(v) in
            ("faster", "equivalent", "slower", "inconclusive") and not is_control(v.id)]
    faster, unsettled = _beyond_luck([v for v in rows if v.vs_baseline.verdict == "faster"
                                      and output_ok(v)], confirmation.measured_again(doc))
    wrong = sorted((v for v in rows if v.vs_baseline.verdict == "faster"
                    and not output_ok(v)), key=lambda v: v.vs_baseline.ratio)
    left_out = [_excluded(v) for v in wrong]
    excluded = (f" Faster but not recommended, their output did not pass the check: "
                f"{'; '.join(map(excluded_text, left_out))}." if wrong else "")
    excluded += (f" Faster in one layout, within layout luck, so not recommended: "
                 f"{'; '.join(map(_luck_text, unsettled))}." if unsettled else "")
    gone = [vid for vid in refused if not is_control(vid)]
    excluded += (f" Not judged, their binaries were replaced during the sweep: "
                 f"{', '.join(gone)}." if gone else "")
    if not output_ok(base) and not faster:
        check = base.check
        return model.Recommendation(
            excluded=left_out, flags=None, variant=None,
            why=f"No recommendation: the baseline's own output did not pass its check "
                f"({check.status if check else 'not checked'}: "
                f"{(check.detail if check else None) or '-'}), "
                f"and no variant with a correct output was faster.{excluded}")
    if not faster:
        counts = _verdict_counts(doc)
        passing = " whose output passed its check" if wrong else ""
        beyond = " beyond layout luck" if unsettled else ""
        return model.Recommendation(
            excluded=left_out, flags=base.flags, variant=base.id,
            why=f"no variant{passing} was significantly faster{beyond} than the baseline "
                f"({' '.join(base.flags) or 'default flags'}) by more than "
                f"{threshold_pct:g}%: {counts}. Keep the baseline's flags.{excluded}")
    best = min(faster, key=lambda v: v.vs_baseline.ratio)
    limit = best.vs_baseline.ratio * (1 + stats.fraction(threshold_pct))
    close = [v for v in faster if v.vs_baseline.ratio <= limit]
    simplest = min(close, key=lambda v: (len(v.flags), v.vs_baseline.ratio))
    m = estimate.comparisons(doc)
    why = (f"{' '.join(best.flags)} is the fastest against the baseline "
           f"({' '.join(base.flags)}): {estimate.text(estimate.selected(best.vs_baseline, m))}.")
    if simplest is not best:
        why += (f" {' '.join(simplest.flags)} is within {threshold_pct:g}% of it "
                f"({_pct(simplest)}) with fewer flags, so it is the recommendation "
                "(judged on the point estimates).")
    return model.Recommendation(excluded=left_out, flags=simplest.flags,
                                   variant=simplest.id, why=why + excluded,
                                   estimate=estimate.selected(simplest.vs_baseline, m))


# Why a run that did not end complete has no answer ({rounds}: how far it got), and when
# resuming it gives one: a busy machine's runs measured the other work; an interrupted or
# failed run stopped short of its stopping rule.
NOT_YET = {"busy": ("the machine was busy, so the sweep stopped{rounds}",
                    " once the machine is quieter (`flagsweep system` shows what runs)"),
           "interrupted": ("the sweep was interrupted{rounds}", ""),
           "failed": ("the sweep failed{rounds}", " once what stopped it is fixed"),
           "running": ("the sweep is still measuring{rounds}", "")}


def unanswered(doc: model.Results) -> None:
    """A sweep that did not end complete has no recommendation: its verdicts are those of the
    rounds it took before the stopping rule could judge (a busy machine's, or cut short), and a
    "Keep the baseline" from them reads as an answer it is not. The recommendation then says
    there is none yet, the verdicts so far, and what would give one."""
    if doc.status in (None, "complete"):
        return
    why, when = NOT_YET.get(doc.status, (f"the sweep ended {doc.status}{{rounds}}", ""))
    base = next((v for v in doc.variants if v.id == doc.baseline), None)
    taken = base.summary.n if base is not None and base.summary is not None else None
    most = doc.measurement.max_runs if doc.measurement is not None else None
    rounds = (f" after {taken:g}" + (f" of at most {most:g}" if most else "") + " rounds"
              if taken is not None else "")
    resume = f"flagsweep run --resume {doc.run_id}" if doc.run_id else "flagsweep run --resume"
    kept = doc.recommendation.confirmation if doc.recommendation else None  # its rows' labels
    doc.recommendation = model.Recommendation(
        flags=None, variant=None, confirmation=kept,
        why=f"No answer yet: {why.format(rounds=rounds)}, before its stopping rule could "
            f"judge; its verdicts so far ({_verdict_counts(doc)}) are not an answer. "
            f"`{resume}` continues it{when}.")


def _beyond_luck(faster: list[model.Variant], measured: bool
                 ) -> tuple[list[model.Variant], list[model.Variant]]:
    """(the faster rows a recommendation may name, those it may not): a settled one (beyond
    the reach, or confirmed over layouts) before any other. One that layout luck could give is
    named only when no settled one is and no confirmation measured rows again (--no-confirm, a
    failed one: its sentence then says it is unconfirmed); never one the layouts did not
    confirm, nor one a confirmation left out."""
    luck = [v for v in faster if not confirmation.settled(v.vs_baseline.layout_luck)]
    settled = [v for v in faster if v not in luck]
    if settled or measured:
        return settled, luck
    return luck, []


def _luck_text(v: model.Variant) -> str:
    """A faster row the recommendation leaves to layout luck, and why, in words."""
    luck, flags = v.vs_baseline.layout_luck, " ".join(v.flags) or "the default flags"
    if luck.status == confirmation.LUCK:
        return f"{flags} is {luck.why}"
    return f"{flags} ({stats.change_text(v.vs_baseline.ratio, v.vs_baseline.ci95)}: {luck.why})"


def _verdict(v: model.Variant) -> str | None:
    return v.vs_baseline.verdict if v.vs_baseline is not None else None


def _excluded(v: model.Variant) -> model.Excluded:
    """A faster variant left out of the recommendation, and why: its output's check."""
    return model.Excluded(variant=v.id, flags=v.flags, ratio=v.vs_baseline.ratio,
                             ci95=v.vs_baseline.ci95, check=v.check.status if v.check else None,
                             why=(v.check.detail if v.check else None) or "")


def excluded_text(c: model.Excluded) -> str:
    """An `excluded` entry in words: '-O3 -march=x86-64-v3 is 8.1% faster but its output
    differs: <the check's detail>'."""
    flags = " ".join(c.flags) or "the default flags"
    faster = f"{100 * (1 - c.ratio):.1f}% faster" if c.ratio else "faster"
    status = {"differs": "differs", "failed": "failed its check"}.get(c.check,
                                                                      "did not pass its check")
    return f"{flags} is {faster} but its output {status}" + (f": {c.why}" if c.why else "")


def _pct(v: model.Variant) -> str:
    return stats.change_text(v.vs_baseline.ratio)


def _verdict_counts(doc: model.Results) -> str:
    counts: dict[str, int] = {}
    for v in doc.variants:
        verdict = _verdict(v)
        if verdict and not is_control(v.id):
            counts[verdict] = counts.get(verdict, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "nothing compared"
