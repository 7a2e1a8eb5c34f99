"""The store's tables (SQLAlchemy Core, the same on SQLite and PostgreSQL) and the steps that
migrate an older store's to them (results.store opens, creates and migrates a store).
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

SCHEMA_VERSION = 5
metadata = sa.MetaData()

runs = sa.Table(
    "runs", metadata,
    sa.Column("run_id", sa.String(200), primary_key=True),
    sa.Column("target", sa.String(200), nullable=False),
    sa.Column("recipe", sa.String(200), nullable=False),
    sa.Column("out_dir", sa.Text, nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("finished", sa.Float),
    # running | complete | busy (stopped early, the machine busy) | interrupted | failed
    sa.Column("status", sa.String(20), nullable=False),
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
    sa.Column("worker", sa.String(200)),                     # v2: the machine/worker that took it
    sa.Column("disturbed", sa.Boolean, nullable=False, default=False,  # v3: judged disturbed,
              server_default=sa.false()),                    # kept when retakes ran out
    # v5: the pair a run belongs to in a duet round or the schedule's pilot (the variant it
    # compares, measure.sample.Sample.pair; '' in serial rounds), and the CPU it was pinned to
    sa.Column("pair", sa.String(200), nullable=False, default="", server_default=""),
    sa.Column("cpu", sa.Integer),
    sa.UniqueConstraint("run_id", "variant_id", "round", "pair", name="one_sample_per_round"),
)
SAMPLE_KEY = ("run_id", "variant_id", "round", "pair")

# v3: every run judged disturbed and taken again, with all it measured; `samples` holds the
# attempt that counts for its (variant, round). Same columns as samples, no unique key.
attempts = sa.Table(
    "attempts", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(200), sa.ForeignKey("runs.run_id"), nullable=False),
    *(sa.Column(c.name, c.type, nullable=c.nullable, server_default=c.server_default)
      for c in samples.columns if c.name not in ("id", "run_id", "disturbed")),
)
attempts_by_run = sa.Index("ix_attempts_run", attempts.c.run_id)

runs_by_target = sa.Index("ix_runs_target", runs.c.target)  # v2: history reads runs by target

# v4: the binary a target's nightly series is measured against (its reference arm): the first
# complete sweep's baseline binary on this machine, kept so every later sweep measures it beside
# its own build. One per target, CPU identity (across.history.machine_key) and baseline variant.
references = sa.Table(
    "kept_references", metadata,
    sa.Column("target", sa.String(200), primary_key=True),
    sa.Column("machine", sa.String(500), primary_key=True),
    sa.Column("baseline", sa.String(200), primary_key=True),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),       # the binary's file name
    sa.Column("flags", sa.JSON, nullable=False),
    sa.Column("run_id", sa.String(200), nullable=False),     # the sweep it was kept from
    sa.Column("kept", sa.Float, nullable=False),
    sa.Column("binary", sa.LargeBinary, nullable=False),
)

meta = sa.Table(
    "flagsweep_meta", metadata,
    sa.Column("key", sa.String(50), primary_key=True),
    sa.Column("value", sa.String(200), nullable=False),
)


# ---- migrations ------------------------------------------------------------------------------
#
# No Alembic: a step or two and one version row do not need a migration framework's config tree
# (alembic.ini, env.py, a versions/ folder) shipped inside a command-line tool. MIGRATIONS[i]
# takes a store from version i + 1 to i + 2; all of them run on open, in the same transaction as
# the version row's update, so a store is never left half-migrated. Fresh stores are created at
# SCHEMA_VERSION directly from `metadata`, so each step must end in exactly what `metadata` says.

def column_names(c: sa.Connection, table: str) -> set[str]:
    """The columns a table has in the store as it is now (an older one may lack some)."""
    return {col["name"] for col in sa.inspect(c).get_columns(table)}


def v2_sample_worker_and_runs_index(c: sa.Connection) -> None:
    """samples.worker (which machine took the sample); an index on runs.target."""
    columns = column_names(c, "samples")
    if "worker" not in columns:
        kind = samples.c.worker.type.compile(dialect=c.dialect)
        c.exec_driver_sql(f"ALTER TABLE samples ADD COLUMN worker {kind}")
    runs_by_target.create(c, checkfirst=True)


def v3_disturbed_and_attempts(c: sa.Connection) -> None:
    """samples.disturbed; the attempts table (made by create_all before the steps run)."""
    columns = column_names(c, "samples")
    if "disturbed" not in columns:
        c.exec_driver_sql("ALTER TABLE samples ADD COLUMN disturbed BOOLEAN NOT NULL DEFAULT FALSE")
    attempts_by_run.create(c, checkfirst=True)


def v4_references(c: sa.Connection) -> None:
    """The kept_references table (made by create_all before the steps run)."""
    references.create(c, checkfirst=True)


def v5_pairs(c: sa.Connection) -> None:
    """samples.pair and samples.cpu (and the attempts' own), and the unique key with the pair
    in it: a duet round runs the baseline once per comparison, each run in its own pair."""
    for table in (samples, attempts):
        columns = column_names(c, table.name)
        if "cpu" not in columns:
            c.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN cpu INTEGER")
        if "pair" not in columns:
            c.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN pair VARCHAR(200) "
                              "NOT NULL DEFAULT ''")
    keys = sa.inspect(c).get_unique_constraints(samples.name)
    if any(set(k["column_names"]) == set(SAMPLE_KEY) for k in keys):
        return
    if c.dialect.name == "sqlite":   # SQLite cannot change a table's constraints: copy it
        c.exec_driver_sql("ALTER TABLE samples RENAME TO samples_v4")
        samples.create(c)
        names = ", ".join(col.name for col in samples.columns)
        c.exec_driver_sql(f"INSERT INTO samples ({names}) SELECT {names} FROM samples_v4")
        c.exec_driver_sql("DROP TABLE samples_v4")
        return
    c.exec_driver_sql("ALTER TABLE samples DROP CONSTRAINT one_sample_per_round")
    c.exec_driver_sql("ALTER TABLE samples ADD CONSTRAINT one_sample_per_round "
                      f"UNIQUE ({', '.join(SAMPLE_KEY)})")


MIGRATIONS: list[Callable[[sa.Connection], None]] = [
    v2_sample_worker_and_runs_index,   # 1 -> 2
    v3_disturbed_and_attempts,         # 2 -> 3
    v4_references,                     # 3 -> 4
    v5_pairs,                          # 4 -> 5
]
assert len(MIGRATIONS) == SCHEMA_VERSION - 1
