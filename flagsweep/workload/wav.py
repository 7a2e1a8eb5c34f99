"""The WAV input: music-like audio for an MP3 encoder, a pure function of its length and seed."""

from __future__ import annotations

import math
import struct

import numpy as np

from flagsweep.workload.randomness import Stream

RATE = 44100

# A sequence of passages: tonal (chords, bass, a melody with vibrato), ensemble (the same with
# drums), noise (filtered noise swells with percussive transients) and short silences, so the
# psychoacoustic model meets tonal peaks, broadband noise, sharp attacks and digital silence.
#
# The only libm calls are the np.sin in the wavetables; everything after is IEEE + - * /, and
# rounding to 16-bit PCM absorbs a last-bit libm difference except in vanishingly rare cases.

WAV_PURPOSE = 1
TABLE_SIZE = 4096
# 2**(k/12), written out so that pitches need no libm pow().
SEMITONES = (1.0, 1.0594630943592953, 1.122462048309373, 1.189207115002721, 1.2599210498948732,
             1.3348398541700344, 1.4142135623730951, 1.4983070768766815, 1.5874010519681994,
             1.681792830507429, 1.7817974362806785, 1.8877486253633868)
MAJOR = (0, 2, 4, 5, 7, 9, 11)
MINOR = (0, 2, 3, 5, 7, 8, 10)
# (kind, weight, shortest, longest seconds); tonal first so that even a short file is music.
PASSAGES = (("tonal", 3, 2.0, 5.0), ("ensemble", 3, 2.0, 5.0), ("noise", 2, 1.0, 3.0),
            ("silence", 1, 0.2, 0.6))


def wav_bytes(frames: int, seed: int) -> bytes:
    """A stereo 44.1 kHz 16-bit PCM WAV file of `frames` frames of music-like sound."""
    rng = Stream(seed, WAV_PURPOSE)
    tables = _wavetables(rng)
    audio = np.zeros((frames, 2))
    pos, previous = 0, "silence"
    while pos < frames:
        kind, length = _next_passage(rng, previous, pos == 0)
        length = min(length, frames - pos)
        audio[pos:pos + length] = _PASSAGE_MAKERS[kind](length, rng, tables)
        pos, previous = pos + length, kind
    pcm = np.rint(np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    return _riff_header(frames) + pcm


def _riff_header(frames: int) -> bytes:
    """The canonical 44-byte header of a PCM WAV: RIFF, a 16-byte fmt chunk, the data chunk."""
    data = frames * 4
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data, b"WAVE", b"fmt ", 16, 1, 2,
                       RATE, RATE * 4, 4, 16, b"data", data)


def _next_passage(rng: Stream, previous: str, first: bool) -> tuple[str, int]:
    """A passage kind (never the previous one again) and its length in frames."""
    if first:
        kind, _, low, high = PASSAGES[0]
    else:
        choices = [p for p in PASSAGES if p[0] != previous]
        total = sum(p[1] for p in choices)
        draw = rng.below(total)
        for kind, weight, low, high in choices:
            if draw < weight:
                break
            draw -= weight
    return kind, int(rng.float(low, high) * RATE)


def _wavetables(rng: Stream) -> np.ndarray:
    """One period of eight timbres: table 0 a pure sine, the rest harmonic mixes (bright
    1/h, mellow 1/h^2, hollow odd-only), each with one guard point for interpolation."""
    x = np.arange(TABLE_SIZE + 1) / TABLE_SIZE
    tables = [np.sin(2 * np.pi * x)]
    for t in range(7):
        style = t % 3
        table = np.zeros(TABLE_SIZE + 1)
        for h in range(1, 4 + rng.below(11)):
            if style == 2 and h % 2 == 0:
                continue
            weight = (1.0 / (h * h) if style == 1 else 1.0 / h) * rng.float(0.5, 1.0)
            table += weight * np.sin(2 * np.pi * h * x)
        tables.append(table / np.abs(table).max())
    return np.array(tables)


def _midi_hz(note: int) -> float:
    return math.ldexp(440.0 * SEMITONES[(note - 69) % 12], (note - 69) // 12)


def _oscillator(table: np.ndarray, hz: np.ndarray | float, n: int) -> np.ndarray:
    """n samples of a wavetable at a (possibly varying) frequency, linearly interpolated."""
    phase = np.cumsum(np.broadcast_to(np.asarray(hz) / RATE, (n,)))
    phase -= np.floor(phase)
    pos = phase * TABLE_SIZE
    i = pos.astype(np.int64)
    frac = pos - i
    return table[i] + frac * (table[i + 1] - table[i])


def _envelope(n: int, attack: int, release: int, sustain: float) -> np.ndarray:
    """Linear attack, a cubic decay towards `sustain`, linear release: polynomials, no exp()."""
    i = np.arange(n, dtype=np.float64)
    fall = 1.0 - i / n
    env = sustain + (1.0 - sustain) * fall * fall * fall
    ramps = np.minimum(1.0, (i + 1) / max(attack, 1)) * np.minimum(1.0, (n - i) / max(release, 1))
    return env * ramps


def _triangle(n: int, hz: float) -> np.ndarray:
    """A triangle wave in [-1, 1]: an LFO for vibrato and swells without sin()."""
    phase = np.arange(n) * (hz / RATE)
    return 4.0 * np.abs(phase - np.floor(phase) - 0.5) - 1.0


def _voice(out: np.ndarray, start: int, n: int, note: int, table: np.ndarray, amp: float,
           pan: float, rng: Stream, vibrato: float = 0.0) -> None:
    """Add one note: panned, and a few cents sharper on the right so the channels differ."""
    n = min(n, len(out) - start)
    if n <= 0:
        return
    env = amp * _envelope(n, int(rng.float(0.003, 0.04) * RATE), int(0.03 * RATE),
                          rng.float(0.2, 0.7))
    hz = _midi_hz(note)
    if vibrato:
        hz = hz * (1.0 + vibrato * _triangle(n, rng.float(4.5, 6.5)))
    detune = 1.0 + rng.float(0.0, 0.003)
    out[start:start + n, 0] += (1.0 - pan) * env * _oscillator(table, hz, n)
    out[start:start + n, 1] += pan * env * _oscillator(table, hz * detune, n)


def _scale_note(root: int, scale: tuple[int, ...], degree: int) -> int:
    return root + scale[degree % 7] + 12 * (degree // 7)


def _tonal(n: int, rng: Stream, tables: np.ndarray) -> np.ndarray:
    """Chords (three or four pad voices), a bass line and a melody with vibrato."""
    out = np.zeros((n, 2))
    root, scale = 45 + rng.below(12), rng.pick((MAJOR, MINOR))
    beat = int(rng.float(0.25, 0.5) * RATE)
    pad, bass, lead = (tables[1 + rng.below(7)] for _ in range(3))
    melody = 7 + rng.below(7)
    pos = 0
    while pos < n:
        length = beat * (2 + rng.below(3))
        degree = rng.pick((0, 3, 4, 5, 1, 0, 4))
        for step in (0, 2, 4, 6)[:3 + rng.below(2)]:
            _voice(out, pos, length, 12 + _scale_note(root, scale, degree + step), pad, 0.09,
                   rng.float(0.3, 0.7), rng)
        _voice(out, pos, length, _scale_note(root, scale, degree) - 12, bass, 0.22,
               rng.float(0.4, 0.6), rng)
        for start in range(pos, pos + length, beat // 2 * (1 + rng.below(2))):
            # Kept low enough that the brightest timbre stays below Nyquist.
            melody = min(max(melody + rng.pick((-2, -1, -1, 0, 1, 1, 2, 3, -3)), 4), 13)
            if rng.chance(0.85):
                _voice(out, start, beat, 12 + _scale_note(root, scale, melody), lead, 0.16,
                       rng.float(0.35, 0.65), rng, vibrato=rng.float(0.0, 0.006))
        pos += length
    return out


def _ensemble(n: int, rng: Stream, tables: np.ndarray) -> np.ndarray:
    """A tonal passage with a drum kit on top."""
    return 0.6 * _tonal(n, rng, tables) + _drums(n, rng, tables)


def _drums(n: int, rng: Stream, tables: np.ndarray) -> np.ndarray:
    """A 16-step pattern at a random tempo: kick on the beats, snare on 2 and 4, hats."""
    out = np.zeros((n, 2))
    step = int(RATE * 60 / (4 * (90 + rng.below(50))))
    extra_kick = rng.pick((6, 10, 14))
    for s in range(n // step):
        at, beat = s * step, s % 16
        if beat in (0, 8) or (beat == extra_kick and rng.chance(0.5)):
            _add(out, at, 0.5 * _kick(rng, tables[0]))
        if beat in (4, 12):
            _add(out, at, 0.35 * _snare(rng, tables[0]))
        if rng.chance(0.9 if beat % 2 == 0 else 0.3):
            _add(out, at, rng.float(0.08, 0.18) * _hat(rng))
    return out


def _noise(n: int, rng: Stream, tables: np.ndarray) -> np.ndarray:
    """Band-limited noise swelling and fading (wind, rain, crowd) with scattered transients."""
    bed = _stereo_band(rng, n, 2 + rng.below(6), 20 + rng.below(200), 0.4)
    swell = 0.55 + 0.35 * _triangle(n, rng.float(0.3, 1.2))
    out = 0.8 * bed * (swell * _envelope(n, int(0.02 * RATE), int(0.02 * RATE), 1.0))[:, None]
    for _ in range(n * 4 // RATE):
        at = rng.below(n)
        hit = _snare(rng, tables[0]) if rng.chance(0.3) else _hat(rng)
        _add(out, at, rng.float(0.1, 0.4) * hit)
    return out


def _silence(n: int, rng: Stream, tables: np.ndarray) -> np.ndarray:
    return np.zeros((n, 2))


_PASSAGE_MAKERS = {"tonal": _tonal, "ensemble": _ensemble, "noise": _noise, "silence": _silence}


def _add(out: np.ndarray, at: int, sound: np.ndarray) -> None:
    """Mix a (frames, 2) sound into out at frame `at`, cut at the end."""
    n = min(len(sound), len(out) - at)
    out[at:at + n] += sound[:n]


def _kick(rng: Stream, sine: np.ndarray) -> np.ndarray:
    """A sine sweeping down from ~150 Hz to ~45 Hz under a fast decay."""
    n = int(rng.float(0.12, 0.2) * RATE)
    fall = 1.0 - np.arange(n) / n
    tone = _oscillator(sine, 45.0 + 105.0 * fall * fall * fall, n) * fall * fall
    return np.column_stack((tone, tone))


def _snare(rng: Stream, sine: np.ndarray) -> np.ndarray:
    """A 180-220 Hz body plus a burst of mid-band noise, decaying in ~0.15 s."""
    n = int(rng.float(0.12, 0.2) * RATE)
    fall = 1.0 - np.arange(n) / n
    decay = fall * fall * fall * fall
    body = 0.4 * _oscillator(sine, rng.float(180.0, 220.0), n)
    return decay[:, None] * (body[:, None] + _stereo_band(rng, n, 1, 6, 0.2))


def _hat(rng: Stream) -> np.ndarray:
    """A very short burst of high-passed noise: the sharpest transient the encoder sees."""
    n = int(rng.float(0.02, 0.08) * RATE)
    fall = 1.0 - np.arange(n) / n
    decay = fall * fall * fall
    return decay[:, None] * _stereo_band(rng, n, 0, 3, 0.2)


def _stereo_band(rng: Stream, n: int, narrow: int, wide: int, spread: float) -> np.ndarray:
    """Band-pass noise in two channels sharing all but `spread` of it: correlated but not
    identical, like a real stereo field (and like what joint-stereo coding expects)."""
    common = _band(rng, n, narrow, wide)
    return np.column_stack([(1.0 - spread) * common + spread * _band(rng, n, narrow, wide)
                            for _ in range(2)])


def _band(rng: Stream, n: int, narrow: int, wide: int) -> np.ndarray:
    """Band-pass noise: white noise smoothed over `narrow` samples minus it smoothed over
    `wide` samples (narrow = 0: no low-pass, so only the lows are removed)."""
    white = rng.floats(n + wide) * 2.0 - 1.0
    high = white[wide:] if narrow == 0 else _smooth(white, narrow)[wide - narrow:]
    return high - _smooth(white, wide)


def _smooth(x: np.ndarray, k: int) -> np.ndarray:
    """A moving average over k samples, len(x) - k long; cumsum is sequential, so exact-same
    rounding everywhere (unlike a convolution whose summation order may vary)."""
    c = np.cumsum(np.concatenate(([0.0], x)))
    return (c[k + 1:] - c[1:-k]) / k
