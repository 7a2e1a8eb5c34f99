"""Shared fixtures: the suite never touches (or depends on) the user's ~/.cache/flagsweep,
ccache, store or measurement lock, and never needs the network."""

from __future__ import annotations

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
