"""`flagsweep new`'s [check] method chosen by running the command twice: tiny programs written
here stand in for the trial binary (the workload is the target's, trusted), nothing is built."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from flagsweep.compilation import debian
from flagsweep.experiment import target
from flagsweep.jobs import check_choice, target_file

RELEASE = debian.DebianRelease("demo-src", "1.0-2", "demo-src_1.0.orig.tar.gz", "a" * 64)

PROGRAMS = {
    # gzip's own decompress mode: a compressor
    "compressor": 'if [ "$1" = -d ]; then exec gzip -d -c; fi\nexec gzip -c -n "$1"\n',
    # opusenc's random serial number: the same input, other bytes every run
    "serial": 'od -An -N8 -tx8 /dev/urandom\nexec cat "$1"\n',
    "fixed": 'exec sha256sum "$1"\n',
}


def _program(folder: Path, name: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + PROGRAMS[name])
    path.chmod(0o755)
    return path


def _chosen(tmp_path: Path, name: str, data: bytes = b"some input\n" * 100):
    d = target_file.Draft(name="demo", package="demo-src", release=RELEASE, upstream="1.0",
                          urls=[], system="make", binary="demo", argv=["{binary}", "{input}"],
                          run_given=True)
    given = tmp_path / "input.bin"
    given.write_bytes(data)
    said: list[str] = []
    check_choice.choose(d, _program(tmp_path, name), given, said.append)
    return d, said


def _check(d: target_file.Draft):
    return target.TargetFile.model_validate(tomllib.loads(target_file.render(d))).check


def test_a_compressor_is_checked_by_a_round_trip(tmp_path):
    d, said = _chosen(tmp_path, "compressor")
    assert (d.check_method, d.roundtrip_argv) == ("roundtrip", ["{binary}", "-d", "-c"])
    assert _check(d).roundtrip_argv == ["{binary}", "-d", "-c"]
    assert said == ["check: roundtrip: `{binary} -d -c` gave the input back from the product: "
                    "a compressor, checked by a round trip"]


def test_the_same_bytes_twice_is_exact(tmp_path):
    d, _ = _chosen(tmp_path, "fixed")
    assert _check(d).method == "exact"
    assert "# Chosen by the trial: two runs on the same input wrote the same bytes." in \
        target_file.render(d)


def test_other_bytes_each_run_leave_the_method_to_fill_with_every_choice(tmp_path):
    d, said = _chosen(tmp_path, "serial")
    assert d.check_method == ""
    assert said == ["check: not chosen: two runs on the same input wrote different bytes, so "
                    "not exact; EDIT check.method: one of exact, sha256, roundtrip, tolerance, "
                    "quality"]
    text = target_file.render(d)
    assert '# method = ""   # EDIT: exact, sha256, roundtrip, tolerance or quality' in text
    with pytest.raises(ValidationError, match="method"):
        _check(d)


def test_other_bytes_from_a_wav_propose_quality(tmp_path):
    wav = b"RIFF" + (36).to_bytes(4, "little") + b"WAVEfmt " + bytes(28)
    d, _ = _chosen(tmp_path, "serial", wav)
    assert d.check_method == "quality"
    assert "# EDIT: decode_argv = " in target_file.render(d)
