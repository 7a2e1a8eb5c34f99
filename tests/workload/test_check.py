"""The output check compares outputs of any size in bounded memory, and as the whole-file
comparison would."""

from __future__ import annotations

import subprocess
import tracemalloc
from pathlib import Path

import pytest

from flagsweep.errors import FlagsweepError
from flagsweep.experiment import target
from flagsweep.workload import check


def _verdicts(*args) -> dict[str, dict]:
    """check_all's verdicts as the store keeps them (each check's JSON)."""
    return {vid: c.dump() for vid, c in check.check_all(*args).items()}


# Writes MEGABYTES MiB of "line N value X" text to stdout, one 1 MiB block at a time; built with
# -DTWEAK=r, the last number is changed by the relative amount r.
BIG = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    static char block[1 << 20];
    long mb = atol(argv[1]);
    size_t used = 0;
    for (int i = 0; used + 64 < sizeof block; i++)
        used += (size_t)sprintf(block + used, "line %d value %.6f\n", i, 0.5 + i * 0.25);
    for (long i = 0; i < mb; i++)
        fwrite(block, 1, used, stdout);
    printf("last value %.9f\n", 1234.5 * (1.0 + TWEAK));
    return 0;
}
"""


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """name -> binary: `same` writes what `base` does, `near` and `far` change the last number
    by 1e-7 and 1e-3 relative."""
    d = tmp_path_factory.mktemp("big")
    (d / "big.c").write_text(BIG)
    out = {}
    for name, tweak in [("base", "0"), ("same", "0"), ("near", "1e-7"), ("far", "1e-3")]:
        out[name] = d / name
        subprocess.run(["gcc", "-O1", f"-DTWEAK={tweak}", "-o", str(out[name]), str(d / "big.c")],
                       check=True)
    return out


def _workload(tmp_path: Path, megabytes: int, check_table: str) -> check.Invocation:
    folder = tmp_path / "target"
    folder.mkdir()
    (folder / "target.toml").write_text(f'''
summary = "writes a large stdout"
version = "0"
[source]
path = "."
[build]
system = "make"
binary = "big"
[inputs]
kind = "corpus"
megabytes = 1
quick_megabytes = 1
[run]
argv = ["{{binary}}", "{megabytes}"]
stdout = "compared"
timeout = 120
[check]
{check_table}
''')
    return check.Invocation(target.load(str(folder)), tmp_path / "input", tmp_path / "scratch")


def _checked(workload, binaries, baseline="base"):
    """check_all's verdicts and the most memory Python held while they were made."""
    tracemalloc.start()
    try:
        results = _verdicts(workload, binaries, baseline)
        return results, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_exact_check_of_a_256_mb_output_streams(big, tmp_path):
    """Read whole, two 256 MiB outputs held 512 MiB (2 GB of stdout was a MemoryError)."""
    mb = 256
    w = _workload(tmp_path, mb, 'method = "exact"')
    results, peak = _checked(w, {k: big[k] for k in ("base", "same", "near")})
    size = (w.scratch / "base.stdout").stat().st_size
    assert size > (mb - 1) << 20
    assert results["base"]["status"] == results["same"]["status"] == "ok"
    assert results["near"]["status"] == "differs"
    with open(w.scratch / "base.stdout", "rb") as a, open(w.scratch / "near.stdout", "rb") as b:
        a.seek(size - 64)
        b.seek(size - 64)
        first = size - 64 + next(i for i, (x, y) in enumerate(zip(a.read(), b.read())) if x != y)
    assert results["near"]["detail"] == (f"output differs from the baseline's at byte {first} "
                                         f"({size} vs {size} bytes)")
    assert peak < 16 << 20, f"the check held {peak >> 20} MiB of a {mb} MiB output"


def test_tolerance_check_streams_and_reads_every_number(big, tmp_path, monkeypatch):
    """The tolerance check needed 1.6 GB for 256 MB of output; block by block it needs a few
    blocks whatever the size (64 KiB blocks here, to keep the test short), and it still finds
    the one changed number at the very end."""
    monkeypatch.setattr(check, "BLOCK", 64 << 10)
    mb = 2
    w = _workload(tmp_path, mb, 'method = "tolerance"\nrel_tolerance = 1e-5')
    results, peak = _checked(w, {k: big[k] for k in ("base", "same", "near", "far")})
    assert results["same"] == {"status": "ok", "output_sha256": results["base"]["output_sha256"],
                               "same_output_as": "base",
                               "detail": "numbers within 1e-05 of the baseline's (worst 0)"}
    assert results["near"]["status"] == "ok"
    assert results["near"]["detail"] == "numbers within 1e-05 of the baseline's (worst 1e-07)"
    assert results["far"]["status"] == "differs"
    assert results["far"]["detail"] == "a number differs by 0.000999 relative (tolerance 1e-05)"
    assert peak < 2 << 20, f"the check held {peak / 2**20:.1f} MiB of a {mb} MiB output"


@pytest.mark.parametrize("got, want, detail", [
    (b"v 1234567.891 w 3e10\n" * 40, b"v 1234567.891 w 3.0000000003e10\n" * 40,
     "numbers within 1e-05 of the baseline's (worst 1e-10)"),
    (b"x 1.5 y\n" * 40, b"x 1.5 y\n" * 40 + b"z", "the text around the numbers differs from the baseline's"),
    (b"x 1.5 y\n" * 40 + b"z", b"x 1.5 y\n" * 40, "the text around the numbers differs from the baseline's"),
    (b"a # b\n", b"a 1 b\n", "the text around the numbers differs from the baseline's"),
    (b"a \0N b\n", b"a 1 b\n", "the text around the numbers differs from the baseline's"),
    (b"x 12345678901234 y 1.0", b"x 12345678901235 y 1.0", "numbers within 1e-05 of the baseline's (worst 8.1e-14)"),
])
def test_tolerance_across_block_boundaries(tmp_path, monkeypatch, got, want, detail):
    """Numbers cut by a block boundary would come out as two numbers; with 7-byte blocks every
    number here crosses one, and the verdict is the whole-file verdict."""
    monkeypatch.setattr(check, "BLOCK", 7)
    (tmp_path / "got").write_bytes(got)
    (tmp_path / "want").write_bytes(want)
    assert check._tolerance(tmp_path / "got", tmp_path / "want", 1e-5).detail == detail


def test_a_check_on_a_full_disk_is_no_verdict(big, tmp_path, small_fs):
    """The product cut short by a full disk would read as "differs"; the check stops instead."""
    w = _workload(tmp_path, 8, 'method = "exact"')
    w = check.Invocation(w.target, w.input_path, small_fs.path / "scratch")
    with pytest.raises(FlagsweepError, match=rf"^the disk holding {small_fs.path}/scratch is full"
                       r".*free space there, then run again"):
        _verdicts(w, {"base": big["base"]}, "base")
