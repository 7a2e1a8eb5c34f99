"""`flagsweep history --check --junit FILE`: a case per series, read back with junitparser; a
case fails exactly when --check exits 1 on its series, and is skipped where --check cannot
check it (exit 3); the exit codes stay as they were; a FILE in no folder is refused. And
`--check --shadow`: the same judgement said, exit 0."""

from __future__ import annotations

import json

import junitparser
import numpy as np
import report_fixture as rf

from flagsweep.across import history
from flagsweep.report import junit

STEADY = [1.0, 1.01, 0.99, 1.0, 1.01, 1.0]
STEP = [1.0, 1.01, 0.99, 1.0, 1.01, 1.15]


def _series(variant: str, medians: list[float], reference: str | None, nights: int | None = None,
            unjudged: str = "") -> history.VariantSeries:
    """Nights r0, r1, ... of `variant` (the first `nights` of them), detected as collect does;
    `unjudged`: the newest night is unjudged, for this reason."""
    rng = np.random.default_rng(5)
    s = history.VariantSeries(variant, ["-O2"], "Test CPU", reference=reference, metric="wall_s")
    for i, m in enumerate(medians[:nights]):
        x = list(m * np.exp(rng.normal(0, 0.003, 10)))
        p = history.Point(f"r{i}", float(i), x, float(np.median(x)), None, {"target": "1.0"})
        last = i == len(medians[:nights]) - 1
        (s.unjudged if last and unjudged else s.points).append(p)
        p.unjudged = unjudged if last else ""
    history._detect([s], threshold_pct=1.0)
    return s


def _by_name(xml: bytes) -> dict[str, junitparser.TestCase]:
    (suite,) = list(junitparser.JUnitXml.fromstring(xml.decode()))
    return {case.name.split(" ", 1)[0]: case for case in suite}


def test_a_case_per_series_judged_as_check_judges_it():
    ref = "ab" * 32
    all_series = [_series("regressed", STEP, ref), _series("unconfirmed", STEP, None),
                  _series("steady", STEADY, ref), _series("unreferenced", STEADY, None),
                  _series("gone", STEADY, ref, nights=4),
                  _series("shaky", STEADY, ref, unjudged="the A/A arm came out slower")]
    cases = _by_name(junit.of_history("tiny", all_series, 1.0))
    outcome = {name: ("failure" if c.is_failure else "skipped" if c.is_skipped else "passed")
               for name, c in cases.items()}
    assert outcome == {"regressed": "failure", "unconfirmed": "skipped", "steady": "passed",
                       "unreferenced": "skipped", "gone": "skipped", "shaky": "skipped"}
    # the same series --check fails on (exit 1) and cannot check (exit 3)
    open_ = {s.variant for s, _ in history.unchecked(all_series)}
    worse = {s.variant for s in history.regressions(all_series)} - open_
    assert worse == {n for n, o in outcome.items() if o == "failure"}
    assert open_ | {"gone"} == {n for n, o in outcome.items() if o == "skipped"}
    message = {n: c.result[0].message for n, c in cases.items() if c.result}
    assert message["regressed"].startswith("regression: +1") and "in r5" in message["regressed"]
    assert "no reference arm" in message["unreferenced"]
    assert message["unconfirmed"].startswith("slower, unconfirmed (no reference arm): +1")
    assert message["gone"] == "not measured in r5; last in r3"
    assert message["shaky"] == "the A/A arm came out slower"
    assert "/ ref abababab on Test CPU" in cases["regressed"].name
    assert {c.classname for c in cases.values()} == {"flagsweep.tiny"}


def test_hostile_series_names_are_escaped():
    evil = f"gcc-O3{rf.TITLE}{rf.CLEAR}<&\"'"
    xml = junit.of_history(f"tiny{rf.EVIL}", [_series(evil, STEADY, "ab" * 32)])
    assert b"\x1b" not in xml and b"\x07" not in xml
    (suite,) = list(junitparser.JUnitXml.fromstring(xml.decode()))
    (case,) = list(suite)
    assert case.name.startswith("gcc-O3\\x1b]0;owned\\x07\\x1b[2J<&\"'")
    assert case.classname == f"flagsweep.tiny{rf.EVIL}"


def _nights(tmp_path, monkeypatch):
    """Two complete nights of tiny without a reference arm, recorded as a sweep records them."""
    from flagsweep.results.store import Store

    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    rf.two_nights(store, tmp_path)
    store.engine.dispose()
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'store.sqlite'}")


def test_history_check_junit_writes_the_file_and_keeps_its_exit_code(tmp_path, monkeypatch, main):
    _nights(tmp_path, monkeypatch)
    code, err = main("history", "tiny", "--check", "--junit", str(tmp_path / "history.xml"))
    assert code == 3, err                      # no reference arm: cannot check, as before
    suites = list(junitparser.JUnitXml.fromfile(str(tmp_path / "history.xml")))
    (suite,) = suites
    cases = list(suite)
    assert sorted(c.name.split(" ", 1)[0] for c in cases) == ["gcc-O2", "gcc-O3"]
    assert all(c.is_skipped and "no reference arm" in c.result[0].message for c in cases)
    props = {p.name: p.value for p in suite.properties()}
    assert props["newest_run"] == "tiny-night-2" and props["target"] == "tiny"
    code, err = main("history", "tiny", "--check")
    assert code == 3, err


def test_a_junit_file_in_no_folder_is_refused_before_anything(tmp_path, monkeypatch, main):
    _nights(tmp_path, monkeypatch)
    missing = tmp_path / "no-such-folder" / "history.xml"
    code, err = main("history", "tiny", "--check", "--junit", str(missing))
    assert code == 2
    assert f"--junit {missing}: its folder {missing.parent} does not exist" in err
    assert not missing.parent.exists()


def test_shadow_names_what_check_would_fail_and_exits_0(tmp_path, monkeypatch, main):
    """--check --shadow: the judgement --check makes, said, and exit 0; with --junit the cases
    keep their outcomes (a shadow gate's report shows what the real one would)."""
    from flagsweep.across import history as across

    _nights(tmp_path, monkeypatch)
    ref = "ab" * 32
    all_series = [_series("regressed", STEP, ref), _series("steady", STEADY, ref),
                  _series("unreferenced", STEADY, None)]
    monkeypatch.setattr(across, "collect", lambda *args, **kwargs: all_series)
    code, err = main("history", "tiny", "--check")
    assert code == 1, err
    xml = tmp_path / "shadow.xml"
    code, err = main("history", "tiny", "--check", "--shadow", "--junit", str(xml))
    assert code == 0, err
    shadow = [line for line in err.splitlines() if line.startswith("shadow:")]
    assert shadow[0].startswith("shadow: would have failed: regressed / ref abababab +1")
    assert shadow[0].endswith("in r5")
    assert len(shadow) == 2, shadow
    assert shadow[1].startswith("shadow: could not have checked (exit 3): unreferenced: "
                                "no reference arm")
    cases = _by_name(xml.read_bytes())
    assert cases["regressed"].is_failure and cases["unreferenced"].is_skipped
    assert not cases["steady"].result


def test_shadow_exits_0_where_check_cannot_check_and_says_so(tmp_path, monkeypatch, main):
    _nights(tmp_path, monkeypatch)
    code, err = main("history", "tiny", "--check", "--shadow")
    assert code == 0, err
    assert "shadow: could not have checked (exit 3): gcc-O3: no reference arm" in err
    assert "shadow: would have failed" not in err
    code, err = main("history", "tiny", "--check", "--shadow", "--json")
    assert code == 0 and json.loads(main.out)          # the shadow lines leave stdout JSON


def test_shadow_without_check_is_a_usage_error(tmp_path, monkeypatch, main):
    _nights(tmp_path, monkeypatch)
    code, err = main("history", "tiny", "--shadow")
    assert code == 2 and "--shadow" in err and "--check" in err
