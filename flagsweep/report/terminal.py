"""The end of `flagsweep run` in the terminal: the variants table with verdicts (rich), then
the sweep-level findings, from the same view model as the page. Every table flagsweep prints
is made by `table` here, in one style."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from rich.console import Console
from rich.table import Table
from rich.text import Text

from flagsweep import stats
from flagsweep.across import history, suite
from flagsweep.report import formats, heatmap, tune, view
from flagsweep.report.formats import COLORS, VERDICT_TEXT, ci_pct_text, signed_pct, table
from flagsweep import model
from flagsweep.results.reader import load
from flagsweep.screen import shown


def console() -> Console:
    """stderr; wide when it is not a terminal, so a CI log keeps whole rows."""
    return formats.console(sys.stderr, None if sys.stderr.isatty() else 160)


def show(results_path: Path, out: Console | None = None) -> None:
    out = out or console()
    results_path = Path(results_path)
    doc = load(results_path)
    r = view.build(doc, results_path, results_path.parent)
    out.print(_table(r))
    for line in _findings(doc, r):
        out.print(line, markup=False)
    out.print(f"stopped: {doc.stop_reason}", markup=False)


def _table(r: view.SweepView) -> Table:
    t = table(r.headline.title)
    for name, justify in (("variant", "left"), ("verdict", "left"), ("vs baseline", "right"),
                          ("95% CI", "right"), ("adj. p", "right"),
                          (f"median {r.metric}", "right"), ("n", "right")):
        t.add_column(name, justify=justify, overflow="fold")
    for v in r.variants:
        verdict = Text(v.badge, style=COLORS.get(v.shown, ""))
        if v.own_tests:
            verdict.append(f"; {v.own_tests}")
        t.add_row(Text(v.label), verdict, v.change_text, v.ci_text, v.p_text, v.median_text,
                  str(v.n))
    return t


def _findings(doc: model.Results, r: view.SweepView) -> list[str]:
    lines = []
    aa, noise = doc.aa, doc.noise
    if aa:
        bound = f" (calls need their CI beyond +-{aa.bound_pct:.1f}%)" \
            if aa.bound_pct is not None and aa.gated else ""
        lines.append(f"A/A arm: {aa.verdict}{bound}")
    if r.schedule:
        lines.append(f"schedule: {r.schedule}")
    m = doc.measurement
    rule = m.disturbance_rule if m else None
    if m and m.disturbed is not None and rule:
        lines.append(f"disturbance: {m.disturbed} run(s) disturbed, {m.retaken or 0} "
                     f"retaken (off-CPU share over "
                     f"{100 * rule.off_cpu_share:.2g}% for {doc.metric})")
    if noise and noise.mde_pct is not None:
        lines.append(f"noise: baseline CV {100 * (noise.baseline_cv or 0):.2f}%, effects of "
                     f"{noise.mde_pct:.2f}% or more are called at 80% power "
                     f"(threshold {r.threshold_pct:g}%)")
    if r.layouts:
        lines += [f"layout: {row.sentence}" for row in r.layouts.rows
                  if row.change_pct is not None]
    if r.effects:
        # The same estimate, interval and adjusted p as the page's effects table, and for a
        # one-change design as the variants table above.
        design = doc.effects_design or model.EffectsDesign(design="?", note="")
        named = ", ".join(f"{e.name} {e.text} {e.ci_text} adj. p {e.p_text}"
                          for e in r.effects if e.settled)
        none = f"none called: {design.undecided}" if design.undecided \
            else "none beyond the threshold" + (" and layout luck" if any(
                e.matters for e in r.effects) else "")
        lines.append(f"flags that matter ({design.design}): {named or none}")
        luck = [f"{e.name} {e.text} {e.ci_text} ({e.luck_why})" for e in r.effects
                if e.matters and not e.settled]
        if luck:
            lines.append(f"one layout, within layout luck (not settled): {'; '.join(luck)}")
    lines += [f"{'UNSTABLE' if w.kind == 'unstable' else 'warning'}: {w.text}"
              for w in r.headline.warnings if w.kind != "machine"]
    lines += r.spending.sentences if r.spending else []
    lines.append(f"recommendation: {r.headline.recommendation}")
    if r.headline.interval:
        lines.append(f"interval: {r.headline.interval}")
    if r.headline.confirmation:
        lines.append(f"confirmation: {r.headline.confirmation}")
    if r.headline.run_length:
        lines.append(f"input size: {r.headline.run_length.removeprefix('Input size: ')}")
    if r.explained:
        lines += [f"explain: {r.explained.note}"] if not r.explained.variants else []
        lines += [line for v in r.explained.variants for line in v.lines()]
    return lines


def show_comparison(c, out: Console | None = None) -> None:
    """`flagsweep compare` in the terminal: the same rows as compare.html."""
    out = out or console()
    t = table(f"{c.title}\nA: {c.a.name}   B: {c.b.name}")
    for name in ("variant", "A", "B", "changed", "B vs A (median)", "B vs A"):
        t.add_column(name, overflow="fold")
    for row in c.rows:
        t.add_row(Text(row.label), _side(row.a), _side(row.b), row.changed, row.across_text,
                  Text(VERDICT_TEXT.get(row.across_verdict, row.across_verdict),
                       style=COLORS.get(row.across_verdict, "")))
    out.print(t)
    for key, a, b in c.differences:
        out.print(f"differs: {key}: A {a} | B {b}", markup=False)
    for w in c.warnings:
        out.print(f"warning: {w}", markup=False)
    out.print(c.summary, markup=False)


def _side(row) -> Text:
    if row is None:
        return Text("absent")
    text = Text(row.badge, style=COLORS.get(row.verdict, ""))
    return text + Text(f" {row.change_text}" if row.change_text else "")


def show_history(target: str, all_series, out: Console | None = None) -> None:
    """`flagsweep history`: one row per series, the latest sweep against its segment."""
    out = out or console()
    machines = sorted({s.machine for s in all_series})
    t = table(f"{target}: history")
    for name in ("variant", "sweeps", "first median", "latest median", "latest vs history",
                 "verdict", "steps") + (("machine",) if len(machines) > 1 else ()):
        t.add_column(name, overflow="fold")
    for s in all_series:
        latest = s.latest
        verdict = latest.verdict if latest else ""
        vs = (f"{signed_pct((latest.ratio - 1) * 100)} {ci_pct_text(latest.ci95)}"
              if latest and latest.ratio else "")
        steps = ", ".join(f"{st.run_id} {signed_pct((st.ratio - 1) * 100)}" for st in s.steps)
        name = s.variant + (f" / ref {s.reference[:8]}" if s.reference else "")
        first, last = (f"{p.median:.4g}" if p else "-" for p in
                       ((s.points or [None])[0], (s.points or [None])[-1]))
        row = [Text(name), str(len(s.points)), first, last, vs,
               Text(VERDICT_TEXT.get(verdict, verdict or "-"), style=COLORS.get(verdict, "")),
               steps]
        t.add_row(*row, *([s.machine] if len(machines) > 1 else []))
    out.print(t)
    if any(s.reference for s in all_series):
        out.print("note: `/ ref` series are ratios to a reference binary measured in the same "
                  "rounds (the one the store kept from the first sweep, or run --reference): "
                  "the machine's night-to-night drift is divided out.", markup=False)
    if any(s.unjudged for s in all_series):
        out.print("note: unjudged nights (an A/A arm that failed, another metric) are neither a "
                  "pass nor a step; `--json` lists them with why.", markup=False)
    short = [s for s in all_series if 1 < len(s.points) <= history.MIN_SPREAD_RUNS]
    if short:
        out.print(f"note: with {history.MIN_SPREAD_RUNS} or fewer sweeps the sweep-to-sweep "
                  "spread is too uncertain to test against; until then a step must clear "
                  "--threshold and 3.5 SDs of the earlier sweeps (none after a single sweep, "
                  "but for an instruction count, which has no day-to-day drift), so choose "
                  "--threshold above this machine's day-to-day drift.", markup=False)


def show_pick(p, out: Console | None = None) -> None:
    """`flagsweep pick`: every candidate with its combined change, exclusions and losses."""
    out = out or console()
    t = table(f"pick across {len(p.programs)} program(s) x {len(p.machines)} result(s), "
              f"baseline {p.baseline_label or p.baseline}")
    for name in ("variant", "geometric mean", "95% CI", "pairs", "faster/equal/slower/open",
                 "worst", "text size", "build CPU", "excluded because"):
        t.add_column(name, overflow="fold")
    for c in sorted(p.candidates, key=lambda c: (bool(c.excluded), c.ratio or 9)):
        gm = signed_pct((c.ratio - 1) * 100) if c.ratio else ""
        ci = stats.ci_text(c.ci95)
        s, worst = c.skew, c.worst
        t.add_row(Text(c.label or " ".join(c.flags)), gm, ci, str(len(c.pairs)),
                  f"{s.faster}/{s.equivalent}/{s.slower}/{s.undecided}",
                  Text(f"{worst.program} {stats.change_text(worst.ratio, worst.ci95)}"
                       if worst and worst.ratio > 1 else ""),
                  _cost(c.size_ratio), _cost(c.build_cpu_ratio), Text(c.excluded))
    out.print(t)
    out.print(f"pick: {p.why}", markup=False)
    if p.chosen:
        for loss in p.chosen.losses:
            out.print(f"  slower on {loss.program} / {loss.machine}: "
                      f"{signed_pct((loss.ratio - 1) * 100)}", markup=False)
    for line in p.levels:
        out.print(f"worth shipping? {line}", markup=False)
    out.print(f"\n{p.answer}", markup=False)


def _cost(ratio: float | None) -> str:
    return signed_pct((ratio - 1) * 100) if ratio else ""


def show_suite(s, out: Console | None = None) -> None:
    """The end of `flagsweep run --all` / `flagsweep suite`: pooled and per-program changes."""
    out = out or console()
    s = suite.document(s, Path.cwd())
    t = table(f"suite of {len(s.programs)} programs against {s.baseline}")
    t.add_column("variant", overflow="fold")
    t.add_column("suite", justify="right")
    t.add_column("verdict")
    for p in s.programs:
        t.add_column(p.target, justify="right")
    t.add_column("slower on", overflow="fold")
    for r in heatmap.suite_rows(s):
        t.add_row(Text(r.label), f"{r.suite.text} {r.suite.ci_text}",
                  Text(VERDICT_TEXT.get(r.suite.verdict, r.suite.verdict),
                       style=COLORS.get(r.suite.verdict, "")),
                  *(c.text for c in r.programs), ", ".join(r.slower_on))
    out.print(t)
    for w in s.warnings:
        out.print(f"warning: {w}", markup=False)
    out.print(f"suite: {s.recommendation}", markup=False)


def show_tune(doc: model.Tune, out: Console | None = None) -> None:
    """The end of `flagsweep tune` (and of `flagsweep report tune.json`): the proof, the
    ablation, then the answer, the last line printed, as on the page (report/tune.py)."""
    out = out or console()
    t = tune.build(doc, Path.cwd())
    if t.proof_rows:
        out.print(_proof(t))
        if t.proof.plan:
            out.print(f"proof plan: {t.proof.plan}", markup=False)
    elif t.proof.status != "complete":
        out.print(f"proof {t.proof.status}" + (f": {t.proof.why}" if t.proof.why else ""),
                  markup=False)
    if t.ablation_rows:
        out.print(_ablation(t))
    if t.ablation_sentence:
        out.print(f"ablation: {t.ablation_sentence}", markup=False)
    if t.greedy_rows:
        out.print(_greedy(t))
    if t.greedy_sentence:
        out.print(f"greedy subset: {t.greedy_sentence}", markup=False)
    if t.state:
        out.print(t.state + (f" Resume it with: {t.resume}" if t.resume else ""), markup=False)
    out.print(t.answer, markup=False, soft_wrap=True)


def _proof(t: tune.TuneView) -> Table:
    layouts = f" over {t.proof.layouts} layouts each" if t.proof.layouts else ""
    p = table(f"the proof: full input{layouts}")
    for name, justify in (("set", "left"), ("changes", "left"), ("vs base", "right"),
                          ("", "left"), ("vs -O3", "right"), ("", "left")):
        p.add_column(name, justify=justify, overflow="fold")
    for r in t.proof_rows:
        p.add_row(Text(r.role), Text(r.changes), *_change(r.vs_base), *_change(r.vs_o3))
    return p


def _ablation(t: tune.TuneView) -> Table:
    a = table("the ablation: the winner without each flag or group (+: it helps)")
    for name, justify in (("removed", "left"), ("without it", "right"), ("", "left"),
                          ("note", "left")):
        a.add_column(name, justify=justify, overflow="fold")
    for r in t.ablation_rows:
        a.add_row(Text(r.flag, style="bold" if r.matters else ""), *_change(r.change),
                  Text(r.note))
    return a


def _greedy(t: tune.TuneView) -> Table:
    g = table("the greedy subset: the base with the flags added back, costliest first "
              "(+: slower than the winner)")
    for name, justify in (("step adds", "left"), ("kept", "right"), ("vs winner", "right"),
                          ("", "left"), ("note", "left")):
        g.add_column(name, justify=justify, overflow="fold")
    for r in t.greedy_rows:
        g.add_row(Text(r.added, style="bold" if r.chosen else ""), r.kept, *_change(r.change),
                  Text(r.note))
    return g


def _change(c: tune.ChangeCell) -> tuple[Text, Text]:
    """A change with its interval and adjusted p, and its verdict in the verdict's colour."""
    p = f" adj. p {c.p_text}" if c.p_text else ""
    return (Text(f"{c.text} {c.ci_text}{p}".strip()),
            Text(VERDICT_TEXT.get(c.verdict, c.verdict), style=COLORS.get(c.verdict, "")))


@contextmanager
def progress(plan) -> Iterator[Callable[[str, int, int], None]]:
    """A live line on stderr: round, variant, samples done, ETA (rich, when stderr is a terminal)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    total = (plan.warmup + plan.max_runs) * len(plan.variant_ids)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeRemainingColumn(), transient=True, disable=not sys.stderr.isatty(),
                  console=console()) as bar:
        task = bar.add_task("measuring", total=total)

        def tick(vid: str, rnd: int, pos: int) -> None:
            what = f"warmup {-rnd}" if rnd < 0 else f"round {rnd + 1}"
            # The live line is drawn after the console's hooks: its one piece of data, the
            # variant's id, is shown here, before the bar is laid out around it.
            bar.update(task, advance=1, description=shown(f"{what} {vid}"))

        yield tick
