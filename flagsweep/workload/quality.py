"""Decoded quality: how close a lossy product, decoded, comes to the input it was made from.

A lossy floating-point encoder built with other flags rounds some floats differently and so
takes some other quantisation decisions: its bytes differ from the baseline's while its result
is as good. Byte equality is then the wrong question; the field's tools ask "is it as good",
with a tolerance: LLVM test-suite's fpcmp and SPEC CPU's specdiff for numbers, SNR/PSNR against
the source for audio and image codecs. This module measures the audio form: the signal-to-noise
ratio of a decoded WAV against the original WAV,

    SNR = 10 log10( sum x^2 / sum (x - y)^2 )      over every sample of every channel,

x the input's samples, y the decoded ones aligned with them, both scaled to [-1, 1).

Alignment. A decoded MP3 is shifted against its source by the encoder's delay and the
decoder's (for LAME 576 + 529 = 1105 samples), unless the decoder removes it (lame --decode
does, from the LAME tag; mpg123 and others do it differently or not at all). The shift is found
by cross-correlation rather than assumed, so any fixed decoder a target names can be used and
the lag found is reported (a reader can check it against the known delay): the lag in
+-MAX_LAG frames where the correlation of the two mono mixes over the first ALIGN_FRAMES
frames is largest. Input frames the decoded signal does not cover count as error (a truncated
product scores low); decoded frames beyond the input's end (the encoder's padding) are not
compared. Files are read a block at a time, so memory stays at a few blocks whatever the length.
"""

from __future__ import annotations

import math
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BLOCK_FRAMES = 1 << 16
ALIGN_FRAMES = 1 << 19        # ~12 s at 44.1 kHz: past a leading silence of the generated WAV
MAX_LAG = 8192                # frames; several MP3 frames (1152) beyond any codec's delay


class PcmError(Exception):
    """A file that is not a PCM WAV this module reads, or two that cannot be compared."""


@dataclass(frozen=True)
class Snr:
    snr_db: float | None     # None: no noise at all (the decoded signal is the input's)
    lag_frames: int           # decoded frame i + lag is input frame i
    frames: int               # input frames compared

    def text(self) -> str:
        return "no noise" if self.snr_db is None else f"{self.snr_db:.2f} dB"


class _Pcm:
    """A PCM WAV read a block at a time as float frames (frames x channels) in [-1, 1)."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.wav = wave.open(str(path), "rb")
        except (wave.Error, EOFError, OSError) as e:
            raise PcmError(f"{path.name} is not a PCM WAV file ({e})") from None
        self.channels = self.wav.getnchannels()
        self.rate = self.wav.getframerate()
        self.width = self.wav.getsampwidth()
        if self.width not in (1, 2, 3, 4):
            raise PcmError(f"{path.name}: {8 * self.width}-bit samples are not read")

    def read(self, n: int) -> np.ndarray:
        data = self.wav.readframes(n)
        return _floats(data, self.width).reshape(-1, self.channels)

    def close(self) -> None:
        self.wav.close()


def _floats(data: bytes, width: int) -> np.ndarray:
    """Little-endian PCM samples as floats in [-1, 1): 8-bit WAV is unsigned, the rest signed."""
    if width == 1:
        return (np.frombuffer(data, np.uint8).astype(np.float64) - 128) / 128
    if width == 3:
        raw = np.frombuffer(data[:len(data) - len(data) % 3], np.uint8).reshape(-1, 3)
        ints = raw[:, 0].astype(np.int32) | (raw[:, 1].astype(np.int32) << 8) \
            | (raw[:, 2].astype(np.int8).astype(np.int32) << 16)
        return ints / float(1 << 23)
    dtype = {2: "<i2", 4: "<i4"}[width]
    return np.frombuffer(data[:len(data) - len(data) % width], dtype) / float(1 << (8 * width - 1))


def snr(reference: Path, decoded: Path) -> Snr:
    """The SNR of `decoded` against `reference`, aligned by cross-correlation (module doc)."""
    lag = _lag(reference, decoded)
    ref, dec = _Pcm(reference), _Pcm(decoded)
    try:
        _same_shape(ref, dec)
        _skip(dec, lag)
        pending_zeros = max(0, -lag)      # decoded ahead of the input: its start is missing
        signal = noise = 0.0
        frames = 0
        while True:
            x = ref.read(BLOCK_FRAMES)
            if not len(x):
                break
            y = _aligned(dec, len(x), pending_zeros)
            pending_zeros = max(0, pending_zeros - len(x))
            signal += float(np.sum(x * x))
            noise += float(np.sum((x - y) ** 2))
            frames += len(x)
    finally:
        ref.close()
        dec.close()
    if noise == 0.0:
        return Snr(None, lag, frames)
    if signal == 0.0:
        raise PcmError(f"{reference.name} is silent: no signal to measure noise against")
    return Snr(10 * math.log10(signal / noise), lag, frames)


def _same_shape(ref: _Pcm, dec: _Pcm) -> None:
    if (ref.channels, ref.rate) != (dec.channels, dec.rate):
        raise PcmError(f"the decoded audio is {dec.channels} channel(s) at {dec.rate} Hz, the "
                       f"input {ref.channels} at {ref.rate} Hz")


def _skip(pcm: _Pcm, frames: int) -> None:
    while frames > 0:
        got = len(pcm.read(min(frames, BLOCK_FRAMES)))
        if not got:
            return
        frames -= got


def _aligned(dec: _Pcm, n: int, zeros: int) -> np.ndarray:
    """The next n decoded frames, after `zeros` leading silent ones; zeros past its end."""
    head = np.zeros((min(zeros, n), dec.channels))
    body = dec.read(n - len(head))
    tail = np.zeros((n - len(head) - len(body), dec.channels))
    return np.concatenate([head, body, tail])


def _lag(reference: Path, decoded: Path) -> int:
    """Where the cross-correlation of the two mono mixes peaks, within +-MAX_LAG frames (by
    FFT: both windows zero-padded so the circular correlation has no wrap-around)."""
    a, b = _mono_window(decoded), _mono_window(reference)
    if not len(a) or not len(b) or not a.any() or not b.any():
        return 0
    size = 1 << math.ceil(math.log2(len(a) + len(b)))
    corr = np.fft.irfft(np.fft.rfft(a, size) * np.conj(np.fft.rfft(b, size)), size)
    lags = np.r_[0:min(MAX_LAG, len(a) - 1) + 1, -min(MAX_LAG, len(b) - 1):0]
    return int(lags[np.argmax(corr[lags])])


def _mono_window(path: Path) -> np.ndarray:
    pcm = _Pcm(path)
    try:
        return pcm.read(ALIGN_FRAMES).mean(axis=1)
    finally:
        pcm.close()
