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
tasks a `worker.Blob` (sha, file name, the name it is held under) rather than the data itself; a
worker takes a blob from its content-addressed cache, or else fetches it from the cluster once
and caches it, and checks the hash before running anything (worker.py: the tasks
Dask runs on a worker, and how one is started). A round is one task:
every variant once, in the round's shuffled order, on one machine, so the pairing by round
holds. Workers write each sample to the store the moment it is taken (the same store the
driver reads: PostgreSQL for real fleets, see docs/fleet.md); a worker that dies mid-round
loses only its sample in flight: Dask runs the round again on another worker of the label,
which skips the (variant, round) pairs already stored, and the store's unique key makes a
duplicate impossible. One store run per label, each with its own results.json and report;
`merge` and `pick` read them, and the driver writes the merged page when there are several.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from flagsweep import files, report, shipped
from flagsweep.across import merge
from flagsweep.compilation import selection
from flagsweep.errors import FlagsweepError
from flagsweep.experiment import recipe, target
from flagsweep.jobs import checks, controls, outputs, schedule, sweep, worker
from flagsweep.measure import rounds
from flagsweep.measure.options import MeasureOptions
from flagsweep.measure.plan import METRICS, plan_for, round_values
from flagsweep.report import lines
from flagsweep.results import store, stored
from flagsweep.model import AA_SUFFIX, Machine, Variant
from flagsweep.workload import inputs

NATIVE = re.compile(r"-m(arch|tune|cpu)=native$")
# A fleet's worker runs one workload at a time (its bench resource): its rounds are serial.
FLEET_SERIAL = "a fleet sweep's workers run one workload at a time"
RESENDS = 3                               # times a task's lost bytes are sent again


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
    native = cpu.describe(cpu.read_host(), ["gcc"]).march_native.get("gcc")
    return re.sub(r"[^A-Za-z0-9._-]", "_", native) if native else "default"


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
    binaries: dict | None = None            # vid -> (sha, bytes), then the worker.Blob sent
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
        done = checks.Sweep(p.run_id, t, r.name, p.out, opts, p.docs, p.matrix.baseline.id)
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
    read through a `worker.Blob`, and kept here as well, so what the cluster loses (the one worker
    holding a copy died before the others cached it) is sent again rather than sinking the
    sweep. `close` drops the names, which would otherwise keep the bytes on the cluster."""

    def __init__(self, client):
        self.client, self.data, self.names = client, {}, {}

    def send(self, sha: str, data: bytes, name: str) -> worker.Blob:
        if sha not in self.data:
            self.data[sha] = data
            self._scatter(sha)
        return worker.Blob(sha, name, self.names[sha].name)

    def again(self) -> None:
        """Every blob sent anew under its name, so the blobs already handed out still read it."""
        for sha in self.data:
            self._scatter(sha)

    def resend(self, lost: worker.Missing, resent: int, say: Callable[[str], None]) -> None:
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
    missing = [label for label in labels if worker.label_resource(label) not in have]
    if missing:
        known = sorted(n[4:] for n in have if n.startswith("cpu-"))
        raise FlagsweepError(f"no worker with --cpu-label {', '.join(missing)} is connected "
                             f"(labels connected: {', '.join(known) or 'none'}); start one with "
                             f"flagsweep worker --scheduler ... --cpu-label {missing[0]}")


def _describe(client, r, compilers, labels, out, opts, say) -> list[Label]:
    futures = [client.submit(worker.describe_task, r, compilers, opts.counters, pure=False,
                             resources={worker.label_resource(label): 1}) for label in labels]
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
            where = {worker.BENCH: 1, **({worker.label_resource(p.name): 1} if native else {})}
            tag = files.sha256_bytes(key.encode())[:12]
            jobs[key] = client.submit(worker.build_task, str(t.path), sha, p.matrix, tag,
                                      pure=False, resources=where)
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
    options = {**outputs.run_options(t, r, p.matrix, opts), "fleet": {"label": p.name},
               "schedule": schedule.serial(opts, FLEET_SERIAL)}
    p.run_id = db.create_unique_run(f"{name}-{p.name}", t.name, r.name, p.out,
                                    options, p.machine)
    stored.claim(p.out, "run_id", p.run_id)
    db.save_variants(p.run_id, p.docs)
    db.set_option(p.run_id, "workload", outputs.workload_option(t, given))
    db.set_option(p.run_id, "counters", p.counters)
    say(f"{p.name}: run id {p.run_id}")


def _check(client, t, p: Label, shipment: Shipment, blob: worker.Blob, db: store.Store, opts,
           say) -> None:
    sha = files.sha256_file(t.path)

    def remote(todo: dict, baseline: str) -> dict:
        sent = {vid: p.binaries[vid] for vid in todo}
        for attempt in range(RESENDS + 1):
            f = client.submit(worker.check_task, str(t.path), sha, sent, blob, baseline, pure=False,
                              resources={worker.BENCH: 1, worker.label_resource(p.name): 1})
            try:
                return f.result()
            except worker.Missing as e:
                shipment.resend(e, attempt, say)

    s = checks.Sweep(p.run_id, t, "", p.out, opts, p.docs, p.matrix.baseline.id)
    p.measured = checks.checked(s, None, db, lambda text: say(f"{p.name}: {text}"), remote)


def _rounds(client, t, parts: list[Label], shipment: Shipment, blob: worker.Blob, opts,
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
        job = worker.RoundJob(p.run_id, db.url, str(t.path), sha, opts.seed, opts.counters,
                              metric, opts.threshold_pct)
        f = client.submit(worker.round_task, job, rnd, scattered[name], blob, pure=False,
                          key=f"round-{p.run_id}-{rnd}" + (f"-resent{resent}" if resent else ""),
                          resources={worker.BENCH: 1, worker.label_resource(name): 1})
        f.label, f.round, f.resent, f.submitted = name, rnd, resent, time.monotonic()
        pending.add(f)

    for p in parts:
        for _ in range(max(1, _worker_count(client, p.name))):
            if nxt[p.name] < plans[p.name].max_runs:
                submit(p.name)
    for f in pending:
        try:
            f.result()                         # a task's own error stops the sweep here
        except worker.Missing as e:
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
               if worker.label_resource(label) in (w.get("resources") or {}))
