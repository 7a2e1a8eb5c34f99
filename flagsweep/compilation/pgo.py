"""Profile-guided builds: instrument, train, build again with the profile, and prove it was used.

A PGO variant's build step (steps.build) runs three stages in its own tree:

  1. the variant's flags plus the compiler's instrumentation flags (`generate`);
  2. the training run: the target's own command on a training input that is not the measured
     one (the target's input made from another seed, at the quick size), and for clang the
     raw profiles merged by llvm-profdata;
  3. `clean`, then the variant's flags plus the profile flags (`use`), which are the flags the
     audit checks on every compile of this last stage.

The tree stays where it is between 1 and 3: gcc names each object's profile after the object's
path, so the same tree is what makes the profiles match their objects. Whether they matched
is read from the last stage's build log, where both compilers say so (`mismatched`): a profile
that does not fit its code (a checksum or counter mismatch, out of date, corrupt) fails the
build. A missing one is expected for an object the measured program never linked or the
training never reached, so those are counted (`missing`), and the build fails only when no
compile of the last stage found its profile. The profile's sha256 and the training command are
recorded as `build.pgo`.
"""

from __future__ import annotations

import re
from pathlib import Path

from flagsweep import files

# The compilers' own words, in the last stage's log, for a profile that does not fit its code,
# and for one that is not there.
MISMATCH = re.compile(r"coverage mismatch|-Wcoverage-mismatch|control flow checksum|"
                      r"number of counters|profile data may be out of date|"
                      r"profile data may be corrupt|-Wprofile-instr-out-of-date|"
                      r"-Wbackend-plugin", re.IGNORECASE)
MISSING = re.compile(r"profile count data file not found|no profile data available|"
                     r"-Wprofile-instr-missing", re.IGNORECASE)
PROFILE_DIR = "profile"
PROFDATA = "merged.profdata"
PROFILE_FILES = (".gcda", ".profdata")


def generate(family: str, profile_dir: Path) -> list[str]:
    """The instrumentation flags of stage 1."""
    if family == "clang":
        return [f"-fprofile-instr-generate={profile_dir}/%m-%p.profraw"]
    return [f"-fprofile-generate={profile_dir}", "-fprofile-update=single"]


def use(family: str, profile_dir: Path) -> list[str]:
    """The profile flags of stage 3; -Wmissing-profile makes gcc name every object without one
    (clang warns of out-of-date profiles by default)."""
    if family == "clang":
        return [f"-fprofile-instr-use={profile_dir / PROFDATA}"]
    return [f"-fprofile-use={profile_dir}", "-Wmissing-profile"]


def mismatched(log_text: str) -> list[str]:
    """The lines of a build log where the compiler said a profile did not fit its code."""
    return [line.strip() for line in log_text.splitlines() if MISMATCH.search(line)]


def missing(log_text: str) -> int:
    """How many times the compiler said an object's profile was not there."""
    return sum(1 for line in log_text.splitlines() if MISSING.search(line))


def profile_sha256(profile_dir: Path) -> str | None:
    """sha256 over the profile files (their paths and bytes); None when there are none."""
    def profile(name: str) -> bool:
        return name.endswith(PROFILE_FILES)

    if not any(p.is_file() and profile(p.name) for p in profile_dir.rglob("*")):
        return None
    return files.sha256_tree(profile_dir, only=profile)
