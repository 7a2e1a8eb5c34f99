"""The store: every sweep, variant and sample, written as it happens.

SQLAlchemy Core over SQLite by default (one file, no server), with a schema that stays
portable to PostgreSQL (issue 7): plain types, JSON columns, no SQLite-only SQL. A sample is
committed the moment it is taken, so Ctrl-C, SIGTERM or kill -9 lose at most the run in flight,
and `flagsweep run --resume` continues from exactly what is here. The unique key on
(run, variant, round) makes a resumed sweep unable to duplicate a sample.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from .errors import FlagsweepError

SCHEMA_VERSION = 1
metadata = sa.MetaData()

runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.String(200), primary_key=True),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("recipe", sa.String(200), nullable=False),
    sa.Column("out_dir", sa.Text, nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("finished", sa.Float),
    sa.Column("status", sa.String(20), nullable=False),      # running | complete | interrupted
    sa.Column("stop_reason", sa.Text),
    sa.Column("options", sa.JSON, nullable=False),           # everything needed to resume
    sa.Column("machine", sa.JSON),
)

variants = sa.Table(
    "variants", metadata,
    sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("variant_id", sa.String(200), primary_key=True),
    sa.Column("position", sa.Integer, nullable=False),       # matrix order, baseline first
    sa.Column("doc", sa.JSON, nullable=False),               # id, compiler, flags, factors, build
    sa.Column("check", sa.JSON),                             # filled by the output check
)

samples = sa.Table(
    "samples", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), nullable=False),
    sa.Column("variant_id", sa.String(200), nullable=False),
    sa.Column("round", sa.Integer, nullable=False),          # warmups are negative rounds
    sa.Column("position", sa.Integer, nullable=False),       # place in the round's shuffled order
    sa.Column("taken_at", sa.Float, nullable=False),
    sa.Column("env_pad", sa.Integer, nullable=False),
    sa.Column("wall_s", sa.Float),
    sa.Column("user_s", sa.Float),
    sa.Column("sys_s", sa.Float),
    sa.Column("maxrss_kb", sa.Integer),
    sa.Column("counters", sa.JSON),                          # perf / cachegrind values by name
    sa.Column("multiplexed", sa.Boolean, nullable=False, default=False),
    sa.Column("failure", sa.Text),                           # None for a good sample
    sa.UniqueConstraint("run_id", "variant_id", "round", name="one_sample_per_round"),
)

meta = sa.Table(
    "flagsweep_meta", metadata,
    sa.Column("key", sa.String(50), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)


def default_url() -> str:
    """$FLAGSWEEP_DB, else an SQLite file in $XDG_DATA_HOME/flagsweep (~/.local/share/flagsweep)."""
    if os.environ.get("FLAGSWEEP_DB"):
        return os.environ["FLAGSWEEP_DB"]
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local/share") / "flagsweep"
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{base / 'store.sqlite'}"


@dataclass
class Sample:
    variant_id: str
    round: int
    position: int
    env_pad: int
    wall_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None
    maxrss_kb: int | None = None
    counters: dict[str, Any] | None = None
    multiplexed: bool = False
    failure: str | None = None
    taken_at: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None


class Store:
    """One connection to the store; every write is its own committed transaction."""

    def __init__(self, url: str | None = None):
        self.url = url or default_url()
        self.engine = sa.create_engine(self.url)
        if self.engine.dialect.name == "sqlite":
            sa.event.listen(self.engine, "connect", _sqlite_pragmas)
        metadata.create_all(self.engine)
        self._check_version()

    def _check_version(self) -> None:
        with self.engine.begin() as c:
            row = c.execute(sa.select(meta.c.value).where(meta.c.key == "schema")).first()
            if row is None:
                c.execute(meta.insert().values(key="schema", value=str(SCHEMA_VERSION)))
            elif int(row.value) > SCHEMA_VERSION:
                raise FlagsweepError(f"the store {self.url} has schema {row.value}, newer than "
                                     f"this flagsweep understands ({SCHEMA_VERSION}); upgrade flagsweep")

    # ---- runs ----------------------------------------------------------------------------

    def create_run(self, run_id: str, target: str, recipe: str, out_dir: Path,
                   options: dict, machine: dict) -> None:
        with self.engine.begin() as c:
            c.execute(runs.insert().values(run_id=run_id, target=target, recipe=recipe,
                                           out_dir=str(out_dir), started=time.time(),
                                           status="running", options=options, machine=machine))

    def new_run_id(self, base: str) -> str:
        """base, or base-2, base-3...: run ids are unique in the store."""
        with self.engine.connect() as c:
            taken = {r.run_id for r in c.execute(
                sa.select(runs.c.run_id).where(runs.c.run_id.like(f"{base}%")))}
        n, run_id = 1, base
        while run_id in taken:
            n += 1
            run_id = f"{base}-{n}"
        return run_id

    def find_run(self, id_or_dir: str) -> str:
        """A run id as given, or the id of the run whose output folder this is."""
        with self.engine.connect() as c:
            if c.execute(sa.select(runs.c.run_id).where(runs.c.run_id == id_or_dir)).first():
                return id_or_dir
            folder = str(Path(id_or_dir).resolve())
            row = c.execute(sa.select(runs.c.run_id).where(runs.c.out_dir == folder)
                            .order_by(runs.c.started.desc())).first()
        return row.run_id if row else id_or_dir

    def runs_of(self, target: str) -> list[dict]:
        """Every run of a target, oldest first (flagsweep history reads its sweeps from here)."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(runs).where(runs.c.target == target)
                             .order_by(runs.c.started)).mappings().all()
        return [dict(r) for r in rows]

    def run(self, run_id: str) -> dict:
        with self.engine.connect() as c:
            row = c.execute(sa.select(runs).where(runs.c.run_id == run_id)).mappings().first()
        if row is None:
            raise FlagsweepError(f"no run '{run_id}' in the store {self.url} (a run's id is "
                                 "printed when it starts and stored in its results.json; "
                                 "its output folder works too)")
        return dict(row)

    def set_option(self, run_id: str, key: str, value) -> None:
        """Add what a sweep learns after it starts (its input, its counters) to its options."""
        options = dict(self.run(run_id)["options"])
        options[key] = value
        with self.engine.begin() as c:
            c.execute(runs.update().where(runs.c.run_id == run_id).values(options=options))

    def finish_run(self, run_id: str, status: str, stop_reason: str) -> None:
        with self.engine.begin() as c:
            c.execute(runs.update().where(runs.c.run_id == run_id).values(
                status=status, stop_reason=stop_reason, finished=time.time()))

    def reopen_run(self, run_id: str) -> None:
        with self.engine.begin() as c:
            c.execute(runs.update().where(runs.c.run_id == run_id).values(status="running",
                                                                          finished=None))

    # ---- variants ------------------------------------------------------------------------

    def save_variants(self, run_id: str, docs: list[dict]) -> None:
        with self.engine.begin() as c:
            for i, doc in enumerate(docs):
                c.execute(variants.insert().values(run_id=run_id, variant_id=doc["id"],
                                                   position=i, doc=doc))

    def save_check(self, run_id: str, variant_id: str, check: dict) -> None:
        with self.engine.begin() as c:
            c.execute(variants.update().where(variants.c.run_id == run_id,
                                              variants.c.variant_id == variant_id)
                      .values(check=check))

    def variants(self, run_id: str) -> list[dict]:
        """[{"doc": ..., "check": ...}] in matrix order."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(variants.c.doc, variants.c.check)
                             .where(variants.c.run_id == run_id)
                             .order_by(variants.c.position)).mappings().all()
        return [dict(r) for r in rows]

    # ---- samples -------------------------------------------------------------------------

    def add_sample(self, run_id: str, s: Sample) -> None:
        with self.engine.begin() as c:
            c.execute(samples.insert().values(
                run_id=run_id, variant_id=s.variant_id, round=s.round, position=s.position,
                taken_at=s.taken_at or time.time(), env_pad=s.env_pad, wall_s=s.wall_s,
                user_s=s.user_s, sys_s=s.sys_s, maxrss_kb=s.maxrss_kb, counters=s.counters,
                multiplexed=s.multiplexed, failure=s.failure))

    def samples(self, run_id: str) -> list[Sample]:
        with self.engine.connect() as c:
            rows = c.execute(sa.select(samples).where(samples.c.run_id == run_id)
                             .order_by(samples.c.round, samples.c.position)).mappings().all()
        return [Sample(variant_id=r["variant_id"], round=r["round"], position=r["position"],
                       env_pad=r["env_pad"], wall_s=r["wall_s"], user_s=r["user_s"],
                       sys_s=r["sys_s"], maxrss_kb=r["maxrss_kb"], counters=r["counters"],
                       multiplexed=bool(r["multiplexed"]), failure=r["failure"],
                       taken_at=r["taken_at"]) for r in rows]

    def done(self, run_id: str) -> set[tuple[str, int]]:
        """(variant, round) pairs already measured: what a resumed sweep must not repeat."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(samples.c.variant_id, samples.c.round)
                             .where(samples.c.run_id == run_id)).all()
        return {(r.variant_id, r.round) for r in rows}


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    """WAL: a reader never blocks the writer; synchronous=NORMAL: a commit reaches the OS at
    once (safe against kill -9 of flagsweep) without an fsync per sample (a power cut may lose
    the last few, which is fine for a benchmark and keeps the harness's cost per run small)."""
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()
