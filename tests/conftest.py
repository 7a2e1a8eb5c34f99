"""Shared fixtures: the suite never touches (or depends on) the user's ~/.cache/flagsweep,
ccache, store or measurement lock, and never needs the network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("flagsweep-cache")


@pytest.fixture(autouse=True)
def isolated_cache(session_cache: Path, monkeypatch) -> Path:
    """One cache for the whole session (so ccache hits across tests are possible), never the user's."""
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(session_cache))
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{session_cache / 'store.sqlite'}")
    monkeypatch.setenv("FLAGSWEEP_LOCK", str(session_cache / "measure.lock"))
    monkeypatch.delenv("CCACHE_DIR", raising=False)
    return session_cache


@pytest.fixture
def fixture_target():
    from flagsweep import target

    return lambda name: target.load(str(FIXTURES / name))


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session (starting it costs more than any page load).
    CI installs it through setup.sh, so there its absence is a failure, not a skip."""
    from browser import Browser, chromium_path

    executable = chromium_path()
    if executable is None:
        reason = "chromium is not installed (setup.sh installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI runs setup.sh, so it must be there", pytrace=False)
        pytest.skip(reason)
    with Browser(executable) as b:
        yield b
