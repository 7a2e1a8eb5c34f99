"""The table of two-word options against the real drivers: every option listed for a family
takes the next word as its value there, and the ones kept out of a family's list do not."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from flagsweep.compilation import cmdline

NOT_A_FLAG = "-fzz-not-a-flag"     # what the driver says of it shows how it read the word


def _read_as_option(compiler: str, option: str, words: int, tmp_path) -> bool:
    """Whether the driver read the word after the option as an option of its own."""
    source = tmp_path / "x.c"
    source.write_text("int x;\n")
    done = subprocess.run([compiler, "-O2", option, *[NOT_A_FLAG] * words, "-c", str(source),
                           "-###"], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    return re.search(rf"(unrecognized command[- ]line option|unknown argument):? "
                     rf"['\u2018]{NOT_A_FLAG}", done.stderr) is not None


@pytest.mark.parametrize("family", ["gcc", "clang"])
def test_every_listed_option_takes_the_next_word_as_its_value(family, tmp_path):
    if shutil.which(family) is None:
        pytest.skip(f"{family} is not installed")
    misread = [option for option, words in cmdline.SEPARATE[family].items()
               if _read_as_option(family, option, words, tmp_path)]
    assert misread == []


@pytest.mark.parametrize("family, others", [("gcc", cmdline.CLANG_ONLY), ("clang", cmdline.GCC_ONLY)])
def test_an_option_of_the_other_family_is_not_a_value_here(family, others, tmp_path):
    """Where the families differ, the list must follow the compiler that ran: -aux-info -O0 is
    a file named -O0 to gcc and an -O0 to clang 14."""
    if shutil.which(family) is None:
        pytest.skip(f"{family} is not installed")
    read_alike = [option for option in others if option not in cmdline.SEPARATE[family]
                  and not _read_as_option(family, option, others[option], tmp_path)
                  and _known(family, option, tmp_path)]
    assert read_alike == []


def _known(compiler: str, option: str, tmp_path) -> bool:
    """The driver knows the option at all (one it rejects fails the compile: nothing to read)."""
    source = tmp_path / "x.c"
    source.write_text("int x;\n")
    done = subprocess.run([compiler, option, "v", "-c", str(source), "-###"], capture_output=True,
                          text=True, env={**os.environ, "LC_ALL": "C"})
    return re.search(rf"(unrecognized command[- ]line option|unknown argument|unsupported "
                     rf"option):? ['\u2018]{re.escape(option)}['\u2019 ]", done.stderr) is None


def test_a_value_is_never_read_as_a_flag_or_an_input():
    argv = ["gcc", "-I", "inc", "-include", "config.h", "-MF", "-O3", "-x", "c", "b.txt",
            "-x", "none", "a.o", "-o", "prog"]
    words = cmdline.split(argv)
    assert [w.text for w in words if not w.option] == ["b.txt", "a.o"]
    assert [w.language for w in words if not w.option] == ["c", None]
    assert cmdline.output(argv) == "prog"
