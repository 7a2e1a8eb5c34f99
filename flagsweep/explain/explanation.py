"""Explaining a sweep's verdicts: the baseline and every variant called faster or slower are
profiled on the checked workload, and each variant's change attributed to functions.

Used by `flagsweep run --explain` (after results.json is written, so the verdicts are known)
and by `flagsweep explain RESULTS.json` afterwards. A variant whose profile fails is recorded
with the reason (`status: failed`) and the others go on; the sweep's results never depend on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from flagsweep.compilation import fingerprint
from flagsweep.errors import FlagsweepError
from flagsweep.explain import attribution, remarks, sampling, symbols
from flagsweep.explain.profile import Profile, cachegrind
from flagsweep.host import launcher, probes, toolchain
from flagsweep.files import write_atomic
from flagsweep.results import reader, writer
from flagsweep.model import (
    Explain, ExplainBaseline, ExplainTop, FunctionRemarks, Results, Variant, is_control)
from flagsweep.results.store import Store
from flagsweep.experiment import target
from flagsweep.workload import check, inputs

EXPLAINED = ("faster", "slower")
METHODS = ("auto", "cachegrind", "perf")
FOLDER = "explain"          # in the run's folder: the profiles, for cg_annotate / perf report


@dataclass
class Setup:
    workload: check.Invocation
    method: str             # cachegrind | perf
    repeats: int            # perf records per binary


def explain(doc: Results, out: Path, say: Callable[[str], None], method: str = "auto",
            repeats: int = sampling.REPEATS, with_remarks: bool = True) -> dict:
    """The `explain` of a results document: {method, unit, baseline, variants: {id: entry}},
    as the store keeps it and writer.add_explain takes it."""
    chosen = [v for v in doc.variants if not is_control(v.id)
              and v.vs_baseline and v.vs_baseline.verdict in EXPLAINED]
    if not chosen:
        return {"method": None, "unit": None, "baseline": None, "variants": {},
                "note": "no variant is faster or slower than the baseline: nothing to explain"}
    setup = Setup(_workload(doc, out / FOLDER), _method(method), repeats)
    base = next(v for v in doc.variants if v.id == doc.baseline)
    say(f"explain: profiling {base.id} (baseline) with {setup.method}")
    try:
        base_profile = _profile(setup, base, out)
    except FlagsweepError as e:
        why = f"the baseline's profile failed: {e}"
        return {"method": setup.method, "unit": None, "baseline": None, "failure": why,
                "variants": {v.id: _failed(setup, why).dump() for v in chosen}}
    base_sizes = _sizes(base, out)
    base_remarks = _remarks(base, out, say) if with_remarks else None
    entries: dict[str, Explain] = {}
    for v in chosen:
        say(f"explain: profiling {v.id} ({v.vs_baseline.verdict}) with {setup.method}")
        var_sizes = _sizes(v, out)
        try:
            entries[v.id] = attribution.attribute(base_profile, _profile(setup, v, out),
                                                  base_sizes, var_sizes)
        except FlagsweepError as e:
            say(f"explain: {v.id}: {e}")
            entries[v.id] = _failed(setup, str(e))
            continue
        if base_remarks:
            _add_remarks(entries[v.id], (base_remarks, base_sizes),
                         (_remarks(v, out, say), var_sizes))
    baseline = _baseline(base.id, base_profile, base_sizes)
    baseline.libraries = attribution.library_shares(base, base_profile, base_sizes)
    for name, pct in (baseline.libraries or {}).items():
        say(f"explain: at least {pct:.1f}% of {base.id}'s profiled run is in {name}, code from "
            "outside its build that no flag of the sweep built")
    if base_remarks:
        baseline.remarks = base_remarks.summary()
        for f in baseline.functions:
            f.remarks = _remarks_of(f.function, base_remarks, base_sizes)
    return {"method": setup.method, "unit": attribution.unit_of(base_profile),
            "baseline": baseline.dump(), "variants": {k: e.dump() for k, e in entries.items()}}


def _remarks(v: Variant, out: Path, say: Callable[[str], None]) -> remarks.Remarks:
    """The vectorisation remarks of one variant's build (a rebuild of its logged compiles)."""
    say(f"explain: the compiler's vectorisation remarks for {v.id}")
    found = remarks.collect(out / "builds" / v.id / "compile.jsonl", _templates(out))
    if found.status != "ok":
        say(f"explain: {v.id}: remarks {found.status}: {found.why}")
    return found


def _templates(out: Path) -> list[Path]:
    """The compilers' configured trees of the run (manifest.json), where a reused build's
    compile commands can run when the folder they first ran in is gone."""
    try:    # the results folder's: data, read like its results.json
        manifest = reader.document(out / "manifest.json", "manifest.json")
    except FlagsweepError:
        return []
    templates = manifest.get("templates") if isinstance(manifest, dict) else None
    return [Path(t["dir"]) for t in (templates if isinstance(templates, dict) else {}).values()
            if isinstance(t, dict) and isinstance(t.get("dir"), str) and t["dir"]]


def _add_remarks(entry: Explain, base: tuple[remarks.Remarks, dict[str, int]],
                 var: tuple[remarks.Remarks, dict[str, int]]) -> None:
    """Each row's remarks on both sides: (the remarks, the binary's function sizes)."""
    entry.remarks = var[0].summary()
    for f in entry.functions:
        f.remarks_baseline = _remarks_of(f.function, *base)
        f.remarks_variant = _remarks_of(f.function, *var)


def _remarks_of(name: str, found: remarks.Remarks, sizes: dict[str, int]
                ) -> FunctionRemarks | None:
    """A function the binary's symbol table does not hold (a shared library's, or one inlined
    away) was not compiled as itself by this build: no remarks, rather than "none". A stripped
    binary's table is empty and tells nothing."""
    if sizes and name not in sizes:
        return None
    return found.of(name)


def _failed(setup: Setup, why: str) -> Explain:
    return Explain(status="failed", failure=why, method=setup.method, functions=[])


def _baseline(vid: str, profile: Profile, sizes: dict[str, int]) -> ExplainBaseline:
    """The baseline's own top functions: where the program spends its cost at all."""
    total = profile.total
    top = sorted(profile.functions, key=lambda n: (-profile.cost(n), n))[:attribution.TOP]
    return ExplainBaseline(
        variant=vid, total=total, profile=profile.path, samples=profile.samples,
        unknown_share_pct=None if profile.unknown_share is None
        else 100.0 * profile.unknown_share,
        functions=[ExplainTop(function=n, cost=profile.cost(n),
                              share_pct=100.0 * profile.cost(n) / total if total else None,
                              size=sizes.get(n)) for n in top])


def _method(asked: str) -> str:
    """perf where it can sample cycles (a PMU), else Cachegrind."""
    if asked not in METHODS:
        raise FlagsweepError(f"--explain-with {asked}: expected one of {', '.join(METHODS)}")
    if asked != "auto":
        return asked
    return "perf" if probes.preflight().mode == "hardware" else "cachegrind"


def _workload(doc: Results, folder: Path) -> check.Invocation:
    """The run's own workload: its target file and the same input (checked by sha256)."""
    target_file = doc.workload.target_file if doc.workload else None
    if not target_file:
        raise FlagsweepError("results.json: key 'workload.target_file' is missing; expected the "
                             "target file the run measured (written by flagsweep run)")
    # The target's run command runs here: a results folder may come from anyone, so the
    # target file it names must be one only root or this user could have written.
    if why := toolchain.replaceable(Path(target_file), program=False):
        raise FlagsweepError(f"the target file {target_file} (key 'workload.target_file') "
                             f"is not run: {why}; explain runs only a target root or you "
                             "could have written")
    t = target.load(target_file)
    chosen = doc.measurement.run_length if doc.measurement else None   # --input-size auto's size
    inp = inputs.prepare(t, quick=bool(doc.measurement and doc.measurement.quick),
                         size=chosen.size if chosen else None)
    measured = doc.workload.input_sha256
    if measured and inp.sha256 != measured:
        raise FlagsweepError(f"the input of {t.path} now has sha256 {inp.sha256[:16]}..., the "
                             f"run measured {measured[:16]}... (key "
                             "'workload.input_sha256'): the target changed since the run")
    if folder.is_symlink():     # the profiles and the program's output would land elsewhere
        raise FlagsweepError(f"{folder} is a symbolic link; explain writes its profiles only "
                             "into a folder of the results folder's own: remove the link")
    folder.mkdir(parents=True, exist_ok=True)
    return check.Invocation(t, inp.path, folder)


def _binary(v: Variant, out: Path) -> Path:
    path = Path(v.build.binary or "")
    path = path if path.is_absolute() else out / path
    if not path.is_file():
        raise FlagsweepError(f"the binary of {v.id}, {path}, is missing (key "
                             f"'variants[{v.id}].build.binary')")
    if not path.resolve().is_relative_to(out.resolve()):
        # Profiling runs the binary: only one the sweep built into this folder.
        raise FlagsweepError(f"the binary of {v.id}, {path}, is outside the results folder "
                             f"{out} (key 'variants[{v.id}].build.binary'); explain runs "
                             "only the binaries a sweep built there")
    changed = fingerprint.recheck(v.build.dump(), path)
    if changed is not None:
        # A profile of other code would explain a verdict it never gave.
        raise FlagsweepError(f"{v.id} is not profiled: {changed.text()} (key "
                             f"'variants[{v.id}].build.code_sha256'); it is not the program "
                             "the sweep timed")
    return path


def _profile(setup: Setup, v: Variant, out: Path) -> Profile:
    w = setup.workload
    product = w.scratch / f"{v.id}.out"
    argv = w.argv(_binary(v, out), product)
    env = launcher.padded_env(launcher.MINIMAL_ENV, 0)
    try:
        if setup.method == "perf":
            return sampling.record(argv, env=env, cwd=w.scratch, timeout=w.timeout * 3,
                                   out_stem=w.scratch / f"{v.id}.perf",
                                   repeats=setup.repeats)
        # Cachegrind runs the program ~20-100x slower than natively.
        return cachegrind(argv, env=env, cwd=w.scratch, timeout=w.timeout * 100,
                          out_file=w.scratch / f"{v.id}.cachegrind.out")
    finally:
        product.unlink(missing_ok=True)     # the program's output: checked already, not kept


def _sizes(v: Variant, out: Path) -> dict[str, int]:
    """Function sizes from the binary's symbol table; none when it cannot be read (a missing
    binary fails its profile with the reason already)."""
    try:
        return symbols.function_sizes(_binary(v, out))
    except FlagsweepError:
        return {}


def explain_file(path: Path, say: Callable[[str], None], method: str = "auto",
                 repeats: int = sampling.REPEATS, with_remarks: bool = True) -> Path:
    """`flagsweep explain RESULTS.json`: the profiles of a finished sweep, written into its
    results.json (replacing an earlier explanation) and, when the run is in the store, kept
    with it so a later rewrite of the file from the store keeps them."""
    path = Path(path)
    results = reader.load(path)
    found = explain(results, path.parent.resolve(), say, method, repeats, with_remarks)
    doc = results.dump()
    for v in doc["variants"]:
        v.pop("explain", None)
    results = reader.validate(doc, path)
    writer.add_explain(results, found)
    write_atomic(path, json.dumps(results.dump(), indent=1))
    _keep(results.run_id, found)
    return path


def _keep(run_id: str | None, found: dict) -> None:
    """Into the store's copy of the run, if the store has it (a colleague's file has none)."""
    if not run_id:
        return
    db = Store()
    try:
        db.run(run_id)
    except FlagsweepError:
        return
    db.set_option(run_id, "explain", found)
