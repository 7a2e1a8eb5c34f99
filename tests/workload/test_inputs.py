"""Tests for flagsweep.workload.inputs: deterministic generated inputs, the content-addressed cache, and
given input files. Sizes are small (a fraction of a second of audio, a megabyte of corpus)."""

from __future__ import annotations

import hashlib
import io
import json
import wave
import zlib
from pathlib import Path

import numpy as np
import pytest

from flagsweep.errors import ConfigError
from flagsweep.experiment import target
from flagsweep.workload import corpus, inputs, wav

# Any change to these means every cached input and every earlier sweep's input changes: bump
# inputs.GENERATOR_VERSION along with them.
WAV_HALF_SECOND_SEED_2003 = "78a0dbbdfa9f5be304e44cf97e8473cc470bb0ef02932102bc2d87e4ad6f8414"
CORPUS_200KB_SEED_1 = "36dbe0dff0294e8fc6aca18172624847a4f67388fa6c4954266d7181ea8e5e44"

TEMPLATE = """\
summary = "a test target"
version = "1.0"

[source]
urls = ["https://example.org/prog-1.0.tar.gz"]
sha256 = "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956"

[build]
system = "autotools"
binary = "prog"

[inputs]
{inputs}

[run]
argv = ["{{binary}}", "{{input}}"]

[check]
method = "exact"
"""
WAV = 'kind = "wav"\nseconds = 0.5\nquick_seconds = 0.25\nseed = 2003'
CORPUS = 'kind = "corpus"\nmegabytes = 0.2\nquick_megabytes = 0.05\nseed = 1'


def _target(tmp_path: Path, inputs_toml: str, name: str = "prog") -> target.Target:
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "target.toml").write_text(TEMPLATE.format(inputs=inputs_toml))
    return target.load(str(folder))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- pinned bytes ------------------------------------------------------------------------------

def test_generators_give_the_pinned_bytes():
    assert hashlib.sha256(wav.wav_bytes(22050, 2003)).hexdigest() == WAV_HALF_SECOND_SEED_2003
    assert hashlib.sha256(corpus.corpus_bytes(200_000, 1)).hexdigest() == CORPUS_200KB_SEED_1


@pytest.mark.parametrize("spec, pinned, ext", [(WAV, WAV_HALF_SECOND_SEED_2003, "wav"),
                                                (CORPUS, CORPUS_200KB_SEED_1, "bin")],
                         ids=["wav", "corpus"])
def test_prepare_is_deterministic_and_content_addressed(tmp_path, isolated_cache, spec, pinned,
                                                        ext):
    t = _target(tmp_path, spec)
    first = inputs.prepare(t)
    again = inputs.prepare(t)
    fresh = inputs.prepare(t, cache=tmp_path / "fresh-cache")
    assert first.sha256 == again.sha256 == fresh.sha256 == pinned
    assert first == again
    assert first.path == isolated_cache / "inputs" / f"{pinned}.{ext}"
    assert fresh.path == tmp_path / "fresh-cache" / "inputs" / f"{pinned}.{ext}"
    assert _sha256(first.path) == pinned and first.size_bytes == first.path.stat().st_size


def test_key_index_maps_the_generation_key_to_the_content(tmp_path):
    got = inputs.prepare(_target(tmp_path, WAV), quick=True, cache=tmp_path / "c")
    [index] = (tmp_path / "c" / "inputs" / "keys").glob("*.json")
    entry = json.loads(index.read_text())
    assert entry["sha256"] == got.sha256 and entry["file"] == got.path.name
    assert entry["key"] == {"generator": inputs.GENERATOR_VERSION, "kind": "wav",
                            "frames": 11025, "seed": 2003, "quick": True}


# --- the cache ---------------------------------------------------------------------------------

def test_cache_hit_does_not_regenerate(tmp_path, monkeypatch):
    t = _target(tmp_path, WAV)
    first = inputs.prepare(t)

    def fail(*args):
        raise AssertionError("regenerated an input that was cached")

    monkeypatch.setattr(wav, "wav_bytes", fail)
    assert inputs.prepare(t) == first


@pytest.mark.parametrize("damage", ["corrupt", "delete", "bad-index"])
def test_damaged_cache_is_regenerated(tmp_path, damage):
    t = _target(tmp_path, WAV)
    first = inputs.prepare(t)
    if damage == "corrupt":
        first.path.write_bytes(b"RIFF not what was generated")
    elif damage == "delete":
        first.path.unlink()
    else:
        for index in (first.path.parent / "keys").glob("*.json"):
            index.write_text("{not json")
    again = inputs.prepare(t)
    assert again == first
    assert _sha256(again.path) == first.sha256


def test_different_seed_gives_different_bytes(tmp_path):
    a = inputs.prepare(_target(tmp_path, CORPUS, "a"))
    b = inputs.prepare(_target(tmp_path, CORPUS.replace("seed = 1", "seed = 2"), "b"))
    assert a.sha256 != b.sha256 and a.size_bytes == b.size_bytes


@pytest.mark.parametrize("spec, full, quick, quick_bytes", [
    (WAV, "0.5 s", "0.25 s", 44 + 11025 * 4),
    (CORPUS, "0.2 MB", "0.05 MB", 50_000),              # MB means 10**6 bytes
], ids=["wav", "corpus"])
def test_quick_is_smaller(tmp_path, spec, full, quick, quick_bytes):
    t = _target(tmp_path, spec)
    big, small = inputs.prepare(t), inputs.prepare(t, quick=True)
    assert small.size_bytes == quick_bytes < big.size_bytes
    assert full in big.description and quick in small.description


def test_negative_seed_is_refused_when_the_target_loads(tmp_path):
    with pytest.raises(ConfigError, match=r"key 'inputs\.seed': expected .*greater than or equal to 0, got -1"):
        _target(tmp_path, WAV.replace("seed = 2003", "seed = -1"))


# --- content -----------------------------------------------------------------------------------

def test_wav_header_and_channels(tmp_path):
    got = inputs.prepare(_target(tmp_path, WAV))
    assert got.description == "wav: 0.5 s stereo 44.1 kHz 16-bit, seed 2003"
    with wave.open(str(got.path)) as w:
        assert (w.getnchannels(), w.getframerate(), w.getsampwidth()) == (2, 44100, 2)
        assert w.getcomptype() == "NONE"
        assert w.getnframes() == 22050
        samples = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, 2)
    assert got.size_bytes == 44 + 22050 * 4
    assert np.abs(samples).max() > 1000
    assert (samples[:, 0] != samples[:, 1]).mean() > 0.5   # real stereo, not doubled mono


def test_wav_alternates_tonal_noisy_and_silent_passages():
    data = wav.wav_bytes(20 * 44100, 2003)
    with wave.open(io.BytesIO(data)) as w:
        left = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, 2)[:, 0]
    windows = left[: len(left) // 4410 * 4410].reshape(-1, 4410).astype(np.float64)
    rms = np.sqrt((windows ** 2).mean(axis=1))
    # Zero-crossing rate: low for pitched sound, high for noise.
    zcr = (np.diff(np.sign(windows), axis=1) != 0).mean(axis=1)
    assert (rms == 0).any(), "no digital silence"
    assert ((zcr < 0.05) & (rms > 1000)).sum() >= 20, "too little tonal material"
    assert ((zcr > 0.15) & (rms > 1000)).sum() >= 20, "too little noisy material"


@pytest.fixture(scope="module")
def megabyte_corpus() -> bytes:
    return corpus.corpus_bytes(1_000_000, 1)


def test_corpus_mixes_text_and_binary(megabyte_corpus):
    data = megabyte_corpus
    assert len(data) == 1_000_000
    text = np.frombuffer(data, np.uint8)
    printable = ((text >= 32) & (text < 127)) | (text == 9) | (text == 10)
    assert 0.55 < printable.mean() < 0.9
    assert (text == 0).mean() > 0.02                     # binary records and zero runs
    assert data.count(b"\n") > 10_000                    # text comes in lines
    assert b"id,date,time" in data and b"return" in data and b". The" in data


def test_corpus_compresses_like_real_files(megabyte_corpus):
    ratio = len(zlib.compress(megabyte_corpus, 9)) / len(megabyte_corpus)
    assert 0.25 < ratio < 0.45


# --- given files -------------------------------------------------------------------------------

def test_file_input_is_hashed_and_copied(tmp_path):
    t = _target(tmp_path, 'kind = "file"\npath = "data/input.dat"')
    source = t.folder / "data" / "input.dat"
    source.parent.mkdir()
    source.write_bytes(b"some input bytes\n" * 100)
    got = inputs.prepare(t, cache=tmp_path / "c")
    expected = hashlib.sha256(source.read_bytes()).hexdigest()
    assert got == inputs.Input(tmp_path / "c" / "inputs" / f"{expected}.dat", expected, 1700,
                               "file: data/input.dat")
    assert got.path.read_bytes() == source.read_bytes()

    # Editing the original later changes the next sweep's input, never the stored copy.
    source.write_bytes(b"edited")
    assert _sha256(got.path) == expected
    edited = inputs.prepare(t, cache=tmp_path / "c")
    assert edited.sha256 == hashlib.sha256(b"edited").hexdigest() != expected


def test_missing_file_input_names_the_target_file_and_key(tmp_path):
    t = _target(tmp_path, 'kind = "file"\npath = "data/nope.bin"')
    with pytest.raises(ConfigError) as info:
        inputs.prepare(t)
    message = str(info.value)
    assert str(t.path) in message and "inputs.path" in message
    assert "nope.bin" in message and "does not exist" in message


def test_file_input_with_a_sha256_must_still_have_those_bytes(tmp_path):
    data = b"the measured bytes\n"
    digest = hashlib.sha256(data).hexdigest()
    t = _target(tmp_path, f'kind = "file"\npath = "input.dat"\nsha256 = "{digest}"')
    (t.folder / "input.dat").write_bytes(data)
    assert inputs.prepare(t, cache=tmp_path / "c").sha256 == digest
    # Edited after the target file was written: another workload, refused by name.
    (t.folder / "input.dat").write_bytes(b"edited\n")
    edited = hashlib.sha256(b"edited\n").hexdigest()
    with pytest.raises(ConfigError) as info:
        inputs.prepare(t, cache=tmp_path / "c")
    assert str(info.value) == (
        f"{t.path}: key 'inputs.sha256': {t.folder / 'input.dat'} has sha256 {edited}, the "
        f"target expects {digest}; if you changed the input on purpose, put sha256 = "
        f"\"{edited}\" in the target file")


class _Stop(Exception):
    pass


@pytest.mark.parametrize("kind, quick, said", [
    ("file", True, "--quick: input data.bin is a file; it has no quick size, the full input "
                   "is used"),
    ("file", False, None),
    ("corpus", True, None),
])
def test_quick_says_when_a_file_input_has_no_quick_size(tmp_path, monkeypatch, kind, quick, said):
    """A sweep with --quick on a given file measures the file whole, and says so once before
    it builds (the build is stopped there: what follows is not this test's)."""
    from tiny_target import write_tiny_target

    from flagsweep.jobs import sweep
    from flagsweep.compilation import selection, variants
    from flagsweep.results.store import Store

    folder = write_tiny_target(tmp_path / "tiny")
    if kind == "file":
        text = (folder / "target.toml").read_text()
        start, end = text.index("[inputs]"), text.index("[run]")
        (folder / "target.toml").write_text(
            text[:start] + '[inputs]\nkind = "file"\npath = "data.bin"\n' + text[end:])
        (folder / "data.bin").write_bytes(b"x" * 1000)
    t, r, m, build_opts = selection.prepare(selection.Selection(
        str(folder), flag_sets=("-O2",), out_dir=tmp_path / "run"), lambda _: None)

    def stop(*args, **kwargs):
        raise _Stop

    monkeypatch.setattr(variants, "build_all", stop)
    lines: list[str] = []
    with pytest.raises(_Stop):
        sweep.start(t, r, m, build_opts, sweep.MeasureOptions(quick=quick, seed=1), Store(),
                    lines.append)
    quick_lines = [line for line in lines if line.startswith("--quick")]
    assert quick_lines == ([said] if said else [])
