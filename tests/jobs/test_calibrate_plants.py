"""calibrate's planted effects are the size it states: each plant's share of the whole run's
instructions, counted by Cachegrind (deterministic counts, not timing)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from flagsweep.jobs import calibration
from flagsweep.host import probes
from flagsweep.workload.corpus import corpus_bytes

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                    reason="needs valgrind and gcc")

# A plant may be off its stated size by this share of it (calibrate's acceptance: +3% stated
# must count between +2.7% and +3.3% of the instructions).
TOLERANCE = 0.10


def _instructions(binary: Path, argv: list[str], corpus: Path, tmp_path: Path) -> int:
    args = [a.format(binary=binary, input=corpus) for a in argv]
    return probes.cachegrind_instructions(args, env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path,
                                          timeout=120, out_dir=tmp_path / "cg")


@needs_valgrind
def test_each_planted_effect_is_its_stated_share_of_the_run_s_instructions(tmp_path):
    t = calibration.workload()
    src = t.local_source()
    # The calibration's own program, argv and kind of input; a smaller corpus keeps Cachegrind
    # fast (whole extra rounds are their share of the work at any input size).
    corpus = tmp_path / "corpus.bin"
    corpus.write_bytes(corpus_bytes(3_000, t.spec.inputs.seed))
    counts = []
    for i, flags in enumerate(calibration.flag_sets()):
        binary = tmp_path / f"tiny{i}"
        subprocess.run(["gcc", *flags.split(), "-o", str(binary), str(src / "main.c"),
                        str(src / "kernel.c"), "-lm"], check=True)
        counts.append(_instructions(binary, t.spec.run.argv, corpus, tmp_path))
    base, planted = counts[0], counts[1:]
    shares = {pct: n / base - 1 for pct, n in zip(calibration.PLANTED_PCT, planted)}
    for pct, share in shares.items():
        assert abs(share - pct / 100) <= TOLERANCE * pct / 100, (
            f"planted +{pct}% counts {share:+.2%} of the instructions ({counts})")
