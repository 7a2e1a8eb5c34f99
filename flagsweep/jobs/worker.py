"""A fleet's worker (fleet.py): how `flagsweep worker` starts one (`dask worker` with the
`bench` and `cpu-<label>` resources, on loopback unless told), and the tasks Dask runs on it,
with plain, picklable arguments and no client: describe its machine, build, check, and take a
round's samples into the store. Bytes a task needs arrive as a `Blob`, taken from this
machine's content-addressed cache or fetched from the cluster once (`_local`), hash verified.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import socket
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path

from flagsweep import caches, files, stats
from flagsweep.compilation import selection, variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.host import launcher, system
from flagsweep.measure import counters, rounds
from flagsweep.measure.sampler import Sampler
from flagsweep.results import store
from flagsweep.workload import check
from flagsweep.model import Check

log = logging.getLogger("flagsweep.jobs.worker")

BENCH = "bench"
CPU_ENV = "FLAGSWEEP_BENCH_CPU"           # set by `flagsweep worker --cpu N`
FETCH_TIMEOUT_S = 600                     # a binary or an input over the fleet's network
NAMED_TIMEOUT_S = 30                      # a blob's name is set before any task needs it


def label_resource(label: str) -> str:
    return f"cpu-{label}"


@dataclass(frozen=True)
class Tls:
    """A worker's TLS files: with them its port takes only connections holding a certificate
    that `ca` signed (the scheduler's, the other workers', the driver's)."""
    ca: str
    cert: str
    key: str


def worker_argv(scheduler: str, label: str, name: str | None, listen: str,
                tls: Tls | None = None) -> list[str]:
    """`dask worker` with one thread (one task at a time) and no nanny (a killed worker is
    gone, its round rescheduled elsewhere, rather than restarted mid-measurement)."""
    import sys
    argv = [sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nworkers", "1",
            "--nthreads", "1", "--no-nanny", "--no-dashboard",
            "--resources", f"{BENCH}=1 {label_resource(label)}=1",
            "--name", name or f"{socket.gethostname()}-{label}", "--host", listen]
    if tls:
        argv += ["--tls-ca-file", tls.ca, "--tls-cert", tls.cert, "--tls-key", tls.key]
    return argv


def exposure(listen: str, tls: Tls | None) -> str | None:
    """What a worker's start says when its port is reachable from other machines: Dask runs
    whatever a connection to a worker's port sends (a pickled function), as the user the worker
    runs as, so a worker listens on loopback unless told, and says what another address opens."""
    try:
        local = ipaddress.ip_address(listen.strip("[]")).is_loopback
    except ValueError:
        local = listen == "localhost"
    if local:
        return None
    who = f"uid {os.geteuid()}" + (" (root)" if os.geteuid() == 0 else "")
    if tls:
        return (f"the worker listens on {listen}: whoever connects with a certificate signed by "
                f"{tls.ca} can run code here as {who} (Dask runs what it is sent)")
    return (f"the worker listens on {listen} without TLS: anyone who can connect to that "
            f"address can run code here as {who} (Dask runs what it is sent); require a "
            "certificate with --tls-ca-file, --tls-cert and --tls-key (docs/fleet.md, Security)")


@dataclass(frozen=True)
class Described:
    """A label's machine as a worker of it saw it: its state (results.json's `machine`), the
    matrix its CPU and compilers can run, its counters setup, and the worker's name."""

    machine: dict
    matrix: matrix.Matrix
    counters: dict | None
    worker: str


@dataclass(frozen=True)
class RoundJob:
    """What a worker needs for a label's rounds: the store run it writes each sample to (the
    driver's store, `store` its URL), the target, and how the samples are taken."""

    run_id: str
    store: str
    target_file: str
    target_sha: str
    seed: int
    counters: str                   # --counters
    metric: str = "wall_s"          # the sample column disturbance is judged for
    threshold_pct: float = stats.THRESHOLD_PCT


def describe_task(r: recipe.Recipe, compilers: list[str] | None, choice: str) -> Described:
    """On a worker of the label: its machine, its matrix (what its CPU and compilers can run),
    and its counters (`choice`: --counters), all decided where the code will run."""
    m = matrix.expand(r, compilers)
    cpu = _bench_cpu()
    pre = counters.setup(choice, lambda _text: None)
    return Described(system.machine_state(sorted({v.compiler for v in m.variants}),
                                          pinned_cpu=cpu),
                     m, pre.to_json() if pre else None, _worker_name())


def build_task(target_file: str, target_sha: str, m: matrix.Matrix, key: str) -> dict:
    """Build a matrix on this worker; return the docs, the binaries' bytes and the build logs."""
    t = _target(target_file, target_sha)
    out = caches.FLEET.folder() / "builds" / key
    shutil.rmtree(out, ignore_errors=True)  # a private folder: an earlier build there is stale
    builds = variants.build_all(t, m, variants.Options(out_dir=out, jobs=selection.cpu_count()))
    blobs, logs = shipment(builds)
    return {"docs": [b.doc(out) for b in builds], "blobs": blobs, "logs": logs,
            "worker": _worker_name()}


def shipment(builds: list[variants.VariantBuild]) -> tuple[dict, dict]:
    """Per variant, its binary's sha256 and bytes, and its build log. A binary that loads
    shared libraries from its build tree is not shipped alone: on the workers that time it, it
    would load whatever its run path finds there (another build's library, the system's, or
    none), not this variant's code. It is failed, and says why."""
    blobs, logs = {}, {}
    for b in builds:
        logs[b.variant.id] = b.log.read_text(errors="replace") if b.log.exists() else ""
        if b.status == "ok" and b.libraries:
            b.status = "failed"
            b.detail = (f"{b.binary.name} loads {', '.join(Path(p).name for p in b.libraries)} "
                        "from its build tree, and a fleet ships the binary alone: build the "
                        "program static (CMake: -DBUILD_SHARED_LIBS=OFF, configure: "
                        "--disable-shared) or sweep it on one machine, without --fleet")
        if b.status == "ok" and b.binary:
            data = Path(b.binary).read_bytes()
            blobs[b.variant.id] = (files.sha256_bytes(data), data)
    return blobs, logs


@dataclass(frozen=True)
class Blob:
    """Bytes a task needs, by reference: their sha256, the file name they take on the worker,
    and the name of the Dask Variable holding the driver's scattered copy. A reference, not a
    Dask dependency: Dask runs a task where its dependencies lie, and its active memory manager
    keeps one copy of data no task waits for, so every round would go to that one worker of the
    label; and a worker whose cache has the file needs no copy at all."""

    sha: str
    name: str
    variable: str


class Missing(FlagsweepError):
    """The cluster no longer holds a blob this worker has not cached (the worker that held the
    copy died): the driver sends the bytes again and reruns the task."""


def check_task(target_file: str, target_sha: str, binaries: dict[str, Blob], given: Blob,
               baseline: str) -> dict[str, Check]:
    """The output checks of a label's binaries, run on a worker of that label."""
    t = _target(target_file, target_sha)
    paths = {vid: _local(b) for vid, b in binaries.items()}
    workload = check.Invocation(t, _local(given), _scratch("check"))
    return check.check_all(workload, paths, baseline)


def round_task(job: RoundJob, rnd: int, binaries: dict[str, Blob], given: Blob) -> int:
    """One round on this worker: each variant once in the round's order, each sample stored
    at once; pairs the store already has (a rescheduled round) are skipped. Returns how many
    samples this call took."""
    db = store.Store()
    if _identity(db.url) != _identity(job.store):
        raise FlagsweepError(f"worker {_worker_name()} writes to the store {db.url}, the sweep "
                             f"to {job.store}: start the worker with the same --db / FLAGSWEEP_DB")
    t = _target(job.target_file, job.target_sha)
    paths = {vid: _local(b) for vid, b in binaries.items()}
    workload = check.Invocation(t, _local(given), _scratch(job.run_id))
    pre = counters.setup(job.counters, lambda _text: None)
    done = db.done(job.run_id)
    taken = 0
    plan = rounds.Plan(sorted(paths), job.seed)
    sampler = Sampler(job.run_id, workload, paths, pre, False, db,
                      lambda text: log.warning("%s", text), worker=_worker_name(),
                      metric=job.metric, threshold_pct=job.threshold_pct)
    with launcher.pinned(_bench_cpu()):
        for pos, vid in enumerate(rounds.order(plan, rnd)):
            if (vid, rnd) in done:
                continue
            sampler(vid, rnd, pos, rounds.env_pad(plan, vid, rnd))
            taken += 1
    return taken


def _identity(url: str) -> str:
    """A store URL without its password: a driver with one in its URL and a worker with
    ~/.pgpass write to the same database."""
    import sqlalchemy as sa
    return sa.engine.make_url(url).set(password=None).render_as_string(hide_password=False)


def _target(target_file: str, sha: str) -> target.Target:
    """The driver's target file, or the shipped one of that name; the same bytes either way."""
    path = Path(target_file)
    t = target.load(str(path.parent)) if path.exists() else target.load(path.parent.name)
    if files.sha256_file(t.path) != sha:
        raise FlagsweepError(f"worker {_worker_name()}: {t.path} differs from the driver's "
                             f"{target_file}; install the same flagsweep on every machine")
    return t


def _local(b: Blob) -> Path:
    """The blob as a file in this machine's content-addressed cache, hash verified: the cached
    file when there is one, else the bytes fetched from the cluster."""
    path = caches.FLEET.folder() / "blobs" / b.sha / b.name
    if path.exists() and files.sha256_file(path) == b.sha:
        return path
    return _materialize(b.sha, _fetch(b), b.name)


def _fetch(b: Blob) -> bytes:
    """The blob's bytes from whichever worker holds them, named by the driver's Dask Variable
    (a Future rebuilt here from its key would never learn the data's state)."""
    from distributed import Variable, get_client
    try:
        held = Variable(b.variable, get_client()).get(timeout=NAMED_TIMEOUT_S)
        if held.status in ("lost", "cancelled"):    # data, unlike a task's, is not recomputed
            raise CancelledError(held.status)
        return held.result(timeout=FETCH_TIMEOUT_S)
    except (TimeoutError, CancelledError) as e:
        raise Missing(f"worker {_worker_name()}: the cluster no longer holds the bytes of "
                      f"{b.name} ({b.sha[:12]}), which this worker has not cached") from e


def _materialize(sha: str, data: bytes, name: str) -> Path:
    """The bytes as a file in this machine's content-addressed cache, hash verified."""
    if files.sha256_bytes(data) != sha:
        raise FlagsweepError(f"worker {_worker_name()}: received bytes for {sha[:12]} that do "
                             "not hash to it; refusing to run them")
    path = caches.FLEET.folder() / "blobs" / sha / name
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomic(path, data, mode=0o755)
    if files.sha256_file(path) != sha:
        raise FlagsweepError(f"worker {_worker_name()}: {path} does not hash to {sha}")
    return path


def _scratch(name: str) -> Path:
    path = caches.FLEET.folder() / "scratch" / f"{name}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _bench_cpu() -> int:
    return int(os.environ[CPU_ENV]) if os.environ.get(CPU_ENV) else \
        launcher.choose_cpu(system.isolated_cpus())


def _worker_name() -> str:
    try:
        from distributed import get_worker
        return f"{get_worker().name}@{socket.gethostname()}"
    except (ImportError, ValueError):
        return socket.gethostname()
