"""The decoded-quality check: SNR against the input, aligned whatever the decoder's delay, and
a verdict of ok / equivalent / differs against the baseline's figures (flagsweep.workload.quality,
check.py's `quality` method). Synthetic products: the generated WAV with noise added at known
levels, so every expected SNR is computed from the very samples, never written down."""

from __future__ import annotations

import math
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from flagsweep.errors import ConfigError
from flagsweep.experiment import target
from flagsweep.workload import check, quality, wav


def _verdicts(*args) -> dict[str, dict]:
    """check_all's verdicts as the store keeps them (each check's JSON)."""
    return {vid: c.dump() for vid, c in check.check_all(*args).items()}


RATE = 44100
FRAMES = 3 * RATE


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("wav") / "in.wav"
    path.write_bytes(wav.wav_bytes(FRAMES, seed=2003))
    return path


def _samples(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_bytes()[44:], "<i2").reshape(-1, 2).astype(np.int64)


def _write(path: Path, pcm: np.ndarray) -> Path:
    """A 16-bit stereo WAV of `pcm` (frames x 2 integers), the generator's own header."""
    frames = len(pcm)
    header = wav._riff_header(frames)
    path.write_bytes(header + np.clip(pcm, -32768, 32767).astype("<i2").tobytes())
    return path


def _noisy(pcm: np.ndarray, level: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return pcm + np.rint(rng.normal(0, level, pcm.shape)).astype(np.int64)


def _expected_db(x: np.ndarray, y: np.ndarray) -> float:
    return 10 * math.log10(float(np.sum(x.astype(float) ** 2))
                           / float(np.sum((x - y).astype(float) ** 2)))


def test_snr_is_the_ratio_of_signal_to_noise_energy(source, tmp_path):
    x = _samples(source)
    y = _noisy(x, 300.0, seed=1)
    got = quality.snr(source, _write(tmp_path / "d.wav", y))
    assert got.lag_frames == 0 and got.frames == FRAMES
    assert got.snr_db == pytest.approx(_expected_db(x, y), abs=1e-6)
    assert quality.snr(source, source).snr_db is None        # no noise at all


@pytest.mark.parametrize("lag", [1105, 576, -300])
def test_a_decoder_delay_is_found_by_cross_correlation(source, tmp_path, lag):
    """LAME's encoder + decoder delay is 576 + 529 frames when the decoder keeps it; a decoder
    may also cut too much (negative lag). The SNR is that of the aligned signal: missing
    frames at the start count as error, padding past the end is not compared."""
    x = _samples(source)
    y = _noisy(x, 200.0, seed=2)
    if lag > 0:
        shifted = np.concatenate([np.zeros((lag, 2), np.int64), y, np.zeros((999, 2), np.int64)])
        aligned = y
    else:
        shifted = y[-lag:]
        aligned = np.concatenate([np.zeros((-lag, 2), np.int64), y[-lag:]])
    got = quality.snr(source, _write(tmp_path / "d.wav", shifted))
    assert got.lag_frames == lag
    assert got.snr_db == pytest.approx(_expected_db(x, aligned), abs=1e-6)


def test_a_truncated_decode_scores_low(source, tmp_path):
    x = _samples(source)
    y = _noisy(x, 100.0, seed=3)
    whole = quality.snr(source, _write(tmp_path / "a.wav", y)).snr_db
    cut = quality.snr(source, _write(tmp_path / "b.wav", y[:FRAMES // 2])).snr_db
    assert cut < 3.5 < whole - 10          # half the signal missing: about 3 dB at best


def test_what_cannot_be_compared_is_said(source, tmp_path):
    (tmp_path / "junk.wav").write_bytes(b"ID3 not a wav at all")
    with pytest.raises(quality.PcmError, match="junk.wav is not a PCM WAV file"):
        quality.snr(source, tmp_path / "junk.wav")
    mono = tmp_path / "mono.wav"
    import wave
    with wave.open(str(mono), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(RATE)
        w.writeframes(np.zeros(1000, "<i2").tobytes())
    with pytest.raises(quality.PcmError, match="1 channel.s. at 44100 Hz, the input 2 at 44100"):
        quality.snr(source, mono)


# ---- the check method --------------------------------------------------------------------------

# A stand-in for a lossy encoder: copies {input} to {output} with noise of a level (and a seed)
# fixed when it is written, like one build of an encoder. The decoder is `cp`: the product is
# PCM already, so the check's decode-and-compare path runs on real files through the launcher.
ENCODER = """#!{python}
import shutil
import sys
import numpy as np
if sys.argv[1] == "--decode":      # as lame does: the encoder decodes too; say who decoded
    open(sys.argv[4], "a").write(sys.argv[0] + "\\n")
    shutil.copy(sys.argv[2], sys.argv[3])
    sys.exit(0)
data = open(sys.argv[1], "rb").read()
pcm = np.frombuffer(data[44:], "<i2").astype(np.int64)
noise = np.rint(np.random.default_rng({seed}).normal(0, {level}, pcm.shape)).astype(np.int64)
out = np.clip(pcm + noise, -32768, 32767).astype("<i2").tobytes()
open(sys.argv[2], "wb").write(data[:44] + out + b"\\0" * {pad})
"""


def _encoder(folder: Path, name: str, level: float, seed: int, pad: int = 0) -> Path:
    path = folder / name
    path.write_text(ENCODER.format(python=sys.executable, level=level, seed=seed, pad=pad))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _workload(tmp_path: Path, source: Path, decode_argv: str,
              extra: str = "") -> check.Invocation:
    folder = tmp_path / "target"
    folder.mkdir()
    (folder / "target.toml").write_text(f'''
summary = "a lossy stand-in"
version = "0"
[source]
path = "."
[build]
system = "make"
binary = "enc"
[inputs]
kind = "file"
path = "in.wav"
[run]
argv = ["{{binary}}", "{{input}}", "{{output}}"]
timeout = 120
[check]
method = "quality"
of = "output"
decode_argv = {decode_argv}
{extra}
''')
    return check.Invocation(target.load(str(folder)), source, tmp_path / "scratch")


CP = '["/bin/cp", "{product}", "{output}"]'


def test_the_quality_check_judges_each_product_against_the_baseline(source, tmp_path):
    bins = {"base": _encoder(tmp_path, "base", 300.0, seed=1),
            "same": _encoder(tmp_path, "same", 300.0, seed=1),
            "near": _encoder(tmp_path, "near", 300.0, seed=2),
            "far": _encoder(tmp_path, "far", 900.0, seed=1),
            "big": _encoder(tmp_path, "big", 300.0, seed=1, pad=8192)}
    results = _verdicts(_workload(tmp_path, source, CP), bins, "base")
    x = _samples(source)
    want = {name: _expected_db(x, _noisy(x, level, seed)) for name, level, seed in
            [("base", 300.0, 1), ("near", 300.0, 2), ("far", 900.0, 1)]}
    base = results["base"]
    assert base["status"] == "ok" and base["quality"]["snr_db"] == pytest.approx(want["base"])
    assert base["detail"] == f"reference output (the baseline's): SNR {want['base']:.2f} dB"
    assert results["same"]["status"] == "ok"
    assert results["same"]["detail"].startswith("identical bytes to the baseline's")
    near = results["near"]
    assert abs(want["near"] - want["base"]) < 0.1 and near["status"] == "equivalent"
    assert near["quality"]["snr_db"] == pytest.approx(want["near"])
    assert near["quality"]["baseline_snr_db"] == pytest.approx(want["base"])
    assert near["detail"].startswith(f"equivalent output (SNR {want['near']:.2f} dB vs the "
                                     f"baseline's {want['base']:.2f} dB "
                                     f"({want['near'] - want['base']:+.3f} dB); bytes differ "
                                     "at byte ")
    far = results["far"]
    assert far["status"] == "differs" and far["detail"].startswith(
        f"SNR {want['far']:.2f} dB vs the baseline's {want['base']:.2f} dB "
        f"({want['far'] - want['base']:+.3f} dB), beyond the 0.1 dB tolerance")
    # The same samples with 8 KiB more bytes: as good, but not the same size.
    big = results["big"]
    assert big["quality"]["snr_db"] == pytest.approx(want["base"])
    assert big["status"] == "differs" and "beyond the 1.0% tolerance" in big["detail"]


def test_the_tolerances_are_the_targets(source, tmp_path):
    bins = {"base": _encoder(tmp_path, "base", 300.0, seed=1),
            "far": _encoder(tmp_path, "far", 900.0, seed=1)}
    results = _verdicts(_workload(tmp_path, source, CP, "snr_tolerance_db = 20.0"),
                              bins, "base")
    assert results["far"]["status"] == "equivalent"
    assert results["far"]["quality"]["snr_tolerance_db"] == 20.0


def test_a_product_the_decoder_cannot_read_differs_and_without_a_reference_none_is_judged(
        source, tmp_path):
    bins = {"base": _encoder(tmp_path, "base", 300.0, seed=1),
            "other": _encoder(tmp_path, "other", 300.0, seed=2)}
    # The decoder reads the product and writes nothing a WAV reader accepts.
    w = _workload(tmp_path, source, '["/bin/sh", "-c", "echo not a wav > {output}"]')
    results = _verdicts(w, bins, "base")
    assert results["base"]["status"] == "differs"
    assert "the decoded output cannot be measured" in results["base"]["detail"]
    assert results["other"] == {"status": "failed", "detail": "no reference: the baseline's own "
                                "output could not be decoded and measured",
                                "output_sha256": results["other"]["output_sha256"]}


def test_the_decoder_is_the_baseline_s_binary_for_every_variant(source, tmp_path):
    """{baseline} is the sweep's baseline binary, whichever variant is decoded: one fixed
    decoder, never the variant under judgement."""
    log = tmp_path / "who"
    bins = {"base": _encoder(tmp_path, "base", 300.0, seed=1),
            "v": _encoder(tmp_path, "v", 300.0, seed=2), "w": _encoder(tmp_path, "w", 900.0, seed=3)}
    argv = f'["{{baseline}}", "--decode", "{{product}}", "{{output}}", "{log}"]'
    results = _verdicts(_workload(tmp_path, source, argv), bins, "base")
    assert log.read_text().split() == [str(tmp_path / "base")] * 3
    assert [results[v]["status"] for v in ("base", "v", "w")] == ["ok", "equivalent", "differs"]


def _target_file(folder, inputs: str, check: str) -> None:
    """A make target's file with these [inputs] and [check] tables."""
    (folder / "target.toml").write_text(
        'summary = "x"\nversion = "0"\n[source]\npath = "."\n[build]\nsystem = "make"\n'
        f'binary = "x"\n[inputs]\n{inputs}\n[run]\nargv = ["{{binary}}"]\n[check]\n{check}\n')


@pytest.mark.parametrize("table, message", [
    ('method = "quality"', "check method 'quality' needs 'decode_argv'"),
    ('method = "quality"\ndecode_argv = ["{binary}", "{product}"]',
     "unknown placeholder {binary} in '{binary}'; expected one of ['baseline', 'output', "
     "'product']"),
    ('method = "quality"\ndecode_argv = ["x"]\nsnr_tolerance_db = -1', "snr_tolerance_db"),
])
def test_a_quality_table_that_cannot_work_is_refused_by_key(tmp_path, table, message):
    _target_file(tmp_path, 'kind = "wav"\nseconds = 1\nquick_seconds = 1', table)
    with pytest.raises(ConfigError, match="target.toml: key 'check"):
        target.load(str(tmp_path))
    with pytest.raises(ConfigError) as e:
        target.load(str(tmp_path))
    assert message in str(e.value)


def test_quality_needs_audio_input(tmp_path):
    _target_file(tmp_path, 'kind = "corpus"\nmegabytes = 1\nquick_megabytes = 1',
                 'method = "quality"\ndecode_argv = ["{baseline}"]')
    with pytest.raises(ConfigError, match="check method 'quality' compares the decoded product "
                                          "with the input, which must be a WAV"):
        target.load(str(tmp_path))


# ---- with the real lame ------------------------------------------------------------------------

LAME = shutil.which("lame", path="/usr/bin:/bin")


@pytest.mark.skipif(LAME is None, reason="needs Debian's lame (/usr/bin/lame; ./setup.sh test "
                                         "installs it)")
def test_real_mp3s_decoded_by_the_baseline_s_lame(source, tmp_path):
    """lame's own target check on real MP3s, seconds long: each 'variant' is lame with other
    options, decoded by the baseline's lame --decode. --noreplaygain changes only the LAME tag
    (other bytes, the very same audio: equivalent); an 8 kHz low-pass is a worse result."""
    def variant(name: str, options: str) -> Path:
        path = tmp_path / name
        path.write_text(f'#!/bin/sh\nexec {LAME} {options} "$@"\n')
        path.chmod(0o755)
        return path
    bins = {"base": variant("base", ""), "base.aa": variant("twin", ""),
            "tag": variant("tag", "--noreplaygain"),
            "dull": variant("dull", "--resample 44.1 --lowpass 8")}
    lame_target = target.load("lame")
    w = check.Invocation(lame_target, source, tmp_path / "scratch")
    results = _verdicts(w, bins, "base")
    base = results["base"]["quality"]
    assert base["lag_frames"] == 0 and base["frames"] == FRAMES   # lame --decode removes the delay
    assert results["base.aa"]["status"] == "ok"
    tag = results["tag"]
    assert tag["status"] == "equivalent" and tag["quality"]["snr_db"] == base["snr_db"]
    assert tag["detail"].startswith(f"equivalent output (SNR {base['snr_db']:.2f} dB vs the "
                                    f"baseline's {base['snr_db']:.2f} dB (+0.000 dB); bytes "
                                    "differ at byte ")
    dull = results["dull"]
    assert dull["status"] == "differs" and dull["quality"]["snr_db"] < base["snr_db"] - 1


def test_a_variant_over_layouts_has_its_worst_layout_s_output(tmp_path):
    """run --layouts checks every layout's binary; the variant is as good as its worst: other
    bytes in one layout make it equivalent, an output that differs in any makes it differ."""
    from flagsweep.compilation import layout
    from flagsweep import model
    from flagsweep.results import layouts

    def rep(seed: int, status: str) -> dict:
        return {"id": f"v.L{seed}", "layout_of": "v", "layout": seed, "compiler": "gcc",
                "flags": ["-O2", *layout.flags(seed)], "check": {"status": status, "detail": ""},
                "build": {"status": "ok", "flags_verified": True}}

    def folded(*statuses: str) -> str:
        docs = [model.Variant.model_validate(rep(i + 1, s)) for i, s in enumerate(statuses)]
        return layouts.fold(docs, {}, "b").variants[0].check.status

    assert folded("ok", "equivalent", "ok") == "equivalent"
    assert folded("equivalent", "differs", "ok") == "differs"
    assert folded("equivalent", "failed", "differs") == "failed"
    assert folded("ok", "ok") == "ok"
