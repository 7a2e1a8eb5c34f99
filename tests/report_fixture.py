"""A results.json made for the report tests: every verdict, failures, identical code, an A/A
arm, a differing output, and names that try to be HTML. Its statistics are not written by hand:
seeded synthetic samples go through flagsweep.results.analysis.apply, as a real run's do."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from flagsweep.results import analysis

ROUNDS = 12
EVIL = "<script>alert('x')</script>"
# id -> (flags, true ratio to the baseline, noise CV); None: never measured
PLAN = {
    "gcc-O2": (["-O2"], 1.0, 0.004),
    "gcc-O2.aa": (["-O2"], 1.0, 0.004),
    "gcc-O3": (["-O3"], 0.90, 0.004),                     # faster
    "gcc-O0": (["-O0"], 2.10, 0.004),                     # slower
    "gcc-O1": (["-O1"], 1.0, 0.002),                      # equivalent
    "gcc-Os": (["-Os"], 1.008, 0.05),                     # inconclusive: a lot of noise
    "gcc-O3-mfpmath-sse": (["-O3", "-mfpmath=sse"], None, 0),       # identical code to gcc-O3
    "gcc-O2-fbroken": (["-O2", "-fbroken"], None, 0),               # build failed
    "gcc-O2-fsneaky": (["-O2", "-fsneaky"], None, 0),               # flags did not reach
    "gcc-O2-evil": (["-O2", f"-DNAME={EVIL}"], 1.0, 0.004),         # output differs; HTML name
}


def results_doc(*, counters: bool = False, study: bool = False, seed: int = 5,
                scale: dict[str, float] | None = None) -> dict:
    """The document; `counters` adds hardware counter columns, `scale` multiplies a variant's
    samples (a second sweep where something moved)."""
    rng = np.random.default_rng(seed)
    variants, values = [], {}
    for vid, (flags, ratio, cv) in PLAN.items():
        v = _variant(vid, flags)
        if ratio is not None:
            wall = [float(ratio * (scale or {}).get(vid, 1.0) * np.exp(rng.normal(0, cv)))
                    for _ in range(ROUNDS)]
            values[vid] = dict(enumerate(wall))
            v["samples"] = _samples(wall, counters, rng)
        variants.append(v)
    doc = _header(counters, study)
    doc["variants"] = variants
    analysis.apply(doc, values, doc["threshold_pct"], seed=1)
    return json.loads(json.dumps(doc))  # strict JSON, as results.write makes it


def write(folder: Path, doc: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "builds" / "gcc-O2").mkdir(parents=True, exist_ok=True)
    (folder / "builds" / "gcc-O2" / "build.log").write_text("built\n")
    path = folder / "results.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def _variant(vid: str, flags: list[str]) -> dict:
    build = {"status": "ok", "seconds": 1.5, "log": f"builds/{vid}/build.log",
             "binary": f"/tmp/{vid}/bin", "code_sha256": vid, "size_bytes": 100_000,
             "identical_to": None, "flags_verified": True, "detail": "",
             "audit": {"verified": True, "compiles": 3, "links": 1, "problems": [],
                       "tolerated_seen": [], "compile_line": ["gcc", *flags, "-c", "a.c"]}}
    check = {"status": "ok", "detail": "reference output (the baseline's)"}
    if vid == "gcc-O3-mfpmath-sse":
        build["identical_to"] = "gcc-O3"
    if vid == "gcc-O2-fbroken":
        build.update(status="failed", binary=None, size_bytes=None, flags_verified=False,
                     detail="exit status 1; gcc: error: unrecognized option '-fbroken'", audit=None)
        check = None
    if vid == "gcc-O2-fsneaky":
        build.update(status="flags-mismatch", flags_verified=False,
                     detail="compile line lacks -fsneaky: gcc -O2 -c b.c")
        check = None
    if vid == "gcc-O2-evil":
        check = {"status": "differs", "detail": f"output differs at byte 3 {EVIL}"}
    return {"id": vid, "compiler": "gcc", "flags": flags,
            "factors": {"opt": " ".join(flags)} if not vid.endswith(".aa") else {"opt": "-O2"},
            "build": build, "check": check, "samples": {}, "failures": [], "multiplexed": 0}


def _samples(wall: list[float], counters: bool, rng) -> dict:
    cols = {"wall_s": wall, "user_s": [w * 0.98 for w in wall], "sys_s": [0.01] * len(wall),
            "maxrss_kb": [5000] * len(wall), "round": list(range(len(wall))),
            "elapsed_s": [float(i * 10 + rng.uniform(0, 5)) for i in range(len(wall))],
            "context_switches": [3] * len(wall), "page_faults": [600] * len(wall)}
    if counters:
        cols["cycles"] = [w * 3e9 for w in wall]
        cols["instructions"] = [w * 6e9 for w in wall]          # IPC 2
        cols["branch_misses"] = [w * 6e6 for w in wall]         # 1 per 1,000 instructions
        cols["cache_misses"] = [w * 3e6 for w in wall]          # 0.5 per 1,000 instructions
    return cols


def _header(counters: bool, study: bool) -> dict:
    doc = {
        "schema": "flagsweep/1", "run_id": "evil-20261122-000000",
        "target": f"tiny{EVIL}", "target_version": "1.0", "recipe": "olevels",
        "started": "2026-11-22T10:00:00Z", "finished": "2026-11-22T10:05:00Z",
        "status": "complete", "stop_reason": "12 rounds (--runs)",
        "machine": {"hostname": "box", "cpu_model": "Test CPU", "march_native": "znver4",
                    "isa_levels": ["x86-64", "x86-64-v2"], "kernel": "6.1", "hypervisor": False,
                    "governor": "performance", "boost": False, "isolated_cpus": [1], "nohz_full": [1],
                    "cpu_count": 2, "load_avg": [0.0, 0.0, 0.0], "aslr": 2,
                    "pinned_cpu": 1, "hw_counters": counters},
        "compilers": [{"name": "gcc", "path": "/usr/bin/gcc", "version": "12.2.0"}],
        "metric": "wall_s",
        "workload": {"argv": ["{binary}", "{input}"], "inputs": ["/tmp/in"], "stdout": "compared",
                     "input_sha256": "ab" * 32, "input": "corpus: 1 MB", "target_file": "/x/target.toml"},
        "baseline": "gcc-O2", "design": "factorial", "skipped": [
            {"id": "gcc-O2-march-x86-64-v4", "flags": ["-O2", "-march=x86-64-v4"],
             "reason": "this CPU lacks avx512f"}],
        "measurement": {"seed": 42, "warmup": 1, "min_runs": 12, "max_runs": 12, "runs": 12,
                        "budget": 1800.0, "precision_pct": 1.0, "cpu": 1, "quick": False,
                        "strict_check": False, "counters": "auto", "threshold_pct": 1.0},
        "threshold_pct": 1.0,
    }
    if study:
        doc["study"] = {"title": "A study", "question": "Do the old flags still matter?",
                        "factor": "opt", "baseline": "-O2",
                        "machines": [{"name": "Old box", "seconds": {"-O2": 100, "-O0": 250,
                                                                      "-O3": 95}}]}
    return doc
