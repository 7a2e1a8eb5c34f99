"""How the sweep was made: the machine it ran on, the method it measured and judged by, and
the command that repeats it."""

from __future__ import annotations

import shlex
from pathlib import Path

from flagsweep import shipped
from flagsweep.experiment import recipe
from flagsweep.measure.options import DEFAULT_CONFIRM_ROWS
from flagsweep.report.formats import threshold
from flagsweep import model
from flagsweep.results import confirmation
from flagsweep.model import TUNE_STEPS, is_control

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
NO_MEASUREMENT = model.Measurement()
NO_WORKLOAD = model.Workload()


def shown(value, absent: str = "?"):
    """A value the document may lack, as the page writes it: `absent` in its place."""
    return absent if value is None else value


def _pinned(m: model.Machine) -> str:
    """The CPU measured on, and why it was that one (host.placement's line, after its CPU)."""
    cpu = str(shown(m.pinned_cpu))
    why = (m.cpu_choice.why if m.cpu_choice else None) or ""
    return f"{cpu} ({why.partition(': ')[2]})" if why.partition(": ")[2] else cpu


def machine_rows(m: model.Machine, compilers: list[model.Compiler]) -> list[tuple[str, str]]:
    """The machine section: what the sweep ran on, key by key."""
    isolated = ", ".join(map(str, m.isolated_cpus or [])) or "none"
    pairs = [
        ("CPU", f"{m.cpu_model or '?'} ({shown(m.vendor)} family {shown(m.family)} "
                f"model {shown(m.model)}, microcode {shown(m.microcode)})"),
        ("-march=native", m.march_native or "?"),
        ("x86-64 levels it runs", ", ".join(m.isa_levels or []) or "?"),
        ("compilers", "; ".join(f"{c.name} {c.version or ''} ({c.path or ''})"
                                for c in compilers)),
        ("kernel", m.kernel or "?"),
        *_environment_rows(m.environment),
        ("host", f"{m.hostname or '?'}, {shown(m.cpu_count)} CPUs, "
                 f"{'virtual machine' if m.hypervisor else 'bare metal'}"),
        ("pinned to CPU", _pinned(m)),
        ("isolated CPUs", isolated),
        ("governor", str(m.governor or "not exposed")),
        ("turbo boost", {True: "on", False: "off"}.get(m.boost, "not exposed")),
        ("ASLR", str(shown(m.aslr))),
        ("load average at start",
         ", ".join(f"{x:.2f}" for x in m.load_avg or []) or "?"),
        ("hardware counters", "yes" if m.hw_counters else "no (no PMU, or not allowed)"),
    ]
    return [(k, v) for k, v in pairs if v]


def _environment_rows(e: model.Environment | None) -> list[tuple[str, str]]:
    """The distribution and the CI runner's image (host.image); none for a document recorded
    before flagsweep read them."""
    if e is None:
        return []
    distro = e.distro or " ".join(x for x in (e.distro_id, e.distro_version) if x) or "?"
    ci = (f"{e.ci}: image {e.image or '?'}, runner {e.runner or '?'}" if e.ci
          else "none (not in a CI job)")
    return [("distribution", distro), ("CI runner", ci)]


def method_rows(doc: model.Results) -> list[tuple[str, str]]:
    """The method section: how the sweep measured and judged, then the statistics used."""
    ms, w = doc.measurement or NO_MEASUREMENT, doc.workload or NO_WORKLOAD
    counted = sorted({v.summary.n for v in doc.variants if v.summary and v.summary.n})
    design = (doc.effects_design.design if doc.effects_design else None) or doc.design or "?"
    pairs = [
        ("primary metric", f"{doc.metric} (lower is better)"),
        ("workload", " ".join(w.argv or [])),
        *([("build system", w.build_system)] if w.build_system else []),
        ("input", f"{w.input or ''} sha256 {shown(w.input_sha256)[:16]}...".strip()),
        ("rounds", f"{shown(ms.warmup)} warmup, then {shown(ms.min_runs)}.."
                   f"{shown(ms.max_runs)} counted (n per variant: "
                   f"{', '.join(map(str, counted)) or 'none'})"),
        ("stopping rule", f"every comparison decided or its paired 95% CI within "
                          f"+-{shown(ms.precision_pct)}% (not before a verdict can pass BH), "
                          f"or {shown(ms.max_runs)} rounds, or {shown(ms.budget)} s; "
                          "a variant stops earlier once its verdict holds at 0.05 / (comparisons "
                          "x rounds at which it could stop), a level no later round can undo "
                          f"({ms.runs_saved or 0} runs not spent)"),
        ("order", "each round a seeded shuffle of the variants' duets with the baseline"
                  if _duet(ms) else "each round a seeded shuffle of the variants; environment "
                  "size padded at random"),
        ("seed", str(shown(ms.seed))),
        ("threshold", f"+-{threshold(doc.threshold_pct):g}%: smaller effects do not matter"),
        ("design", design),
        ("counters", str(ms.counters or "?")),
        ("stopped", doc.stop_reason or "?"),
    ]
    pairs += schedule_rows(getattr(ms, "schedule", None))
    layouts = ms.layouts
    if layouts:
        pairs.append(("layouts", f"{layouts.k} builds a variant ({layouts.seeds}), "
                                 f"flags {' '.join(layouts.flags or [])}; "
                                 f"{layouts.method}; this replaces the paired ratio below"))
    return pairs + METHODS


def _duet(ms: model.Measurement) -> bool:
    record = getattr(ms, "schedule", None)
    return record is not None and record.schedule == "duet"


def schedule_line(doc: model.Results) -> str | None:
    """The schedule of the counted rounds and why, as the page, summary.md and the terminal
    say it in one line (jobs.schedule's reason); None for a sweep that kept none."""
    record = getattr(doc.measurement or NO_MEASUREMENT, "schedule", None)
    return record.reason if record is not None else None


def schedule_rows(record: model.Schedule | None) -> list[tuple[str, str]]:
    """The method section's rows of the schedule: how the pairs were made, and the pilot's
    figures (measure.pilot) with its bias check."""
    if record is None:
        return []
    rows = [("schedule", record.reason + (f"; {record.design}" if record.design else ""))]
    p = record.pilot
    if p is None:
        return rows
    figures = "; ".join(_pilot_figures(name, f) for name, f in (("serial", p.serial),
                                                                 ("duet", p.duet)))
    off = [b.variant for b in p.bias or [] if b.agrees is False]
    check = (f"disagree: {', '.join(off)}" if off else
             "every comparison agrees" if p.bias else "nothing to check")
    level = f"{100 * p.level:.4g}%" if p.level is not None else "?"
    rows.append(("schedule pilot", f"{shown(p.pairs)} pairs a comparison in each schedule, "
                                   f"interleaved ({shown(p.seconds)} s): {figures}; bias check "
                                   f"(duet against serial, Welch {level} intervals): {check}"))
    return rows


def _pilot_figures(name: str, f: model.PilotFigures | None) -> str:
    if f is None or None in (f.sd_pct, f.round_s, f.minute_pct):
        return f"{name}: too few pairs"
    return (f"{name}: paired spread {f.sd_pct:.3g}%, a round {f.round_s:.3g} s, "
            f"+-{f.minute_pct:.3g}% after a minute ({shown(f.pairs)} pairs)")


# results.json's `measurement` key -> the `run` option that set it. Every option that changes
# what is measured or how it is judged; not --out, --jobs, --offline or --keep-scratch, which
# change where files go, not the numbers.
REPRODUCED = (("seed", "--seed"), ("warmup", "--warmup"), ("min_runs", "--min-runs"),
              ("max_runs", "--max-runs"), ("budget", "--budget"),
              ("precision_pct", "--precision"), ("threshold_pct", "--threshold"),
              ("metric", "--metric"), ("counters", "--counters"), ("cpu", "--cpu"),
              ("reference", "--reference"))


def reproduce_command(doc: model.Results) -> str:
    """The command that repeats this sweep: the same variants and compilers, and every option
    that changed the measurement (seed, stopping rule, metric, counters, CPU, reference, ...)."""
    ms = doc.measurement or NO_MEASUREMENT
    target = (doc.workload.target_file if doc.workload else None) or doc.target
    args = ["flagsweep", "run", _short_target(target, doc.target)]
    designed = [v for v in doc.variants if not is_control(v.id)]
    if doc.recipe == recipe.FLAGS_RECIPE or doc.recipe in TUNE_STEPS:
        for v in designed:
            args += ["--flags", " ".join(v.flags)]
    else:
        args += ["--recipe", doc.recipe]
    args += [a for c in sorted({v.compiler for v in designed}) for a in ("--compiler", c)]
    if ms.runs is not None:
        args += ["--runs", str(ms.runs)]
    for key, opt in REPRODUCED:
        value = getattr(ms, key, None)
        if value is not None and not (key in ("min_runs", "max_runs") and ms.runs is not None):
            args += [opt, f"{value:g}" if isinstance(value, float) else str(value)]
    args += ["--layouts", str(ms.layouts.k)] if ms.layouts else []
    asked = ms.schedule.asked if ms.schedule else None
    args += ["--schedule", asked] if asked and asked != "auto" else []
    args += _confirm_args(doc)
    args += ["--quick"] if ms.quick else []
    args += ["--input-size", "auto"] if ms.input_size == "auto" else []
    args += ["--strict-check"] if ms.strict_check else []
    return shlex.join(args)


def _confirm_args(doc: model.Results) -> list[str]:
    """How the run was told to confirm its rows over layouts, where not the default."""
    c = doc.recommendation.confirmation if doc.recommendation else None
    if c is not None and c.status == confirmation.SKIPPED \
            and c.left_out_why in (None, confirmation.NO_CONFIRM):
        return [confirmation.NO_CONFIRM]
    ms = doc.measurement
    k, rows = getattr(ms, "confirm_layouts", None), getattr(ms, "confirm_rows", None)
    if k is None and c is not None and c.variants is None:
        k = c.layouts           # an older run: its K was the option's, default 4
        k = None if k == 4 else k
    return ((["--confirm-layouts", str(k)] if k else [])
            + (["--confirm-rows", str(rows)] if rows and rows != DEFAULT_CONFIRM_ROWS else []))


def _short_target(target_file: str, name: str) -> str:
    """A shipped target by name; any other by the path of its folder."""
    own = shipped.TARGETS / name / "target.toml"
    return name if Path(target_file) == own or target_file == name else str(Path(target_file).parent)
