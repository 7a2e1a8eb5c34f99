"""What a campaign cost per package, stage by stage, and what 100 or 2,000 packages would take.

    .venv/bin/python bench/campaign_cost.py OUT                  # a finished (or running) campaign
    .venv/bin/python bench/campaign_cost.py OUT --workers 1 8 32 --packages 100 2000

Read from OUT/campaign.json (each package's wall time generating, `new`, and sweeping) and each
swept package's results.json: measuring is from its run's start (after the builds) to its end,
building the rest of the sweep, and of that the package's own tests (the seconds each distinct
build's suite took; builds run side by side, so this is their sum, not wall time). Printed: a line per package, the median,
mean and total of each stage, then the projection: packages x the mean package's time / workers
(one package a worker, as `campaign --scheduler` places them), and the same with the slowest
tenth's mean, since a campaign's end waits for its slowest packages. The statistics are of the
packages swept in one go (a sweep resumed in a later run spans the pause); failures are summed
apart (they end early). Nothing is measured here: the figures are the campaign's own.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep import model  # noqa: E402


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def costs(out: Path) -> list[dict]:
    doc = model.Campaign.model_validate(json.loads((out / "campaign.json").read_text()))
    rows = []
    for p in doc.packages:
        row = {"name": p.name, "status": p.status, "generate": p.generate_seconds or 0.0,
               "sweep": p.sweep_seconds or 0.0, "build": 0.0, "tests": 0.0}
        if p.results and (out / p.results).is_file():
            results = json.loads((out / p.results).read_text())
            row["measure"] = _seconds(results["finished"]) - _seconds(results["started"])
            row["build"] = max(row["sweep"] - row["measure"], 0.0)
            logs = {}
            for v in results["variants"]:
                t = (v.get("build") or {}).get("package_tests") or {}
                if t.get("seconds"):
                    logs[t.get("log")] = t["seconds"]
            row["tests"] = sum(logs.values())
        else:
            row["measure"] = 0.0
        row["total"] = row["generate"] + row["sweep"]
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--packages", type=int, nargs="+", default=[100, 2000])
    a = ap.parse_args()
    rows = costs(a.out)
    # build: the sweep's building wall time, its own tests included; tests: their sum
    stages = ("generate", "build", "tests", "measure", "total")
    print(f"{'package':14} {'status':9} " + " ".join(f"{s:>9}" for s in stages))
    for r in rows:
        print(f"{r['name']:14} {r['status']:9} " + " ".join(f"{r[s]:9.0f}" for s in stages))
    # the cost of a measured package: a sweep resumed in a later run of the campaign spans the
    # pause between (its run's start is the first attempt's), so it is shown, not counted
    done = [r for r in rows if r["status"] == "swept" and r["measure"] <= r["sweep"]]
    resumed = [r["name"] for r in rows if r["status"] == "swept" and r["measure"] > r["sweep"]]
    failed = [r for r in rows if r["status"] == "failed"]
    if resumed:
        print(f"not counted (resumed in a later run, their times span the pause): "
              f"{', '.join(resumed)}")
    if failed:
        print(f"{len(failed)} failed: {sum(r['total'] for r in failed) / 60:.1f} min in all, "
              f"the longest {max(r['total'] for r in failed):.0f} s")
    if not done:
        print("no package finished yet")
        return
    for what, f in (("median", statistics.median), ("mean", statistics.fmean), ("total", sum)):
        print(f"{what:24} " + " ".join(f"{f([r[s] for r in done]):9.0f}" for s in stages))
    mean = statistics.fmean(r["total"] for r in done)
    slow = sorted((r["total"] for r in done), reverse=True)[:max(1, len(done) // 10)]
    print(f"\n{len(done)} packages swept in one go; "
          f"a package {mean / 60:.1f} min on the mean, the slowest tenth "
          f"{statistics.fmean(slow) / 60:.1f} min")
    for n in a.packages:
        for w in a.workers:
            hours = n * mean / w / 3600
            print(f"{n:5} packages on {w:3} workers: {hours:7.1f} h "
                  f"(the last packages the slowest tenth: +{statistics.fmean(slow) / 3600:.2f} h)")


if __name__ == "__main__":
    main()
