"""The report's view model: every decision the page shows is made here, from results.json alone.

What counts as a finding, which warnings apply, how a number is written, in what order rows
come: all here, as plain dataclasses. The templates (HTML, Markdown) and the terminal table only
lay these out, so the three never disagree and a test can check a decision without parsing HTML.
"""

from __future__ import annotations

import math
import os
import shlex
import statistics
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from flagsweep import shipped, stats
from flagsweep.host import advice
from flagsweep.report import explanation
from flagsweep.results import analysis, confirmation, names
from flagsweep.results.contract import AA_SUFFIX, is_control
from flagsweep.experiment import recipe

VERDICTS = ("faster", "slower", "equivalent", "inconclusive", "identical-code", "not-measured")
# One colour per verdict, shared by the page's badges and the plots' markers.
COLORS = {"faster": "#1a7f37", "slower": "#cf222e", "equivalent": "#57606a",
          "inconclusive": "#bf8700", "identical-code": "#8250df", "not-measured": "#24292f",
          "baseline": "#0969da"}
VERDICT_TEXT = {"faster": "faster", "slower": "slower", "equivalent": "no difference",
                "inconclusive": "inconclusive", "identical-code": "identical code",
                "not-measured": "not measured", "baseline": "baseline"}
UNITS = {"wall_s": "s", "cpu_s": "s", "user_s": "s", "sys_s": "s", "cycles": "cycles",
         "instructions": "instructions"}
# What the page says the statistics were, with where docs/statistics.md explains each.
METHODS = [
    ("ratio to the baseline", "Hodges-Lehmann estimate of the paired log-ratios (one pair per "
                              "round), exact 95% CI from the Walsh averages"),
    ("p-value", "paired sign-flip permutation test of the signed-rank statistic"),
    ("many comparisons", "Benjamini-Hochberg false discovery rate across the sweep"),
    ("no difference", "two one-sided tests: the 90% CI inside +-threshold"),
    ("medians", "distribution-free 95% CI from the order statistics"),
    ("outliers", "modified z-score above 3.5 (Iglewicz & Hoaglin), marked, never dropped"),
    ("factor effects", "robust (Huber) regression of log(metric) with rounds as blocks; "
                       "Plackett-Burman main effects for screens"),
    ("noise floor", "the A/A arm: a second copy of the baseline's binary, measured as a variant"),
]


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
class VariantRow:
    id: str
    label: str
    flags: str
    compiler: str
    role: str                        # "baseline" | "twin" | ""
    verdict: str                     # a VERDICTS key or "baseline"
    change_pct: float | None
    change_text: str
    ci_text: str
    p_adjusted: float | None
    p_text: str
    median: float | None
    median_text: str
    cv_pct: float | None
    n: int
    outliers: int
    retaken: int                     # runs taken again because the machine disturbed them
    size_bytes: int | None
    same_code_as: str
    check: str
    check_detail: str
    why: str
    stopped_at: int | None = None    # stopped early at a final verdict, after this many rounds
    quality_text: str = ""           # the quality check's figures: "SNR 38.42 dB (baseline 38.44)"

    @property
    def badge(self) -> str:
        return VERDICT_TEXT[self.verdict]


@dataclass
class EffectRow:
    name: str
    reference: str
    effect_pct: float
    ci: tuple[float, float] | None
    text: str
    ci_text: str
    p_text: str
    matters: bool


@dataclass
class BuildRow:
    id: str
    status: str
    verified: bool
    compiles: int | None
    seconds: str
    size: str
    compile_line: str
    log_href: str | None
    log_path: str
    detail: str
    shows: str          # what its folded part holds: compile line, problems, or what it is
    text: str = ""      # the loaded image's executable and read-only bytes (ELF text)
    cpu: str = ""       # the build's CPU seconds
    mode: str = ""      # LTO and PGO, each when verified


@dataclass
class Counters:
    kind: str                        # "hardware" | "software"
    note: str
    columns: list[str]
    rows: list[tuple[str, list[str]]]


@dataclass
class StudyRow:
    label: str
    flags: str
    then: list[str]                  # per study machine: "+112%" or "-"
    now: str
    verdict: str


@dataclass
class Study:
    title: str
    question: str
    machines: list[str]
    baseline: str
    rows: list[StudyRow]
    answer: str                      # the question answered in one paragraph


@dataclass
class HistoryRow:
    label: str
    sweeps: int
    text: str
    verdict: str
    steps: str


@dataclass
class LayoutRow:
    id: str
    label: str
    seeds: list[int]
    levels: list[float]              # each layout's median, % from the baseline's layouts' mean
    spread_pct: float | None         # the spread between this comparison's layouts (one sd)
    change_pct: float | None         # the variant against the baseline over the layouts
    ci: tuple[float, float] | None
    verdict: str
    sentence: str


@dataclass
class Layouts:
    k: int
    alone_pct: float | None          # what layout alone does to this program (the A/A twin)
    rows: list[LayoutRow]
    note: str


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


@dataclass
class Report:
    headline: Headline
    metric: str
    unit: str
    threshold_pct: float
    variants: list[VariantRow]
    effects: list[EffectRow]
    effects_note: str
    counters: Counters | None
    machine: list[tuple[str, str]]
    method: list[tuple[str, str]]
    reproduce: str
    builds: list[BuildRow]
    skipped: list[tuple[str, str]]
    study: Study | None
    history: list[HistoryRow]
    baseline_label: str
    results_href: str
    samples_href: str | None
    layouts: Layouts | None = None
    spending: Spending | None = None
    explained: explanation.Explained | None = None         # run --explain's profiles
    doc: dict = field(repr=False, default_factory=dict)   # for the plots: the raw samples


def build(doc: dict, results_path: Path, out_dir: Path) -> Report:
    """The view model of one results.json, for a page written into out_dir."""
    base_dir = results_path.parent
    variants = [_variant_row(v, doc) for v in doc["variants"]]
    labels = {r.id: r.label for r in variants}
    return Report(
        headline=_headline(doc, variants),
        metric=doc["metric"], unit=UNITS.get(doc["metric"], ""),
        threshold_pct=doc.get("threshold_pct", 1.0),
        variants=_ordered(_medians_aligned(variants)),
        effects=sorted((_effect_row(e) for e in doc.get("effects") or []),
                       key=lambda e: e.effect_pct),
        effects_note=(doc.get("effects_design") or {}).get("note", ""),
        counters=_counters(doc, labels),
        machine=_machine(doc), method=_method(doc), reproduce=reproduce_command(doc),
        builds=[_build_row(v, base_dir, out_dir) for v in doc["variants"]],
        skipped=[(" ".join(s["flags"]), s["reason"]) for s in doc.get("skipped") or []],
        study=_study(doc, variants),
        history=[_history_row(h, labels) for h in doc.get("history") or []],
        baseline_label=labels.get(doc["baseline"], doc["baseline"]),
        results_href=link(results_path, out_dir, base_dir) or "results.json",
        samples_href=link(base_dir / "samples.csv", out_dir, base_dir),
        spending=_spending(doc, variants),
        layouts=_layouts(doc, labels),
        explained=explanation.explained(doc, labels),
        doc=doc)


# ---------------------------------------------------------------------------------------------
# Variants
# ---------------------------------------------------------------------------------------------

def metric_values(samples: dict, metric: str) -> list[float | None]:
    """The primary metric per counted sample, aligned with the other columns; cpu_s is
    user + sys, as results.metric_of has it."""
    if metric == "cpu_s":
        return [u + s if u is not None and s is not None else None
                for u, s in zip(samples.get("user_s") or [], samples.get("sys_s") or [])]
    return list(samples.get(metric) or [])


def _variant_row(v: dict, doc: dict) -> VariantRow:
    s, c = v.get("summary") or {}, v.get("vs_baseline") or {}
    role = ("baseline" if v["id"] == doc["baseline"]
            else "twin" if v["id"].endswith(AA_SUFFIX) else "")
    verdict = "baseline" if role == "baseline" else c.get("verdict") or "not-measured"
    change = _pct(c.get("ratio"))
    check = v.get("check") or {}
    return VariantRow(
        id=v["id"], label=names.label(v, doc), flags=" ".join(v["flags"]), compiler=v["compiler"],
        role=role, verdict=verdict, change_pct=change,
        change_text=signed_pct(change) if change is not None and role != "baseline" else "",
        ci_text=_ci_with_fcr(c, doc.get("threshold_pct")), p_adjusted=c.get("p_adjusted"),
        p_text=_p(c.get("p_adjusted")), median=s.get("median"),
        median_text=_num(s.get("median")), cv_pct=_times100(s.get("cv")),
        n=s.get("n", 0), outliers=s.get("outliers", 0) or 0, retaken=s.get("retaken", 0) or 0,
        size_bytes=v["build"].get("size_bytes"),
        same_code_as=v["build"].get("identical_to") or "",
        check=check.get("status", "") if v["build"]["status"] == "ok" else v["build"]["status"],
        check_detail=check.get("detail", "") or v["build"].get("detail", ""),
        why=c.get("why") or "", stopped_at=s.get("stopped_at"),
        quality_text=quality_text(check.get("quality")))


def quality_text(q: dict | None) -> str:
    """The decoded quality in a table cell: its SNR, the baseline's beside it when it is not
    the baseline, and the product's size."""
    if not q:
        return ""
    def db(x):
        return "no noise" if x is None else f"{x:.2f} dB"
    base = f" (baseline {db(q['baseline_snr_db'])})" if "baseline_snr_db" in q else ""
    size = f", {q['size_bytes']:,} bytes" if q.get("size_bytes") is not None else ""
    return f"SNR {db(q.get('snr_db'))}{base}{size}"


@dataclass
class Spending:
    """Where the sweep's rounds went: the variants that stopped at a final verdict, the runs
    that saved, and the comparisons still open with what would likely close them."""
    stopped: list[str]               # "-O0 after 12 of 30 rounds (slower)"
    saved: int
    open: list[str]                  # "-O3: roughly 45 rounds would likely decide"

    @property
    def sentences(self) -> list[str]:
        out = []
        if self.stopped:
            out.append(f"Stopped early, their verdicts final (not measured again): "
                       f"{'; '.join(self.stopped)}; {self.saved} runs not spent.")
        if self.open:
            out.append(f"Still open: {'; '.join(self.open)}.")
        return out


def _spending(doc: dict, rows: list[VariantRow]) -> Spending:
    ran = max((r.n for r in rows if r.role == "baseline"), default=0)
    by_id = {v["id"]: v for v in doc["variants"]}
    stopped = [f"{r.label} after {r.stopped_at} of {ran} rounds ({r.verdict})"
               for r in rows if r.stopped_at]
    still = []
    for r in rows:
        c = by_id[r.id].get("vs_baseline") or {}
        if r.verdict != "inconclusive":
            continue
        if c.get("rounds_needed"):
            still.append(f"{r.label}: roughly {c['rounds_needed']} rounds would likely decide")
        elif c.get("layouts"):
            still.append(f"{r.label}: more layouts, not more rounds, would narrow it")
        else:
            still.append(f"{r.label}: undecided")
    saved = (doc.get("measurement") or {}).get("runs_saved") or 0
    return Spending(stopped, saved, still)


def _medians_aligned(rows: list[VariantRow]) -> list[VariantRow]:
    for row, text in zip(rows, column([r.median for r in rows])):
        row.median_text = text
    return rows


def _ordered(rows: list[VariantRow]) -> list[VariantRow]:
    """Baseline and its A/A copy first, then the others fastest first, unmeasured last."""
    def key(r: VariantRow):
        return (r.role != "baseline", r.role != "twin", r.change_pct is None, r.change_pct or 0)
    return sorted(rows, key=key)


def _pct(ratio: float | None) -> float | None:
    return (ratio - 1) * 100 if ratio is not None else None


def signed_pct(pct: float) -> str:
    return f"{pct:+.1f}%" if abs(pct) >= 0.05 else "0.0%"


def ci_pct_text(ci) -> str:
    return stats.ci_text(ci)


def _ci_with_fcr(c: dict, threshold_pct: float | None) -> str:
    """The 95% CI, then the false-coverage adjusted one where the verdict rests on it (the 95%
    one clears the threshold and the adjusted one is wider): "[+1.4, +1.8]; 99.5% [+1.4, +1.9]"."""
    text = ci_pct_text(c.get("ci95"))
    ci95, fcr, level = c.get("ci95"), c.get("ci_fcr"), c.get("fcr_level")
    if not (ci95 and fcr and level and level > 0.95 + 1e-9 and threshold_pct is not None):
        return text
    t = threshold_pct / 100
    if not (ci95[1] < 1 - t or ci95[0] > 1 + t):
        return text
    return f"{text}; {stats.level_text(level)} {ci_pct_text(fcr)}"


def _p(p: float | None) -> str:
    if p is None:
        return ""
    return "<0.0001" if p < 1e-4 else f"{p:.2g}"


def column(values: list[float | None]) -> list[str]:
    """Numbers that are read down a column, with one number of decimals: four significant
    digits for the smallest (0.321 and 0.3206 become 0.3210 and 0.3206) less the trailing zeros
    every row shares; whole numbers whole, grouped; never in exponent form."""
    present = [abs(x) for x in values if x is not None]
    if not present or all(float(x).is_integer() for x in present):
        return [_num(x) for x in values]
    smallest = min((x for x in present if x), default=1.0)
    digits = max(0, 3 - math.floor(math.log10(smallest)))
    while digits and all(f"{x:.{digits}f}".endswith("0") for x in values if x is not None):
        digits -= 1     # zeros every row would end in say nothing
    return ["" if x is None else f"{x:,.{digits}f}" for x in values]


def _num(x: float | None) -> str:
    """At most four significant digits, never in exponent form (a peak RSS of 10810 KiB is 10,810, not
    1.081e+04 beside rows of plain integers); whole numbers whole."""
    if x is None:
        return ""
    if float(x).is_integer():
        return f"{int(x):,}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _times100(x: float | None) -> float | None:
    return None if x is None else x * 100


# ---------------------------------------------------------------------------------------------
# Headline
# ---------------------------------------------------------------------------------------------

def _headline(doc: dict, rows: list[VariantRow]) -> Headline:
    m = doc["machine"]
    version = f" {doc['target_version']}" if doc.get("target_version") else ""
    study = doc.get("study") or {}
    compared = [r for r in rows if r.role == "" and r.verdict != "baseline"]
    return Headline(
        title=f"{doc['target']}{version}, recipe {doc['recipe']}",
        question=study.get("question", ""),
        machine=f"{m.get('cpu_model', '?')} (-march=native is {m.get('march_native') or '?'})",
        compilers=", ".join(f"{c['name']} {c.get('version', '')}".strip()
                            for c in doc.get("compilers") or []),
        date=(doc.get("finished") or doc.get("started") or "").replace("T", " ").rstrip("Z"),
        status=doc.get("status", ""), stop_reason=doc.get("stop_reason") or "",
        recommendation=recommendation_sentence(doc, rows),
        counts=[(k, n) for k in VERDICTS if (n := sum(r.verdict == k for r in compared))],
        findings=_findings(doc, compared),
        warnings=warnings(doc), confirmation=confirmation_note(doc))


def recommendation_sentence(doc: dict, rows: list[VariantRow]) -> str:
    """The recommendation in one sentence, with the number that justifies it."""
    rec = doc.get("recommendation")
    if not rec:
        return "No recommendation: nothing was compared with the baseline."
    if rec.get("flags") is None:     # not even the baseline's: its own output is wrong
        return rec["why"]
    flags = " ".join(rec["flags"]) or "the default flags"
    chosen = next((r for r in rows if r.id == rec.get("variant")), None)
    thr = f"{doc.get('threshold_pct', 1.0):g}%"
    excluded = rec.get("excluded") or []
    if chosen is None or chosen.role == "baseline":
        passing = " whose output passed its check" if excluded else ""
        sentence = (f"Keep {flags}: no variant{passing} was significantly faster than it by "
                    f"more than {thr}.")
    else:
        sentence = (f"Use {flags}: {chosen.change_text} against the baseline (95% CI "
                    f"{chosen.ci_text}, adjusted p {chosen.p_text}).")
    return confirmed_sentence(doc, sentence) + excluded_sentence(excluded)

def excluded_sentence(excluded: list[dict]) -> str:
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


def confirmed_sentence(doc: dict, sentence: str) -> str:
    """The recommendation as its confirmation over layouts leaves it: a "Use X" confirmed says
    so; one not distinguishable from layout luck is not printed (keep the baseline, with both
    intervals); one not confirmed (--no-confirm, failed, interrupted) says why; one being
    confirmed is not yet a recommendation."""
    rec = doc.get("recommendation") or {}
    c = rec.get("confirmation") or {}
    status, why = c.get("status"), c.get("why") or ""
    if status == confirmation.LUCK and c.get("variant") != rec.get("variant"):
        winner = next((v["flags"] for v in doc["variants"] if v["id"] == c["variant"]), [])
        return (f"Keep {' '.join(rec.get('flags') or []) or 'the default flags'}: "
                f"{' '.join(winner) or c['variant']} is {why}.")
    if status == confirmation.CONFIRMED:
        return f"{sentence[:-1]}; {why}."
    if status == confirmation.PENDING:
        return f"Not yet a recommendation, {why}: {sentence.removeprefix('Use ')}"
    if status in (confirmation.SKIPPED, confirmation.FAILED, confirmation.INTERRUPTED):
        return f"{sentence} {why[:1].upper()}{why[1:]}."
    return sentence


def confirmation_note(doc: dict) -> str:
    """Where the confirmation's answer comes from: its run, layouts, reach and time."""
    c = (doc.get("recommendation") or {}).get("confirmation") or {}
    if c.get("status") not in (confirmation.CONFIRMED, confirmation.LUCK):
        return ""
    took = f", {c['seconds']:.0f} s with its builds" if c.get("seconds") is not None else ""
    return (f"Measured again over layouts by run {c.get('run_id')} ({c.get('results')}): "
            f"{c.get('variant')} and the baseline in {c.get('layouts')} layouts each{took}; "
            f"it was needed because layout luck reaches {c.get('reach_pct', 0):.1f}% "
            f"({c.get('reach_source')}).")


FINDING_TITLES = {
    "slower": "Slower than the baseline",
    "faster": "Faster than the baseline",
    "equivalent": "No difference (within the threshold)",
    "inconclusive": "Not resolved at this noise level",
    "identical-code": "Identical machine code to another variant (not timed)",
    "not-measured": "Not measured",
}


def _findings(doc: dict, compared: list[VariantRow]) -> list[Finding]:
    """Every compared variant under its verdict; 'no difference' is a finding, not hidden."""
    thr = doc.get("threshold_pct", 1.0)
    then = _study_then(doc)
    out = []
    for verdict in ("slower", "faster", "equivalent", "inconclusive", "identical-code",
                    "not-measured"):
        items = [Item(r.label, _finding_text(r), then.get(r.id, ""))
                 for r in compared if r.verdict == verdict]
        if items:
            title = FINDING_TITLES[verdict]
            if verdict == "equivalent":
                title = f"No difference (within +-{thr:g}%)"
            out.append(Finding(verdict, title, items))
    return out


def _finding_text(r: VariantRow) -> str:
    if r.verdict in ("faster", "slower", "equivalent", "inconclusive"):
        return f"{r.change_text} {r.ci_text}".strip()
    if r.verdict == "identical-code":
        return f"same code as {r.same_code_as}"
    if r.why:
        return r.why
    return r.check_detail.splitlines()[0] if r.check_detail else ""


def warnings(doc: dict) -> list[Warning]:
    """What should make a reader trust this sweep less, in plain words."""
    out: list[Warning] = []
    if doc.get("status") and doc["status"] != "complete":
        out.append(Warning("status", f"The sweep is {doc['status']} ({doc.get('stop_reason')}): "
                                     "results cover the samples taken so far."))
    thr = doc.get("threshold_pct", 1.0)
    out += [Warning("machine", w) for w in advice.warnings(doc["machine"], thr)]
    noise, aa = doc.get("noise") or {}, doc.get("aa") or {}
    if noise.get("warning"):
        out.append(Warning("noise", noise["warning"]))
    elif (noise.get("mde_pct") or 0) > 2 * thr:
        out.append(Warning("noise", f"The smallest effect this sweep calls at 80% power is "
                                    f"{noise['mde_pct']:.2f}%, over twice the {thr:g}% threshold."))
    if aa.get("unstable"):
        out.insert(0, Warning("unstable", aa["warning"][0].upper() + aa["warning"][1:] + "."))
    elif aa and aa.get("verdict") != "equivalent":
        out.append(Warning("aa", aa.get("warning") or
                           f"The A/A arm ({aa.get('is', 'a copy of the baseline binary')}) came out "
                           f"{aa.get('verdict')}, not equivalent: the noise floor is unproven."))
    short = (doc.get("measurement") or {}).get("short_run")
    if short:
        out.append(Warning("short", short["warning"]))
    out += _disturbance_warnings(doc)
    out += _variant_warnings(doc)
    if not doc["machine"].get("hw_counters"):
        out.append(Warning("pmu", "No hardware performance counters on this machine: timings "
                                  "only; IPC and cache/branch miss rates were not measured."))
    return out


def _disturbance_warnings(doc: dict) -> list[Warning]:
    m = doc.get("measurement") or {}
    rule = m.get("disturbance_rule")
    if not m.get("disturbed") or not rule:
        return []
    left = m.get("still_disturbed") or 0
    return [Warning("disturbed", f"The machine disturbed {m['disturbed']} run(s): each waited for "
                                 f"the CPU more than {100 * rule['off_cpu_share']:.2g}% of its time "
                                 f"(or the host stole it); {m.get('retaken', 0)} were taken again"
                                 + (f", and {left} still disturbed after {rule['max_retakes']} "
                                    "retakes were kept" if left else "")
                                 + ". Every attempt is in samples.csv.")]


def _variant_warnings(doc: dict) -> list[Warning]:
    out = []
    regressed = [h["variant"] for h in doc.get("history") or []
                 if (h.get("latest") or {}).get("verdict") == "slower"]
    if regressed:
        out.append(Warning("history", f"Slower than this target's earlier sweeps on this CPU: "
                                      f"{_names(regressed)} (see History)."))
    twin = _twin_output(doc)
    if twin:
        out.append(twin)
    differs = [v["id"] for v in doc["variants"] if (v.get("check") or {}).get("status") == "differs"
               and not v["id"].endswith(AA_SUFFIX)]
    failed = [v["id"] for v in doc["variants"] if (v.get("check") or {}).get("status") == "failed"]
    unverified = [v["id"] for v in doc["variants"] if v["build"]["status"] == "flags-mismatch"
                  or (v["build"]["status"] == "ok" and not v["build"].get("flags_verified"))]
    broken = [v for v in doc["variants"] if v["build"]["status"] == "failed"]
    multiplexed = [v["id"] for v in doc["variants"] if v.get("multiplexed")]
    replaced = [v for v in doc["variants"] if v.get("replaced")]
    if replaced:
        out.append(Warning("replaced", "A binary was replaced during the sweep, so its samples "
                                       "time another program: no verdict for " + "; ".join(
                                           f"{v['id']} ({v['replaced'].get('why')})"
                                           for v in replaced) + "."))
    if differs:
        same = ("the program is not deterministic (above), so this may be chance, not the flags"
                if twin else "they do not compute the same thing")
        out.append(Warning("output", f"Output differs from the baseline's for {_names(differs)}: "
                                     f"they were timed, but {same}."))
    if failed:
        out.append(Warning("output", f"Output check failed for {_names(failed)}: not timed."))
    if unverified:
        out.append(Warning("flags", f"The variant's flags did not reach every compile for "
                                    f"{_names(unverified)}: not timed (see Builds)."))
    if broken:
        # vs_baseline's why carries the build's first error ("build failed: ...").
        why = "; ".join(f"{v['id']} ({(v.get('vs_baseline') or {}).get('why') or 'build failed'})"
                        for v in broken[:3])
        more = f" and {len(broken) - 3} more" if len(broken) > 3 else ""
        out.append(Warning("build", f"Build failed for {why}{more}: not timed (see Builds)."))
    if multiplexed:
        out.append(Warning("counters", f"Counters were multiplexed (scaled estimates) for "
                                       f"{_names(multiplexed)}."))
    return out


def _twin_output(doc: dict) -> Warning | None:
    """The A/A twin is the baseline's very binary: other output from it is no flag's doing,
    the program does not give the same output twice (time, randomness, threads, addresses), and
    every other variant's 'differs' may be that too."""
    twin = next((v for v in doc["variants"] if v["id"] == doc["baseline"] + AA_SUFFIX), None)
    check = (twin or {}).get("check") or {}
    if check.get("status") not in ("differs", "equivalent"):
        return None
    return Warning("nondeterministic", f"The program is not deterministic: the A/A twin (the "
                   f"baseline's own binary, run again) wrote other output ({check['status']}: "
                   f"{check.get('detail') or 'no detail'}). Its output changes from run to run "
                   "whatever the flags, so an output check against the baseline's cannot tell "
                   "what the flags changed.")


def _names(ids: list[str]) -> str:
    return ", ".join(ids[:6]) + (f" and {len(ids) - 6} more" if len(ids) > 6 else "")


# ---------------------------------------------------------------------------------------------
# Effects, counters
# ---------------------------------------------------------------------------------------------

def _effect_row(e: dict) -> EffectRow:
    ci = e.get("ci95_pct")
    ci = (ci[0], ci[1]) if ci and None not in ci else None
    name = e["factor"] if e.get("level") in (None, "on") else f"{e['factor']} = {e['level']}"
    return EffectRow(name=name, reference=str(e.get("reference") or ""),
                     effect_pct=e["effect_pct"], ci=ci, text=signed_pct(e["effect_pct"]),
                     ci_text=f"[{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else "",
                     p_text=_p(e.get("p_adjusted")), matters=bool(e.get("matters")))


HW_RATES = [("IPC", "instructions", "cycles", 1.0),
            ("branch misses / 1k instr.", "branch_misses", "instructions", 1000.0),
            ("cache misses / 1k instr.", "cache_misses", "instructions", 1000.0)]
SW_COLUMNS = [("task clock (s)", "task_clock_s"), ("context switches", "context_switches"),
              ("page faults", "page_faults"), ("peak RSS (KiB)", "maxrss_kb"),
              ("user (s)", "user_s"), ("sys (s)", "sys_s")]


def _counters(doc: dict, labels: dict[str, str]) -> Counters | None:
    """Per variant medians of per-run rates: IPC and misses per 1,000 instructions with a PMU
    (the events measured are cycles, instructions, branch-misses, cache-misses), else what the
    kernel counts for every run."""
    measured = [v for v in doc["variants"] if (v.get("samples") or {}).get("wall_s")]
    if not measured:
        return None
    if any("instructions" in v["samples"] and "cycles" in v["samples"] for v in measured):
        rows = _formatted([(labels[v["id"]], [_rate(v["samples"], num, den, k)
                                              for _, num, den, k in HW_RATES]) for v in measured])
        return Counters("hardware", "Hardware counters from perf stat; each figure is the "
                        "median over runs of that run's rate.", [c[0] for c in HW_RATES], rows)
    cols = [(name, key) for name, key in SW_COLUMNS if any(key in v["samples"] for v in measured)]
    rows = _formatted([(labels[v["id"]], [_median(v["samples"].get(key)) for _, key in cols])
                       for v in measured])
    return Counters("software", "No hardware counters: IPC and miss rates need a PMU. These "
                    "are the kernel's counts for each run (rusage, and perf's software events "
                    "when asked for), as medians.", [c[0] for c in cols], rows)


def _rate(samples: dict, num: str, den: str, k: float) -> float | None:
    a, b = samples.get(num), samples.get(den)
    if not a or not b:
        return None
    rates = [x / y * k for x, y in zip(a, b) if x is not None and y]
    return statistics.median(rates) if rates else None


def _median(values: list | None) -> float | None:
    good = [x for x in values or [] if x is not None]
    return statistics.median(good) if good else None


def _formatted(rows: list[tuple[str, list[float | None]]]) -> list[tuple[str, list[str]]]:
    """Each column in one format (see column)."""
    texts = list(zip(*(column(list(c)) for c in zip(*(cells for _, cells in rows))))) if rows else []
    return [(label, list(cells)) for (label, _), cells in zip(rows, texts)]


# ---------------------------------------------------------------------------------------------
# Machine, method, builds
# ---------------------------------------------------------------------------------------------

def _pinned(m: dict) -> str:
    """The CPU measured on, and why it was that one (host.placement's line, after its CPU)."""
    cpu = str(m.get("pinned_cpu", "?"))
    why = (m.get("cpu_choice") or {}).get("why") or ""
    return f"{cpu} ({why.partition(': ')[2]})" if why.partition(": ")[2] else cpu


def _machine(doc: dict) -> list[tuple[str, str]]:
    m = doc["machine"]
    isolated = ", ".join(map(str, m.get("isolated_cpus") or [])) or "none"
    pairs = [
        ("CPU", f"{m.get('cpu_model', '?')} ({m.get('vendor', '?')} family {m.get('family', '?')} "
                f"model {m.get('model', '?')}, microcode {m.get('microcode', '?')})"),
        ("-march=native", m.get("march_native") or "?"),
        ("x86-64 levels it runs", ", ".join(m.get("isa_levels") or []) or "?"),
        ("compilers", "; ".join(f"{c['name']} {c.get('version', '')} ({c.get('path', '')})"
                                for c in doc.get("compilers") or [])),
        ("kernel", m.get("kernel") or "?"),
        ("host", f"{m.get('hostname', '?')}, {m.get('cpu_count', '?')} CPUs, "
                 f"{'virtual machine' if m.get('hypervisor') else 'bare metal'}"),
        ("pinned to CPU", _pinned(m)),
        ("isolated CPUs", isolated),
        ("governor", str(m.get("governor") or "not exposed")),
        ("turbo boost", {True: "on", False: "off"}.get(m.get("boost"), "not exposed")),
        ("ASLR", str(m.get("aslr", "?"))),
        ("load average at start", ", ".join(f"{x:.2f}" for x in m.get("load_avg") or []) or "?"),
        ("hardware counters", "yes" if m.get("hw_counters") else "no (no PMU, or not allowed)"),
    ]
    return [(k, v) for k, v in pairs if v]


def _method(doc: dict) -> list[tuple[str, str]]:
    ms, w = doc.get("measurement") or {}, doc.get("workload") or {}
    counted = sorted({v["summary"]["n"] for v in doc["variants"] if (v.get("summary") or {}).get("n")})
    design = (doc.get("effects_design") or {}).get("design") or doc.get("design") or "?"
    pairs = [
        ("primary metric", f"{doc['metric']} (lower is better)"),
        ("workload", " ".join(w.get("argv") or [])),
        ("input", f"{w.get('input', '')} sha256 {w.get('input_sha256', '?')[:16]}...".strip()),
        ("rounds", f"{ms.get('warmup', '?')} warmup, then {ms.get('min_runs', '?')}.."
                   f"{ms.get('max_runs', '?')} counted (n per variant: "
                   f"{', '.join(map(str, counted)) or 'none'})"),
        ("stopping rule", f"every comparison decided or its paired 95% CI within "
                          f"+-{ms.get('precision_pct', '?')}% (not before a verdict can pass BH), "
                          f"or {ms.get('max_runs', '?')} rounds, or {ms.get('budget', '?')} s; "
                          "a variant stops earlier once its verdict holds at 0.05 / (comparisons "
                          "x rounds at which it could stop), a level no later round can undo "
                          f"({ms.get('runs_saved') or 0} runs not spent)"),
        ("order", "each round a seeded shuffle of the variants; environment size padded at random"),
        ("seed", str(ms.get("seed", "?"))),
        ("threshold", f"+-{doc.get('threshold_pct', 1.0):g}%: smaller effects do not matter"),
        ("design", design),
        ("counters", str(ms.get("counters", "?"))),
        ("stopped", doc.get("stop_reason") or "?"),
    ]
    layouts = ms.get("layouts")
    if layouts:
        pairs.append(("layouts", f"{layouts['k']} builds a variant ({layouts.get('seeds')}), "
                                 f"flags {' '.join(layouts.get('flags') or [])}; "
                                 f"{layouts.get('method')}; this replaces the paired ratio below"))
    return pairs + METHODS


# results.json's `measurement` key -> the `run` option that set it. Every option that changes
# what is measured or how it is judged; not --out, --jobs, --offline or --keep-scratch, which
# change where files go, not the numbers.
REPRODUCED = (("seed", "--seed"), ("warmup", "--warmup"), ("min_runs", "--min-runs"),
              ("max_runs", "--max-runs"), ("budget", "--budget"),
              ("precision_pct", "--precision"), ("threshold_pct", "--threshold"),
              ("metric", "--metric"), ("counters", "--counters"), ("cpu", "--cpu"),
              ("reference", "--reference"))


# ---------------------------------------------------------------------------------------------
# Layouts (run --layouts)
# ---------------------------------------------------------------------------------------------

def _layouts(doc: dict, labels: dict[str, str]) -> Layouts | None:
    """Each variant's layouts side by side, against what layout alone does: the finding of a
    sweep with --layouts, in one sentence per variant."""
    k = ((doc.get("measurement") or {}).get("layouts") or {}).get("k")
    if not k:
        return None
    by_id = {v["id"]: v for v in doc["variants"]}
    base = by_id.get(doc["baseline"])
    medians = [x["median"] for x in ((base or {}).get("summary") or {}).get("layouts") or []
               if x.get("median")]
    if not medians:
        return None
    center = math.exp(sum(math.log(x) for x in medians) / len(medians))
    twin = (by_id.get(doc["baseline"] + AA_SUFFIX) or {}).get("vs_baseline") or {}
    alone = twin.get("layout_sd_pct")
    rows = [_layout_row(v, doc, labels, center, alone) for v in doc["variants"]
            if (v.get("summary") or {}).get("layouts")]
    note = (f"Each variant was built {k} times: the same code (every function the same size), "
            f"linked in {k} seeded orders. A dot is one layout's median run; the bar, the "
            "variant against the baseline over its layouts (95% CI). A verdict needs the "
            "change to stand out from the spread between layouts, which more rounds do not "
            "shrink.")
    return Layouts(k, alone, rows, note)


def _layout_row(v: dict, doc: dict, labels: dict[str, str], center: float,
                alone: float | None) -> LayoutRow:
    c = v.get("vs_baseline") or {}
    reps = v["summary"]["layouts"]
    levels = [(x["median"] / center - 1) * 100 for x in reps if x.get("median")]
    change = _pct(c.get("ratio"))
    ci = _pct_pair(c.get("ci95"))
    label = labels.get(v["id"], v["id"])
    own = c.get("layout_sd_pct")
    if v["id"] == doc["baseline"]:
        sentence = f"{label}: the baseline, {len(reps)} layouts"
    elif change is None:
        sentence = f"{label}: {c.get('verdict', 'not measured')}"
    else:
        sentence = (f"{label} vs {labels.get(doc['baseline'], doc['baseline'])}: "
                    f"{signed_pct(change)} {ci_pct_text(c.get('ci95'))} across {len(reps)} "
                    f"layouts ({c.get('verdict')})")
        spread = alone if alone is not None else own
        if spread is not None:
            sentence += f"; layout alone moves this program by +-{spread:.1f}%"
    return LayoutRow(v["id"], label, [x["seed"] for x in reps], levels, own, change, ci,
                     c.get("verdict") or "baseline", sentence)


def reproduce_command(doc: dict) -> str:
    """The command that repeats this sweep: the same variants and compilers, and every option
    that changed the measurement (seed, stopping rule, metric, counters, CPU, reference, ...)."""
    ms = doc.get("measurement") or {}
    target = (doc.get("workload") or {}).get("target_file") or doc["target"]
    args = ["flagsweep", "run", _short_target(target, doc["target"])]
    designed = [v for v in doc["variants"] if not is_control(v["id"])]
    if doc["recipe"] == recipe.FLAGS_RECIPE:
        for v in designed:
            args += ["--flags", " ".join(v["flags"])]
    else:
        args += ["--recipe", doc["recipe"]]
    args += [a for c in sorted({v["compiler"] for v in designed}) for a in ("--compiler", c)]
    if ms.get("runs") is not None:
        args += ["--runs", str(ms["runs"])]
    for key, opt in REPRODUCED:
        if ms.get(key) is not None and not (key in ("min_runs", "max_runs")
                                            and ms.get("runs") is not None):
            args += [opt, f"{ms[key]:g}" if isinstance(ms[key], float) else str(ms[key])]
    args += ["--layouts", str(ms["layouts"]["k"])] if ms.get("layouts") else []
    args += _confirm_args((doc.get("recommendation") or {}).get("confirmation") or {})
    args += ["--quick"] if ms.get("quick") else []
    args += ["--strict-check"] if ms.get("strict_check") else []
    return shlex.join(args)


def _confirm_args(c: dict) -> list[str]:
    """How the run was told to confirm its recommendation over layouts, when not the default."""
    if c.get("status") == confirmation.SKIPPED:
        return ["--no-confirm"]
    k = c.get("layouts")
    return ["--confirm-layouts", str(k)] if k and k != confirmation.DEFAULT_LAYOUTS else []


def _short_target(target_file: str, name: str) -> str:
    """A shipped target by name; any other by the path of its folder."""
    own = shipped.TARGETS / name / "target.toml"
    return name if Path(target_file) == own or target_file == name else str(Path(target_file).parent)


def _build_row(v: dict, base_dir: Path, out_dir: Path) -> BuildRow:
    b = v["build"]
    audit = b.get("audit") or {}
    log = base_dir / b["log"] if b.get("log") else None
    # The A/A twin and the reference arm are copies, not builds: their detail says of what.
    shows = (f"not built: {b.get('detail')}" if is_control(v["id"])
             else "first compile line and problems" if b.get("detail") else "first compile line")
    return BuildRow(
        id=v["id"], status=b["status"], verified=bool(b.get("flags_verified")),
        compiles=audit.get("compiles"),
        seconds=("reused" if b.get("reused")
                 else f"{b['seconds']:.1f}" if b.get("seconds") is not None else ""),
        size=f"{b['size_bytes']:,}" if b.get("size_bytes") else "",
        text=f"{b['sizes']['text']:,}" if (b.get("sizes") or {}).get("text") else "",
        cpu=f"{b['cpu_seconds']:.1f}" if b.get("cpu_seconds") is not None else "",
        mode=", ".join(m for m, on in (("LTO", b.get("lto")), ("PGO", (b.get("pgo") or {})
                                                                 .get("matched"))) if on),
        compile_line=shlex.join(audit["compile_line"]) if audit.get("compile_line") else "",
        log_href=link(log, out_dir, base_dir) if log else None,
        log_path=str(b.get("log") or ""),
        detail="" if is_control(v["id"]) else b.get("detail") or "", shows=shows)


def link(path: Path, out_dir: Path, inside: Path) -> str | None:
    """The href of every link a page makes to a file: relative to the page's folder (so the
    folder can move), to an existing file inside `inside` (the results folder) once every link
    is followed, and percent-encoded, so no part of it is a scheme (javascript:, data:), a query
    or a fragment. None for a path that does not qualify: a results file is input that anyone
    may have written, and the page shows such a path as text instead."""
    try:
        target = path.resolve()
        if not target.is_file() or not target.is_relative_to(inside.resolve()):
            return None
    except (OSError, RuntimeError, ValueError):   # a link loop, a NUL in the path
        return None
    return urllib.parse.quote(Path(os.path.relpath(target, out_dir.resolve())).as_posix())


# ---------------------------------------------------------------------------------------------
# A reproduced study (recipes with a [study] table, e.g. seed-2003)
# ---------------------------------------------------------------------------------------------

def _study_then(doc: dict) -> dict[str, str]:
    """variant id -> what the study measured for that row, relative to the study's baseline."""
    study = doc.get("study")
    if not study:
        return {}
    out = {}
    for v in doc["variants"]:
        row = (v.get("factors") or {}).get(study["factor"])
        figures = [f"{signed_pct(then)} on {m['name']}" for m in study["machines"]
                   if (then := _then_pct(m, row, study)) is not None]
        if figures and not v["id"].endswith(AA_SUFFIX):
            out[v["id"]] = "then: " + "; ".join(figures)
    return out


def _then_pct(machine: dict, row: str | None, study: dict) -> float | None:
    seconds = machine["seconds"]
    if row not in seconds or row == study["baseline"]:
        return None
    return (seconds[row] / seconds[study["baseline"]] - 1) * 100


def _study(doc: dict, rows: list[VariantRow]) -> Study | None:
    study = doc.get("study")
    if not study:
        return None
    by_id = {r.id: r for r in rows}
    out = []
    for v in doc["variants"]:
        row = (v.get("factors") or {}).get(study["factor"])
        if row is None or v["id"].endswith(AA_SUFFIX):
            continue
        r = by_id[v["id"]]
        then = [signed_pct(p) if (p := _then_pct(m, row, study)) is not None
                else ("baseline" if row == study["baseline"] and row in m["seconds"] else "-")
                for m in study["machines"]]
        now = "baseline" if r.role == "baseline" else _finding_text(r)
        out.append(StudyRow(row, r.flags, then, now, r.verdict))
    return Study(study["title"], study["question"], [m["name"] for m in study["machines"]],
                 study["baseline"], out, _answer(out, doc))


ANSWER_PARTS = [("slower", "still slower than {base}"), ("faster", "faster than {base}"),
                ("equivalent", "noise here (within +-{thr}%)"),
                ("inconclusive", "not resolved at this noise level"),
                ("identical-code", "the same machine code as another row"),
                ("not-measured", "not measured")]


def _answer(rows: list[StudyRow], doc: dict) -> str:
    """'On <cpu> with <compiler>: ...' naming the study's rows under each verdict."""
    m, compilers = doc["machine"], doc.get("compilers") or []
    thr, base = f"{doc.get('threshold_pct', 1.0):g}", (doc.get("study") or {}).get("baseline")
    parts = []
    for verdict, words in ANSWER_PARTS:
        named = [f"{r.label} ({r.now})" if verdict in ("slower", "faster") else r.label
                 for r in rows if r.verdict == verdict]
        if named:
            parts.append(words.format(base=base, thr=thr) + ": " + ", ".join(named))
    where = (f"On this {m.get('cpu_model', 'CPU')} (-march=native {m.get('march_native') or '?'})"
             f" with {', '.join(c['name'] + ' ' + c.get('version', '') for c in compilers)}")
    return f"{where}: " + "; ".join(parts) + "." if parts else f"{where}: nothing was compared."


def _history_row(h: dict, labels: dict[str, str]) -> HistoryRow:
    latest = h.get("latest") or {}
    text = (f"{signed_pct((latest['ratio'] - 1) * 100)} {ci_pct_text(latest.get('ci95'))} "
            f"against {len(latest.get('against') or [])} earlier sweep(s)"
            if latest.get("ratio") else "")
    steps = ", ".join(f"{s['run_id']} {signed_pct((s['ratio'] - 1) * 100)}"
                      + (f" ({'; '.join(s['changed'])})" if s.get("changed") else "")
                      for s in h.get("steps") or [])
    return HistoryRow(labels.get(h["variant"], h["variant"]), len(h["points"]), text,
                      latest.get("verdict") or "not-measured", steps)


# ---------------------------------------------------------------------------------------------
# Merged results (flagsweep merge): a heatmap cell per variant and machine
# ---------------------------------------------------------------------------------------------

@dataclass
class MergeRow:
    label: str


@dataclass
class HeatCell:
    change_pct: float | None
    text: str
    ci_text: str
    color: str
    strong: bool
    verdict: str


HEAT_SPAN_PCT = 10.0                 # full colour at +-10%: the effects that matter are small


def heat_cell(change_pct: float | None, ci, verdict: str) -> HeatCell:
    """Colour by the size of the change, mark by what the sweep concluded about it."""
    if change_pct is None:
        return HeatCell(None, VERDICT_TEXT.get(verdict, verdict), "", "transparent", False, verdict)
    mark = {"equivalent": "\u2248 ", "inconclusive": "? "}.get(verdict, "")
    text = "baseline" if verdict == "baseline" else mark + signed_pct(change_pct)
    ci_text = f"[{ci[0]:+.1f}, {ci[1]:+.1f}]" if ci else ""
    return HeatCell(change_pct, text, ci_text, _heat(change_pct), verdict in ("faster", "slower"),
                    verdict)


def _heat(pct: float) -> str:
    """Green for faster, red for slower, alpha by size (capped at HEAT_SPAN_PCT)."""
    alpha = min(abs(pct) / HEAT_SPAN_PCT, 1.0) * 0.55
    rgb = "26,127,55" if pct < 0 else "207,34,46"
    return f"rgba({rgb},{alpha:.2f})"


# ---------------------------------------------------------------------------------------------
# A suite (flagsweep run --all / flagsweep suite): a row per variant, the suite's pooled cell
# first, then each program's own
# ---------------------------------------------------------------------------------------------

@dataclass
class SuiteRow:
    label: str
    suite: HeatCell
    why: str                         # the suite verdict's reasoning (hover), or why there is none
    programs: list[HeatCell]
    slower_on: list[str]
    faster_on: list[str]


def suite_rows(s) -> list[SuiteRow]:
    """The suite's rows, best pooled estimate first; rows without one last."""
    several = len({r.compiler for r in s.rows}) > 1
    out = []
    for r in sorted(s.rows, key=lambda r: (r.suite is None, r.suite.ratio if r.suite else 0)):
        flags = " ".join(r.flags) or "(no flags)"
        c = r.suite
        pooled = (heat_cell((c.ratio - 1) * 100, _pct_pair(c.ci95), c.verdict) if c
                  else heat_cell(None, None, "not-measured"))
        cells = [heat_cell((p.ratio - 1) * 100, _pct_pair(p.ci95), p.verdict) if p
                 else heat_cell(None, None, "not-measured") for p in r.cells.values()]
        label = r.label or (f"{r.compiler} {flags}" if several else flags)
        out.append(SuiteRow(label, pooled,
                            c.why if c else r.missing, cells, r.on("slower"), r.on("faster")))
    return out


def _pct_pair(ci) -> tuple[float, float] | None:
    return ((ci[0] - 1) * 100, (ci[1] - 1) * 100) if ci else None
