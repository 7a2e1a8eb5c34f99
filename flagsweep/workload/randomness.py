"""Random numbers for the generated inputs, the same on every machine and numpy version.

All randomness comes from the raw output of numpy's PCG64 bit generator (numpy keeps bit
generator streams stable; its distribution methods may change between versions), and every
decision that shapes an input (lengths, counts, choices) uses integer or plain IEEE arithmetic,
never libm.
"""

from __future__ import annotations

import numpy as np


class Stream:
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


def zipf_cdf(n: int) -> np.ndarray:
    """Cumulative Zipf (s = 1) weights over ranks 1..n; 1/r needs no libm pow()."""
    cdf = np.cumsum(1.0 / np.arange(1, n + 1))
    return cdf / cdf[-1]


def zipf(rng: Stream, cdf: np.ndarray, n: int) -> np.ndarray:
    """n ranks (0-based) drawn by inverse CDF."""
    return np.minimum(np.searchsorted(cdf, rng.floats(n), side="right"), len(cdf) - 1)
