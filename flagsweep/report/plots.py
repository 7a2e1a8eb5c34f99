"""The report's plots: matplotlib figures saved as SVG text, to be inlined in the page.

Each function takes the view model (or its raw results) and returns one `<svg>` element as a
string, or "" when there is nothing to draw. Figures are built with matplotlib's object API
(no pyplot state), text stays text (`svg.fonttype = none`, so it is selectable and small), and
ids are salted per plot so several SVGs in one page never share an id.
"""

from __future__ import annotations

import functools
import io
import os
import re
from dataclasses import dataclass

from flagsweep import files

# matplotlib keeps its font cache and settings in ~/.cache and ~/.config unless told otherwise:
# in flagsweep's cache instead, which FLAGSWEEP_CACHE moves (a read-only or missing HOME).
os.environ.setdefault("MPLCONFIGDIR", str(files.cache_dir() / "matplotlib"))

import matplotlib  # noqa: E402 - after MPLCONFIGDIR, which it reads on import
import numpy as np
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from flagsweep.report.formats import BASELINE_COLOR, COLORS
from flagsweep.report.tune import TuneView
from flagsweep.report.variants import VariantRow, metric_values
from flagsweep.report.view import SweepView

WIDTH = 10                            # inches; the page scales the SVG to its column
LABEL_CHARS = 48
# boxplot's vert=False became orientation= in matplotlib 3.10 (and vert is going away).
HORIZONTAL = ({"orientation": "horizontal"}
              if tuple(int(x) for x in matplotlib.__version__.split(".")[:2]) >= (3, 10)
              else {"vert": False})
STYLE = {
    "svg.fonttype": "none",           # <text>, not paths
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _styled(name: str):
    """Draw under the report's style: rcParams are read as artists are made, not at save."""
    def wrap(draw):
        @functools.wraps(draw)
        def inner(report: SweepView) -> str:
            with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"flagsweep-{name}"}):
                fig = draw(report)
                return _svg(fig, name) if fig is not None else ""
        return inner
    return wrap


@_styled("forest")
def forest(report: SweepView) -> Figure | None:
    """Effect of each factor level in % with the interval the table decided on (its adjusted
    one where the estimate is beyond the threshold), a line at 0 and the +-threshold band."""
    rows = [e for e in report.effects if e.ci is not None]
    if not rows:
        return None
    fig = Figure(figsize=(WIDTH, 0.8 + 0.32 * len(rows)))
    ax = fig.subplots()
    y = np.arange(len(rows))[::-1]
    thr = report.threshold_pct
    ax.axvspan(-thr, thr, color="#d0d7de", alpha=0.6, lw=0, label=f"+-{thr:g}% threshold")
    ax.axvline(0, color="#24292f", lw=0.8)
    for yi, e in zip(y, rows):
        side = "slower" if e.effect_pct > 0 else "faster"
        # a call layout luck could give is drawn in its muted colour, hollow: not settled
        color = COLORS[side if e.settled else side + "-luck"] if e.matters \
            else COLORS["equivalent"]
        ax.plot(e.ci, [yi, yi], color=color, lw=2, solid_capstyle="butt")
        ax.plot([e.effect_pct], [yi], "o", color=color, ms=6,
                markerfacecolor=color if e.settled else "white")
    ax.set_yticks(y, [_label(e.name) for e in rows])
    _scale_for(ax, [x for e in rows for x in e.ci] + [-thr, thr], thr)
    ax.set_xlabel(f"effect on {report.metric}, % (negative is faster); filled: matters")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1), frameon=False, fontsize=8)
    return fig


@_styled("layouts")
def layouts(report: SweepView) -> Figure | None:
    """run --layouts: each layout's median as a dot, % from the baseline's layouts' mean, and
    the variant's change over its layouts with its 95% CI as a bar: the layout spread against
    the effect."""
    panel = report.layouts
    if panel is None or not panel.rows:
        return None
    rows = panel.rows
    fig = Figure(figsize=(WIDTH, 0.9 + 0.34 * len(rows)))
    ax = fig.subplots()
    thr = report.threshold_pct
    ax.axvspan(-thr, thr, color="#d0d7de", alpha=0.6, lw=0, label=f"+-{thr:g}% threshold")
    ax.axvline(0, color=BASELINE_COLOR, lw=0.8)
    for i, row in enumerate(rows):
        y = len(rows) - 1 - i
        color = COLORS.get(row.verdict, "#24292f")
        if row.ci is not None:
            ax.plot(row.ci, [y - 0.18, y - 0.18], color=color, lw=2, solid_capstyle="butt")
        if row.change_pct is not None:
            ax.plot([row.change_pct], [y - 0.18], "o", color=color, ms=5)
        ax.scatter(row.levels, [y + 0.12] * len(row.levels), s=22, color="#24292f",
                   alpha=0.75, lw=0, zorder=3)
    ax.set_yticks(range(len(rows))[::-1], [_label(r.label) for r in rows])
    spots = [x for r in rows for x in r.levels] + [x for r in rows if r.ci for x in r.ci]
    _scale_for(ax, spots + [-thr, thr], thr)
    ax.set_xlabel(f"% from the baseline's layouts ({report.metric}); dots: one layout each, "
                  "bar: the variant over its layouts, 95% CI")
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1), frameon=False, fontsize=8)
    return fig


@_styled("distributions")
def distributions(report: SweepView) -> Figure | None:
    """Every counted sample of the primary metric per variant, a box for the quartiles, the
    outliers (modified z-score, as in the summary) marked with a red cross."""
    series = _series(report)
    if not series:
        return None
    base = _baseline_median(series)
    fig = Figure(figsize=(WIDTH, 0.9 + 0.3 * len(series)))
    ax = fig.subplots()
    rng = np.random.default_rng(0)    # fixed jitter: the same results give the same picture
    for i, s in enumerate(series):
        y = len(series) - 1 - i
        values = [(v / base - 1) * 100 for v in s.values]
        ax.boxplot([values], positions=[y], **HORIZONTAL, widths=0.55, showfliers=False,
                   medianprops={"color": COLORS.get(s.row.shown, "#24292f"), "lw": 2},
                   boxprops={"color": "#8c959f"}, whiskerprops={"color": "#8c959f"},
                   capprops={"color": "#8c959f"})
        jitter = rng.uniform(-0.18, 0.18, len(values))
        ax.scatter(values, y + jitter, s=9, color="#24292f", alpha=0.6, lw=0, zorder=3)
        if s.outliers:
            ax.scatter([values[j] for j in s.outliers], [y + jitter[j] for j in s.outliers],
                       s=30, marker="x", color=COLORS["slower"], zorder=4)
    ax.axvline(0, color=BASELINE_COLOR, lw=0.8)
    ax.set_yticks(range(len(series))[::-1], [_label(s.row.label) for s in series])
    _scale_for(ax, [(v / base - 1) * 100 for s in series for v in s.values], report.threshold_pct)
    ax.set_xlabel(f"% from the baseline's median {report.metric} ({base:.4g} {report.unit}); "
                  "x: outlier")
    return fig


@_styled("run-order")
def run_order(report: SweepView) -> Figure | None:
    """Each sample relative to its variant's median, against when it was taken, with a LOWESS
    trend through all of them (Cleveland, JASA 74(368), 1979): drift over the sweep shows as a
    slope, a disturbed stretch as a cluster."""
    series = _series(report)
    if not series:
        return None
    fig = Figure(figsize=(WIDTH, 2.8))
    ax = fig.subplots()
    xs, ys = [], []
    timed = all(s.elapsed is not None for s in series)
    for s in series:
        row, med = s.row, float(np.median(s.values))
        x = s.elapsed if timed else s.rounds
        y = [(v / med - 1) * 100 for v in s.values]
        highlight = row.role in ("baseline", "twin")
        ax.scatter(x, y, s=12 if highlight else 7, lw=0, alpha=0.9 if highlight else 0.45,
                   color=BASELINE_COLOR if highlight else "#6e7781",
                   label="baseline and its A/A copy" if row.role == "baseline" else None)
        xs += list(x)
        ys += y
    if len(xs) >= 10:
        from statsmodels.nonparametric.smoothers_lowess import lowess
        trend = lowess(ys, xs, frac=0.4, return_sorted=True)
        ax.plot(trend[:, 0], trend[:, 1], color="#24292f", lw=1.5, label="trend (LOWESS)")
    ax.axhline(0, color="#8c959f", lw=0.6)
    ax.set_xlabel("seconds since the sweep started" if timed else "round")
    ax.set_ylabel("% from the variant's median")
    ax.legend(loc="upper right", frameon=False, fontsize=8)
    return fig


@dataclass
class SampleSeries:
    """One variant's counted samples of the primary metric, as the plots draw them."""
    row: VariantRow
    values: list[float]
    outliers: list[int]              # indices into values
    rounds: list[int]
    elapsed: list[float] | None      # seconds since the sweep started (older results: None)


@_styled("history")
def history(report: SweepView) -> Figure | None:
    """Each variant's median (with its 95% CI) in every sweep of this target on this machine,
    relative to its first sweep; detected steps ringed (red: slower, green: faster)."""
    series = report.results.history or []
    if not series:
        return None
    order = [r for _, r in sorted({(p.started, p.run_id) for s in series for p in s.points})]
    fig = Figure(figsize=(WIDTH, 3.2))
    ax = fig.subplots()
    for s in series:
        first = s.points[0].median
        pct = lambda v: (v / first - 1) * 100  # noqa: E731
        x = [order.index(p.run_id) for p in s.points]
        y = [pct(p.median) for p in s.points]
        ci = [p.ci95 or [p.median, p.median] for p in s.points]
        ax.errorbar(x, y, yerr=[[y_ - pct(c[0]) for y_, c in zip(y, ci)],
                                [pct(c[1]) - y_ for y_, c in zip(y, ci)]],
                    marker="o", ms=4, lw=1, capsize=2, label=_label(" ".join(s.flags) or s.variant))
        for step in s.steps:
            i = [p.run_id for p in s.points].index(step.run_id)
            ax.plot([x[i]], [y[i]], "o", ms=11, mfc="none", mew=1.5,
                    color=COLORS["slower" if step.verdict == "slower" else "faster"])
    ax.axhline(0, color="#8c959f", lw=0.6)
    ax.set_xticks(range(len(order)), [_label(r) for r in order], rotation=20, ha="right")
    ax.set_ylabel("% from the first sweep's median")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+g}%" if v else "0"))
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1), frameon=False, fontsize=8)
    return fig


# The best-so-far curve's three x axes: what a tune spends.
SPENT = (("builds", "builds"), ("runs", "runs"), ("elapsed_s", "wall time, min"))


@_styled("best-so-far")
def best_so_far(tune: TuneView) -> Figure | None:
    """A tune's best set after each batch, its change against the base with its 95% CI as a
    band, and every measured candidate as a dot, against builds, runs and wall time."""
    if not tune.curve and not tune.dots:
        return None
    fig = Figure(figsize=(WIDTH, 2.8))
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (key, label) in zip(axes, SPENT):
        _spent(ax, tune, key)
        ax.set_xlabel(label)
    axes[0].set_ylabel("% from the base (negative is faster)")
    axes[0].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:+g}%" if v else "0"))
    axes[0].legend(loc="lower left", bbox_to_anchor=(0, 1), frameon=False, fontsize=8, ncol=3)
    return fig


def _spent(ax, tune: TuneView, key: str) -> None:
    """One panel: the curve as steps (the best holds until a batch beats it), the dots."""
    scale = 60.0 if key == "elapsed_s" else 1.0
    at = lambda p: getattr(p, key) / scale  # noqa: E731
    curve = [p for p in tune.curve if getattr(p, key) is not None]
    dots = [p for p in tune.dots if getattr(p, key) is not None]
    ax.axhline(0, color="#8c959f", lw=0.6)
    ax.scatter([at(p) for p in dots], [p.change_pct for p in dots], s=12, lw=0, alpha=0.6,
               color="#6e7781", label="a measured candidate", zorder=2)
    banded = [p for p in curve if p.ci_pct is not None]
    if banded:
        ax.fill_between([at(p) for p in banded], [p.ci_pct[0] for p in banded],
                        [p.ci_pct[1] for p in banded], step="post", lw=0, alpha=0.25,
                        color=BASELINE_COLOR, label="its 95% CI")
    if curve:
        ax.plot([at(p) for p in curve], [p.change_pct for p in curve], drawstyle="steps-post",
                marker="o", ms=3, color=BASELINE_COLOR, lw=1.5, label="best so far",
                zorder=3)
    ax.margins(x=0.05, y=0.1)


def explained(report: SweepView) -> dict[str, str]:
    """run --explain: one diverging bar chart per explained variant, variant id -> SVG."""
    if not report.explained:
        return {}
    return {v.id: _diverging(v, report.explained.unit) for v in report.explained.variants
            if v.status == "ok" and v.rows and v.baseline_total}


def _diverging(v, unit: str) -> str:
    """Each top function's change as a share of the baseline's whole cost, so the bars add up
    to the program's change; bars right of 0 cost more (red), left cost less (green)."""
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": f"flagsweep-explain-{v.id}"}):
        rows = v.rows
        fig = Figure(figsize=(WIDTH, 0.9 + 0.3 * len(rows)))
        ax = fig.subplots()
        y = np.arange(len(rows))[::-1]
        pct = [100.0 * r.change / v.baseline_total for r in rows]
        colors = [COLORS["slower"] if x > 0 else COLORS["faster"] for x in pct]
        ax.barh(y, pct, color=colors, height=0.6)
        ax.axvline(0, color="#24292f", lw=0.8)
        for yi, x, r in zip(y, pct, rows):
            ax.annotate(f" {r.share_text} ", (x, yi), va="center", fontsize=8,
                        ha="left" if x >= 0 else "right", color="#57606a")
        ax.set_yticks(y, [_label(r.function) for r in rows])
        span = max(abs(x) for x in pct) or 1.0
        ax.set_xlim(-1.25 * span, 1.25 * span)
        ax.set_xlabel(f"change in {unit}, % of the baseline's total (labels: share of the "
                      "change, function by function)")
        return _svg(fig, f"explain {v.id} diverging")


def _series(report: SweepView) -> list[SampleSeries]:
    """The counted samples of the primary metric for each measured variant, in table order."""
    by_id = {v.id: v for v in report.results.variants}
    out = []
    for row in report.variants:
        v = by_id[row.id]
        samples = v.samples or {}
        values = metric_values(samples, report.metric)
        keep = [i for i, x in enumerate(values) if x is not None and x > 0]
        if not keep:
            continue
        flagged = set(v.summary.outlier_rounds or [])
        rounds = samples.get("round") or [None] * len(values)
        elapsed = samples.get("elapsed_s")
        timed = bool(elapsed) and len(elapsed) == len(values)
        out.append(SampleSeries(row, [values[i] for i in keep],
                          [j for j, i in enumerate(keep) if rounds[i] in flagged],
                          [rounds[i] for i in keep], [elapsed[i] for i in keep] if timed else None))
    return out


def _scale_for(ax, values: list[float], thr: float) -> None:
    """Linear when effects are small; symmetric-log past 10% so a -O0 at +200% does not hide
    the +-1% band the other rows sit in. Ticks as plain signed percentages."""
    if max(abs(x) for x in values) > 25:
        ax.set_xscale("symlog", linthresh=max(10.0, 2 * thr))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:+g}%" if x else "0"))
    ax.margins(x=0.08)


def _baseline_median(series: list[SampleSeries]) -> float:
    """The reference the distributions are drawn against: the baseline's median, else the
    first measured variant's (a sweep whose baseline failed)."""
    base = next((s for s in series if s.row.role == "baseline"), series[0])
    return float(np.median(base.values))


def _label(text: str) -> str:
    """A tick label: short (the table has the whole name), and a '$' is not mathtext. Cut in
    the middle: flag sets often share a prefix and differ at the end ("... (A/A copy)")."""
    if len(text) > LABEL_CHARS:
        half = (LABEL_CHARS - 1) // 2
        text = text[:half] + "\u2026" + text[-half:]
    return text.replace("$", r"\$")


def _svg(fig: Figure, name: str) -> str:
    buf = io.StringIO()
    fig.tight_layout()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    svg = text[text.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)  # RDF boilerplate
    # An accessible name, and the class the page's CSS sizes by.
    return svg.replace("<svg ", f'<svg role="img" aria-label="{name} plot" class="plot" ', 1)


