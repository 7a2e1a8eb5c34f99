"""bench/suite_time.py reads a pytest JUnit XML report: seconds summed per file, most first,
then the slowest tests, whether a test is a function or a method of a class."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "suite_time.py"
REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.jobs.test_sweep" name="test_a" time="3.5"/>
<testcase classname="tests.jobs.test_sweep" name="test_b[15]" time="1.0"/>
<testcase classname="tests.stats.test_stats.TestMeans" name="test_c" time="6.0"/>
<testcase classname="tests.test_wheel" name="test_d" time="0.5"/>
</testsuite></testsuites>
"""


def test_files_by_their_summed_seconds_then_the_slowest_tests(tmp_path):
    spec = importlib.util.spec_from_file_location("suite_time_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = tmp_path / "suite.xml"
    report.write_text(REPORT)
    lines = module.table(report, files=2, tests=1).splitlines()
    assert lines[0] == "4 tests, 11 s summed over the workers"
    files = [line.split()[-1] for line in lines[3:5]]
    assert files == ["tests/stats/test_stats.py", "tests/jobs/test_sweep.py"]
    assert "4.5" in lines[4] and "2" == lines[4].split()[2]
    assert lines[-1].split() == ["6.0", "tests/stats/test_stats.py::test_c"]
