"""A bench script runs with bench/ first on sys.path, so a script named like a standard module
(statistics.py did) is what every `import statistics` in flagsweep then gets."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_no_bench_script_takes_a_standard_modules_name():
    names = {p.stem for p in BENCH.glob("*.py")}
    assert names and not names & sys.stdlib_module_names
