"""How long `flagsweep dashboard` takes on a store of 1,000 sweeps, and how big the site is.

    nice -n 10 .venv/bin/python bench/dashboard.py                    # 5 x 2 x 100 = 1,000 sweeps
    nice -n 10 .venv/bin/python bench/dashboard.py --nights 20        # a quick look
    nice -n 10 .venv/bin/python bench/dashboard.py --store /tmp/d.sqlite   # keep the store
    .venv/bin/python bench/dashboard.py --nights 40 --screenshot docs/img/dashboard.png

`--screenshot PNG`: the first target's page, its first CPU's section, in headless Chromium
through the tests' harness (tests/browser.py), as docs/dashboard.md shows it.

A synthetic SQLite store, written through the Store API as a sweep writes one (create_run,
save_variants, the samples of a run in one add_pair transaction, finish_run): 5 targets x 2
CPUs x N nights, each night four variants (gcc -O2, the baseline, and -O3; clang -O2 and
-O3), the baseline's A/A twin and a reference arm (`.ref`, the same binary every night), 10
rounds of wall time at CV 1%. Every binary of a night shares the machine's level that night
(N(0, 2%): the drift the reference divides out). Planted: gcc -O3 8% slower from 60% of the
nights on, with the target's version 1.0 -> 1.1; clang -O3 6% faster from 80% on, with clang
17 -> 18; every 23rd night on the first CPU, every 17th on the second, the A/A twin 10% slower
(an unstable night: unjudged).
Nights are a day apart (their `started` set after the fact: the store stamps the write's time).

Printed: the store's size, then the dashboard's time (report.write_dashboard) and its parts:
reading the store and detecting steps (history.collect, per target), the pages' views
(dashboard.build less that) and rendering and writing (the rest), each the fastest of
--repeats; the site's files and bytes. Seeded: the same command writes the same store.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flagsweep import report  # noqa: E402
from flagsweep.across import history  # noqa: E402
from flagsweep.measure.sample import Sample  # noqa: E402
from flagsweep.results import tables  # noqa: E402
from flagsweep.report import dashboard  # noqa: E402
from flagsweep.results.store import Store  # noqa: E402

SEED = 20261206
TARGETS = ("gzip", "lame", "bzip2", "xz", "zstd")
CPUS = ("Bench CPU A", "Bench CPU B")
ROUNDS = 10
CV = 0.01
DAY = 86400.0
VARIANTS = {"gcc-O2": ("gcc", ["-O2"]), "gcc-O3": ("gcc", ["-O3"]),
            "clang-O2": ("clang", ["-O2"]), "clang-O3": ("clang", ["-O3"]),
            "gcc-O2.aa": ("gcc", ["-O2"]), "gcc-O2.ref": ("gcc", ["-O2"])}


def variant(vid: str) -> dict:
    compiler, flags = VARIANTS[vid]
    build = {"status": "ok", "binary": f"/tmp/{vid}/bin", "code_sha256": vid}
    doc = {"id": vid, "compiler": compiler, "flags": flags, "build": build}
    if vid.endswith(".aa"):
        doc["aa_of"] = "gcc-O2"
    if vid.endswith(".ref"):
        doc["reference_of"] = "gcc-O2"
        build["reference_sha256"] = "ef" * 32
    return doc


def options(version: str, clang: str) -> dict:
    return {"target_version": version, "baseline": "gcc-O2", "design": "factorial",
            "measure": {"seed": 1, "metric": "wall", "threshold_pct": 1.0, "runs": ROUNDS},
            "compilers": [{"name": "gcc", "path": "/usr/bin/gcc", "version": "13.2.0"},
                          {"name": "clang", "path": "/usr/bin/clang", "version": clang}]}


def speeds(night: int, nights: int, cpu: int) -> dict[str, float]:
    """Each variant's level that night against the baseline's, the plants in it."""
    late, later = night >= 0.6 * nights, night >= 0.8 * nights
    shaky = night % (23 if cpu == 0 else 17) == 16
    return {"gcc-O2": 1.0, "gcc-O2.aa": 1.1 if shaky else 1.0, "gcc-O2.ref": 0.97,
            "gcc-O3": 0.95 * (1.08 if late else 1.0), "clang-O2": 1.02,
            "clang-O3": 0.96 * (0.94 if later else 1.0)}


def night_samples(rng: np.random.Generator, levels: dict[str, float], t0: float) -> list[Sample]:
    drift = float(np.exp(rng.normal(0, 0.02)))
    out = []
    for rnd in range(ROUNDS):
        for position, vid in enumerate(rng.permutation(list(levels))):
            wall = float(levels[vid] * drift * np.exp(rng.normal(0, CV)))
            out.append(Sample(str(vid), rnd, position, 0, wall_s=wall, user_s=wall * 0.98,
                              sys_s=0.01, maxrss_kb=5000, counters={},
                              taken_at=t0 + rnd * 10.0 + position))
    return out


def fill(store: Store, nights: int, folder: Path) -> int:
    """The synthetic store; returns the number of sweeps written."""
    rng = np.random.default_rng(SEED)
    start, started = time.time() - nights * DAY, {}
    for t, target in enumerate(TARGETS):
        for c, cpu in enumerate(CPUS):
            machine = {"hostname": f"box{c}", "cpu_model": cpu, "family": "6", "model": "1",
                       "microcode": "0x1", "cpu_flags": ["sse2", "avx2"]}
            for night in range(nights):
                run_id = f"{target}-{c}-{night:04d}"
                version = "1.1" if night >= 0.6 * nights else "1.0"
                clang = "18.1.3" if night >= 0.8 * nights else "17.0.6"
                store.create_run(run_id, target, "olevels", folder / run_id,
                                 options(version, clang), machine)
                store.save_variants(run_id, [variant(v) for v in VARIANTS])
                started[run_id] = start + night * DAY + t * 600 + c * 60
                store.add_pair(run_id, night_samples(rng, speeds(night, nights, c),
                                                     started[run_id]))
                store.finish_run(run_id, "complete", f"the fixed {ROUNDS} rounds are done")
    with store.engine.begin() as db:           # a night a day, not a run a few milliseconds
        for run_id, t in started.items():
            db.execute(tables.runs.update().where(tables.runs.c.run_id == run_id)
                       .values(started=t))
    return len(started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nights", type=int, default=100)
    ap.add_argument("--store", type=Path, help="SQLite file to write (or reuse when it exists)")
    ap.add_argument("--screenshot", type=Path, help="PNG of the first target's page")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    path = args.store or scratch / "store.sqlite"
    store = Store(f"sqlite:///{path}")
    if not store.targets():
        t = time.perf_counter()
        n = fill(store, args.nights, scratch)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))  # and -wal
        print(f"store: {n} sweeps written in {time.perf_counter() - t:.1f} s, {size / 1e6:.1f} MB")
    timings = []
    for _ in range(args.repeats):      # the machine is shared: the fastest of a few
        t = time.perf_counter()
        series = {name: history.collect(store, name) for name in store.targets()}
        t1 = time.perf_counter()
        d = dashboard.build(store)
        t2 = time.perf_counter()
        index = report.write_dashboard(store, scratch / "site")
        timings.append((t1 - t, t2 - t1, time.perf_counter() - t2))
    collected, built, whole = (min(column) for column in zip(*timings))
    files = sorted(index.parent.iterdir())
    size = sum(f.stat().st_size for f in files)
    print(f"series: {sum(map(len, series.values()))} over {len(series)} targets")
    print(f"dashboard: {whole:.1f} s; alone, history.collect {collected:.1f} s and "
          f"dashboard.build (collect and the pages' views) {built:.1f} s, so rendering and "
          f"writing {whole - built:.1f} s (fastest of {args.repeats}; {len(d.rows)} index rows)")
    print(f"site: {len(files)} files, {size / 1e6:.2f} MB (largest "
          f"{max(f.stat().st_size for f in files) / 1e3:.0f} kB) in {index.parent}")
    planted = {"gcc-O3": int(np.ceil(0.6 * args.nights)), "clang-O3": int(np.ceil(0.8 * args.nights))}
    steps = [(s.variant, int(st.run_id.rsplit("-", 1)[1])) for all_ in series.values()
             for s in all_ for st in s.steps]
    others = sorted((v, night) for v, night in steps if planted.get(v) != night)
    print(f"steps: {len(steps) - len(others)} of {2 * len(TARGETS) * len(CPUS)} planted found "
          f"on their night; {len(others)} others over {sum(map(len, series.values()))} series "
          f"of {args.nights} nights (variant, night): {others}")
    if args.screenshot:
        screenshot(index.parent / dashboard.page_file(store.targets()[0]), args.screenshot)


def screenshot(page: Path, png: Path) -> None:
    """The page's top, 1000 x 1300 CSS pixels, as the harness of the browser tests takes it."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from browser import Browser, chromium_path

    with Browser(chromium_path() or "chromium") as b:
        load = b.open(page, screenshot=png, width=1000, height=1300, full_page=False)
    assert load.console_errors == [] and load.external_requests == [], load
    from PIL import Image        # matplotlib's own dependency: a palette, a third of the bytes

    Image.open(png).quantize(256, dither=Image.Dither.NONE).save(png, optimize=True)
    print(f"screenshot: {png} ({png.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
