"""The one way flagsweep starts programs: argv lists, never a shell, always logged.

Every external command (compilers, cmake, apt-get, perf) goes through `run`, so a debug log
shows exactly what was executed, and no argument is ever re-parsed by /bin/sh.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger("flagsweep.process")


@dataclass(frozen=True)
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def tail(self, lines: int = 20) -> str:
        """The last lines of stderr (or stdout when stderr is empty): what a user needs to see."""
        text = self.stderr.strip() or self.stdout.strip()
        return "\n".join(text.splitlines()[-lines:])


def run(
    argv: Sequence[str | os.PathLike],
    *,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
    log_file: Path | None = None,
) -> Result:
    """Run argv and capture its output; never raises on a nonzero exit (callers decide).

    With log_file, stdout and stderr go (interleaved, as the program wrote them) to that file
    instead of memory: build logs are long and must survive a crash of flagsweep itself.
    Raises FileNotFoundError when the program does not exist, so callers can name it.
    """
    args = [os.fspath(a) for a in argv]
    log.debug("run: %s (cwd=%s)", shlex.join(args), cwd or ".")
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as out:
            out.write(f"$ {shlex.join(args)}\n".encode())
            out.flush()
            proc = subprocess.run(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout)
        return Result(args, proc.returncode, "", "")
    proc = subprocess.run(args, cwd=cwd, env=env, input=input, capture_output=True, text=True,
                          errors="replace", timeout=timeout,
                          stdin=None if input is not None else subprocess.DEVNULL)
    return Result(args, proc.returncode, proc.stdout, proc.stderr)
