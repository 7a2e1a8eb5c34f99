"""Fleet: one sweep across many machines, on Dask distributed.

`flagsweep run TARGET --scheduler tcp://HOST:8786 --cpu-label A --cpu-label B` drives the sweep
from here; `flagsweep worker --scheduler ... --cpu-label A` (a thin wrapper over `dask worker`)
serves it on each machine. Dask places the work; flagsweep only says what may run where, with
worker resources:

- every worker has `bench = 1`, and `cpu-<label> = 1` for its CPU label;
- a build holds `bench` (builds are CPU-parallel work; holding the slot keeps a build from
  running beside a measurement on that worker) and may run on any worker, unless a variant's
  flags depend on the CPU (-march=native, -mtune=native): then on a worker of that label;
- the CPU description, the matrix (what this CPU can run), the output checks and the rounds
  need the label's `cpu-<label>`; checks and rounds also hold `bench`: one measurement at a time
  per worker, never beside a build.

Binaries and inputs travel as bytes with their sha256: the driver scatters each once and hands
tasks a `Blob` (sha, file name, the name it is held under) rather than the data itself; a
worker takes a blob from its content-addressed cache, or else fetches it from the cluster once
and caches it, and checks the hash before running anything (`_local`). A round is one task:
every variant once, in the round's shuffled order, on one machine, so the pairing by round
holds. Workers write each sample to the store the moment it is taken (the same store the
driver reads: PostgreSQL for real fleets, see docs/fleet.md); a worker that dies mid-round
loses only its sample in flight: Dask runs the round again on another worker of the label,
which skips the (variant, round) pairs already stored, and the store's unique key makes a
duplicate impossible. One store run per label, each with its own results.json and report;
`merge` and `pick` read them, and the driver writes the merged page when there are several.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import socket
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from flagsweep import caches, files, report, shipped, stats
from flagsweep.across import merge
from flagsweep.compilation import selection, variants
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import matrix, recipe, target
from flagsweep.host import launcher, system
from flagsweep.jobs import controls, schedule, sweep
from flagsweep.measure import counters, rounds
from flagsweep.measure.options import MeasureOptions
from flagsweep.measure.plan import METRICS, plan_for, round_values
from flagsweep.measure.sampler import Sampler
from flagsweep.report import lines
from flagsweep.results import store, stored
from flagsweep.model import AA_SUFFIX, Check, Machine, Variant
from flagsweep.workload import check, inputs

log = logging.getLogger("flagsweep.jobs.fleet")
BENCH = "bench"
CPU_ENV = "FLAGSWEEP_BENCH_CPU"           # set by `flagsweep worker --cpu N`
NATIVE = re.compile(r"-m(arch|tune|cpu)=native$")
FETCH_TIMEOUT_S = 600                     # a binary or an input over the fleet's network
NAMED_TIMEOUT_S = 30                      # a blob's name is set before any task needs it
# A fleet's worker runs one workload at a time (its bench resource): its rounds are serial.
FLEET_SERIAL = "a fleet sweep's workers run one workload at a time"
RESENDS = 3                               # times a task's lost bytes are sent again


def label_resource(label: str) -> str:
    return f"cpu-{label}"


def check_label(label: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", label):
        raise FlagsweepError(f"--cpu-label {label!r}: use letters, digits, '.', '_' or '-' "
                             "(it becomes a Dask resource name and a folder name)")
    return label


def connect(address: str):
    """A Dask client, with a clear error when distributed is missing or the scheduler is not there."""
    try:
        from distributed import Client
    except ImportError:
        raise FlagsweepError("--scheduler needs Dask distributed: pip install 'flagsweep[fleet]' "
                             "(or ./setup.sh test)") from None
    try:
        return Client(address, timeout="20s")
    except OSError as e:
        raise FlagsweepError(f"no Dask scheduler at {address}: {e}") from None


def default_label() -> str:
    """What gcc's -march=native resolves to here (a CPU family name), else 'default'."""
    from flagsweep.host import cpu
    native = cpu.describe(cpu.read_host(), ["gcc"])["march_native"].get("gcc")
    return re.sub(r"[^A-Za-z0-9._-]", "_", native) if native else "default"


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


# ---------------------------------------------------------------------------------------------
# Worker side: the functions Dask runs (plain, picklable arguments; no client here)
# ---------------------------------------------------------------------------------------------

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
    blobs, logs = {}, {}
    for b in builds:
        logs[b.variant.id] = b.log.read_text(errors="replace") if b.log.exists() else ""
        if b.status == "ok" and b.binary:
            data = Path(b.binary).read_bytes()
            blobs[b.variant.id] = (files.sha256_bytes(data), data)
    return {"docs": [b.doc(out) for b in builds], "blobs": blobs, "logs": logs,
            "worker": _worker_name()}


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


# ---------------------------------------------------------------------------------------------
# Driver side
# ---------------------------------------------------------------------------------------------

@dataclass
class Label:
    """One CPU label's share of the sweep: its matrix, store run and folder."""

    name: str
    machine: dict
    matrix: matrix.Matrix
    counters: dict | None
    out: Path
    run_id: str = ""
    docs: list[Variant] | None = None
    binaries: dict | None = None            # vid -> (sha, bytes), then the Blob sent
    measured: list | None = None


def sweep_on(scheduler: str, sel: selection.Selection, labels: list[str], opts: MeasureOptions,
             db: store.Store, say: Callable[[str], None]) -> list[Path]:
    """`run --scheduler`: one selection's sweep on the cluster at `scheduler`, one results.json
    per CPU label (each checked by check_label), merged when there are several."""
    t = target.load(sel.target_name)
    r = selection.recipe_of(sel)
    out = (sel.out_dir or shipped.reports_dir() / f"{t.name}-{selection.stamp()}").resolve()
    client = connect(scheduler)
    try:
        return run(client, t, r, list(sel.compilers) or None, labels, out, opts, db, say)
    finally:
        client.close()


def run(client, t: target.Target, r: recipe.Recipe, compilers: list[str] | None,
        labels: list[str], out: Path, opts: MeasureOptions, db: store.Store,
        say: Callable[[str], None], name: str | None = None) -> list[Path]:
    """The whole fleet sweep; returns each label's results.json (and writes merged.html). Each
    label's store run is named `<name>-<label>`, `name` by default the folder's."""
    _workers_for(client, labels)
    if opts.metric == "auto":
        # A fleet's rounds run as tasks from the first, with no probe round to choose from.
        say("metric: wall time (a fleet sweep does not choose; --metric cpu measures CPU time)")
        opts.metric = "wall"
    if opts.metric not in ("wall", "cpu"):
        raise FlagsweepError(f"--metric {opts.metric}: a fleet sweep measures wall or cpu time "
                             "(counts need one machine's perf or Cachegrind setup)")
    if opts.schedule == "duet":
        raise FlagsweepError(f"--schedule duet: {FLEET_SERIAL}")
    opts.seed = opts.seed if opts.seed is not None else int.from_bytes(os.urandom(4), "big") >> 1
    parts = _describe(client, r, compilers, labels, out, opts, say)
    _build(client, t, parts, say)
    if opts.quick and (note := inputs.quick_note(t)):
        say(note)
    given = inputs.prepare(t, quick=opts.quick)
    shipment = Shipment(client)
    try:
        blob = shipment.send(given.sha256, given.path.read_bytes(), given.path.name)
        for p in parts:
            p.binaries = {vid: shipment.send(sha, data, "bin") for vid, (sha, data) in
                          p.binaries.items()}
            _start_run(p, t, r, opts, db, given, say, name or out.name)
            _check(client, t, p, shipment, blob, db, opts, say)
        endings = _rounds(client, t, parts, shipment, blob, opts, db, say)
    finally:
        shipment.close()
    paths = []
    for p in parts:
        # The files first, then the status, as a local sweep does; no worker relinks layouts.
        done = sweep.Sweep(p.run_id, t, r.name, p.out, opts, p.docs, p.matrix.baseline.id)
        sweep.confirmation_planned(done, db, endings[p.name],
                                   off="a fleet sweep relinks no layouts")
        paths.append(sweep.write_outputs(done, db, say, endings[p.name]))
        db.finish_run(p.run_id, **endings[p.name])
    if len(paths) > 1:
        try:
            page = report.write_merge(merge.load_all(paths), out)
            say(f"merged across labels: {page}")
        except FlagsweepError as e:
            say(f"merge: not written: {e}")
    return paths


class Shipment:
    """The bytes a fleet sweep sends: each scattered once, named by a Dask Variable that tasks
    read through a `Blob`, and kept here as well, so what the cluster loses (the one worker
    holding a copy died before the others cached it) is sent again rather than sinking the
    sweep. `close` drops the names, which would otherwise keep the bytes on the cluster."""

    def __init__(self, client):
        self.client, self.data, self.names = client, {}, {}

    def send(self, sha: str, data: bytes, name: str) -> Blob:
        if sha not in self.data:
            self.data[sha] = data
            self._scatter(sha)
        return Blob(sha, name, self.names[sha].name)

    def again(self) -> None:
        """Every blob sent anew under its name, so the blobs already handed out still read it."""
        for sha in self.data:
            self._scatter(sha)

    def resend(self, lost: Missing, resent: int, say: Callable[[str], None]) -> None:
        """A task's bytes were lost: sent again, unless they have been RESENDS times."""
        if resent >= RESENDS:
            raise lost
        say(f"{lost}; sending the bytes again")
        self.again()

    def close(self) -> None:
        for named in self.names.values():
            named.delete()
        self.names.clear()

    def _scatter(self, sha: str) -> None:
        from distributed import Variable
        future = self.client.scatter([self.data[sha]], hash=True)[0]
        self.names.setdefault(sha, Variable(f"flagsweep-{future.key}", self.client)).set(future)


def connected_workers(client) -> dict[str, dict]:
    """Every connected worker's information, asked of the scheduler now. Not
    `client.scheduler_info()`: when its question fails (a comm closed or timed out on a
    loaded machine), Dask logs it at debug level and returns what it kept from the
    connection's handshake, which lists no workers, so a fleet with both its workers up reads
    as "labels connected: none". A failed question is asked twice more, then named."""
    error: OSError | None = None
    for wait in (0.0, 1.0, 2.0):
        time.sleep(wait)
        try:
            return client.sync(client.scheduler.identity, n_workers=-1)["workers"]
        except OSError as e:
            error = e
    raise FlagsweepError(f"the Dask scheduler at {client.scheduler.address} did not say which "
                         f"workers are connected: {error}")


def _workers_for(client, labels: list[str]) -> None:
    have = {name for w in connected_workers(client).values()
            for name in (w.get("resources") or {})}
    missing = [label for label in labels if label_resource(label) not in have]
    if missing:
        known = sorted(n[4:] for n in have if n.startswith("cpu-"))
        raise FlagsweepError(f"no worker with --cpu-label {', '.join(missing)} is connected "
                             f"(labels connected: {', '.join(known) or 'none'}); start one with "
                             f"flagsweep worker --scheduler ... --cpu-label {missing[0]}")


def _describe(client, r, compilers, labels, out, opts, say) -> list[Label]:
    futures = [client.submit(describe_task, r, compilers, opts.counters, pure=False,
                             resources={label_resource(label): 1}) for label in labels]
    parts = []
    for label, f in zip(labels, futures):
        d = f.result()
        m = d.matrix
        say(f"{label}: {Machine.model_validate(d.machine).cpu_model} ({d.worker}): "
            f"{len(m.variants)} variants, {len(m.skipped)} skipped")
        for s in m.skipped:
            say(f"{label}: skipped {s.variant.id}: {s.reason}")
        parts.append(Label(label, d.machine, m, d.counters, out / label))
    return parts


def _build(client, t: target.Target, parts: list[Label], say) -> None:
    """One build per distinct matrix; CPU-independent ones on any worker, shared by labels."""
    sha = files.sha256_file(t.path)
    jobs: dict[str, object] = {}
    keys = []
    for p in parts:
        native = any(NATIVE.match(f) for v in p.matrix.variants for f in v.flags)
        key = (p.name if native else "") + "|" + ",".join(v.id for v in p.matrix.variants)
        if key not in jobs:
            where = {BENCH: 1, **({label_resource(p.name): 1} if native else {})}
            tag = files.sha256_bytes(key.encode())[:12]
            jobs[key] = client.submit(build_task, str(t.path), sha, p.matrix, tag, pure=False,
                                      resources=where)
        keys.append(key)
    for p, key in zip(parts, keys):
        got = jobs[key].result()
        say(f"{p.name}: built on {got['worker']}")
        p.docs, p.binaries = _place_builds(got, p.out), dict(got["blobs"])


def _place_builds(got: dict, out: Path) -> list[Variant]:
    """The worker's build docs with binaries and logs written under this label's folder."""
    docs = []
    for doc in (Variant.model_validate(d) for d in got["docs"]):
        folder = out / "builds" / doc.id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "build.log").write_text(got["logs"].get(doc.id, ""))
        b = doc.build.dump() | {"log": str(Path("builds") / doc.id / "build.log")}
        if doc.id in got["blobs"]:
            digest, data = got["blobs"][doc.id]
            path = folder / Path(doc.build.binary).name
            path.write_bytes(data)
            path.chmod(0o755)
            b.update(binary=str(path), binary_sha256=digest)
        docs.append(Variant.model_validate(doc.dump() | {"build": b}))
    return docs


def _start_run(p: Label, t, r, opts, db: store.Store, given, say, name: str) -> None:
    p.out.mkdir(parents=True, exist_ok=True)
    p.docs += controls.aa_twin(p.docs, p.matrix.baseline.id, p.out)
    twin = p.matrix.baseline.id + AA_SUFFIX
    if p.matrix.baseline.id in p.binaries:
        p.binaries[twin] = p.binaries[p.matrix.baseline.id]
    options = {**sweep.run_options(t, r, p.matrix, opts), "fleet": {"label": p.name},
               "schedule": schedule.serial(opts, FLEET_SERIAL)}
    p.run_id = db.create_unique_run(f"{name}-{p.name}", t.name, r.name, p.out,
                                    options, p.machine)
    stored.claim(p.out, "run_id", p.run_id)
    db.save_variants(p.run_id, [d.dump() for d in p.docs])
    db.set_option(p.run_id, "workload", sweep.workload_option(t, given))
    db.set_option(p.run_id, "counters", p.counters)
    say(f"{p.name}: run id {p.run_id}")


def _check(client, t, p: Label, shipment: Shipment, blob: Blob, db: store.Store, opts,
           say) -> None:
    sha = files.sha256_file(t.path)

    def remote(todo: dict, baseline: str) -> dict:
        sent = {vid: p.binaries[vid] for vid in todo}
        for attempt in range(RESENDS + 1):
            f = client.submit(check_task, str(t.path), sha, sent, blob, baseline, pure=False,
                              resources={BENCH: 1, label_resource(p.name): 1})
            try:
                return f.result()
            except Missing as e:
                shipment.resend(e, attempt, say)

    s = sweep.Sweep(p.run_id, t, "", p.out, opts, p.docs, p.matrix.baseline.id)
    p.measured = sweep.checked(s, None, db, lambda text: say(f"{p.name}: {text}"), remote)


def _rounds(client, t, parts: list[Label], shipment: Shipment, blob: Blob, opts,
            db: store.Store, say) -> dict[str, dict]:
    """Rounds per label, as many in flight as that label has workers, until each label's
    stopping rule (rounds.Stopping, the same as a local sweep's) says stop; returns how each
    label's run ends (status, stop_reason, finished), for its files and then the store."""
    from distributed import as_completed

    metric = METRICS[opts.metric]
    plans = {p.name: plan_for(opts, p.measured, p.matrix.baseline.id, controls.SUFFIXES)
             for p in parts}
    by_name = {p.name: p for p in parts}
    sha = files.sha256_file(t.path)
    scattered = {p.name: {vid: p.binaries[vid] for vid in p.measured} for p in parts}
    nxt = {p.name: -opts.warmup for p in parts}
    stops = {name: rounds.Stopping(plan) for name, plan in plans.items()}
    for p in parts:       # what the rule spends, for each label's analysis (sequential.Design)
        db.set_option(p.run_id, "sequential", rounds.design(plans[p.name]).to_json())
    pending = as_completed()
    said_round = lines.round_lines()

    def submit(name: str, rnd: int | None = None, resent: int = 0) -> None:
        p = by_name[name]
        if rnd is None:
            rnd, nxt[name] = nxt[name], nxt[name] + 1
        job = RoundJob(p.run_id, db.url, str(t.path), sha, opts.seed, opts.counters, metric,
                       opts.threshold_pct)
        f = client.submit(round_task, job, rnd, scattered[name], blob, pure=False,
                          key=f"round-{p.run_id}-{rnd}" + (f"-resent{resent}" if resent else ""),
                          resources={BENCH: 1, label_resource(name): 1})
        f.label, f.round, f.resent, f.submitted = name, rnd, resent, time.monotonic()
        pending.add(f)

    for p in parts:
        for _ in range(max(1, _worker_count(client, p.name))):
            if nxt[p.name] < plans[p.name].max_runs:
                submit(p.name)
    for f in pending:
        try:
            f.result()                         # a task's own error stops the sweep here
        except Missing as e:
            shipment.resend(e, f.resent, say)
            submit(f.label, f.round, f.resent + 1)
            continue
        name, stop = f.label, stops[f.label]
        values = round_values(db.samples(by_name[name].run_id), metric)
        if f.round >= 0:
            stop.after(values, time.monotonic() - f.submitted)
            if said_round:
                said_round(stop.completed, stop.plan.max_runs, f"label {name}: {stop.said(values)}")
        if nxt[name] < stop.plan.max_runs and stop.may_start():
            submit(name)
    endings = {}
    for p in parts:
        o = stops[p.name].final(round_values(db.samples(p.run_id), metric))
        endings[p.name] = {"status": "complete", "stop_reason": o.stop_reason,
                           "finished": time.time()}
        say(f"{p.name}: {o.stop_reason}")
    return endings


def _worker_count(client, label: str) -> int:
    return sum(1 for w in connected_workers(client).values()
               if label_resource(label) in (w.get("resources") or {}))
