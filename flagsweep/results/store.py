"""The store: every sweep, variant and sample, written as it happens.

SQLAlchemy Core over SQLite by default (one file, no server), or PostgreSQL (the
fleet's workers share one store) from a `postgresql://` URL: plain types, JSON columns, no
SQLite-only SQL. A sample is committed the moment it is taken, so Ctrl-C, SIGTERM or kill -9
lose at most the run in flight, and `flagsweep run --resume` continues from exactly what is
here. The unique key on (run, variant, round) makes a resumed sweep, or a rescheduled fleet
task, unable to duplicate a sample: `add_sample` skips one that is already there. A run the
machine disturbed (flagsweep.measure.disturbance) and that was taken again keeps its place in the
`attempts` table: nothing measured is ever deleted. A duet round runs the baseline once per
comparison, so its samples name their pair (`pair`, part of the unique key). See docs/store.md.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from flagsweep.host import toolchain
from flagsweep.errors import FlagsweepError
from flagsweep.measure.sample import Sample
from flagsweep import model
from flagsweep.results.tables import (
    MIGRATIONS, SAMPLE_KEY, SCHEMA_VERSION, attempts, meta, metadata, references, runs, samples,
    variants,
)

# pg_advisory_xact_lock key serialising the first open and migrations of a PostgreSQL store
# (b"flagswep" as a big-endian signed 64-bit integer). Fixed: every flagsweep must agree on it.
PG_SETUP_LOCK = 0x666C_6167_7377_6570
# How long an SQLite writer waits for another process's write lock before "database is locked".
SQLITE_BUSY_TIMEOUT_S = 30.0


def default_url() -> str:
    """$FLAGSWEEP_DB, else an SQLite file in $XDG_DATA_HOME/flagsweep (~/.local/share/flagsweep).
    Nothing is created here: a command that only reads must leave no store behind."""
    if os.environ.get("FLAGSWEEP_DB"):
        return os.environ["FLAGSWEEP_DB"]
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share") / "flagsweep"
    return f"sqlite:///{base / 'store.sqlite'}"


# Where a store comes from, for messages about its file or folder.
CHOOSE = ("FLAGSWEEP_DB or --db choose another store (the default one is in "
          "$XDG_DATA_HOME/flagsweep, else ~/.local/share/flagsweep)")


class NoStore(FlagsweepError):
    """A command that only reads found no store file: nothing was ever stored there."""


SCHEMES = ("sqlite", "postgresql", "postgres")
ENCODE = ("a user name or password holding '@', ':', '/' or '%' must be percent-encoded in the "
          "URL (@ as %40, : as %3A, / as %2F, % as %25)")


def engine_url(url: str | sa.URL) -> sa.URL:
    """The URL the engine connects with: `postgresql://` and `postgres://` use psycopg 3.

    A URL that cannot be read is refused naming its scheme alone: what follows it may hold a
    password, and SQLAlchemy's own errors quote the URL, or the part it took for a port."""
    try:
        u = sa.make_url(url)
        u.port        # noqa: B018 - SQLAlchemy reads the port only when asked (ValueError)
    except (sa.exc.ArgumentError, ValueError):
        raise FlagsweepError(f"the store URL {_scheme(url)}... is not a database URL (a port "
                             f"that is not a number?); {ENCODE}; expected e.g. "
                             "sqlite:///path/store.sqlite or postgresql://user@host/db") from None
    if "@" in (u.host or "") or "@" in (u.username or ""):
        # Read as a host or user name, the part after an unencoded '@' would be printed.
        raise FlagsweepError(f"the store URL {_scheme(url)}... holds more than one '@'; {ENCODE}")
    if u.get_backend_name() not in SCHEMES:
        raise FlagsweepError(f"the store URL's scheme {u.drivername}:// is not one flagsweep "
                             "can use; expected sqlite:///path/store.sqlite or "
                             "postgresql://user@host/db")
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u


def _scheme(url: str | sa.URL) -> str:
    """The URL's scheme, up to '://', or nothing when it has none (all else may be secret)."""
    text = url if isinstance(url, str) else url.drivername + "://"
    head, sep, _ = text.partition("://")
    return f"{head}://" if sep and head.replace("+", "").isalnum() else ""


def masked(url: str | sa.URL) -> str:
    """The URL as it may be printed or written: any password replaced by ***, also one passed
    as a query parameter (libpq reads ?password=)."""
    u = sa.make_url(url)
    secret = {k: "***" for k in u.query if k.lower() in ("password", "passfile", "sslpassword")}
    return u.update_query_dict(secret).render_as_string(hide_password=True)


@dataclass(frozen=True)
class KeptReference:
    """A row of kept_references: the binary a target's nightly series is measured against on
    one machine, beside each later sweep's own build (jobs.controls)."""

    target: str
    machine: str
    baseline: str
    sha256: str
    name: str                # the binary's file name
    flags: list[str]
    run_id: str              # the sweep it was kept from
    kept: float              # time.time() when it was kept
    binary: bytes


class Store:
    """One connection to the store; every write is its own committed transaction."""

    def __init__(self, url: str | None = None, create: bool = True):
        """create=False (commands that only read): a missing SQLite file is NoStore, and
        neither it nor its folder is made."""
        default = not url and not os.environ.get("FLAGSWEEP_DB")
        real = engine_url(url or default_url())
        self.url = masked(real)   # for messages: the password, if any, never leaves the engine
        self.file: Path | None = None     # the SQLite file, when the store is one
        if real.get_backend_name() == "sqlite" and real.database not in (None, "", ":memory:"):
            self.file = Path(real.database)
            _sqlite_file(self.file, create, default)
        self.engine = self._create_engine(real)
        if create or self._schema() != SCHEMA_VERSION:
            self._open()   # a store only read is written only to bring its tables up to date

    def shared(self) -> str | None:
        """Why users other than root and this one could write this store, or None. What a
        store holds is data; a program it holds runs only from a store no one else writes."""
        if self.engine.dialect.name != "sqlite":
            return f"{self.url} is a {self.engine.dialect.name} database other users may write"
        if self.file is None:
            return None                   # in memory: this process's own
        return toolchain.replaceable(self.file, program=False)

    def _schema(self) -> int | None:
        with self._connect(opening=True) as c:
            if not sa.inspect(c).has_table(meta.name):
                return None
            row = c.execute(sa.select(meta.c.value).where(meta.c.key == "schema")).first()
        return int(row.value) if row else None

    def _create_engine(self, url: sa.URL) -> sa.Engine:
        connect_args: dict[str, Any] = {}
        if url.get_backend_name() == "sqlite":
            # Concurrent writers (several sweeps, fleet workers on one machine) wait for the
            # write lock instead of failing at once with "database is locked".
            connect_args["timeout"] = SQLITE_BUSY_TIMEOUT_S
        try:
            engine = sa.create_engine(url, connect_args=connect_args)
        except ImportError as e:
            hint = ("pip install 'psycopg[binary]'" if url.get_driver_name() == "psycopg"
                    else f"install the Python driver for {url.drivername}")
            raise FlagsweepError(f"the store URL's scheme {url.drivername}:// needs a database "
                                 f"driver that is not installed ({e.name or e}): {hint}") from None
        except sa.exc.ArgumentError as e:
            raise FlagsweepError(f"the store {self.url}: {e}") from None
        if engine.dialect.name == "sqlite":
            sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine

    def _open(self) -> None:
        """Create the tables or migrate them to SCHEMA_VERSION, in one transaction that only one
        process at a time may be in (fleet workers open the same store at once)."""
        with self._connect(opening=True) as c:
            if c.dialect.name == "postgresql":
                c.execute(sa.select(sa.func.pg_advisory_xact_lock(PG_SETUP_LOCK)))
            elif c.dialect.name == "sqlite":
                c.exec_driver_sql("BEGIN IMMEDIATE")  # the write lock now, waiting if need be
            self._create_or_migrate(c)
            c.commit()

    @contextmanager
    def _connect(self, opening: bool = False) -> Iterator[sa.Connection]:
        """A connection whose database errors (a full disk, a damaged file, a lost server)
        become one FlagsweepError naming the store and what to do. IntegrityError passes: the
        callers that expect one (a duplicate run id or sample) handle it."""
        try:
            with self.engine.connect() as c:
                yield c
        except sa.exc.IntegrityError:
            raise
        except sa.exc.DBAPIError as e:
            raise FlagsweepError(self._trouble(e, opening)) from None

    @contextmanager
    def _begin(self) -> Iterator[sa.Connection]:
        """_connect, in a transaction committed at the end of the block."""
        with self._connect() as c, c.begin():
            yield c

    def _trouble(self, e: sa.exc.DBAPIError, opening: bool) -> str:
        """What went wrong with the store, and what to do about it."""
        why = " ".join((str(e.orig) if e.orig else str(e)).split())  # one line: libpq says two
        code = getattr(e.orig, "sqlite_errorname", "")
        where = f"the store {self.url}"
        if self.engine.dialect.name == "sqlite":
            where = f"the store {self.engine.url.database}"
        choose = "; FLAGSWEEP_DB or --db choose another store"
        if code == "SQLITE_FULL":
            return (f"{where} cannot be written: {why}. Free space on its disk and run the "
                    "command again (every sample stored so far is kept; an interrupted sweep "
                    "continues with flagsweep run --resume)")
        if code in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
            return (f"{where} is damaged or not a flagsweep store ({why}): move the file (and "
                    f"any -wal and -shm beside it) aside or restore it from a backup{choose}")
        if code == "SQLITE_CANTOPEN":
            folder = Path(self.engine.url.database or ".").parent
            return (f"cannot open {where}: {why}; its folder {folder} must exist and be "
                    f"writable{choose}")
        if opening:  # unreachable server, bad login, locked too long
            return f"cannot open {where}: {why}{choose}"
        return f"{where}: {why}{choose}"

    def _create_or_migrate(self, c: sa.Connection) -> None:
        inspector = sa.inspect(c)
        stored: int | None = None
        if inspector.has_table(meta.name):
            row = c.execute(sa.select(meta.c.value).where(meta.c.key == "schema")).first()
            stored = int(row.value) if row else None
        if stored is None and inspector.has_table(samples.name):
            stored = 1  # tables without a version row: version 1 wrote the row after create_all
        if stored is not None and stored > SCHEMA_VERSION:
            raise FlagsweepError(f"the store {self.url} has schema {stored}, newer than this "
                                 f"flagsweep understands ({SCHEMA_VERSION}); upgrade flagsweep")
        metadata.create_all(c)  # a fresh store: every table, at SCHEMA_VERSION
        for step in MIGRATIONS[(stored or SCHEMA_VERSION) - 1:]:
            step(c)
        version = {"key": "schema", "value": str(SCHEMA_VERSION)}
        if c.execute(sa.select(meta.c.key).where(meta.c.key == "schema")).first():
            c.execute(meta.update().where(meta.c.key == "schema").values(version))
        else:
            c.execute(meta.insert().values(version))

    def schema_version(self) -> int:
        with self._connect() as c:
            value = c.execute(sa.select(meta.c.value).where(meta.c.key == "schema")).scalar_one()
        return int(value)

    # ---- runs ----------------------------------------------------------------------------

    def create_run(self, run_id: str, target: str, recipe: str, out_dir: Path,
                   options: dict | model.RunOptions, machine: dict | model.Machine) -> None:
        """Store a new run under exactly this id; FlagsweepError if another process took it
        since new_run_id (create_unique_run cannot lose that race). The options and the
        machine are held to their models as they are written."""
        options = model.RunOptions.model_validate(options).dump()
        machine = None if machine is None else model.Machine.model_validate(machine).dump()
        try:
            with self._begin() as c:
                c.execute(runs.insert().values(run_id=run_id, target=target, recipe=recipe,
                                               out_dir=str(out_dir), started=time.time(),
                                               status="running", options=options,
                                               machine=machine))
        except sa.exc.IntegrityError:
            if not self._has_run(run_id):
                raise
            raise FlagsweepError(f"run id {run_id!r} is already in the store {self.url} (another "
                                 "run may have taken it since new_run_id); start again") from None

    def create_unique_run(self, base: str, target: str, recipe: str, out_dir: Path,
                          options: dict | model.RunOptions,
                          machine: dict | model.Machine) -> str:
        """create_run under new_run_id(base), retried with the next free id when another
        process takes the same id first; returns the id this run got."""
        for _ in range(100):
            run_id = self.new_run_id(base)
            try:
                self.create_run(run_id, target, recipe, out_dir, options, machine)
                return run_id
            except FlagsweepError:
                if not self._has_run(run_id):
                    raise  # the store failed (a full disk), not a race for the id
                continue  # someone else got run_id between new_run_id and the insert
        raise FlagsweepError(f"could not find a free run id for {base!r} in the store {self.url}")

    def _has_run(self, run_id: str) -> bool:
        with self._connect() as c:
            return c.execute(sa.select(runs.c.run_id).where(runs.c.run_id == run_id)).first() \
                is not None

    def new_run_id(self, base: str) -> str:
        """base, or base-2, base-3...: run ids are unique in the store."""
        with self._connect() as c:
            taken = {r.run_id for r in c.execute(
                sa.select(runs.c.run_id).where(runs.c.run_id.like(f"{base}%")))}
        n, run_id = 1, base
        while run_id in taken:
            n += 1
            run_id = f"{base}-{n}"
        return run_id

    def find_run(self, id_or_dir: str) -> str:
        """A run id as given, or the id of the run whose output folder this is."""
        with self._connect() as c:
            if c.execute(sa.select(runs.c.run_id).where(runs.c.run_id == id_or_dir)).first():
                return id_or_dir
            folder = str(Path(id_or_dir).resolve())
            row = c.execute(sa.select(runs.c.run_id).where(runs.c.out_dir == folder)
                            .order_by(runs.c.started.desc())).first()
        return row.run_id if row else id_or_dir

    def runs_of(self, target: str) -> list[model.RunRecord]:
        """Every run of a target, oldest first (flagsweep history reads its sweeps from here)."""
        with self._connect() as c:
            rows = c.execute(sa.select(runs).where(runs.c.target == target)
                             .order_by(runs.c.started)).mappings().all()
        return [self._record(dict(r)) for r in rows]

    def targets(self) -> list[str]:
        """Every target the store has a run of, by name (the dashboard's pages, one each)."""
        with self._connect() as c:
            return list(c.execute(sa.select(runs.c.target).distinct()
                                  .order_by(runs.c.target)).scalars())

    def run(self, run_id: str) -> model.RunRecord:
        """The run's row as its model; FlagsweepError naming the row and the key when a value
        is not of its kind (a row is data: anyone with the store can write it)."""
        with self._connect() as c:
            row = c.execute(sa.select(runs).where(runs.c.run_id == run_id)).mappings().first()
        if row is None:
            raise FlagsweepError(f"no run '{run_id}' in the store {self.url} (a run's id is "
                                 "printed when it starts and stored in its results.json; "
                                 "its output folder works too)")
        return self._record(dict(row))

    def _record(self, row: dict) -> model.RunRecord:
        """A row as its model, the keys an older flagsweep wrote that no field declares left out."""
        try:
            return model.RunRecord.model_validate(model.declared(row, model.RunRecord))
        except ValidationError as e:
            raise FlagsweepError(f"run {row.get('run_id')}'s row in the store {self.url}: "
                                 f"{model.problem(e.errors(), 'run record')}") from None

    def set_option(self, run_id: str, key: str, value) -> None:
        """Add what a sweep learns after it starts (its input, its counters) to its options,
        held to the option's field in model.RunOptions (a model is kept as its JSON)."""
        value = value.dump() if isinstance(value, model.Record) else value
        options = model.RunOptions.model_validate(
            {**self.run(run_id).options.dump(), key: value}).dump()
        with self._begin() as c:
            c.execute(runs.update().where(runs.c.run_id == run_id).values(options=options))

    def finish_run(self, run_id: str, status: str, stop_reason: str,
                   finished: float | None = None) -> None:
        with self._begin() as c:
            c.execute(runs.update().where(runs.c.run_id == run_id).values(
                status=status, stop_reason=stop_reason, finished=finished or time.time()))

    def reopen_run(self, run_id: str) -> None:
        with self._begin() as c:
            c.execute(runs.update().where(runs.c.run_id == run_id).values(status="running",
                                                                          finished=None))

    # ---- variants ------------------------------------------------------------------------

    def save_variants(self, run_id: str, docs: list[model.Variant | dict]) -> None:
        """The run's variants in matrix order, each held to results.json's model as it is
        written (a document with a key the model does not declare is refused here)."""
        with self._begin() as c:
            for i, v in enumerate(map(model.Variant.model_validate, docs)):
                c.execute(variants.insert().values(run_id=run_id, variant_id=v.id,
                                                   position=i, doc=v.dump()))

    def save_check(self, run_id: str, variant_id: str, check: dict | model.Check) -> None:
        check = model.Check.model_validate(check).dump()
        with self._begin() as c:
            c.execute(variants.update().where(variants.c.run_id == run_id,
                                              variants.c.variant_id == variant_id)
                      .values(check=check))

    def variants(self, run_id: str) -> list[model.Variant]:
        """The run's variants in matrix order, as results.json's model: the stored document
        (id, compiler, flags, factors, build; a layout's layout_of and layout) and its output
        check (None until checked)."""
        with self._connect() as c:
            rows = c.execute(sa.select(variants.c.doc, variants.c.check)
                             .where(variants.c.run_id == run_id)
                             .order_by(variants.c.position)).all()
        return [model.Variant.model_validate({**r.doc, "check": r.check}) for r in rows]

    # ---- kept references -----------------------------------------------------------------------

    def reference(self, target: str, machine: str, baseline: str) -> KeptReference | None:
        """The kept reference binary of this target, machine and baseline variant; None when
        none is kept yet."""
        with self._connect() as c:
            row = c.execute(sa.select(references).where(
                references.c.target == target, references.c.machine == machine,
                references.c.baseline == baseline)).mappings().first()
        return KeptReference(**row) if row else None

    def keep_reference(self, target: str, machine: str, baseline: str, binary: Path,
                       flags: list[str], run_id: str, sha256: str) -> bool:
        """Keep `binary` as the reference of (target, machine, baseline) unless one is kept
        already (the first sweep's stays: every later night must measure the same program);
        True when this one was kept."""
        row = dict(target=target, machine=machine, baseline=baseline, sha256=sha256,
                   name=binary.name, flags=list(flags), run_id=run_id, kept=time.time(),
                   binary=binary.read_bytes())
        try:
            with self._begin() as c:
                if self._reference_row(c, target, machine, baseline):
                    return False
                c.execute(references.insert().values(row))
            return True
        except sa.exc.IntegrityError:
            return False          # another sweep kept one between the look and the insert

    @staticmethod
    def _reference_row(c: sa.Connection, target: str, machine: str, baseline: str):
        return c.execute(sa.select(references.c.sha256).where(
            references.c.target == target, references.c.machine == machine,
            references.c.baseline == baseline)).first()

    def references_of(self, target: str) -> dict[str, str]:
        """run id -> sha256 of the references kept from that run's baseline, for a target."""
        with self._connect() as c:
            rows = c.execute(sa.select(references.c.run_id, references.c.sha256)
                             .where(references.c.target == target)).all()
        return {r.run_id: r.sha256 for r in rows}

    # ---- samples -------------------------------------------------------------------------

    def add_sample(self, run_id: str, s: Sample) -> bool:
        """Store a sample; False (and nothing written) when the run already has one for this
        variant and round, as when a fleet task is rescheduled after its worker vanished."""
        values = {**_columns(run_id, s), "disturbed": s.disturbed}
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            # RETURNING, not rowcount: psycopg's is lost once SQLAlchemy closes the cursor.
            stmt = (pg_dialect.insert(samples).values(values)
                    .on_conflict_do_nothing(index_elements=SAMPLE_KEY).returning(samples.c.id))
            with self._begin() as c:
                return c.execute(stmt).first() is not None
        if dialect == "sqlite":
            stmt = (sqlite_dialect.insert(samples).values(values)
                    .on_conflict_do_nothing(index_elements=SAMPLE_KEY))
            with self._begin() as c:
                return c.execute(stmt).rowcount == 1
        try:  # another database: the unique key still refuses the duplicate
            with self._begin() as c:
                c.execute(samples.insert().values(values))
            return True
        except sa.exc.IntegrityError:
            return False

    def add_pair(self, run_id: str, pair: list[Sample]) -> None:
        """Store the samples of one duet together, in one transaction: a pair is kept whole or
        not at all, so a resumed sweep retakes it whole (a sample already there is kept)."""
        with self._begin() as c:
            for s in pair:
                values = {**_columns(run_id, s), "disturbed": s.disturbed}
                if c.execute(sa.select(samples.c.id).where(
                        *(samples.c[k] == values[k] for k in SAMPLE_KEY))).first() is None:
                    c.execute(samples.insert().values(values))

    def samples(self, run_id: str) -> list[Sample]:
        return self._read(samples, run_id)

    def add_attempt(self, run_id: str, s: Sample) -> None:
        """Keep a disturbed run that is being taken again (its sample is stored later)."""
        with self._begin() as c:
            c.execute(attempts.insert().values(_columns(run_id, s)))

    def attempts(self, run_id: str) -> list[Sample]:
        """The runs set aside as disturbed and taken again, oldest first."""
        return self._read(attempts, run_id)

    def _read(self, table: sa.Table, run_id: str) -> list[Sample]:
        with self._connect() as c:
            rows = c.execute(sa.select(table).where(table.c.run_id == run_id)
                             .order_by(table.c.round, table.c.position, table.c.id)).all()
        # An attempt was set aside because it was disturbed: it has no column to say so.
        return [Sample(variant_id=r.variant_id, round=r.round, position=r.position,
                       env_pad=r.env_pad, wall_s=r.wall_s, user_s=r.user_s,
                       sys_s=r.sys_s, maxrss_kb=r.maxrss_kb, counters=r.counters,
                       multiplexed=bool(r.multiplexed), failure=r.failure,
                       taken_at=r.taken_at, worker=r.worker,
                       disturbed=bool(r.disturbed) if table is samples else True,
                       pair=r.pair or None, cpu=r.cpu) for r in rows]

    def done(self, run_id: str) -> set[tuple[str, int]]:
        """(variant, round) pairs already measured: what a resumed sweep must not repeat."""
        with self._connect() as c:
            rows = c.execute(sa.select(samples.c.variant_id, samples.c.round)
                             .where(samples.c.run_id == run_id)).all()
        return {(r.variant_id, r.round) for r in rows}


def _columns(run_id: str, s: Sample) -> dict:
    """A sample's row in `samples` or `attempts` (less samples.disturbed)."""
    return dict(run_id=run_id, variant_id=s.variant_id, round=s.round, position=s.position,
                taken_at=s.taken_at or time.time(), env_pad=s.env_pad, wall_s=s.wall_s,
                user_s=s.user_s, sys_s=s.sys_s, maxrss_kb=s.maxrss_kb, counters=s.counters,
                multiplexed=s.multiplexed, failure=s.failure,
                worker=s.worker or socket.gethostname(), pair=s.pair or "", cpu=s.cpu)


def _sqlite_file(path: Path, create: bool, default: bool) -> None:
    """An SQLite store's file found (not create), or the default store's folder made (one the
    user named must exist: a typo in FLAGSWEEP_DB should not make a new store elsewhere)."""
    if not create:
        if not path.exists():
            raise NoStore(f"nothing is stored yet: the store {path} does not exist; {CHOOSE}")
        return
    if not default:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FlagsweepError(f"cannot create the store's folder {path.parent}: "
                             f"{e.strerror or e}; {CHOOSE}") from None


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """WAL: a reader never blocks the writer; synchronous=NORMAL: a commit reaches the OS at
    once (safe against kill -9 of flagsweep) without an fsync per sample (a power cut may lose
    the last few, which is fine for a benchmark and keeps the harness's cost per run small)."""
    cur = dbapi_conn.cursor()
    _wal(cur)
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _wal(cur) -> None:
    """Switch to WAL, waiting for the lock like every other statement does. SQLite answers
    "database is locked" to journal_mode=WAL at once, without its busy handler, when another
    process is switching the same fresh file at that moment (fleet workers opening one store
    together), so the wait is ours: retry with a growing pause up to the busy timeout."""
    pause, deadline = 0.005, time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.25)
