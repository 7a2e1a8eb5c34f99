#!/usr/bin/env python3
"""How much a warm cache saves: `flagsweep build TARGET --recipe RECIPE`, cold, then again.

Every run gets a fresh output folder (so nothing is reused from a previous build tree); the
caches live in a private FLAGSWEEP_CACHE for this benchmark, seeded only with the verified
source tarball (downloading is not building). Three runs:
  cold        empty ccache, no cached configure tree
  warm        same caches again: ccache hits and the cached configure tree
  ccache-only configure trees deleted first: what ccache alone buys
Prints seconds per run and the ratios to the cold run (the target: warm <= 25% of cold).

Usage: python bench/ccache_rebuild.py [TARGET] [RECIPE]      (default: gzip olevels)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flagsweep.compilation import fetch
from flagsweep.experiment import target as target_mod


def seed_cache(name: str, cache: Path) -> None:
    """Put the target's verified tarball into the private cache (fetching it if needed)."""
    src = target_mod.load(name).tarball()
    if src is None:
        return
    tarball = fetch.fetch(src)
    (cache / "downloads").mkdir(parents=True)
    shutil.copy2(tarball, cache / "downloads" / tarball.name)


def timed_build(name: str, recipe: str, out: Path, cache: Path) -> float:
    env = dict(os.environ, FLAGSWEEP_CACHE=str(cache))
    env.pop("CCACHE_DIR", None)
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "flagsweep", "build", name, "--recipe", recipe,
                    "--out", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "gzip"
    recipe = sys.argv[2] if len(sys.argv) > 2 else "olevels"
    with tempfile.TemporaryDirectory(prefix="flagsweep-bench-") as tmp:
        root = Path(tmp)
        cache = root / "cache"
        seed_cache(name, cache)
        cold = timed_build(name, recipe, root / "cold", cache)
        warm = timed_build(name, recipe, root / "warm", cache)
        shutil.rmtree(cache / "configured")
        ccache_only = timed_build(name, recipe, root / "ccache-only", cache)
    print(f"flagsweep build {name} --recipe {recipe} on {os.cpu_count()} CPUs")
    print(f"  cold         {cold:7.1f} s")
    print(f"  warm         {warm:7.1f} s   {100 * warm / cold:5.1f}% of cold")
    print(f"  ccache-only  {ccache_only:7.1f} s   {100 * ccache_only / cold:5.1f}% of cold "
          "(configure trees deleted)")


if __name__ == "__main__":
    main()
