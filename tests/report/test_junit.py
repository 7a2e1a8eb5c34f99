"""junit.xml of one sweep (report/junit.py), read back with junitparser as CI's readers read it:
a case per variant, failed only for a regression the nightly gate calls, the rest passed or
skipped with the reason; hostile names escaped; the attributes GitLab and Jenkins need."""

from __future__ import annotations

import json

import junitparser
import numpy as np
import pytest
import report_fixture as rf

from flagsweep import report
from flagsweep.across import history
from flagsweep.report import junit

# What each variant of report_fixture.PLAN is without earlier nights (the A/A twin is no case).
ALONE = {"gcc-O2": "skipped",                  # the baseline: nothing to judge it against
         "gcc-O3": "passed",                   # faster
         "gcc-O0": "passed",                   # slower than the baseline: a finding, no failure
         "gcc-O1": "passed",                   # no difference
         "gcc-Os": "skipped",                  # inconclusive
         "gcc-O3-mfpmath-sse": "skipped",      # the same code as gcc-O3, judged there
         "gcc-O2-fbroken": "skipped",          # its build failed
         "gcc-O2-fsneaky": "skipped"}          # its flags did not reach the compiler


def _cases(xml: bytes) -> dict[str, junitparser.TestCase]:
    """The cases by variant id (the name ends "[id]"), after junitparser read the XML."""
    (suite,) = list(junitparser.JUnitXml.fromstring(xml.decode()))
    return {case.name.rsplit(" [", 1)[1][:-1]: case for case in suite}


def _outcome(case: junitparser.TestCase) -> str:
    return "failure" if case.is_failure else "skipped" if case.is_skipped else "passed"


def _message(case: junitparser.TestCase) -> str:
    return case.result[0].message if case.result else (case.system_out or "")


def test_a_sweep_alone_passes_its_findings_and_skips_what_it_could_not_judge():
    doc = rf.model(rf.results_doc())
    cases = _cases(junit.of_sweep(doc))
    assert "gcc-O2.aa" not in cases and len(cases) == len(doc.variants) - 1
    assert {vid: _outcome(cases[vid]) for vid in ALONE} == ALONE
    assert not any(c.is_failure for c in cases.values())
    assert _message(cases["gcc-O0"]).startswith("slower than the baseline: +")
    assert "build failed: exit status 1" in _message(cases["gcc-O2-fbroken"])
    assert _message(cases["gcc-Os"]).startswith("inconclusive against the baseline")
    assert "same code as gcc-O3" in _message(cases["gcc-O3-mfpmath-sse"])
    assert cases["gcc-O3"].classname == f"flagsweep.{doc.target}"
    assert cases["gcc-O3"].time > 0                 # its counted runs' wall time


def _series(variant: str, medians: list[float], run_id: str, reference: str | None):
    """A series of `variant` ending with this sweep, judged by the history's own detection."""
    rng = np.random.default_rng(11)
    s = history.VariantSeries(variant, ["-O2"], "cpu", reference=reference, metric="wall_s")
    for i, m in enumerate(medians):
        x = list(m * np.exp(rng.normal(0, 0.003, 10)))
        rid = run_id if i == len(medians) - 1 else f"night-{i}"
        s.points.append(history.Point(rid, float(i), x, float(np.median(x)), None,
                                      {"target": "1.0" if i < len(medians) - 1 else "1.1"}))
    history._detect([s], threshold_pct=1.0)
    return s.document().dump()


def test_with_earlier_nights_only_a_regression_against_the_reference_fails():
    doc = rf.results_doc()
    steady, step = [1.0, 1.01, 0.99, 1.0, 1.01, 1.0], [1.0, 1.01, 0.99, 1.0, 1.01, 1.15]
    doc["history"] = [_series("gcc-O2", steady, rf.RUN_ID, "ab" * 32),
                      _series("gcc-O3", step, rf.RUN_ID, "ab" * 32),
                      _series("gcc-O1", step, rf.RUN_ID, None),
                      _series("gcc-O0", steady, rf.RUN_ID, None)]
    cases = _cases(junit.of_sweep(rf.model(doc)))
    assert _outcome(cases["gcc-O3"]) == "failure"
    failure = cases["gcc-O3"].result[0]
    assert failure.message.startswith("against earlier sweeps: regression: +1")   # as --check
    assert "[+" in failure.message and "(target 1.0 -> 1.1)" in failure.message
    assert "slower" in failure.message
    assert _outcome(cases["gcc-O2"]) == "passed"            # the baseline against its nights
    assert "against 5 earlier sweep(s)" in _message(cases["gcc-O2"])
    # without a reference arm the same step is not called, and a steady series cannot be
    # checked either: what `history --check` exits 3 on
    assert _outcome(cases["gcc-O1"]) == "skipped"
    assert "slower, unconfirmed (no reference arm): +1" in _message(cases["gcc-O1"])
    assert _outcome(cases["gcc-O0"]) == "skipped"
    assert "no reference arm" in _message(cases["gcc-O0"])
    # a variant without earlier nights is judged by the sweep alone
    assert _outcome(cases["gcc-Os"]) == "skipped" and _outcome(cases["gcc-O3-mfpmath-sse"]) == "skipped"
    (suite,) = list(junitparser.JUnitXml.fromstring(junit.of_sweep(rf.model(doc)).decode()))
    assert (suite.tests, suite.failures, suite.errors) == (len(cases), 1, 0)


def test_a_sweep_that_stopped_or_an_unstable_night_judges_nothing():
    busy = rf.results_doc()
    busy.update(status="busy", stop_reason="most runs stayed disturbed after their retakes")
    cases = _cases(junit.of_sweep(rf.model(busy)))
    assert {_outcome(c) for c in cases.values()} == {"skipped"}
    assert all("the sweep is busy, not complete: most runs stayed disturbed" in _message(c)
               for c in cases.values())
    shaky = rf.results_doc()
    shaky["aa"].update(unstable=True, warning="the A/A arm came out slower by 3.0%")
    cases = _cases(junit.of_sweep(rf.model(shaky)))
    assert _outcome(cases["gcc-O3"]) == "skipped"
    assert "unstable night" in _message(cases["gcc-O3"])
    assert "the A/A arm came out slower" in _message(cases["gcc-O3"])
    (suite,) = list(junitparser.JUnitXml.fromstring(junit.of_sweep(rf.model(busy)).decode()))
    props = {p.name: p.value for p in suite.properties()}
    assert props["status"] == "busy" and props["stop_reason"].startswith("most runs")


def test_hostile_names_are_escaped_and_control_characters_written_out():
    doc = rf.escaping_doc()
    hostile = ['-DQ="a&b"', "-DL=<x>", "-DS='s'", "-DC=\x00\x1b[2J\x7f\x9b\ufffe"]
    for v in doc["variants"]:
        if v["id"] == "gcc-O3":
            v["flags"] = hostile
    xml = junit.of_sweep(rf.model(doc))
    for raw in (b"\x00", b"\x1b", b"\x07", "\x9b".encode(), "\ufffe".encode()):
        assert raw not in xml
    cases = _cases(xml)                     # the parser takes it: well-formed XML 1.0
    name = cases["gcc-O3"].name
    assert '-DQ="a&b" -DL=<x> -DS=\'s\'' in name           # read back as it was written
    assert "\\x00\\x1b[2J\\x7f\\x9b\\ufffe" in name
    assert rf.EVIL in next(c.name for vid, c in cases.items() if vid.startswith("gcc-O2-evil"))
    (suite,) = list(junitparser.JUnitXml.fromstring(xml.decode()))
    assert "\\x1b]0;owned\\x07" in suite.name


def test_every_case_and_suite_has_the_attributes_ci_readers_need():
    """GitLab reads testcase name, classname, time and the child's message; Jenkins and the
    GitHub publishers also read the suite's counts and time."""
    import xml.etree.ElementTree as ET

    doc = rf.results_doc()
    doc["history"] = [_series("gcc-O3", [1.0, 1.01, 0.99, 1.0, 1.01, 1.15], rf.RUN_ID, "ab" * 32)]
    root = ET.fromstring(junit.of_sweep(rf.model(doc)))
    assert root.tag == "testsuites"
    for suite in root.iter("testsuite"):
        for key in ("name", "tests", "failures", "errors", "skipped", "time", "timestamp"):
            assert suite.get(key), key
        counted = {k: int(suite.get(k)) for k in ("tests", "failures", "skipped")}
        cases = suite.findall("testcase")
        assert counted == {"tests": len(cases),
                           "failures": sum(c.find("failure") is not None for c in cases),
                           "skipped": sum(c.find("skipped") is not None for c in cases)}
        for case in cases:
            assert case.get("name") and case.get("classname")
            float(case.get("time"))
            for child in [*case.findall("failure"), *case.findall("skipped")]:
                assert child.get("message")
    assert root.get("tests") == str(sum(int(s.get("tests")) for s in root.iter("testsuite")))


def test_the_report_writes_junit_xml_beside_the_summary(tmp_path):
    path = rf.write(tmp_path / "run", rf.results_doc())
    report.write(path)
    written = (tmp_path / "run" / "junit.xml").read_bytes()
    assert (tmp_path / "run" / "summary.md").exists()
    assert written == junit.of_sweep(rf.model(json.loads(path.read_text())))
    assert written.startswith(b"<?xml version='1.0' encoding='utf-8'?>")


@pytest.mark.parametrize("stamp,expected", [("2026-11-22T10:00:00+00:00", "2026-11-22T10:00:00"),
                                            ("2026-11-22T11:00:00+01:00", "2026-11-22T10:00:00"),
                                            ("not a time", ""), (None, "")])
def test_the_timestamp_is_utc_without_a_zone(stamp, expected):
    assert junit._timestamp(stamp) == expected
