"""The top of the page: the recommendation in one sentence, the findings under each verdict,
and the warnings that should make a reader trust the sweep less."""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep import stats
from flagsweep.compilation import features, package_tests
from flagsweep.host import advice
from flagsweep.report import study
from flagsweep.report.formats import SHOWN, names, p_text, threshold
from flagsweep.report.variants import VariantRow
from flagsweep import model
from flagsweep.results import analysis, confirmation, estimate
from flagsweep.model import AA_SUFFIX, is_control


@dataclass
class Item:
    """One line of the headline: a variant, what happened to it, and (studies) then vs now."""

    label: str
    text: str
    then: str = ""


@dataclass
class Finding:
    verdict: str
    title: str
    items: list[Item]


@dataclass
class Warning:
    kind: str
    text: str


@dataclass
class Headline:
    title: str
    question: str
    machine: str
    compilers: str
    date: str
    status: str
    stop_reason: str
    recommendation: str
    counts: list[tuple[str, int]]
    findings: list[Finding]
    warnings: list[Warning]
    confirmation: str = ""          # how the recommendation was confirmed over layouts
    interval: str = ""              # which interval the recommendation printed, and why
    run_length: str = ""            # --input-size auto: the size its pilot chose, and why


def headline(doc: model.Results, rows: list[VariantRow]) -> Headline:
    m = doc.machine
    version = f" {doc.target_version}" if doc.target_version else ""
    published = study.published(doc)
    compared = [r for r in rows if r.role == "" and r.verdict != "baseline"]
    return Headline(
        title=f"{doc.target}{version}, recipe {doc.recipe}",
        question=published.question if published else "",
        machine=f"{m.cpu_model or '?'} (-march=native is {m.march_native or '?'})",
        compilers=", ".join(f"{c.name} {c.version or ''}".strip() for c in doc.compilers or []),
        date=(doc.finished or doc.started or "").replace("T", " ").rstrip("Z"),
        status=doc.status or "", stop_reason=doc.stop_reason or "",
        recommendation=recommendation_sentence(doc, rows),
        counts=[(k, n) for k in SHOWN if (n := sum(r.shown == k for r in compared))],
        findings=findings(doc, compared),
        warnings=warnings(doc), confirmation=confirmation_note(doc),
        interval=interval_note(doc), run_length=run_length_note(doc))


def recommendation_sentence(doc: model.Results, rows: list[VariantRow]) -> str:
    """The recommendation in one sentence, with the number that justifies it."""
    rec = doc.recommendation
    if not rec:
        return "No recommendation: nothing was compared with the baseline."
    if rec.flags is None:     # not even the baseline's: its own output is wrong
        return rec.why
    flags = " ".join(rec.flags) or "the default flags"
    chosen = next((r for r in rows if r.id == rec.variant), None)
    thr = f"{threshold(doc.threshold_pct):g}%"
    excluded = rec.excluded or []
    if chosen is None or chosen.role == "baseline":
        passing = " whose output passed its check" if excluded else ""
        sentence = (f"Keep {flags}: no variant{passing} was significantly faster than it by "
                    f"more than {thr}.")
    else:
        sentence = f"Use {flags}: {_stated(doc, chosen)}."
    return confirmed_sentence(doc, sentence) + excluded_sentence(excluded)


def _stated(doc: model.Results, chosen: VariantRow) -> str:
    """The recommended variant's estimate and the interval its verdict used
    (results.estimate), with the adjusted p of the comparison they come from."""
    e = estimate.printed(doc)
    if e is None:
        return f"{chosen.change_text} against the baseline (adjusted p {chosen.p_text})"
    p = f"; adjusted p {p_text(e.p_adjusted)}" if e.p_adjusted is not None else ""
    text = estimate.text(e, " against the baseline")
    return f"{text[:-1]}{p})" if text.endswith(")") else text


def interval_note(doc: model.Results) -> str:
    """Which interval the recommendation printed, and why that one."""
    e = estimate.printed(doc)
    return (e.why or "") if e is not None else ""


def excluded_sentence(excluded: list[model.Excluded]) -> str:
    """The faster variants the recommendation left out, fastest first, each with its reason:
    the headline must not read as if the table had no faster row."""
    if not excluded:
        return ""
    first, *rest = excluded
    out = f" {analysis.excluded_text(first)}."
    if rest:
        out += (" Also faster and left out: "
                + "; ".join(analysis.excluded_text(c) for c in rest) + ".")
    return out


def confirmed_sentence(doc: model.Results, sentence: str) -> str:
    """The recommendation as the confirmation over layouts leaves it, read from the named row's
    own label (results.confirmation): a "Use X" confirmed says so; one not measured again
    (--no-confirm, beyond the cap, failed, interrupted) says why; one being confirmed is not
    yet a recommendation; a "Keep" says which faster rows were not distinguishable from layout
    luck, with both intervals."""
    rec = doc.recommendation
    if rec is None or rec.confirmation is None:
        return sentence
    named = next((v for v in doc.variants if v.id == rec.variant), None)
    if named is None or rec.variant == doc.baseline:
        refuted = sorted((v for v in doc.variants if _luck(v) and _luck(v).status ==
                          confirmation.LUCK and v.vs_baseline.verdict == "faster"),
                         key=lambda v: v.vs_baseline.ratio or 1.0)
        if not refuted:
            return sentence
        return (f"Keep {' '.join(rec.flags or []) or 'the default flags'}: "
                + "; ".join(f"{' '.join(v.flags) or v.id} is {_luck(v).why}" for v in refuted)
                + ".")
    luck = _luck(named)
    if luck is None:
        return sentence
    if luck.status == confirmation.CONFIRMED:
        return f"{sentence[:-1]}; {_confirmed(named.vs_baseline)}."
    if rec.confirmation.status == confirmation.PENDING:
        return f"Not yet a recommendation, {luck.why}: {sentence.removeprefix('Use ')}"
    return f"{sentence} {luck.why[:1].upper()}{luck.why[1:]}."


def _luck(v: model.Variant) -> model.LayoutLuck | None:
    return v.vs_baseline.layout_luck if v.vs_baseline is not None else None


def _confirmed(one: model.VsBaseline) -> str:
    """A confirmed recommendation prints the confirmation's estimate: this says so, and what
    the one build each measured before (the row's own comparison)."""
    if one.ratio is None:
        return "confirmed over layouts"
    measured = (f"{stats.change_text(one.ratio)} ({stats.level_text(one.fcr_level)} CI "
                f"{stats.ci_text(one.ci_fcr)})" if one.ci_fcr and one.fcr_level
                else stats.change_text(one.ratio, one.ci95))
    return f"confirmed over layouts, where one build each measured {measured}"


def confirmation_note(doc: model.Results) -> str:
    """Where the confirmation's answer comes from: its run, rows, layouts, reach and time."""
    c = doc.recommendation.confirmation if doc.recommendation else None
    if c is None or c.status not in (confirmation.CONFIRMED, confirmation.LUCK,
                                     confirmation.MEASURED):
        return ""
    took = f", {c.seconds:.0f} s with its builds" if c.seconds is not None else ""
    rows = confirmation.names_of(doc, c.variants or [c.variant])
    left = (f" Not measured again: {confirmation.names_of(doc, c.left_out)} "
            f"({c.left_out_why})." if c.left_out else "")
    return (f"Measured again over layouts by run {c.run_id} ({c.results}): "
            f"{rows} and the baseline in {c.layouts} layouts each{took}; "
            f"it was needed because layout luck reaches {c.reach_pct or 0:.1f}% "
            f"({c.reach_source})." + (f" {c.sizing[:1].upper()}{c.sizing[1:]}." if c.sizing
                                       else "") + left)


def run_length_note(doc: model.Results) -> str:
    """--input-size auto: the input its pilot chose and why (flagsweep.measure.length), or the
    full input and why none was chosen; empty for a run without it."""
    chosen = getattr(doc.measurement, "run_length", None) if doc.measurement else None
    if chosen is None:
        return ""
    if chosen.size is None:
        return f"Input size: the full input ({chosen.why})."
    return f"Input size: {chosen.why}."


FINDING_TITLES = {
    "slower": "Slower than the baseline",
    "faster": "Faster than the baseline",
    "slower-luck": "Slower in one layout, within layout luck (not confirmed over layouts)",
    "faster-luck": "Faster in one layout, within layout luck (not confirmed over layouts)",
    "equivalent": "No difference (within the threshold)",
    "inconclusive": "Not resolved at this noise level",
    "identical-code": "Identical machine code to another variant (not timed)",
    "not-measured": "Not measured",
}


def findings(doc: model.Results, compared: list[VariantRow]) -> list[Finding]:
    """Every compared variant under its verdict; 'no difference' is a finding, not hidden."""
    thr = threshold(doc.threshold_pct)
    then = study.then_texts(doc)
    out = []
    for verdict in ("slower", "faster", "slower-luck", "faster-luck", "equivalent",
                    "inconclusive", "identical-code", "not-measured"):
        items = [Item(r.label, r.finding, then.get(r.id, ""))
                 for r in compared if r.shown == verdict]
        if items:
            title = FINDING_TITLES[verdict]
            if verdict == "equivalent":
                title = f"No difference (within +-{thr:g}%)"
            out.append(Finding(verdict, title, items))
    return out


def warnings(doc: model.Results) -> list[Warning]:
    """What should make a reader trust this sweep less, in plain words."""
    out: list[Warning] = []
    if doc.status and doc.status != "complete":
        out.append(Warning("status", f"The sweep is {doc.status} ({doc.stop_reason}): "
                                     "results cover the samples taken so far."))
    thr = threshold(doc.threshold_pct)
    out += [Warning("machine", w) for w in advice.warnings(doc.machine, thr)]
    noise, aa = doc.noise, doc.aa
    noted = getattr(noise, "warning", None) if noise else None
    if noted:
        out.append(Warning("noise", noted))
    elif noise and (noise.mde_pct or 0) > 2 * thr:
        out.append(Warning("noise", f"The smallest effect this sweep calls at 80% power is "
                                    f"{noise.mde_pct:.2f}%, over twice the {thr:g}% threshold."))
    if aa and aa.unstable:
        out.insert(0, Warning("unstable", aa.warning[0].upper() + aa.warning[1:] + "."))
    elif aa and aa.verdict != "equivalent":
        is_ = aa.is_ or "a copy of the baseline binary"
        out.append(Warning("aa", aa.warning or
                           f"The A/A arm ({is_}) came out "
                           f"{aa.verdict}, not equivalent: the noise floor is unproven."))
    short = doc.measurement.short_run if doc.measurement else None
    if short:
        out.append(Warning("short", short.warning))
    schedule = getattr(doc.measurement, "schedule", None) if doc.measurement else None
    if schedule is not None and schedule.warning:
        out.append(Warning("schedule", schedule.warning[0].upper() + schedule.warning[1:] + "."))
    out += _disturbance_warnings(doc)
    out += _variant_warnings(doc) + _own_tests_warnings(doc)
    # a SIMD or assembly path configure left out: the code measured is not what ships
    out += [Warning("left-out", line[0].upper() + line[1:] + ".") for line in features.lines(
        v.build.left_out for v in doc.variants if not is_control(v.id))]
    if not doc.machine.hw_counters:
        out.append(Warning("pmu", "No hardware performance counters on this machine: timings "
                                  "only; IPC and cache/branch miss rates were not measured."))
    return out


def _disturbance_warnings(doc: model.Results) -> list[Warning]:
    m = doc.measurement
    rule = m.disturbance_rule if m else None
    if not m or not m.disturbed or not rule:
        return []
    left = m.still_disturbed or 0
    return [Warning("disturbed", f"The machine disturbed {m.disturbed} run(s): each waited for "
                                 f"the CPU more than {100 * rule.off_cpu_share:.2g}% of its time "
                                 f"(or the host stole it); {m.retaken or 0} were taken again"
                                 + (f", and {left} still disturbed after {rule.max_retakes} "
                                    "retakes were kept" if left else "")
                                 + ". Every attempt is in samples.csv.")]


def _check(v: model.Variant) -> str | None:
    return v.check.status if v.check else None


def _own_tests_warnings(doc: model.Results) -> list[Warning]:
    """The package's own test suite: the variants it fails on (left untimed by jobs/checks.py),
    or a baseline it fails on too, which says the suite is broken here, not the flags."""
    base = next((v.build.package_tests for v in doc.variants if v.id == doc.baseline), None)
    if base is not None and base.status in ("failed", "timeout"):
        return [Warning("own-tests", f"The package's own tests fail at the baseline too "
                                     f"({base.status}, {base.log}): the test suite itself is "
                                     "broken here, so no variant was left out for failing it.")]
    broken = [v.id for v in doc.variants if package_tests.fails(v.build.package_tests, base)]
    return [Warning("own-tests", f"Fails its own tests, so not timed: {names(broken)} (the "
                                 "build table holds each log's last lines).")] if broken else []


def _variant_warnings(doc: model.Results) -> list[Warning]:
    out = []
    regressed = [h.variant for h in doc.history or []
                 if h.latest and h.latest.verdict == "slower"]
    if regressed:
        out.append(Warning("history", f"Slower than this target's earlier sweeps on this CPU: "
                                      f"{names(regressed)} (see History)."))
    twin = _twin_output(doc)
    if twin:
        out.append(twin)
    variants = doc.variants
    differs = [v.id for v in variants if _check(v) == "differs" and not v.id.endswith(AA_SUFFIX)]
    failed = [v.id for v in variants if _check(v) == "failed"]
    unverified = [v.id for v in variants if v.build.status == "flags-mismatch"
                  or (v.build.status == "ok" and not v.build.flags_verified)]
    broken = [v for v in variants if v.build.status == "failed"]
    multiplexed = [v.id for v in variants if v.multiplexed]
    replaced = [v for v in variants if v.replaced]
    if replaced:
        out.append(Warning("replaced", "A binary was replaced during the sweep, so its samples "
                                       "time another program: no verdict for " + "; ".join(
                                           f"{v.id} ({v.replaced.why})"
                                           for v in replaced) + "."))
    if differs:
        same = ("the program is not deterministic (above), so this may be chance, not the flags"
                if twin else "they do not compute the same thing")
        out.append(Warning("output", f"Output differs from the baseline's for {names(differs)}: "
                                     f"they were timed, but {same}."))
    if failed:
        out.append(Warning("output", f"Output check failed for {names(failed)}: not timed."))
    if unverified:
        out.append(Warning("flags", f"The variant's flags did not reach every compile for "
                                    f"{names(unverified)}: not timed (see Builds)."))
    if broken:
        # vs_baseline's why carries the build's first error ("build failed: ...").
        why = "; ".join(f"{v.id} ({_failure(v)})" for v in broken[:3])
        more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
        out.append(Warning("build", f"Build failed for {why}{more}: not timed (see Builds)."))
    if multiplexed:
        out.append(Warning("counters", f"Counters were multiplexed (scaled estimates) for "
                                       f"{names(multiplexed)}."))
    return out


def _failure(v: model.Variant) -> str:
    return (v.vs_baseline.why if v.vs_baseline else None) or "build failed"


def _twin_output(doc: model.Results) -> Warning | None:
    """The A/A twin is the baseline's very binary: other output from it is no flag's doing,
    the program does not give the same output twice (time, randomness, threads, addresses), and
    every other variant's 'differs' may be that too."""
    twin = next((v for v in doc.variants if v.id == doc.baseline + AA_SUFFIX), None)
    check = twin.check if twin else None
    if check is None or check.status not in ("differs", "equivalent"):
        return None
    return Warning("nondeterministic", f"The program is not deterministic: the A/A twin (the "
                   f"baseline's own binary, run again) wrote other output ({check.status}: "
                   f"{check.detail or 'no detail'}). Its output changes from run to run "
                   "whatever the flags, so an output check against the baseline's cannot tell "
                   "what the flags changed.")
