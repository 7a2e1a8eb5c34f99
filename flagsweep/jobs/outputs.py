"""What a run records and writes: its options (the target, recipe, measure options, compilers,
design, workload), results.json, samples.csv and the report, written again from the store when
lost, and its scratch emptied once complete."""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from flagsweep import files, report
from flagsweep.across import history
from flagsweep.experiment import matrix, recipe, target
from flagsweep.host import toolchain
from flagsweep.measure.options import MeasureOptions
from flagsweep.results import stored, writer
from flagsweep.results.store import Store
from flagsweep.workload import inputs

log = logging.getLogger("flagsweep.jobs.outputs")


def written_again(run_id: str, store: Store, say: Callable[[str], None]) -> Path:
    """A run's results.json, samples.csv and report, written again from the store into its
    own folder (one its row names, once it shows it is the run's: results.stored.out_dir):
    the store holds every sample, so files lost (a kill between the last round and the
    writing, a folder cleaned by hand) are never lost for good."""
    row = store.run(run_id)
    out = stored.out_dir(store, run_id, row)
    say(f"run {run_id} is {row.status}, but {out / 'results.json'} is missing: written "
        "again from the store")
    return write_files(store, run_id, out, say)


def drop_outputs(scratch: Path, say: Callable[[str], None]) -> None:
    """Empty a complete run's scratch/ (run --keep-scratch keeps it): program outputs are
    57 MB for a quick sweep of one program and ~350 MB at full size, and their checks are in
    results.json. Only what a program said on stderr stays, as the diagnostic it is; an
    interrupted or failed run keeps everything, for --resume and for finding out why."""
    doomed = sorted(p for p in scratch.rglob("*") if p.is_file() and not _said_something(p))
    freed = 0
    for p in doomed:
        freed += p.stat().st_size
        p.unlink()
    for folder in sorted((p for p in scratch.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    if scratch.is_dir() and not any(scratch.iterdir()):
        scratch.rmdir()
    if doomed:
        say(f"scratch: {len(doomed)} files deleted ({freed / 1e6:.1f} MB); --keep-scratch "
            "keeps them")


def _said_something(path: Path) -> bool:
    return path.name.endswith(".stderr") and path.stat().st_size > 0


def workload_option(t: target.Target, inp: inputs.Input) -> dict:
    """What the run's options record of its workload (results.json's `workload`)."""
    spec = t.spec.run
    return {"argv": spec.argv, "inputs": [str(inp.path)], "stdout": spec.stdout,
            "input_sha256": inp.sha256, "input": inp.description, "timeout": spec.timeout,
            "target_file": str(t.path), "build_system": t.spec.build.system}


def write_files(store: Store, run_id: str, out: Path, say: Callable[[str], None],
                ending: dict | None = None) -> Path:
    path = writer.write(out, store, run_id, history.of_run(store, run_id, ending is not None),
                        ending)
    try:
        report.write(path)
    except Exception as e:  # noqa: BLE001 - any drawing failure; the data is already safe
        log.exception("report failed")
        say(f"report: not written ({type(e).__name__}: {e}); results.json is complete, "
            f"retry with: flagsweep report {path}")
    return path


def distro_doc(m: matrix.Matrix) -> dict | None:
    """The distribution's flags every variant started from, as read on this machine."""
    b = m.base
    return None if b is None else {"name": b.name, "source": b.source, "flags": list(b.flags),
                                   "parts": b.parts}


def run_options(t: target.Target, r: recipe.Recipe, m: matrix.Matrix, opts: MeasureOptions) -> dict:
    study = r.spec.study.model_dump() if r.spec.study else None
    return {"target_path": str(t.path), "target_sha256": files.sha256_file(t.path),
            "target_version": t.spec.version, "recipe_path": str(r.path), "study": study,
            "measure": asdict(opts),
            "compilers": [toolchain.describe(toolchain.resolve(c))
                          for c in sorted({v.compiler for v in m.variants})],
            "baseline": m.baseline.layout_of or m.baseline.id, "design": m.design,
            "distro": distro_doc(m),
            "skipped": [{"id": s.variant.id, "flags": list(s.variant.flags), "reason": s.reason}
                        for s in m.skipped]}
