#!/usr/bin/env python3
"""The STABILIZER question on a sweep with --layouts: would one build a variant have said the
same?

For each results.json of `flagsweep run TARGET ... --layouts K`, prints every variant's verdict
over its K layouts (what the sweep reports) beside the verdicts a sweep of one build a variant
would have given: layout j of every variant alone, paired by round with layout j of the
baseline (stats.compare and stats.adjust, as a sweep without --layouts), for each j. A verdict
that changes with j is layout luck; the two-level verdict is the one that accounts for it.

Usage: .venv/bin/python bench/layout_study.py RESULTS.json [RESULTS.json ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from flagsweep import stats
from flagsweep.report.variants import metric_values
from flagsweep.results import reader


def by_layout(v: dict, metric: str) -> dict[int, dict[int, float]]:
    """seed -> {round: value} of one variant's samples."""
    s = v.get("samples") or {}
    out: dict[int, dict[int, float]] = {}
    for seed, rnd, x in zip(s.get("layout", []), s.get("round", []), metric_values(s, metric)):
        if x is not None and x > 0:
            out.setdefault(seed, {})[rnd] = x
    return out


def single_build_verdicts(doc: dict) -> dict[str, list[str]]:
    """variant -> the verdict of a one-build sweep made of layout j of every variant, per j."""
    metric = doc["metric"]
    variants = [v for v in doc["variants"] if (v.get("samples") or {}).get("layout")]
    base = next(v for v in variants if v["id"] == doc["baseline"])
    k = doc["measurement"]["layouts"]["k"]
    out: dict[str, list[str]] = {v["id"]: [] for v in variants if v is not base}
    base_layouts = sorted(by_layout(base, metric))
    for j in range(k):
        comparisons = {}
        for v in variants:
            if v is base:
                continue
            mine = sorted(by_layout(v, metric))
            if j < len(mine) and j < len(base_layouts):
                comparisons[v["id"]] = stats.compare(by_layout(v, metric)[mine[j]],
                                                     by_layout(base, metric)[base_layouts[j]],
                                                     seed=j)
        stats.adjust(list(comparisons.values()), threshold_pct=doc["threshold_pct"])
        for vid, c in comparisons.items():
            out[vid].append(f"{c.verdict} {100 * (c.ratio - 1):+.1f}%")
    return out


def main(paths: list[str]) -> None:
    for path in paths:
        doc = reader.load(Path(path))
        k = doc["measurement"]["layouts"]["k"]
        twin = {v["id"]: v for v in doc["variants"]}.get(doc["baseline"] + ".aa") or {}
        alone = (twin.get("vs_baseline") or {}).get("layout_sd_pct")
        print(f"## {doc['target']}: {doc['recipe']}, {k} layouts, metric {doc['metric']}, "
              f"{doc['stop_reason']}")
        print(f"layout alone (the A/A twin's layouts against the baseline's): "
              f"+-{alone:.2f}%" if alone is not None else "layout alone: not measured")
        single = single_build_verdicts(doc)
        print("\n| variant | over its layouts (95% CI) | layout spread | "
              + " | ".join(f"one build, layout {j + 1}" for j in range(k)) + " | changed |")
        print("|---|---|---|" + "---|" * k + "---|")
        for v in doc["variants"]:
            c = v.get("vs_baseline")
            if not c or v["id"] not in single:
                continue
            two = f"{c['verdict']} {stats.change_text(c['ratio'], c.get('ci95'))}" \
                if c.get("ratio") else c["verdict"]
            ones = single[v["id"]]
            changed = "yes" if len({x.split()[0] for x in ones} | {c["verdict"]}) > 1 else "no"
            spread = c.get("layout_sd_pct")
            name = " ".join([v["compiler"], *v["flags"]]) + (" (A/A twin)" if v.get("aa_of") else "")
            print(f"| {name} | {two} | "
                  f"{'' if spread is None else f'+-{spread:.2f}%'} | {' | '.join(ones)} | {changed} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1:] or sys.exit(__doc__))
