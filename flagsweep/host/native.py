"""The small C programs flagsweep builds for itself: the compiler wrapper and the launcher.

Each is compiled once per configuration into the cache, with a key file beside it, so a new
flagsweep version or another compiler rebuilds it and nothing else does.
"""

from __future__ import annotations

import functools
import shutil
import signal
import tempfile
from pathlib import Path

from flagsweep import caches, files, process
from flagsweep.errors import BuildError
from flagsweep.host import environment

HERE = Path(__file__).parent


def build_tool(source: Path, dest: Path, cc: str | Path, defines: dict[str, str],
               static: bool = False) -> Path:
    """Compile source into dest unless the one there was built from the same inputs."""
    flags = [f"-D{name}={value}" for name, value in sorted(defines.items())]
    key = files.key_sha256([source.read_text(), str(cc), flags, static])
    stamp = dest.with_name(dest.name + ".key")
    if dest.exists() and stamp.exists() and stamp.read_text() == key:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Renamed into place: a concurrent sweep sees the old program or the new one.
    with files.replacing(dest) as draft:
        argv = [str(cc), "-O2", "-o", str(draft), str(source), *flags]
        env = environment.build({})    # a cc1 planted through GCC_EXEC_PREFIX is not run
        result = process.run(argv + (["-static"] if static else []), env=env)
        if not result.ok and static:  # no static libc installed: a dynamic one is still correct
            result = process.run(argv, env=env)
        if not result.ok:
            raise BuildError(f"could not build {source.name} with {cc}: {result.tail(5)}")
    files.write_atomic(stamp, key)
    return dest


@functools.lru_cache(maxsize=None)
def launcher() -> Path:
    """The workload launcher (launch.c), built static so its own footprint stays tiny; checked
    once per process (not once per run: it sits on the measuring path)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise BuildError("no C compiler on PATH to build flagsweep's launcher (apt-get install gcc)")
    return build_tool(HERE / "launch.c", caches.TOOLS.entry("launch"), cc, {}, static=True)


@functools.lru_cache(maxsize=None)
def probe_runs(compiler: str, options: tuple[str, ...]) -> bool | None:
    """Whether a small program built with these target options runs on this CPU: True when it
    ran, False when it died of SIGILL, None when it could not be built or failed otherwise.

    probe.c has loops gcc and clang vectorise at -O3 with the widest vectors the options allow,
    plus bit counting and byte swapping, so the instructions the options let the compiler emit
    for ordinary code are executed, not only assembled.
    """
    with tempfile.TemporaryDirectory(prefix="flagsweep-probe-") as folder:
        binary = Path(folder) / "probe"
        built = process.run([compiler, "-O3", *options, "-o", str(binary), str(HERE / "probe.c")],
                            env=environment.build({}))
        if not built.ok:
            return None
        try:
            result = process.run([str(binary)], timeout=60)
        except process.TimeoutExpired:
            return None
    if result.returncode == -signal.SIGILL:
        return False
    return True if result.returncode == 0 else None
