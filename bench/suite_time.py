#!/usr/bin/env python3
"""What the test suite's time goes to: seconds per test file and the slowest tests.

Reads a pytest JUnit XML report (`pytest --junitxml FILE`), or runs the suite to make one (the
README's command, on two workers) when given none. Each test's time is its setup, call and
teardown together (pytest's default for JUnit XML), so a session-scoped build lands on the
first test that asked for it. Prints the files by their summed seconds, most first, then the
slowest tests; with two workers the wall time is about half the sum.

Usage: python bench/suite_time.py [REPORT.xml] [--files N] [--tests N]
       python bench/suite_time.py            (runs `pytest -q -n 2 --dist worksteal` first)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cases(report: Path) -> list[tuple[str, str, float]]:
    """Each test case as (file, test name, seconds)."""
    found = []
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "")
        # classname is the dotted module, then the class if any: tests.jobs.test_sweep.TestX
        parts = module.split(".")
        while len(parts) > 1 and not parts[-1].startswith("test_"):
            parts.pop()
        found.append(("/".join(parts) + ".py", case.get("name", ""), float(case.get("time", 0))))
    return found


def table(report: Path, files: int, tests: int) -> str:
    rows = cases(report)
    per_file: dict[str, list[float]] = defaultdict(list)
    for file, _, seconds in rows:
        per_file[file].append(seconds)
    total = sum(s for _, _, s in rows)
    out = [f"{len(rows)} tests, {total:.0f} s summed over the workers", "",
           f"{'seconds':>8} {'share':>6} {'tests':>6}  file"]
    for file, times in sorted(per_file.items(), key=lambda kv: -sum(kv[1]))[:files]:
        out.append(f"{sum(times):8.1f} {sum(times) / total:6.1%} {len(times):6d}  {file}")
    out += ["", f"{'seconds':>8}  test"]
    for file, name, seconds in sorted(rows, key=lambda r: -r[2])[:tests]:
        out.append(f"{seconds:8.1f}  {file}::{name}")
    return "\n".join(out)


def run_suite(report: Path) -> None:
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "worksteal",
                    f"--junitxml={report}"], cwd=ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", nargs="?", type=Path, help="a pytest --junitxml file")
    parser.add_argument("--files", type=int, default=30, help="how many files to list")
    parser.add_argument("--tests", type=int, default=30, help="how many tests to list")
    args = parser.parse_args()
    if args.report is None:
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "suite.xml"
            run_suite(report)
            print(table(report, args.files, args.tests))
    else:
        print(table(args.report, args.files, args.tests))


if __name__ == "__main__":
    main()
