"""The package's own test suite (`make check`, `ctest`, `meson test`), run once per variant
after its build: a flag that breaks the package is a finding beside its speed.

The target's build system is trusted as its Makefile is (docs/faults.md): its test command
runs in the variant's build tree, under the build's environment allow-list, with a timeout,
its output in the variant's folder.
"""

from __future__ import annotations

import time
from pathlib import Path

from flagsweep import model, process
from flagsweep.host import environment

TIMEOUT_S = 600.0
LOG = "tests.log"
TAIL_LINES = 15          # what of a failed suite's log the record keeps: its verdict lines
# GNU make's exit status with -q: 0 up to date, 1 to be made, 2 an error (no such target).
NO_TARGET = 2


def detect(tree: Path) -> list[str] | None:
    """The tree's own test command, by what its build system left there; None: it has none.
    For a Makefile, `make -q check` asks for the target without running its recipe."""
    if (tree / "CTestTestfile.cmake").is_file():
        return ["ctest", "--output-on-failure"]
    if (tree / "meson-private").is_dir():
        # in the tree it was set up in, with the variant's flags: its Ninja rebuild compiles
        # the test programs through the wrapper as the build did; a failing test's own log
        # goes to the output, so the record's tail says which and why
        return ["meson", "test", "--print-errorlogs"]
    if (tree / "Makefile").is_file():
        try:
            probe = process.run(["make", "-q", "check"], cwd=tree, timeout=60,
                                env=environment.build({}))
        except (FileNotFoundError, process.TimeoutExpired):
            return None
        if probe.returncode != NO_TARGET:
            return ["make", "check"]
    return None


def command(tree: Path, configured: list[str] | bool | None,
            make_variables: list[str] = ()) -> list[str] | None:
    """The target file's `[build] tests` (false: none), else what the tree shows; a detected
    `make check` is given the build's make variables (steps.make_variables)."""
    if configured is False:
        return None
    if isinstance(configured, list) and configured:
        return configured
    found = detect(tree)
    return [*found, *make_variables] if found and found[0] == "make" else found


def run(tree: Path, argv: list[str] | None, vdir: Path, timeout: float = TIMEOUT_S,
        variables: dict[str, str] | None = None,
        first: list[str] | None = None) -> model.PackageTests:
    """Run the suite in the tree; its status, time and (failed) the log's last lines.
    variables: the build's own beyond a clean environment (ccache's settings, LDFLAGS where
    make had them from the environment: steps.make_environment). first:
    the rest of a build made for one goal, which the suite's programs need (ctest builds
    none), run before it within the same timeout."""
    if argv is None:
        return model.PackageTests(status="none")
    log = vdir / LOG
    # the wrapper records what a test program compiles apart from the audited build's lines
    env = environment.build(variables or {}, vdir / "tests-compile.jsonl")
    started = time.monotonic()
    try:
        built = first is None or process.run(first, cwd=tree, env=env, timeout=timeout,
                                             log_file=log, guard=True).ok
        left = max(1.0, timeout - (time.monotonic() - started))
        done = process.run(argv, cwd=tree, env=env, timeout=left, log_file=log,
                           guard=True) if built else None
        status = "passed" if done is not None and done.ok else "failed"
    except process.TimeoutExpired:
        status = "timeout"
    except FileNotFoundError:
        log.write_text(f"{argv[0]}: no such program\n")
        status = "failed"
    seconds = round(time.monotonic() - started, 3)
    tail = None if status == "passed" else _tail(log)
    return model.PackageTests(status=status, command=argv, seconds=seconds,
                              log=str(log), tail=tail)


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(lines[-TAIL_LINES:])


def fails(tests: model.PackageTests | None, baseline: model.PackageTests | None) -> bool:
    """Its own tests fail where the baseline's pass: broken by its flags. A baseline whose
    suite fails too says the suite is broken here, not the variant."""
    return (tests is not None and tests.status in ("failed", "timeout")
            and (baseline is None or baseline.status in ("passed", "none")))
