"""Finding what breaks a failed candidate: one flag by halving, or the flags that break it only
together, reduced within the probes it may spend; on synthetic failures and on a real one."""

from __future__ import annotations

import math
import random
import shutil
import subprocess

import pytest
from tiny_target import REFUSES_BOTH, tiny_refusing_both, write_tiny_target

from flagsweep.compilation import variants
from flagsweep.experiment import target
from flagsweep.measure.options import MeasureOptions
from flagsweep.tune import batch, culprit


def test_halving_finds_one_culprit():
    calls = []

    def fails(part):
        calls.append(part)
        return "-fbad" in part

    flags = tuple(f"-f{i}" for i in range(7)) + ("-fbad",)
    assert culprit.culprit(flags, fails) == culprit.Found(("-fbad",), True)
    assert len(calls) <= 2 * math.ceil(math.log2(len(flags)))
    # halving is never cut short: no time for more still finds the one flag
    assert culprit.culprit(flags, fails, lambda: False).flags == ("-fbad",)


@pytest.mark.parametrize("seed", range(5))
def test_flags_that_fail_only_together_are_reduced_to_exactly_those(seed):
    rng = random.Random(seed)
    flags = tuple(f"-f{i}" for i in range(40))
    needed = set(rng.sample(flags, 3))
    calls = []

    def fails(part):
        calls.append(part)
        return needed <= set(part)

    found = culprit.culprit(flags, fails)
    assert set(found.flags) == needed and found.minimal
    assert list(found.flags) == [f for f in flags if f in needed]      # in the set's order
    assert len(calls) < len(flags)       # fewer probes than leaving out one flag at a time


def test_two_flags_needed_together_stay_two():
    found = culprit.culprit(("-fa", "-fb"), lambda part: set(part) == {"-fa", "-fb"})
    assert found == culprit.Found(("-fa", "-fb"), True)


def test_a_reduction_out_of_probes_keeps_a_smaller_set_that_still_fails():
    flags = tuple(f"-f{i}" for i in range(40))
    needed = {"-f3", "-f17", "-f31"}
    calls = []

    def fails(part):
        calls.append(part)
        return needed <= set(part)

    found = culprit.culprit(flags, fails, lambda: len(calls) < 12)
    assert not found.minimal and len(calls) == 12
    assert needed <= set(found.flags) and len(found.flags) < len(flags)
    assert fails(found.flags)


# glibc's fortified open() (bits/fcntl2.h) calls __open_too_many_args, declared with
# attribute error, on a branch that gcc removes only if its constant and copy propagation run:
# a gzip tune's candidate that turned them all off failed to build with 106 changes, and none
# of them alone or in either half fails. These eight do together, with gcc 12 and glibc 2.36.
FORTIFY_NEEDS = ("-fno-code-hoisting", "-fno-tree-ccp", "-fno-tree-copy-prop",
                 "-fno-tree-dominator-opts", "-fno-tree-forwprop", "-fno-tree-fre",
                 "-fno-tree-pre", "-fno-tree-vrp")
OTHERS = ("-fno-align-jumps", "-fassociative-math", "-fno-branch-count-reg", "-fno-dce",
          "-fno-defer-pop", "-fno-dse", "-fno-early-inlining", "-ffinite-math-only",
          "-fno-forward-propagate", "-fno-gcse", "-fgcse-las", "-fno-guess-branch-probability",
          "-fno-inline", "-fno-inline-functions", "-fno-inline-small-functions", "-fno-ipa-cp",
          "-fipa-pta", "-fno-ipa-vrp", "-floop-unroll-and-jam", "-fno-omit-frame-pointer",
          "-fno-partial-inlining", "-fpeel-loops", "-fno-peephole2", "-freciprocal-math")
OPEN = "#include <fcntl.h>\nint f(const char *p, int m) { return open(p, O_RDONLY | m, 0600); }\n"


def test_a_real_build_failure_that_needs_eight_switches_together(tmp_path):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    source = tmp_path / "open.c"
    source.write_text(OPEN)

    def fails(part):
        argv = [gcc, "-O2", "-D_FORTIFY_SOURCE=2", *part, "-c", str(source), "-o", "/dev/null"]
        return subprocess.run(argv, capture_output=True).returncode != 0

    if fails(()) or not fails(FORTIFY_NEEDS):
        pytest.skip("this gcc and C library do not fail on these eight switches together")
    # interleaved as a tune's set is: sorted, the needed ones among the others
    flags = tuple(sorted(FORTIFY_NEEDS + OTHERS, key=lambda f: f.removeprefix("-fno-")))
    assert fails(flags)
    found = culprit.culprit(flags, fails)
    assert found.minimal and set(found.flags) == set(FORTIFY_NEEDS)
    assert all(not fails(tuple(f for f in found.flags if f != left)) for left in found.flags)


@pytest.mark.integration
def test_a_probe_counts_only_the_builds_it_made(tmp_path, monkeypatch):
    """The tune's cost counts a probe's builds: the base, built by the first probe, and any
    part built before come from the build cache and are no build; a failed build is one."""
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(tmp_path / "cache"))     # nothing built yet
    t = target.load(str(write_tiny_target(tmp_path / "tiny",
                                          source=tiny_refusing_both(tmp_path / "src"))))
    s = batch.Setting(t, "gcc", ("-O2",), variants.Options(out_dir=tmp_path / "out", jobs=1),
                      MeasureOptions(), None, print)
    probe = culprit.Probe(s, tmp_path / "probes", "build")
    assert not probe(REFUSES_BOTH[1:]) and probe.builds == 2       # the base and the part
    assert not probe(REFUSES_BOTH[:1]) and probe.builds == 3       # the base is cached
    assert not probe(REFUSES_BOTH[1:]) and probe.builds == 3       # so is a part built before
    assert probe(REFUSES_BOTH) and probe.builds == 4 and probe.n == 4
