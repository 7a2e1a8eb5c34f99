"""The output check: every distinct binary proves its output before any timing (LNT's rule).

Each binary runs the workload once. Its product (stdout, or the file at {output}) is compared
by the target's method: `exact` bytes against the baseline's product, a fixed `sha256`, a
`roundtrip` (the product fed back through e.g. `gzip -d` must give the input), `tolerance`
(numbers in the text within a relative tolerance of the baseline's, the rest exact), or
`quality` (a lossy product decoded by one fixed decoder and its SNR against the input within a
tolerance of the baseline's, flagsweep.workload.quality). The result is the model's Check
(flagsweep.model): status "ok", "equivalent" (other bytes, as good a result: a flag set to choose),
"differs" (shown, and timed unless --strict-check) or "failed" (the run itself failed: never
timed).
Products go to files, never into memory, and are compared a block at a time, so a workload's
gigabytes of output cost a few megabytes here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from flagsweep import files, model
from flagsweep.errors import FlagsweepError
from flagsweep.host import launcher
from flagsweep.experiment.target import Target
from flagsweep.workload import quality

NUMBER = re.compile(rb"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
NUMBER_SPLIT = re.compile(b"(" + NUMBER.pattern + b")")
NUMBER_BYTES = b"0123456789.eE+-"   # every byte NUMBER can match
BLOCK = 1 << 20                     # outputs are compared this many bytes at a time
MAX_RUN = 16 * BLOCK                # a run of number bytes longer than this is cut anyway


@dataclass(frozen=True)
class Invocation:
    """How to run one binary: the target's argv with its placeholders filled in."""

    target: Target
    input_path: Path
    scratch: Path          # where outputs and stderr of check and timing runs go

    def argv(self, binary: Path, output: Path) -> list[str]:
        values = {"binary": str(binary), "input": str(self.input_path), "output": str(output)}
        return [arg.format(**values) for arg in self.target.spec.run.argv]

    @property
    def timeout(self) -> float:
        return self.target.spec.run.timeout


def check_all(workload: Invocation, binaries: dict[str, Path],
              baseline: str) -> dict[str, model.Check]:
    """variant id -> its check (status, detail) for each distinct binary; the baseline first
    (the reference)."""
    spec = workload.target.spec.check
    products: dict[str, Path | None] = {}
    results: dict[str, model.Check] = {}
    for vid in sorted(binaries, key=lambda v: v != baseline):
        product, failure = _produce(workload, vid, binaries[vid])
        products[vid] = product
        if failure:
            results[vid] = model.Check(status="failed", detail=failure)
            continue
        if spec.method == "quality":
            results[vid] = _quality(workload, vid, product, vid == baseline,
                                    products.get(baseline), binaries.get(baseline),
                                    results.get(baseline))
            continue
        results[vid] = _compare(spec.method, workload, vid, binaries[vid], product,
                                products.get(baseline), vid == baseline)
    _group_outputs(results, products)
    return results


def _group_outputs(results: dict[str, model.Check], products: dict[str, Path | None]) -> None:
    """Which variants produce the very same bytes: with a -ffast-math baseline every strict
    variant 'differs', and the groups show which flags change the output and which do not."""
    first: dict[str, str] = {}
    for vid, product in products.items():
        if product is None:
            continue
        digest = files.sha256_file(product)
        found = results[vid]
        found.output_sha256 = digest
        other = first.setdefault(digest, vid)
        if other != vid:
            found.same_output_as = other
            if found.status in ("differs", "equivalent"):
                found.detail += f"; same output as {other}"


def _produce(workload: Invocation, vid: str, binary: Path) -> tuple[Path | None, str | None]:
    """Run the workload once; return its product file, or why it failed."""
    workload.scratch.mkdir(parents=True, exist_ok=True)
    stdout, output = workload.scratch / f"{vid}.stdout", workload.scratch / f"{vid}.out"
    result = launcher.run_once(workload.argv(binary, output), env=launcher.MINIMAL_ENV,
                             timeout=workload.timeout, stdout_path=stdout,
                             stderr_path=workload.scratch / f"{vid}.check.stderr")
    if files.disk_full(workload.scratch):  # the product may be cut short: no verdict on it
        raise FlagsweepError(f"the disk holding {workload.scratch} is full: {vid}'s check run "
                             "could not write its output; free space there, then run again "
                             "(flagsweep run --resume continues a sweep)")
    if result.failure:
        return None, f"the check run failed: {result.failure}"
    product = stdout if workload.target.spec.check.of == "stdout" else output
    if not product.exists():
        return None, f"the check run wrote no {workload.target.spec.check.of} ({product})"
    return product, None


def _compare(method: str, workload: Invocation, vid: str, binary: Path, product: Path,
             reference: Path | None, is_baseline: bool) -> model.Check:
    spec = workload.target.spec.check
    if method == "sha256":
        got = files.sha256_file(product)
        return _verdict(got == spec.sha256, f"sha256 {got[:16]}... expected {spec.sha256[:16]}...")
    if method == "roundtrip":
        return _roundtrip(workload, vid, binary, product)
    if is_baseline:
        return model.Check(status="ok", detail="reference output (the baseline's)")
    if reference is None:
        return model.Check(status="failed",
                           detail="no reference: the baseline's own check run failed")
    if method == "exact":
        return _exact(product, reference)
    return _tolerance(product, reference, spec.rel_tolerance)


def _roundtrip(workload: Invocation, vid: str, binary: Path, product: Path) -> model.Check:
    spec = workload.target.spec.check
    back = workload.scratch / f"{vid}.roundtrip"
    argv = [a.format(binary=str(binary), input=str(workload.input_path), output=str(back))
            for a in spec.roundtrip_argv]
    result = launcher.run_once(argv, env=launcher.MINIMAL_ENV, timeout=workload.timeout,
                             stdin_path=product, stdout_path=back,
                             stderr_path=workload.scratch / f"{vid}.roundtrip.stderr")
    if result.failure:
        return model.Check(status="differs", detail=f"the round trip failed: {result.failure}")
    verdict = _exact(back, workload.input_path, "the input")
    if verdict.status != "ok":
        verdict.detail = "the round trip did not give back the input: " + verdict.detail
    return verdict


def _quality(workload: Invocation, vid: str, product: Path, is_baseline: bool,
             reference: Path | None, decoder: Path | None,
             base: model.Check | None) -> model.Check:
    """The product decoded by the one fixed decoder and measured against the input; the
    baseline's own figures are the reference, and a variant is `ok` with the baseline's very
    bytes, `equivalent` when its SNR and size are within the tolerances of the baseline's,
    `differs` otherwise."""
    if decoder is None or not is_baseline and (reference is None
                                                 or not (base and base.quality)):
        return model.Check(status="failed", detail="no reference: the baseline's own output "
                                                   "could not be decoded and measured")
    same = None if is_baseline else _exact(product, reference)
    if same and same.status == "ok":
        return model.Check(status="ok", detail="identical bytes to the baseline's",
                           quality=base.quality.model_copy(
                               update={"size_bytes": product.stat().st_size}))
    try:
        measured = _decoded_snr(workload, vid, product, decoder)
    except quality.PcmError as e:
        return model.Check(status="differs", detail=f"the decoded output cannot be measured: {e}")
    figures = _figures(workload, measured, product)
    if is_baseline:
        return model.Check(status="ok", detail=f"reference output (the baseline's): SNR "
                                               f"{measured.text()}", quality=figures)
    return _judged(workload, figures, base.quality, same.detail)


def _decoded_snr(workload: Invocation, vid: str, product: Path, decoder: Path) -> quality.Snr:
    spec = workload.target.spec.check
    decoded = workload.scratch / f"{vid}.decoded.wav"
    writes_file = any("{output}" in a for a in spec.decode_argv)
    argv = [a.format(baseline=str(decoder), product=str(product), output=str(decoded))
            for a in spec.decode_argv]
    stdout = workload.scratch / f"{vid}.decode.stdout" if writes_file else decoded
    decoded.unlink(missing_ok=True)
    result = launcher.run_once(argv, env=launcher.MINIMAL_ENV, timeout=workload.timeout,
                               stdin_path=product, stdout_path=stdout,
                               stderr_path=workload.scratch / f"{vid}.decode.stderr")
    if result.failure:
        raise quality.PcmError(f"the decoder failed on it: {result.failure}")
    return quality.snr(workload.input_path, decoded)


def _figures(workload: Invocation, measured: quality.Snr, product: Path) -> model.Quality:
    spec = workload.target.spec.check
    return model.Quality(snr_db=measured.snr_db, lag_frames=measured.lag_frames,
                         frames=measured.frames, size_bytes=product.stat().st_size,
                         snr_tolerance_db=spec.snr_tolerance_db,
                         size_rel_tolerance=spec.size_rel_tolerance,
                         decoder=" ".join(spec.decode_argv))


def _judged(workload: Invocation, got: model.Quality, base: model.Quality,
            where: str) -> model.Check:
    """equivalent or differs, in one sentence with both SNRs; `where` says where the bytes part."""
    spec = workload.target.spec.check
    got = got.model_copy(update={"baseline_snr_db": base.snr_db,
                                 "baseline_size_bytes": base.size_bytes})
    snr_text = f"SNR {_db(got.snr_db)} vs the baseline's {_db(base.snr_db)}"
    if got.snr_db is not None and base.snr_db is not None:   # two decimals may not show it
        snr_text += f" ({got.snr_db - base.snr_db:+.3f} dB)"
    size_change = got.size_bytes / base.size_bytes - 1 if base.size_bytes else 0.0
    bytes_note = where.replace("output differs from the baseline's", "bytes differ")
    if not _snr_close(got.snr_db, base.snr_db, spec.snr_tolerance_db):
        return model.Check(status="differs", quality=got,
                           detail=f"{snr_text}, beyond the {spec.snr_tolerance_db:g} dB "
                                  f"tolerance ({bytes_note})")
    if abs(size_change) > spec.size_rel_tolerance:
        return model.Check(status="differs", quality=got,
                           detail=f"size {got.size_bytes} vs the baseline's {base.size_bytes} "
                                  f"bytes ({size_change:+.1%}), beyond the "
                                  f"{spec.size_rel_tolerance:.1%} tolerance; {snr_text} "
                                  f"({bytes_note})")
    return model.Check(status="equivalent", quality=got,
                       detail=f"equivalent output ({snr_text}; {bytes_note})")


def _snr_close(a: float | None, b: float | None, tolerance_db: float) -> bool:
    """Within the tolerance; None is no noise at all, close only to itself."""
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tolerance_db


def _db(snr_db: float | None) -> str:
    return "no noise" if snr_db is None else f"{snr_db:.2f} dB"


def _exact(got: Path, want: Path, other: str = "the baseline's") -> model.Check:
    """Byte for byte, a block at a time: outputs of gigabytes compare in constant memory."""
    offset = 0
    with open(got, "rb") as a, open(want, "rb") as b:
        while True:
            x, y = a.read(BLOCK), b.read(BLOCK)
            if x != y:
                n = offset + _first_mismatch(x, y)
                return model.Check(status="differs",
                                   detail=f"output differs from {other} at byte {n} "
                                          f"({got.stat().st_size} vs {want.stat().st_size} bytes)")
            if not x:
                return model.Check(status="ok", detail="")
            offset += len(x)


def _first_mismatch(a: bytes, b: bytes) -> int:
    """Where two blocks first differ (the shorter one's length when one is a prefix)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if a[:mid] == b[:mid] else (lo, mid)
    return lo


def _tolerance(got: Path, want: Path, rel: float) -> model.Check:
    """Numbers within rel of the reference's, everything between them identical. Identical
    outputs (the usual case) are settled by the byte comparison alone; others are read a block
    at a time, the one with less text waiting to be matched next, so memory stays at a few
    blocks whatever the outputs' size."""
    if _exact(got, want).status == "ok":
        return model.Check(status="ok", detail=f"numbers within {rel:g} of the baseline's (worst 0)")
    with open(got, "rb") as f, open(want, "rb") as g:
        return _tolerance_of(_Tokens(f), _Tokens(g), rel)


def _tolerance_of(a: _Tokens, b: _Tokens, rel: float) -> model.Check:
    sides = [a, b]
    worst = 0.0
    while not (a.done and b.done):
        min((s for s in sides if not s.done), key=lambda s: len(s.text)).read()
        n = min(len(a.text), len(b.text))
        ended = any(s.done and len(s.text) == n for s in sides)  # and the other has more
        if a.text[:n] != b.text[:n] or (ended and len(a.text) != len(b.text)):
            return model.Check(status="differs",
                               detail="the text around the numbers differs from the baseline's")
        del a.text[:n], b.text[:n]
        k = min(len(a.numbers), len(b.numbers))
        for p, q in zip(a.numbers[:k], b.numbers[:k]):
            if p != q:
                x, y = float(p), float(q)
                worst = max(worst, 0.0 if x == y else abs(x - y) / max(abs(x), abs(y)))
        del a.numbers[:k], b.numbers[:k]
    if worst <= rel:
        return model.Check(status="ok",
                           detail=f"numbers within {rel:g} of the baseline's (worst {worst:.2g})")
    return model.Check(status="differs",
                       detail=f"a number differs by {worst:.3g} relative (tolerance {rel:g})")


def _verdict(same: bool, why_not: str) -> model.Check:
    return model.Check(status="ok", detail="") if same else \
        model.Check(status="differs", detail=why_not)


class _Tokens:
    """One output read a block at a time, as its text with each number replaced by a marker
    (NUL doubled in the text, NUL N for a number: no text can pass for a number) and the
    numbers in order. A block is cut after its last byte that cannot be part of a number, so
    no number is split between two blocks (a run of number bytes longer than MAX_RUN is)."""

    def __init__(self, file: BinaryIO):
        self.file = file
        self.rest = b""
        self.text = bytearray()
        self.numbers: list[bytes] = []
        self.done = False

    def read(self) -> None:
        block = self.file.read(BLOCK)
        data = self.rest + block
        cut = len(data.rstrip(NUMBER_BYTES)) if block else len(data)
        if cut == 0 and len(data) > MAX_RUN:
            cut = len(data)
        piece, self.rest = data[:cut], data[cut:]
        parts = NUMBER_SPLIT.split(piece)          # text, number, text, ..., text
        self.text += b"\0N".join(t.replace(b"\0", b"\0\0") for t in parts[::2])
        self.numbers += parts[1::2]
        self.done = not block


