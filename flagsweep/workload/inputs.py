"""Workload inputs: the file a target's run reads, generated from a seed or given, and cached.

Generated inputs (a WAV for lame, a mixed corpus for gzip) are a pure function of the generator
version, the kind, the size and the seed, so two machines sweeping the same target measure the
same bytes. They land in `<cache>/inputs/<sha256>.<ext>`; a small index
`<cache>/inputs/keys/<sha256 of the generation key>.json` maps each key to that content hash, so
a second `prepare` is a lookup and a re-hash, not a regeneration. A `file` input is copied into
the same store, so editing the original later cannot silently change a sweep's input.

Determinism across machines and library versions is why all randomness comes from the raw
output of numpy's PCG64 bit generator (numpy keeps bit generator streams stable; its
distribution methods may change between versions), and why every decision that shapes the
output (lengths, counts, choices) uses integer or plain IEEE arithmetic, never libm.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from flagsweep import files
from flagsweep.compilation.variants import Training
from flagsweep.errors import ConfigError
from flagsweep.experiment.target import CorpusInput, FileInput, Target, WavInput

log = logging.getLogger("flagsweep.workload.inputs")

# Bump whenever a generator's output changes: old cache entries then stop matching their key.
GENERATOR_VERSION = 1
MB = 1_000_000
RATE = 44100


@dataclass(frozen=True)
class Input:
    path: Path          # the generated (or given) file, inside the cache
    sha256: str
    size_bytes: int
    description: str    # e.g. "wav: 200 s stereo 44.1 kHz 16-bit, seed 2003"


def prepare(target: Target, quick: bool = False, cache: Path | None = None,
            seed_offset: int = 0) -> Input:
    """The target's workload input, generated deterministically from its seed (plus
    `seed_offset`) and cached by content hash (`quick` picks the smaller size)."""
    spec = target.spec.inputs
    store = (cache or files.cache_dir()) / "inputs"
    if isinstance(spec, FileInput):
        return _copy_given(target, spec, store)
    seed = spec.seed + seed_offset
    if isinstance(spec, WavInput):
        seconds = spec.quick_seconds if quick else spec.seconds
        frames = round(seconds * RATE)
        key = {"generator": GENERATOR_VERSION, "kind": "wav", "frames": frames,
               "seed": seed, "quick": quick}
        description = f"wav: {seconds:g} s stereo 44.1 kHz 16-bit, seed {seed}"
        return _generated(store, key, "wav", description, lambda: wav_bytes(frames, seed))
    assert isinstance(spec, CorpusInput)
    megabytes = spec.quick_megabytes if quick else spec.megabytes
    size = round(megabytes * MB)
    key = {"generator": GENERATOR_VERSION, "kind": "corpus", "bytes": size,
           "seed": seed, "quick": quick}
    description = f"corpus: {megabytes:g} MB mixed text and binary, seed {seed}"
    return _generated(store, key, "bin", description, lambda: corpus_bytes(size, seed))


def quick_note(target: Target) -> str | None:
    """What --quick does to this target's input, when that is nothing: a given file has one
    size only, so a quick run measures it whole."""
    spec = target.spec.inputs
    if isinstance(spec, FileInput):
        return (f"--quick: input {spec.path} is a file; it has no quick size, the full input "
                "is used")
    return None


def training(target: Target, cache: Path | None = None) -> Training:
    """What a profile-guided build trains on: the target's input made from the next seed at
    the quick size, so the profile comes from other data than the measured input (a program
    trained on its benchmark input is tuned to it). A file input has no other: the file
    itself, and the description says so."""
    made = prepare(target, quick=True, cache=cache, seed_offset=1)
    what = made.description
    if isinstance(target.spec.inputs, FileInput):
        what += " (the measured file itself: a file input has no other to train on)"
    return Training(made.path, made.sha256, f"{what} (training)")


# --- the content store ---------------------------------------------------------------------

def _generated(store: Path, key: dict, ext: str, description: str,
               generate: Callable[[], bytes]) -> Input:
    """The cached input for key if its bytes still hash right, else generate and store it."""
    index = store / "keys" / f"{files.key_sha256(key)}.json"
    found = _lookup(store, index, key, description)
    if found is not None:
        return found
    started = time.monotonic()
    data = generate()
    log.info("generated %s (%d bytes) in %.2f s", description, len(data),
             time.monotonic() - started)
    sha = files.sha256_bytes(data)
    path = store / f"{sha}.{ext}"
    # Another key (or process) may have produced the same bytes already.
    if not (path.is_file() and files.sha256_file(path) == sha):
        _write_into(path, data)
    entry = {"key": key, "sha256": sha, "file": path.name, "size_bytes": len(data)}
    _write_into(index, json.dumps(entry, indent=1, sort_keys=True).encode())
    return Input(path, sha, len(data), description)


def _write_into(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, data)


def _lookup(store: Path, index: Path, key: dict, description: str) -> Input | None:
    """The indexed input if the index is sound and the file still has its recorded hash."""
    try:
        entry = json.loads(index.read_text())
        sha, path = entry["sha256"], store / entry["file"]
        if entry["key"] != key:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not path.is_file():
        return None
    got = files.sha256_file(path)
    if got != sha:
        log.warning("cached input %s has sha256 %s, expected %s; regenerating", path, got, sha)
        return None
    log.debug("using cached input %s", path)
    return Input(path, sha, path.stat().st_size, description)


def _copy_given(target: Target, spec: FileInput, store: Path) -> Input:
    """Hash the target's own input file and keep a copy of exactly those bytes in the store."""
    source = target.folder / spec.path
    if not source.is_file():
        raise ConfigError(f"{target.path}: key 'inputs.path': {source} "
                          f"{'is not a file' if source.exists() else 'does not exist'}")
    sha = files.sha256_file(source)
    if spec.sha256 is not None and sha != spec.sha256:
        # The input is part of what a sweep measures: other bytes are another workload.
        raise ConfigError(f"{target.path}: key 'inputs.sha256': {source} has sha256 {sha}, "
                          f"the target expects {spec.sha256}; if you changed the input on "
                          f"purpose, put sha256 = \"{sha}\" in the target file")
    ext = source.suffix[1:] if source.suffix[1:].isalnum() else "bin"
    path = store / f"{sha}.{ext}"
    if not (path.is_file() and files.sha256_file(path) == sha):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        os.close(fd)
        try:
            shutil.copyfile(source, name)
            # The copy is what gets measured, so it must be the bytes that were hashed.
            if files.sha256_file(Path(name)) != sha:
                raise ConfigError(f"{target.path}: key 'inputs.path': {source} changed while "
                                  f"it was being copied; try again")
            os.replace(name, path)
        finally:
            Path(name).unlink(missing_ok=True)
    return Input(path, sha, path.stat().st_size, f"file: {spec.path}")





# --- randomness ----------------------------------------------------------------------------

class _Stream:
    """Random numbers derived only from PCG64's raw 64-bit output, whose sequence numpy keeps
    stable across versions and platforms (unlike Generator's distribution methods)."""

    def __init__(self, seed: int, purpose: int):
        # `purpose` keeps the WAV and the corpus of one seed independent.
        self._bits = np.random.PCG64(np.random.SeedSequence([seed, purpose]))
        self._scalars: list[int] = []

    def raw(self, n: int) -> np.ndarray:
        return self._bits.random_raw(n)

    def _raw_scalar(self) -> int:
        # Drawn in blocks: one random_raw() call per number would dominate the generators'
        # pure-Python parts (the code-line pool draws ~300k numbers).
        if not self._scalars:
            self._scalars = self._bits.random_raw(4096).tolist()[::-1]
        return self._scalars.pop()

    def floats(self, n: int) -> np.ndarray:
        """n floats in [0, 1): the top 53 bits, scaled exactly."""
        return (self.raw(n) >> np.uint64(11)) * 2.0 ** -53

    def float(self, low: float = 0.0, high: float = 1.0) -> float:
        return low + (high - low) * ((self._raw_scalar() >> 11) * 2.0 ** -53)

    def below(self, k: int) -> int:
        """An int in [0, k); the modulo bias of a 64-bit draw is immaterial here."""
        return self._raw_scalar() % k

    def belows(self, k: int, n: int) -> np.ndarray:
        return (self.raw(n) % np.uint64(k)).astype(np.int64)

    def chance(self, p: float) -> bool:
        return self.float() < p

    def pick(self, items):
        return items[self.below(len(items))]

    def bytes(self, n: int) -> bytes:
        # '<u8' fixes the byte order, so big-endian machines give the same bytes.
        return self.raw((n + 7) // 8).astype("<u8").tobytes()[:n]


def _zipf_cdf(n: int) -> np.ndarray:
    """Cumulative Zipf (s = 1) weights over ranks 1..n; 1/r needs no libm pow()."""
    cdf = np.cumsum(1.0 / np.arange(1, n + 1))
    return cdf / cdf[-1]


def _zipf(rng: _Stream, cdf: np.ndarray, n: int) -> np.ndarray:
    """n ranks (0-based) drawn by inverse CDF."""
    return np.minimum(np.searchsorted(cdf, rng.floats(n), side="right"), len(cdf) - 1)


# --- WAV: music-like audio for an MP3 encoder ----------------------------------------------
#
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
    rng = _Stream(seed, WAV_PURPOSE)
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


def _next_passage(rng: _Stream, previous: str, first: bool) -> tuple[str, int]:
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


def _wavetables(rng: _Stream) -> np.ndarray:
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
           pan: float, rng: _Stream, vibrato: float = 0.0) -> None:
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


def _tonal(n: int, rng: _Stream, tables: np.ndarray) -> np.ndarray:
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


def _ensemble(n: int, rng: _Stream, tables: np.ndarray) -> np.ndarray:
    """A tonal passage with a drum kit on top."""
    return 0.6 * _tonal(n, rng, tables) + _drums(n, rng, tables)


def _drums(n: int, rng: _Stream, tables: np.ndarray) -> np.ndarray:
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


def _noise(n: int, rng: _Stream, tables: np.ndarray) -> np.ndarray:
    """Band-limited noise swelling and fading (wind, rain, crowd) with scattered transients."""
    bed = _stereo_band(rng, n, 2 + rng.below(6), 20 + rng.below(200), 0.4)
    swell = 0.55 + 0.35 * _triangle(n, rng.float(0.3, 1.2))
    out = 0.8 * bed * (swell * _envelope(n, int(0.02 * RATE), int(0.02 * RATE), 1.0))[:, None]
    for _ in range(n * 4 // RATE):
        at = rng.below(n)
        hit = _snare(rng, tables[0]) if rng.chance(0.3) else _hat(rng)
        _add(out, at, rng.float(0.1, 0.4) * hit)
    return out


def _silence(n: int, rng: _Stream, tables: np.ndarray) -> np.ndarray:
    return np.zeros((n, 2))


_PASSAGE_MAKERS = {"tonal": _tonal, "ensemble": _ensemble, "noise": _noise, "silence": _silence}


def _add(out: np.ndarray, at: int, sound: np.ndarray) -> None:
    """Mix a (frames, 2) sound into out at frame `at`, cut at the end."""
    n = min(len(sound), len(out) - at)
    out[at:at + n] += sound[:n]


def _kick(rng: _Stream, sine: np.ndarray) -> np.ndarray:
    """A sine sweeping down from ~150 Hz to ~45 Hz under a fast decay."""
    n = int(rng.float(0.12, 0.2) * RATE)
    fall = 1.0 - np.arange(n) / n
    tone = _oscillator(sine, 45.0 + 105.0 * fall * fall * fall, n) * fall * fall
    return np.column_stack((tone, tone))


def _snare(rng: _Stream, sine: np.ndarray) -> np.ndarray:
    """A 180-220 Hz body plus a burst of mid-band noise, decaying in ~0.15 s."""
    n = int(rng.float(0.12, 0.2) * RATE)
    fall = 1.0 - np.arange(n) / n
    decay = fall * fall * fall * fall
    body = 0.4 * _oscillator(sine, rng.float(180.0, 220.0), n)
    return decay[:, None] * (body[:, None] + _stereo_band(rng, n, 1, 6, 0.2))


def _hat(rng: _Stream) -> np.ndarray:
    """A very short burst of high-passed noise: the sharpest transient the encoder sees."""
    n = int(rng.float(0.02, 0.08) * RATE)
    fall = 1.0 - np.arange(n) / n
    decay = fall * fall * fall
    return decay[:, None] * _stereo_band(rng, n, 0, 3, 0.2)


def _stereo_band(rng: _Stream, n: int, narrow: int, wide: int, spread: float) -> np.ndarray:
    """Band-pass noise in two channels sharing all but `spread` of it: correlated but not
    identical, like a real stereo field (and like what joint-stereo coding expects)."""
    common = _band(rng, n, narrow, wide)
    return np.column_stack([(1.0 - spread) * common + spread * _band(rng, n, narrow, wide)
                            for _ in range(2)])


def _band(rng: _Stream, n: int, narrow: int, wide: int) -> np.ndarray:
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


# --- corpus: what a file system holds, for a compressor -------------------------------------
#
# A sequence of "files" of mixed sizes, each of one kind: English-like prose, C-like source,
# CSV records, binary records, sparse low-entropy data and incompressible bytes (as if already
# compressed). Kinds take turns by byte share, so even a small corpus has all of them.

CORPUS_PURPOSE = 2
CORPUS_MIX = {"prose": 0.32, "code": 0.18, "csv": 0.14, "records": 0.16, "sparse": 0.14,
              "random": 0.06}
LINE_WIDTH = 72
CODE_POOL = 20000  # distinct code lines per corpus
PHRASES, PHRASE_EVERY = 300, 4
MAX_INDENT = 7

COMMON_WORDS = (
    "the of and a to in is you that it he was for on are as with his they I at be this have "
    "from or one had by word but not what all were we when your can said there use an each "
    "which she do how their if will up other about out many then them these so some her would "
    "make like him into time has look two more write go see number no way could people my than "
    "first water been call who oil its now find long down day did get come made may part over "
    "new sound take only little work know place year live me back give most very after thing "
    "our just name good sentence man think say great where help through much before line right "
    "too mean old any same tell boy follow came want show also around form three small set put "
    "end does another well large must big even such because turn here why ask went men read "
    "need land different home us move try kind hand picture again change off play spell air "
    "away animal house point page letter mother answer found study still learn should world"
).split()
ONSETS = "b c d f g h k l m n p r s t v w y br ch st th tr sh".split()
VOWELS = "a e i o u a e i o ea ee ai ou io".split()
CODAS = ["", "", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "m"]
SUFFIXES = ["", "", "", "", "s", "ed", "ing", "er", "ion", "ly", "ness", "ment"]

C_TYPES = ("int", "size_t", "char *", "const char *", "unsigned", "long", "double",
           "struct node *", "uint32_t", "bool")
C_NAMES = ("buf len count index state node ptr value result flags size offset table entry ctx "
           "item key data next prev head tail err status mode config list name pos limit "
           "start end total hash block page file path line width").split()
C_VERBS = "get set init free alloc read write find parse update check reset copy compare".split()
C_HEADERS = ("stdio stdlib string stdint errno assert unistd fcntl sys/types sys/stat limits "
             "ctype math time signal").split()
C_TEMPLATES = (
    "if ({a} {cmp} {b}) {{", "for ({i} = 0; {i} < {a}; {i}++) {{", "while ({a} != NULL) {{",
    "{a} = {b} {op} {c};", "{a} = {f}({b}, {c});", "{a}->{b} = {c};",
    "{a}[{i}] = {b}[{i}] {op} {n};", "{t} {a} = {n};", "return {a};", "return {f}({a}, {n});",
    "{f}({a}, {b});", "}}", "}}", "}}", "}} else {{", "break;", "continue;", "return 0;",
    "return -1;", "", "", "case {N}:", "/* {comment} */", "// {comment}", "#include <{h}.h>",
    "#define {M} {n}", "static {t} {f}({t} {a}, {t} {b})", "{{",
    'fprintf(stderr, "{comment}: %s\\n", {a});', "assert({a} {cmp} {b});",
)

CSV_HEADER = b"id,date,time,region,product,quantity,unit_price,discount,total,status\n"
REGIONS = [b"north", b"south", b"east", b"west", b"central", b"overseas"]
PRODUCTS = [b"widget", b"gadget", b"sprocket", b"flange", b"bracket", b"gear", b"valve",
            b"bearing", b"spring", b"gasket", b"coupling", b"hinge"]
STATUSES = [b"shipped", b"pending", b"returned", b"cancelled"]

# A database-like fixed-size record; explicit little-endian fields, so the bytes are the same
# on any machine.
RECORD = np.dtype([("id", "<u4"), ("time", "<u4"), ("kind", "u1"), ("flags", "u1"),
                   ("count", "<u2"), ("value", "<i4"), ("ratio", "<f4"), ("name", "S8"),
                   ("reserved", "<u4")])
RECORD_NAMES = [b"alpha", b"beta", b"gamma", b"delta", b"omega", b"sigma", b"kappa", b"zeta"]


def corpus_bytes(size: int, seed: int) -> bytes:
    """Exactly `size` bytes of mixed text and binary, like a file system's contents."""
    rng = _Stream(seed, CORPUS_PURPOSE)
    makers = _CorpusMakers(rng)
    produced = dict.fromkeys(CORPUS_MIX, 0)
    parts, total = [], 0
    while total < size:
        # The kind furthest below its share goes next, and no further than its share (so a
        # large file cannot skew a small corpus's mix, nor its compression ratio).
        kind = max(CORPUS_MIX, key=lambda k: CORPUS_MIX[k] * (total + 1) - produced[k])
        budget = max(256, round(CORPUS_MIX[kind] * size) - produced[kind])
        data = makers.make(kind, min(_file_size(rng, size), budget))
        parts.append(data)
        produced[kind] += len(data)
        total += len(data)
    return b"".join(parts)[:size]


def _file_size(rng: _Stream, corpus_size: int) -> int:
    """Roughly log-uniform from 4 KB to 512 KB (integers only), capped at an eighth of the
    corpus so that a small corpus still holds several files."""
    base = 4096 << rng.below(7)
    return max(256, min(base + rng.below(base), corpus_size // 8))


class _CorpusMakers:
    """The per-corpus material (vocabulary, code lines) and one maker per file kind."""

    def __init__(self, rng: _Stream):
        self.rng = rng
        self.vocabulary = COMMON_WORDS + _pseudo_words(rng, 2500)
        units = _with_phrases(rng, self.vocabulary)
        self.prose_units = len(units)
        self.prose_table = _Pieces([u.encode() for u in units] + list(SEPARATORS))
        self.unit_cdf = _zipf_cdf(len(units))
        self.code = _CodePool([_code_line(rng, self.vocabulary) for _ in range(CODE_POOL)])

    def make(self, kind: str, n: int) -> bytes:
        """n bytes of one kind; makers may overshoot, so cut to n."""
        return getattr(self, f"_{kind}")(n)[:n]

    def _prose(self, n: int) -> bytes:
        return _prose(self.rng, self.prose_table, self.prose_units, self.unit_cdf, n)

    def _code(self, n: int) -> bytes:
        return _code(self.rng, self.code, n)

    def _csv(self, n: int) -> bytes:
        return CSV_HEADER + _csv_rows(self.rng, n // 55 + 1)

    def _records(self, n: int) -> bytes:
        return _records(self.rng, n // RECORD.itemsize + 1)

    def _sparse(self, n: int) -> bytes:
        return _sparse(self.rng, n)

    def _random(self, n: int) -> bytes:
        return self.rng.bytes(n)


class _Pieces:
    """A table of byte strings joined by index in one numpy gather (no per-piece Python)."""

    def __init__(self, pieces: list[bytes]):
        self.blob = np.frombuffer(b"".join(pieces), np.uint8)
        self.lengths = np.array([len(p) for p in pieces], np.int64)
        self.offsets = np.cumsum(self.lengths) - self.lengths

    def join(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The concatenation of pieces[ids] as a uint8 array, and where each piece starts."""
        lengths = self.lengths[ids]
        starts = np.cumsum(lengths) - lengths
        source = np.repeat(self.offsets[ids] - starts, lengths) + np.arange(lengths.sum())
        return self.blob[source], starts


def _pseudo_words(rng: _Stream, count: int) -> list[str]:
    """Pronounceable made-up words, shortest first: Zipf ranks then make short words common,
    as in real text."""
    words: dict[str, None] = {}
    while len(words) < count:
        syllables = 1 + rng.below(3)
        word = "".join(rng.pick(ONSETS) + rng.pick(VOWELS) + rng.pick(CODAS)
                       for _ in range(syllables)) + rng.pick(SUFFIXES)
        words.setdefault(word)
    return sorted(words, key=len)


def _with_phrases(rng: _Stream, words: list[str], count: int = PHRASES,
                  every: int = PHRASE_EVERY) -> list[str]:
    """The words ranked for Zipf sampling, with `count` recurring 2-4 word phrases ranked among
    them (one after every `every` words from rank 20 on, so none outranks the commonest
    words): real prose repeats "of the", "in the" and the like, which gives LZ77 the longer
    matches that independent words would not."""
    cdf = _zipf_cdf(len(words))
    phrases = [" ".join(words[i] for i in _zipf(rng, cdf, 2 + rng.below(3)))
               for _ in range(count)]
    units = words[:20]
    for rank, word in enumerate(words[20:]):
        units.append(word)
        if rank % every == 0 and rank // every < count:
            units.append(phrases[rank // every])
    return units


# Separators after a word; wrapping turns the first three into their line-ending forms.
SEPARATORS = (b" ", b", ", b". ", b"\n", b",\n", b".\n", b".\n\n")
_WRAPPED = np.array([3, 4, 5, 3, 4, 5, 6])
_SENTENCE_END = np.array([False, False, True, False, False, True, True])


def _prose(rng: _Stream, table: _Pieces, words: int, cdf: np.ndarray, n: int) -> bytes:
    """Zipf-distributed words (the first `words` pieces of table, then SEPARATORS) in
    sentences (capitalised, commas, full stops), wrapped at about LINE_WIDTH columns, in
    paragraphs."""
    count = n // 5 + 16
    ids = _zipf(rng, cdf, count)
    draw = rng.floats(count)
    sep = np.where(draw < 0.07, 2, np.where(draw < 0.15, 1, 0))
    sep[(sep == 2) & (rng.floats(count) < 0.1)] = 6
    # Wrap: measured from the last paragraph break, the first separator past each multiple of
    # the width ends the line. (Wrapping keeps lengths, so positions hold.)
    ends = np.cumsum(table.lengths[ids] + table.lengths[words + sep])
    sep_at = ends - table.lengths[words + sep]
    paragraph = np.maximum.accumulate(np.where(sep == 6, ends, 0))
    base = np.concatenate(([0], paragraph[:-1]))
    line = (sep_at - base) // LINE_WIDTH
    previous = np.where(base[1:] == base[:-1], line[:-1], 0)
    wrap = np.concatenate(([False], line[1:] > previous))
    sep = np.where(wrap, _WRAPPED[sep], sep)
    tokens = np.empty(2 * count, np.int64)
    tokens[0::2], tokens[1::2] = ids, words + sep
    text, starts = table.join(tokens)
    capital = np.concatenate(([0], starts[2::2][_SENTENCE_END[sep[:-1]]]))
    lower = (text[capital] >= ord("a")) & (text[capital] <= ord("z"))
    text[capital[lower]] -= 32
    return text.tobytes()


def _code_line(rng: _Stream, vocabulary: list[str]) -> bytes:
    """One line of C-like code from a template, with plausible identifiers."""
    comment = " ".join(rng.pick(vocabulary[:400]) for _ in range(3 + rng.below(6)))
    line = rng.pick(C_TEMPLATES).format(
        a=_c_name(rng), b=_c_name(rng), c=_c_name(rng), i=rng.pick("ijkn"), n=rng.below(1000),
        N=rng.below(64), M=_c_name(rng).upper(), t=rng.pick(C_TYPES),
        f=rng.pick(C_VERBS) + "_" + rng.pick(C_NAMES), h=rng.pick(C_HEADERS),
        op=rng.pick("+-*/&|^"), cmp=rng.pick(("<", ">", "==", "!=", "<=", ">=")),
        comment=comment)
    return line.encode() + b"\n"


def _c_name(rng: _Stream) -> str:
    return rng.pick(C_NAMES) + ("_" + rng.pick(C_NAMES) if rng.chance(0.3) else "")


class _CodePool:
    """The corpus's code lines, each with what indentation needs to know about it."""

    def __init__(self, lines: list[bytes]):
        self.lines = lines
        self.opens = np.array([line.endswith(b"{\n") for line in lines], np.int64)
        self.closes = np.array([line.startswith(b"}") for line in lines], np.int64)
        # Blank lines and preprocessor lines sit at column 0, as in real code.
        self.flush = np.array([line == b"\n" or line.startswith(b"#") for line in lines])
        self.tables = {unit: _Pieces([unit * d for d in range(MAX_INDENT + 1)] + lines)
                       for unit in (b"\t", b"    ")}


def _code(rng: _Stream, pool: _CodePool, n: int) -> bytes:
    """A source file: lines from the shared pool, a quarter of them from a few dozen this file
    keeps reusing (its own idioms), indented by block depth with tabs or spaces."""
    count = n // 24 + 16
    ids = rng.belows(len(pool.lines), count)
    local = rng.belows(len(pool.lines), 64)[_zipf(rng, _zipf_cdf(64), count)]
    ids = np.where(rng.floats(count) < 0.25, local, ids)
    closes = pool.closes[ids]
    depth = np.cumsum(pool.opens[ids] - closes)
    depth -= np.minimum.accumulate(np.minimum(depth, 0))   # never below column 0
    indent = np.clip(np.concatenate(([0], depth[:-1])) - closes, 0, MAX_INDENT)
    indent[pool.flush[ids]] = 0
    table = pool.tables[b"\t" if rng.chance(0.3) else b"    "]
    tokens = np.empty(2 * count, np.int64)
    tokens[0::2], tokens[1::2] = indent, MAX_INDENT + 1 + ids
    return table.join(tokens)[0].tobytes()


def _csv_rows(rng: _Stream, rows: int) -> bytes:
    """Sales-like records: sequential ids and dates, small categorical fields, prices."""
    first = rng.below(10 ** 6)
    days = rng.below(3000) + np.cumsum(rng.belows(100, rows) < 3)
    seconds = rng.belows(86400, rows)
    quantity = 1 + np.minimum(_zipf(rng, _zipf_cdf(200), rows), 199)
    price = 99 + rng.belows(50000, rows)
    discount = np.where(rng.belows(4, rows) == 0, rng.belows(30, rows), 0)
    total = quantity * price * (100 - discount) // 100
    cols = _Columns(rows)
    cols.number(first + np.arange(rows), 8)
    cols.text(b",20")
    cols.number(15 + days // 336, 2, pad=True)   # 28-day months: only the look matters
    cols.text(b"-")
    cols.number(days // 28 % 12 + 1, 2, pad=True)
    cols.text(b"-")
    cols.number(days % 28 + 1, 2, pad=True)
    cols.text(b",")
    cols.number(seconds // 3600, 2, pad=True)
    cols.text(b":")
    cols.number(seconds // 60 % 60, 2, pad=True)
    cols.text(b":")
    cols.number(seconds % 60, 2, pad=True)
    cols.text(b",")
    cols.choice(REGIONS, _zipf(rng, _zipf_cdf(len(REGIONS)), rows))
    cols.text(b",")
    cols.choice(PRODUCTS, _zipf(rng, _zipf_cdf(len(PRODUCTS)), rows))
    cols.text(b",")
    cols.number(quantity, 3)
    cols.text(b",")
    cols.money(price)
    cols.text(b",")
    cols.number(discount, 2)
    cols.text(b",")
    cols.money(total)
    cols.text(b",")
    cols.choice(STATUSES, _zipf(rng, _zipf_cdf(len(STATUSES)), rows))
    cols.text(b"\n")
    return cols.tobytes()


class _Columns:
    """Text rows built column by column as fixed-width byte matrices plus masks of which bytes
    are real; the masked matrix read row by row is the text, so variable-width fields need no
    per-row Python."""

    def __init__(self, rows: int):
        self.rows = rows
        self.cells: list[np.ndarray] = []
        self.masks: list[np.ndarray] = []

    def text(self, constant: bytes) -> None:
        row = np.frombuffer(constant, np.uint8)
        self.cells.append(np.broadcast_to(row, (self.rows, len(row))))
        self.masks.append(np.ones((self.rows, len(row)), bool))

    def number(self, values: np.ndarray, width: int, pad: bool = False) -> None:
        """Non-negative integers in decimal, at most `width` digits; zero-padded if `pad`."""
        values = np.asarray(values, np.int64)[:, None]
        powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        self.cells.append((values // powers % 10 + ord("0")).astype(np.uint8))
        digits = 1 + (values >= powers[:-1]).sum(axis=1, keepdims=True)
        self.masks.append(np.ones((self.rows, width), bool) if pad
                          else np.arange(width) >= width - digits)

    def money(self, cents: np.ndarray) -> None:
        """Amounts as units.cents, e.g. 1234.05."""
        self.number(cents // 100, 8)
        self.text(b".")
        self.number(cents % 100, 2, pad=True)

    def choice(self, words: list[bytes], ids: np.ndarray) -> None:
        width = max(map(len, words))
        table = np.array([np.frombuffer(w.ljust(width), np.uint8) for w in words])
        lengths = np.array([len(w) for w in words])
        self.cells.append(table[ids])
        self.masks.append(np.arange(width) < lengths[ids][:, None])

    def tobytes(self) -> bytes:
        return np.concatenate(self.cells, axis=1)[np.concatenate(self.masks, axis=1)].tobytes()


def _records(rng: _Stream, count: int) -> bytes:
    """A header and fixed-size little-endian records: sequential ids and times, small
    alphabets in kind/flags/name, a slowly wandering value."""
    rec = np.zeros(count, RECORD)
    rec["id"] = rng.below(1 << 20) + np.arange(count)
    rec["time"] = 1_600_000_000 + rng.below(1 << 24) + np.cumsum(rng.belows(16, count))
    rec["kind"] = _zipf(rng, _zipf_cdf(6), count)
    rec["flags"] = np.array([0, 1, 3, 0x80])[rng.belows(4, count)]
    rec["count"] = _zipf(rng, _zipf_cdf(300), count)
    rec["value"] = np.cumsum(rng.belows(21, count) - 10)
    rec["ratio"] = rec["count"].astype(np.float32) / np.float32(64)   # exact in float32
    rec["name"] = np.array(RECORD_NAMES)[_zipf(rng, _zipf_cdf(len(RECORD_NAMES)), count)]
    header = struct.pack("<8sII", b"FSWPREC1", count, RECORD.itemsize)
    return header + rec.tobytes()


def _sparse(rng: _Stream, n: int) -> bytes:
    """Low-entropy data like disk images and tables: zero and 0xff runs, counters, small
    alphabets, and short random islands."""
    parts, total = [], 0
    while total < n:
        length = 16 + rng.below(2048)
        style = rng.below(5)
        if style == 0:
            part = b"\0" * (length * 2)
        elif style == 1:
            part = b"\xff" * length
        elif style == 2:
            part = (rng.below(1 << 16) + np.arange(length // 2)).astype("<u2").tobytes()
        elif style == 3:
            part = (rng.raw(length) % np.uint64(4)).astype(np.uint8).tobytes()
        else:
            part = rng.bytes(length // 8)
        parts.append(part)
        total += len(part)
    return b"".join(parts)
