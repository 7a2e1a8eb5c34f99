"""`flagsweep new`'s [check] method, chosen by running the run command rather than assumed.

`new` used to write `exact` for every program: for a compressor, which wants a round trip, and
for opusenc, whose output holds a random serial number, so every variant would have been
judged to differ. Here the command is run twice on the same input with the trial -O2 binary:

- the product decompressed by `{binary} -d -c` (the product on stdin) gives the input back:
  `roundtrip`, with that roundtrip_argv, whether or not the bytes repeat;
- the two products are the same bytes: `exact`;
- they differ and the input is a WAV: `quality` (a codec), its decode_argv left to fill;
- they differ otherwise: no method is written, and the one key to fill (check.method) is said.
"""

from __future__ import annotations

import filecmp
import tempfile
from pathlib import Path
from typing import Callable

from flagsweep.host import launcher
from flagsweep.jobs.target_file import RUN_TIMEOUT, Draft, writes_output


METHODS = ("exact", "sha256", "roundtrip", "tolerance", "quality")
DECOMPRESS = ["{binary}", "-d", "-c"]     # gzip, bzip2, xz, zstd, lz4, brotli, zopfli's kin


def choose(d: Draft, binary: Path, data: Path, say: Callable[[str], None]) -> None:
    """Set d.check_method (and roundtrip_argv, check_note) from two runs of d.argv on data."""
    with tempfile.TemporaryDirectory(prefix="flagsweep-check-") as scratch:
        first, why = _product(d.argv, binary, data, Path(scratch) / "1")
        second, _ = _product(d.argv, binary, data, Path(scratch) / "2") if first else (None, "")
        if first is None or second is None:
            d.check_note = f"not chosen: a run to compare failed ({why or 'the second run'})"
            return
        same = filecmp.cmp(first, second, shallow=False)
        if _round_trips(binary, first, data, Path(scratch) / "rt"):
            d.check_method, d.roundtrip_argv = "roundtrip", list(DECOMPRESS)
            d.check_note = ("`{binary} -d -c` gave the input back from the product: a "
                            "compressor, checked by a round trip")
        elif same:
            d.check_method = "exact"
            d.check_note = "two runs on the same input wrote the same bytes"
        elif _is_wav(data):
            d.check_method = "quality"
            d.check_note = ("two runs on the same input wrote different bytes and the input is "
                            "a WAV: a codec, judged by its decoded quality; EDIT decode_argv")
        else:
            d.check_method = ""
            d.check_note = ("two runs on the same input wrote different bytes, so not exact; "
                            f"EDIT check.method: one of {', '.join(METHODS)}")
    say(f"check: {d.check_method or 'not chosen'}: {d.check_note}")


def _product(argv: list[str], binary: Path, data: Path,
             scratch: Path) -> tuple[Path | None, str]:
    """What one run of argv on data produced (its {output} file, else its stdout), or why
    there is none."""
    scratch.mkdir()
    out, stdout = scratch / "output", scratch / "stdout"
    args = [a.format(binary=str(binary), input=str(data), output=str(out)) for a in argv]
    done = launcher.run_once(args, env=launcher.MINIMAL_ENV, timeout=RUN_TIMEOUT,
                             stdout_path=stdout, stderr_path=scratch / "stderr")
    product = out if writes_output(argv) else stdout
    if done.failure or not product.is_file():
        return None, done.failure or f"no {product.name} written"
    return product, ""


def _round_trips(binary: Path, product: Path, data: Path, scratch: Path) -> bool:
    """True when the binary's decompress mode turns the product back into the input."""
    scratch.mkdir()
    args = [a.format(binary=str(binary)) for a in DECOMPRESS]
    back = scratch / "stdout"
    done = launcher.run_once(args, env=launcher.MINIMAL_ENV, timeout=RUN_TIMEOUT,
                             stdout_path=back, stderr_path=scratch / "stderr",
                             stdin_path=product)
    return not done.failure and back.is_file() and filecmp.cmp(back, data, shallow=False)


def _is_wav(data: Path) -> bool:
    with open(data, "rb") as f:
        head = f.read(12)
    return head[:4] == b"RIFF" and head[8:12] == b"WAVE"
