"""Tests for flagsweep.caches: the one layout every cache folder follows."""

from __future__ import annotations

import os

import pytest

from flagsweep import caches
from flagsweep.errors import ConfigError


def _publish(cache: caches.Cache, root, name: str, data: bytes, folder: bool = False):
    with cache.draft(root, folder=folder) as draft:
        if folder:
            (draft / "data").write_bytes(data)
        else:
            draft.write_bytes(data)
        return cache.publish(draft, cache.entry(name, root), root)


def test_past_its_limit_a_cache_drops_the_least_recently_used(tmp_path, monkeypatch):
    cache = caches.Cache("things", "things", default_mb=250e-6)
    first = _publish(cache, tmp_path, "first", b"1" * 100)
    second = _publish(cache, tmp_path, "second", b"2" * 100, folder=True)
    os.utime(first, (1, 1))
    assert cache.usable(first)           # used now: second is the least recently used
    _publish(cache, tmp_path, "third", b"3" * 100)
    assert first.exists() and not second.exists() and cache.usage(tmp_path) == (2, 200)
    assert [p.name for p in cache.folder(tmp_path).iterdir() if p.name.startswith(".")] == []
    monkeypatch.setenv("FLAGSWEEP_THINGS_CACHE_MB", "1")
    assert cache.limit_mb() == 1
    monkeypatch.setenv("FLAGSWEEP_THINGS_CACHE_MB", "lots")
    with pytest.raises(ConfigError, match="FLAGSWEEP_THINGS_CACHE_MB='lots'"):
        cache.limit_mb()


def test_an_entry_is_whole_the_first_of_two_stays_and_a_damaged_one_goes(tmp_path):
    cache = caches.Cache("things", "things")
    kept = _publish(cache, tmp_path, "key", b"theirs", folder=True)
    assert _publish(cache, tmp_path, "key", b"ours", folder=True) == kept
    assert (kept / "data").read_bytes() == b"theirs" and cache.usage(tmp_path)[0] == 1
    assert not cache.usable(kept, lambda entry: False) and not kept.exists()
    with pytest.raises(ConfigError):
        cache.entry("../elsewhere", tmp_path)
    assert cache.clear(tmp_path) == 0 and not cache.folder(tmp_path).exists()
