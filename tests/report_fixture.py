"""A results.json made for the report tests: every verdict, failures, identical code, an A/A
arm, a differing output, and names that try to be HTML. Nothing in it is written by hand: a
run is recorded in a store as a sweep records one (its options, its variants' builds and
checks, one Sample per variant and round, seeded and synthetic) and writer.write makes the
document, so a key renamed in the writer is renamed here too."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from flagsweep.measure.sample import Sample
from flagsweep.model import AA_SUFFIX, REF_SUFFIX, FunctionRemarks, Results
from flagsweep.results import reader, writer
from flagsweep.results.store import Store

ROUNDS = 12
EVIL = "<script>alert('x')</script>"
RUN_ID = "evil-20261122-000000"
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
    """The document of PLAN; `counters` adds hardware counter columns, `scale` multiplies a
    variant's samples (a second sweep where something moved)."""
    plan = {vid: (flags, None if ratio is None else ratio * (scale or {}).get(vid, 1.0), cv)
            for vid, (flags, ratio, cv) in PLAN.items()}
    return sweep_doc(plan, counters=counters, study=study, seed=seed)


# Escape sequences a results file's author can put in any string: set the terminal's title,
# clear its screen.
TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J"


def escaping_doc() -> dict:
    """The document of PLAN with both sequences in the target's name, a variant's id (wherever
    the document names it), a flag, the failed build's detail and why, and the stop reason."""
    doc = results_doc()
    doc["target"] += TITLE
    doc["stop_reason"] += CLEAR
    failed = "gcc-O2-fbroken"
    doc = json.loads(json.dumps(doc).replace(f'"{failed}', json.dumps(failed + TITLE)[:-1]))
    for v in doc["variants"]:
        if v["id"] == "gcc-O0":
            v["flags"] = ["-O0", f"-DX={CLEAR}"]
        if v["id"] == failed + TITLE:
            v["build"]["detail"] += CLEAR + TITLE
            v["vs_baseline"]["why"] += CLEAR + TITLE
    return doc


def model(doc: dict) -> Results:
    """A fixture document as the report reads it: the contract's model, as reader.load gives."""
    return reader.validate(doc, "fixture results.json")


def sweep_doc(plan: dict[str, tuple[list[str], float | None, float]], *, rounds: int = ROUNDS,
              seed: int = 5, counters: bool = False, study: bool = False,
              checks: dict[str, dict | None] | None = None,
              factors: dict[str, dict] | None = None) -> dict:
    """writer.write's document for a sweep of `plan` (id -> flags, true ratio to the
    baseline or None for never measured, noise CV), the first id its baseline, `rounds`
    rounds; `checks` and `factors` replace a variant's output check and factor levels."""
    key = json.dumps([plan, rounds, seed, counters, study, checks, factors], sort_keys=True)
    if key not in _written_before:
        _written_before[key] = json.dumps(_sweep_doc(plan, rounds, seed, counters, study,
                                                     checks, factors))
    return json.loads(_written_before[key])  # a copy: tests change their documents


_written_before: dict[str, str] = {}   # a document per arguments: the writer is not cheap


# tiny's two complete nights without a reference arm, -O3 10% faster than -O2 on both
NIGHTS_PLAN = {"gcc-O2": (["-O2"], 1.0, 0.004), "gcc-O2.aa": (["-O2"], 1.0, 0.004),
               "gcc-O3": (["-O3"], 0.9, 0.004)}


def two_nights(store: Store, folder: Path) -> None:
    """NIGHTS_PLAN recorded in `store` as runs tiny-night-1 and -2, their folders in `folder`."""
    for night in (1, 2):
        recorded(store, f"tiny-night-{night}", "tiny", NIGHTS_PLAN,
                 out=folder / f"night-{night}", seed=night)


def recorded(store: Store, run_id: str, target: str, plan: dict, *, out: Path,
             rounds: int = ROUNDS, seed: int = 5) -> None:
    """A complete sweep of `plan` (as sweep_doc's) recorded in `store` as run `run_id` of
    `target`, as a sweep records one: what history and report RUN_ID read."""
    _record(store, run_id, target, out, *_planned(plan, rounds, seed, False, False, None, None),
            counters=False)


def _sweep_doc(plan, rounds, seed, counters, study, checks, factors) -> dict:
    return _written(*_planned(plan, rounds, seed, counters, study, checks, factors), counters)


def _planned(plan, rounds, seed, counters, study, checks, factors) -> tuple:
    """The run's options, its variants' documents, their checks and the samples taken."""
    rng = np.random.default_rng(seed)
    docs, checked, taken = [], {}, {}
    for vid, (flags, ratio, cv) in plan.items():
        doc, check = _variant(vid, flags)
        if factors and vid in factors:
            doc["factors"] = factors[vid]
        docs.append(doc)
        checked[vid] = (checks or {}).get(vid, check)
        if ratio is not None:
            wall = [float(ratio * np.exp(rng.normal(0, cv))) for _ in range(rounds)]
            taken[vid] = (wall, [float(i * 10 + rng.uniform(0, 5)) for i in range(rounds)])
    return _options(counters, study, next(iter(plan)), rounds), docs, checked, taken


def layouts_doc(k: int = 3, rounds: int = 8, seed: int = 3) -> dict:
    """writer.write's document for a sweep with --layouts k: -O2 (the baseline), -O3 5% faster
    and -O2's A/A twin, each as k layout replicates with their own seeded layout effect (sd
    2%), as sweep.start records them."""
    rng = np.random.default_rng(seed)
    docs, checked, taken = [], {}, {}
    for vid, flags, ratio, seeds in (("gcc-O2", ["-O2"], 1.0, range(1, k + 1)),
                                     ("gcc-O3", ["-O3"], 0.95, range(1, k + 1)),
                                     ("gcc-O2.aa", ["-O2"], 1.0, range(k + 1, 2 * k + 1))):
        for j in seeds:
            doc, check = _variant(f"{vid}.L{j}", [*flags, "-ffunction-sections", "-fdata-sections",
                                                  "-fuse-ld=lld", f"-Wl,--shuffle-sections=*={j}"])
            doc.update(layout_of=vid, layout=j, factors={"opt": flags[0]})
            doc["build"]["functions_sha256"] = vid.removesuffix(AA_SUFFIX)
            docs.append(doc)
            checked[doc["id"]] = check
            level = ratio * float(np.exp(rng.normal(0, 0.02)))
            taken[doc["id"]] = ([level * float(np.exp(rng.normal(0, 0.003))) for _ in range(rounds)],
                                [float(i * 10 + rng.uniform(0, 5)) for i in range(rounds)])
    options = _options(False, False, "gcc-O2", rounds)
    options["measure"]["layouts"] = k
    return _written(options, docs, checked, taken, False)


# A sweep with rows layout luck could give: -O1 2.5% faster and -Os 2% slower come within the
# reach of layout luck, -O3 10% faster does not.
LUCK_PLAN = {"gcc-O2": (["-O2"], 1.0, 0.004), "gcc-O2.aa": (["-O2"], 1.0, 0.004),
             "gcc-O3": (["-O3"], 0.90, 0.004), "gcc-O1": (["-O1"], 0.975, 0.004),
             "gcc-Os": (["-Os"], 1.02, 0.004)}


def luck_doc() -> dict:
    """writer.write's document for LUCK_PLAN run with --no-confirm: the run keeps the
    confirmation's plan (results.confirmation.plan) as a sweep keeps it, so -O1 and -Os read
    "one layout, within layout luck"."""
    from flagsweep.measure.options import MeasureOptions
    from flagsweep.results import confirmation

    planned = _planned(LUCK_PLAN, ROUNDS, 5, False, False, None, None)
    first = model(_written(*planned, False))
    planned[0]["confirmation"] = confirmation.plan(
        first, None, MeasureOptions(layout_confirm=False)).dump()
    return _written(*planned, False)


def write(folder: Path, doc: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "builds" / "gcc-O2").mkdir(parents=True, exist_ok=True)
    (folder / "builds" / "gcc-O2" / "build.log").write_text("built\n")
    path = folder / "results.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def _written(options: dict, docs: list[dict], checks: dict[str, dict | None],
             taken: dict[str, tuple[list[float], list[float]]], counters: bool) -> dict:
    """Record the run in a store of its own and return writer.write's document."""
    with tempfile.TemporaryDirectory(prefix="report-fixture-") as scratch:
        store = Store(f"sqlite:///{scratch}/store.sqlite")
        _record(store, RUN_ID, f"tiny{EVIL}", Path(scratch), options, docs, checks, taken,
                counters=counters)
        path = writer.write(Path(scratch), store, RUN_ID)
        store.engine.dispose()
        return json.loads(path.read_text())


def _record(store: Store, run_id: str, target: str, out: Path, options: dict, docs: list[dict],
            checks: dict[str, dict | None], taken: dict[str, tuple[list[float], list[float]]],
            *, counters: bool) -> None:
    """The run in the store as a sweep records it. taken: variant -> (wall time per round,
    seconds from the start per round)."""
    store.create_run(run_id, target, "olevels", out, options, _machine())
    store.save_variants(run_id, docs)
    for vid, check in checks.items():
        if check is not None:
            store.save_check(run_id, vid, check)
    started = store.run(run_id).started
    for position, (vid, (wall, elapsed)) in enumerate(taken.items()):
        for rnd, (w, t) in enumerate(zip(wall, elapsed)):
            store.add_sample(run_id, _sample(vid, rnd, position, w, started + t, counters))
    store.finish_run(run_id, "complete", f"the fixed {options['measure']['runs']} rounds are done")


def _sample(vid: str, rnd: int, position: int, wall: float, taken_at: float,
            counters: bool) -> Sample:
    count = {"context_switches": 3, "page_faults": 600}
    if counters:
        count |= {"cycles": wall * 3e9, "instructions": wall * 6e9,     # IPC 2
                  "branch_misses": wall * 6e6,                           # 1 per 1,000 instr.
                  "cache_misses": wall * 3e6}                            # 0.5 per 1,000 instr.
    return Sample(vid, rnd, position, 0, wall_s=wall, user_s=wall * 0.98, sys_s=0.01,
                  maxrss_kb=5000, counters=count, taken_at=taken_at)


def _variant(vid: str, flags: list[str]) -> tuple[dict, dict | None]:
    """The variant as the build step records it, and its output check."""
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
    doc = {"id": vid, "compiler": "gcc", "flags": flags, "build": build,
           "factors": {"opt": " ".join(flags)} if not vid.endswith(AA_SUFFIX) else {"opt": "-O2"}}
    if vid.endswith(AA_SUFFIX):
        doc["aa_of"] = vid.removesuffix(AA_SUFFIX)
        build["detail"] = f"A/A twin: a copy of {doc['aa_of']}'s binary"   # as controls.aa_twin
    if vid.endswith(REF_SUFFIX):                   # as controls.reference_arm: the same binary
        doc["reference_of"] = vid.removesuffix(REF_SUFFIX)              # every night
        build["reference_sha256"] = "ef" * 32
    return doc, check


def _machine() -> dict:
    return {"hostname": "box", "cpu_model": "Test CPU", "march_native": "znver4",
            "isa_levels": ["x86-64", "x86-64-v2"], "kernel": "6.1", "hypervisor": False,
            "governor": "performance", "boost": False, "isolated_cpus": [1], "nohz_full": [1],
            "cpu_count": 2, "load_avg": [0.0, 0.0, 0.0], "aslr": 2, "pinned_cpu": 1}


def _options(counters: bool, study: bool, baseline: str, rounds: int) -> dict:
    """The run's options as outputs.run_options and the sweep's later set_option calls store
    them."""
    return {
        "target_path": "/x/target.toml", "target_sha256": "cd" * 32, "target_version": "1.0",
        "recipe_path": "/x/olevels.toml",
        "study": {"title": "A study", "question": "Do the old flags still matter?",
                  "factor": "opt", "baseline": "-O2",
                  "machines": [{"name": "Old box", "seconds": {"-O2": 100, "-O0": 250,
                                                               "-O3": 95}}]} if study else None,
        "measure": {"seed": 42, "warmup": 1, "min_runs": rounds, "max_runs": rounds,
                    "runs": rounds, "budget": 1800.0, "precision_pct": 1.0, "cpu": 1,
                    "quick": False, "strict_check": False, "counters": "auto",
                    "threshold_pct": 1.0, "metric": "wall"},
        "compilers": [{"name": "gcc", "path": "/usr/bin/gcc", "version": "12.2.0"}],
        "baseline": baseline, "design": "factorial",
        "skipped": [{"id": "gcc-O2-march-x86-64-v4", "flags": ["-O2", "-march=x86-64-v4"],
                     "reason": "this CPU lacks avx512f"}],
        "workload": {"argv": ["{binary}", "{input}"], "inputs": ["/tmp/in"], "stdout": "compared",
                     "input_sha256": "ab" * 32, "input": "corpus: 1 MB",
                     "target_file": "/x/target.toml"},
        "counters": {"hw_counters": counters},
        "metric_choice": None,
    }


def _profile(costs: dict[str, tuple[int, int]]):
    """A Cachegrind profile of functions -> (instructions, mispredicts), in Cachegrind's format."""
    from flagsweep.explain import profile

    lines = ["events: Ir Bc Bcm", "fl=???"]
    for fn, (ir, bcm) in costs.items():
        lines += [f"fn={fn}", f"0 {ir} {ir // 8} {bcm}"]
    return profile.parse_cachegrind("\n".join(lines) + "\n")


def explained_doc() -> dict:
    """results_doc() with run --explain's section, made by the real attribution from Cachegrind
    profiles: -O3 faster (a vectorised loop), -O0 slower (everything), a function named as HTML."""
    from flagsweep.explain import attribution, explanation, remarks

    base = _profile({"longest_match": (1_250_000_000, 900_000), "deflate.constprop.0":
                     (97_000_000, 10_000), "fill_window": (5_900_000, 100), EVIL: (1_000, 1)})
    o3 = _profile({"longest_match": (1_100_000_000, 800_000), "deflate": (99_000_000, 10_000),
                   "fill_window": (3_000_000, 100), EVIL: (900, 1)})
    o0 = _profile({"longest_match": (2_700_000_000, 900_000), "deflate": (196_000_000, 10_000),
                   "fill_window": (106_000_000, 100), EVIL: (5_000, 1), "helper": (9_000_000, 0)})
    sizes = {"longest_match": 438, "deflate": 2265, "fill_window": 350, EVIL: 20}
    entries = {"gcc-O3": attribution.attribute(base, o3, sizes, sizes),
               "gcc-O0": attribution.attribute(base, o0, sizes, {**sizes, "helper": 40})}
    # -O3 vectorises fill_window's hash slide; the baseline's rebuild says it did not.
    vectorised = FunctionRemarks(
        vectorized=["deflate.c:560: loop vectorized using 16 byte vectors (x2)"], missed=[],
        missed_total=0, loops=2, blocks=0, widest=None)
    missed = FunctionRemarks(
        vectorized=[], missed=["deflate.c:560: not vectorized: control flow in loop."],
        missed_total=1, loops=0, blocks=0, widest=None)
    explanation._add_remarks(entries["gcc-O3"],
                             (remarks.Remarks("ok", functions={"fill_window": missed}), sizes),
                             (remarks.Remarks("ok", functions={"fill_window": vectorised}), sizes))
    doc = Results.model_validate(results_doc())
    top = [{"function": n, "cost": base.cost(n), "share_pct": 100 * base.cost(n) / base.total,
            "size": sizes.get(n)} for n in base.functions]
    writer.add_explain(doc, {"method": "cachegrind", "unit": "instructions",
                             "baseline": {"variant": "gcc-O2", "total": base.total,
                                          "functions": top}, "variants": entries})
    return doc.dump()
