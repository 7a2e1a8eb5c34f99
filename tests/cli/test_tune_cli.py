"""`flagsweep tune`'s options: the budget's units and the usage errors, said before anything runs."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from flagsweep.cli import cli
from flagsweep.cli.tuning import Duration


@pytest.mark.parametrize("text, seconds", [("1h", 3600), ("30m", 1800), ("90s", 90),
                                           ("1.5h", 5400), ("600", 600), (" 2m ", 120)])
def test_a_budget_reads_seconds_minutes_or_hours(text, seconds):
    assert Duration().convert(text, None, None) == seconds


@pytest.mark.parametrize("text, why", [("1d", "not a duration"), ("h", "not a duration"),
                                       ("-5m", "not a duration"), ("30", "under a minute")])
def test_a_budget_that_is_not_one_is_refused_with_what_was_expected(text, why):
    with pytest.raises(click.BadParameter, match=why):
        Duration().convert(text, None, None)


def test_tune_without_a_target_or_with_one_and_resume_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'store.db'}")
    runner = CliRunner()
    alone = runner.invoke(cli, ["tune"])
    assert alone.exit_code == 2 and "name a TARGET" in alone.output
    both = runner.invoke(cli, ["tune", "tiny", "--resume", "x"])
    assert both.exit_code == 2 and "--resume" in both.output
    unknown = runner.invoke(cli, ["tune", "--resume", "nothing-here"])
    assert unknown.exit_code != 0 and "no tune 'nothing-here'" in str(unknown.exception)


def test_no_starts_reaches_the_tunes_options_and_not_a_resume(tmp_path, monkeypatch):
    from flagsweep.tune import tune

    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'store.db'}")
    asked = []

    def started(t, opts, out, store, say, wait=False):
        asked.append(opts)
        raise SystemExit(0)

    monkeypatch.setattr(tune, "start", started)
    runner = CliRunner()
    for extra, starts in (([], True), (["--no-starts"], False)):
        runner.invoke(cli, ["tune", "tiny", "--out", str(tmp_path / "t"), *extra])
        assert asked.pop().starts is starts
    resumed = runner.invoke(cli, ["tune", "--resume", "x", "--no-starts"])
    assert resumed.exit_code == 2 and "--no-starts" in resumed.output


@pytest.mark.parametrize("command, given, named", [
    (["tune", "--resume", "x"], ["--budget", "2h", "--threshold", "2", "--out", "o", "-j", "3"],
     "(got --budget, --threshold, --jobs, --out)"),
    (["run", "--resume", "x"], ["tiny", "--flags", "-O2", "--out", "o", "--threshold", "2"],
     "(got TARGET, --flags, --out, --threshold)"),
])
def test_a_resume_names_the_options_it_refuses_as_they_are_typed(command, given, named,
                                                                tmp_path, monkeypatch):
    """The refusal named the parameters' own names: `--budget-s`, `--out-dir`,
    `--threshold-pct`, options nobody could type."""
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{tmp_path / 'store.db'}")
    refused = CliRunner().invoke(cli, command + given)
    assert refused.exit_code == 2 and named in refused.output


def test_a_refused_space_leaves_no_tune_folder(tmp_path, main):
    """What can refuse a tune's start (its space file here) is decided before its folder is
    made: a retry with the same --out is then not refused as a folder already used."""
    space = tmp_path / "space.toml"
    space.write_text('summary = "planted"\nswitches = ["-fplugin=x.so"]\n')
    out = tmp_path / "tune"
    code, err = main("tune", "tiny", "--space", str(space), "--out", str(out))
    assert code == 2 and "-fplugin" in err.splitlines()[-1]
    assert not out.exists()
