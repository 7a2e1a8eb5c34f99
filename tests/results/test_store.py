"""The store on both backends: SQLite (the default) and PostgreSQL (the fleet's).

The PostgreSQL cases use the session's throwaway server (conftest.postgres_url) with a new
database per test, so no test sees another's rows."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from flagsweep.errors import FlagsweepError
from flagsweep.measure.sample import Sample
from flagsweep.results import store as store_mod
from flagsweep.results.store import SCHEMA_VERSION, Store


def _admin(url: str):
    import psycopg

    u = sa.make_url(url)
    return psycopg.connect(host=u.host, port=u.port, user=u.username, password=u.password,
                           dbname="postgres", autocommit=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """A fresh, never opened store: an SQLite file not yet created, or an empty database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.sqlite'}"
        return
    server = request.getfixturevalue("postgres_url")
    name = f"t_{uuid.uuid4().hex}"
    with _admin(server) as c:
        c.execute(f"CREATE DATABASE {name}")
    yield sa.make_url(server).set(database=name).render_as_string(hide_password=False)
    with _admin(server) as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def store(store_url):
    s = Store(store_url)
    yield s
    s.engine.dispose()


def _run(s: Store, run_id: str = "run", target: str = "gzip", out: str = "/tmp/out") -> str:
    s.create_run(run_id, target, "olevels", Path(out), {"measure": {"runs": 3}}, {"cpu_model": "x"})
    return run_id


def _engine(url: str) -> sa.Engine:
    return sa.create_engine(store_mod.engine_url(url))


# ---- what every store does, on both backends -----------------------------------------------

def test_fresh_store_is_at_the_current_schema(store):
    assert store.schema_version() == SCHEMA_VERSION == 5
    inspector = sa.inspect(store.engine)
    assert "worker" in {c["name"] for c in inspector.get_columns("samples")}
    assert "ix_runs_target" in {i["name"] for i in inspector.get_indexes("runs")}


def test_runs_round_trip(store):
    _run(store, "a", out="/tmp/a")
    _run(store, "b", target="other")
    assert store.run("a").status == "running"
    assert store.run("a").options.dump() == {"measure": {"runs": 3}}
    assert store.find_run("a") == "a"
    assert store.find_run("/tmp/a") == "a"
    assert store.find_run("nothing") == "nothing"
    assert [r.run_id for r in store.runs_of("gzip")] == ["a"]
    store.set_option("a", "counters", {"mode": "software", "hw_counters": False})
    assert store.run("a").options.counters.mode == "software"
    store.finish_run("a", "complete", "max runs")
    assert (store.run("a").status, store.run("a").stop_reason) == ("complete", "max runs")
    assert store.run("a").finished is not None
    store.reopen_run("a")
    assert (store.run("a").status, store.run("a").finished) == ("running", None)


def test_a_run_row_is_read_through_its_model(store):
    """A row is data: a key an older flagsweep wrote that no field declares is left out, a
    value of the wrong kind is refused naming the row and the key, and an option no field
    declares is refused where it is written."""
    _run(store, "a")
    with store.engine.begin() as c:
        c.execute(store_mod.runs.update().values(
            options={"measure": {}, "gone": 1, "schedule": {"schedule": 3, "reason": "r"}}))
    with pytest.raises(FlagsweepError) as e:
        store.run("a")
    assert str(e.value) == (f"run a's row in the store {store.url}: key "
                            "'options.schedule.schedule': expected a string, got 3")
    with store.engine.begin() as c:
        c.execute(store_mod.runs.update().values(options={"measure": {}, "gone": 1}))
    assert store.run("a").options.dump() == {"measure": {}}
    with pytest.raises(ValueError, match="nonsense"):
        store.set_option("a", "nonsense", 1)


def test_run_ids_are_numbered_and_unique(store):
    assert store.new_run_id("r") == "r"
    _run(store, "r")
    assert store.new_run_id("r") == "r-2"
    with pytest.raises(FlagsweepError, match="run id 'r' is already in the store"):
        _run(store, "r")  # as if another process took it since new_run_id
    got = store.create_unique_run("r", "gzip", "olevels", Path("/tmp"), {}, {})
    assert got == "r-2" and store.new_run_id("r") == "r-3"


def test_variants_and_checks(store):
    _run(store)
    o2, o1 = ({"id": vid, "compiler": "gcc", "flags": [f"-{vid}"], "build": {"status": "ok"}}
              for vid in ("O2", "O1"))
    store.save_variants("run", [o2, o1])
    store.save_check("run", "O1", {"status": "ok"})
    assert [v.dump() for v in store.variants("run")] == [
        {**o2, "check": None}, {**o1, "check": {"status": "ok"}}]


def test_samples_round_trip_with_their_worker(store):
    _run(store)
    assert store.add_sample("run", Sample("O2", 0, 1, 16, 1.5, 1.4, 0.1, 2048, {"cycles": 9},
                                          True, None, 100.0, worker="fleet-7"))
    assert store.add_sample("run", Sample("O1", -1, 0, 0, failure="exit 1"))
    got = store.samples("run")
    assert [(s.variant_id, s.round) for s in got] == [("O1", -1), ("O2", 0)]
    assert got[1] == Sample("O2", 0, 1, 16, 1.5, 1.4, 0.1, 2048, {"cycles": 9}, True, None,
                            100.0, worker="fleet-7")
    assert got[0].worker == socket.gethostname() and not got[0].ok and got[0].taken_at > 0
    assert store.done("run") == {("O2", 0), ("O1", -1)}


def test_a_duplicate_sample_is_ignored(store):
    _run(store)
    assert store.add_sample("run", Sample("O2", 3, 0, 0, wall_s=1.0)) is True
    assert store.add_sample("run", Sample("O2", 3, 5, 0, wall_s=2.0)) is False  # rescheduled
    got = store.samples("run")
    assert len(got) == 1 and got[0].wall_s == 1.0
    assert store.add_sample("run", Sample("O2", 4, 0, 0, wall_s=1.0)) is True


def test_a_duet_keeps_one_baseline_run_per_pair_and_a_pair_whole(store):
    """In a duet round the baseline runs once per comparison: each of its runs is its own pair's
    (the unique key has the pair in it), and a pair is stored whole; its second storing (a
    resumed sweep's) adds nothing."""
    _run(store)
    for v in ("O1", "O3"):
        store.add_pair("run", [Sample(v, 0, 0, 0, wall_s=1.1, pair=v, cpu=1),
                               Sample("O2", 0, 0, 0, wall_s=1.0, pair=v, cpu=0)])
    store.add_pair("run", [Sample("O1", 0, 0, 0, wall_s=9.0, pair="O1", cpu=0),
                           Sample("O2", 0, 0, 0, wall_s=9.0, pair="O1", cpu=1)])
    got = sorted((s.variant_id, s.pair, s.cpu, s.wall_s) for s in store.samples("run"))
    assert got == [("O1", "O1", 1, 1.1), ("O2", "O1", 0, 1.0), ("O2", "O3", 0, 1.0),
                   ("O3", "O3", 1, 1.1)]
    assert store.add_sample("run", Sample("O2", 0, 0, 0, wall_s=1.0))   # a serial run: no pair
    assert [s.pair for s in store.samples("run") if s.pair is None] == [None]


V4_SAMPLES = """CREATE TABLE samples (id INTEGER NOT NULL {serial}, run_id VARCHAR(200) NOT NULL,
    variant_id VARCHAR(200) NOT NULL, round INTEGER NOT NULL, position INTEGER NOT NULL,
    taken_at FLOAT NOT NULL, env_pad INTEGER NOT NULL, wall_s FLOAT, user_s FLOAT, sys_s FLOAT,
    maxrss_kb INTEGER, counters JSON, multiplexed BOOLEAN NOT NULL, failure TEXT,
    worker VARCHAR(200), disturbed BOOLEAN DEFAULT FALSE NOT NULL, PRIMARY KEY (id),
    CONSTRAINT one_sample_per_round UNIQUE (run_id, variant_id, round),
    FOREIGN KEY(run_id) REFERENCES runs (run_id))"""


def test_a_version_4_store_gets_pairs_keeping_its_samples(store_url):
    """Version 4 had no pair in its unique key: the migration adds the columns and the key
    (SQLite by copying the table), every sample kept, the old key's duplicates still refused."""
    engine = _engine(store_url)
    store_mod.metadata.create_all(engine)
    with engine.begin() as c:
        c.exec_driver_sql("DROP TABLE samples")
        c.exec_driver_sql(V4_SAMPLES.format(
            serial="GENERATED BY DEFAULT AS IDENTITY" if c.dialect.name == "postgresql" else ""))
        c.exec_driver_sql("ALTER TABLE attempts DROP COLUMN pair")
        c.exec_driver_sql("ALTER TABLE attempts DROP COLUMN cpu")
        c.execute(store_mod.meta.insert().values(key="schema", value="4"))
        c.execute(store_mod.runs.insert().values(
            run_id="old", target="gzip", recipe="olevels", out_dir="/tmp/old", started=1.0,
            status="complete", options={"measure": {}}, machine=None))
        c.execute(sa.text("INSERT INTO samples (run_id, variant_id, round, position, taken_at, "
                          "env_pad, wall_s, multiplexed, disturbed) VALUES ('old', 'O2', 0, 0, "
                          "2.0, 0, 1.25, :f, :f)"), {"f": False})
    engine.dispose()
    s = Store(store_url)
    assert s.schema_version() == SCHEMA_VERSION
    (old,) = s.samples("old")
    assert (old.variant_id, old.wall_s, old.pair, old.cpu) == ("O2", 1.25, None, None)
    assert not s.add_sample("old", Sample("O2", 0, 0, 0, wall_s=3.0))
    assert s.add_sample("old", Sample("O2", 0, 0, 0, wall_s=3.0, pair="O1", cpu=1))
    s.add_attempt("old", Sample("O2", 1, 0, 0, wall_s=3.0, pair="O1", cpu=1))
    assert [(a.pair, a.cpu) for a in s.attempts("old")] == [("O1", 1)]
    s.engine.dispose()


def test_a_newer_store_is_refused(store, store_url):
    with store.engine.begin() as c:
        c.execute(store_mod.meta.update().values(value=str(SCHEMA_VERSION + 1)))
    with pytest.raises(FlagsweepError, match=f"has schema {SCHEMA_VERSION + 1}, newer"):
        Store(store_url)


# ---- migrations ------------------------------------------------------------------------------

def _make_v1_store(url: str, *, version_row: bool) -> None:
    """The tables as flagsweep 1 made them: no samples.worker, no index on runs.target."""
    engine = _engine(url)
    store_mod.metadata.create_all(engine)
    with engine.begin() as c:
        c.exec_driver_sql("DROP INDEX ix_runs_target")
        c.exec_driver_sql("ALTER TABLE samples DROP COLUMN worker")
        if version_row:
            c.execute(store_mod.meta.insert().values(key="schema", value="1"))
        c.execute(store_mod.runs.insert().values(
            run_id="old", target="gzip", recipe="olevels", out_dir="/tmp/old", started=1.0,
            status="complete", options={"measure": {}}, machine=None))
        c.execute(sa.text("INSERT INTO samples (run_id, variant_id, round, position, taken_at, "
                          "env_pad, wall_s, multiplexed) VALUES ('old', 'O2', 0, 0, 2.0, 0, "
                          "1.25, :f)"), {"f": False})
    inspector = sa.inspect(engine)
    assert "worker" not in {c["name"] for c in inspector.get_columns("samples")}
    assert not inspector.get_indexes("runs")
    engine.dispose()


@pytest.mark.parametrize("version_row", [True, False], ids=["v1", "v1-without-version-row"])
def test_a_version_1_store_is_migrated_keeping_its_rows(store_url, version_row):
    _make_v1_store(store_url, version_row=version_row)
    s = Store(store_url)
    assert s.schema_version() == SCHEMA_VERSION
    inspector = sa.inspect(s.engine)
    assert "worker" in {c["name"] for c in inspector.get_columns("samples")}
    assert "ix_runs_target" in {i["name"] for i in inspector.get_indexes("runs")}
    assert s.run("old").status == "complete"
    (old,) = s.samples("old")
    assert (old.variant_id, old.wall_s, old.worker) == ("O2", 1.25, None)
    assert s.add_sample("old", Sample("O2", 1, 0, 0, wall_s=1.5, worker="w1"))
    assert [x.worker for x in s.samples("old")] == [None, "w1"]
    s.engine.dispose()
    again = Store(store_url)  # a second open finds nothing to do
    assert again.schema_version() == SCHEMA_VERSION and len(again.samples("old")) == 2
    again.engine.dispose()


# ---- concurrency -----------------------------------------------------------------------------

WORKER = textwrap.dedent("""
    import pathlib, sys, time
    from flagsweep.errors import FlagsweepError
    from flagsweep.measure.sample import Sample
    from flagsweep.results.store import Store

    url, variant, ready, go = sys.argv[1:]
    pathlib.Path(ready).touch()
    while not pathlib.Path(go).exists():
        time.sleep(0.005)
    s = Store(url)  # the store's first open, racing the others
    try:
        s.create_run("shared", "gzip", "olevels", pathlib.Path("/tmp"), {}, {})
    except FlagsweepError:
        pass  # another worker created it first
    own = s.create_unique_run("race", "gzip", "olevels", pathlib.Path("/tmp"), {}, {})
    for r in range(50):
        assert s.add_sample("shared", Sample(variant, r, 0, 0, wall_s=1.0 + r, worker=variant))
    print(own)
""")


def test_concurrent_writers_lose_nothing(store_url, tmp_path):
    workers = [f"w{i}" for i in range(4)]
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, store_url, w,
                               str(tmp_path / f"ready-{w}"), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in workers]
    try:
        import time
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"ready-{w}").exists() for w in workers):
            assert time.monotonic() < deadline, "the workers did not start"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()  # all at once
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
    assert sorted(out.strip() for out, _ in results) == ["race", "race-2", "race-3", "race-4"]
    s = Store(store_url)
    got = s.samples("shared")
    assert len(got) == 200
    assert {w: sum(x.variant_id == w for x in got) for w in workers} == dict.fromkeys(workers, 50)
    assert all(x.worker == x.variant_id for x in got)
    assert s.schema_version() == SCHEMA_VERSION
    s.engine.dispose()


# ---- URLs and credentials --------------------------------------------------------------------

def test_postgres_urls_use_psycopg_3():
    for url in ("postgresql://u:p@h:5432/db", "postgres://u:p@h:5432/db",
                "postgresql+psycopg://u:p@h:5432/db"):
        u = store_mod.engine_url(url)
        assert (u.drivername, u.username, u.password, u.host, u.port, u.database) == \
            ("postgresql+psycopg", "u", "p", "h", 5432, "db")
    assert store_mod.engine_url("postgresql+psycopg2://h/db").drivername == "postgresql+psycopg2"
    assert store_mod.engine_url("sqlite:///x.sqlite").drivername == "sqlite"
    assert store_mod.masked("postgresql://u:s3cret@h/db") == "postgresql://u:***@h/db"


def test_a_malformed_url_is_not_echoed():
    with pytest.raises(FlagsweepError, match="not a database URL") as e:
        Store("postgresql//u:s3cret@h/db")
    assert "s3cret" not in str(e.value)


def test_a_missing_driver_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    with pytest.raises(FlagsweepError) as e:
        Store("postgresql://u:s3cret@127.0.0.1:1/db")
    assert "postgresql+psycopg" in str(e.value)
    assert "pip install 'psycopg[binary]'" in str(e.value)
    assert "s3cret" not in str(e.value)


def test_an_unreachable_server_is_an_error_without_the_password():
    port = _unused_port()
    with pytest.raises(FlagsweepError, match="cannot open the store") as e:
        Store(f"postgresql://u:s3cret@127.0.0.1:{port}/db")
    assert "s3cret" not in str(e.value) and "u:***@127.0.0.1" in str(e.value)


def test_the_password_is_never_shown(postgres_url):
    password = sa.make_url(postgres_url).password
    assert password and password in postgres_url
    s = Store(postgres_url)
    assert password not in s.url and "***" in s.url
    assert s.engine.url.password == password  # the engine alone has it
    with pytest.raises(FlagsweepError, match="no run 'nope' in the store") as e:
        s.run("nope")
    assert password not in str(e.value)
    wrong = sa.make_url(postgres_url).set(password="not-" + password)
    with pytest.raises(FlagsweepError, match="cannot open the store") as e:
        Store(wrong.render_as_string(hide_password=False))
    assert password not in str(e.value)
    s.engine.dispose()


def test_a_url_without_password_uses_pgpass(postgres_url, tmp_path, monkeypatch):
    u = sa.make_url(postgres_url)
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"{u.host}:{u.port}:{u.database}:{u.username}:{u.password}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    s = Store(f"postgresql://{u.username}@{u.host}:{u.port}/{u.database}")
    assert s.schema_version() == SCHEMA_VERSION and "***" not in s.url
    s.engine.dispose()


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- a damaged store, a full disk ------------------------------------------------------------

def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "garbage":
        path.write_bytes(bytes(range(256)) * 12)
    elif how == "truncated":
        path.write_bytes(data[:5000])
    else:  # a page in the middle overwritten
        path.write_bytes(data[:4096] + b"x" * 4096 + data[8192:])


def _damaged_store(tmp_path: Path, how: str) -> Path:
    path = tmp_path / "store.sqlite"
    s = Store(f"sqlite:///{path}")
    for i in range(3):
        _run(s, f"run-{i}")
    s.engine.dispose()
    assert not Path(f"{path}-wal").exists()  # checkpointed: the file holds everything
    _damage(path, how)
    return path


@pytest.mark.parametrize("how", ["garbage", "truncated", "overwritten"])
def test_a_damaged_store_names_its_file_and_what_to_do(tmp_path, how):
    path = _damaged_store(tmp_path, how)
    with pytest.raises(FlagsweepError) as e:
        Store(f"sqlite:///{path}").runs_of("gzip")
    assert str(e.value).startswith(f"the store {path} is damaged or not a flagsweep store (")
    assert str(e.value).endswith("move the file (and any -wal and -shm beside it) aside or "
                                 "restore it from a backup; FLAGSWEEP_DB or --db choose another "
                                 "store")


def test_a_damaged_store_is_one_line_from_the_command(tmp_path, monkeypatch):
    path = _damaged_store(tmp_path, "truncated")
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{path}")
    cli = subprocess.run([sys.executable, "-m", "flagsweep", "history", "gzip"],
                         capture_output=True, text=True)
    assert cli.returncode == 2
    assert cli.stderr == (f"flagsweep: the store {path} is damaged or not a flagsweep store "
                          "(database disk image is malformed): move the file (and any -wal and "
                          "-shm beside it) aside or restore it from a backup; FLAGSWEEP_DB or "
                          "--db choose another store\n")


def test_a_store_in_a_missing_folder_says_so(tmp_path):
    with pytest.raises(FlagsweepError, match=rf"^cannot open the store {tmp_path}/no/store.sqlite: "
                       rf"unable to open database file; its folder {tmp_path}/no must exist"):
        Store(f"sqlite:///{tmp_path}/no/store.sqlite")


def test_a_full_disk_under_the_store_is_an_error_and_loses_nothing(small_fs):
    s = Store(f"sqlite:///{small_fs.path / 'store.sqlite'}")
    run = _run(s)
    for r in range(3):
        assert s.add_sample(run, Sample("v", r, 0, 0, wall_s=1.0))
    small_fs.fill()
    with pytest.raises(FlagsweepError, match=rf"^the store {small_fs.path}/store.sqlite cannot be "
                       r"written: database or disk is full. Free space on its disk"):
        for r in range(3, 1000):  # SQLite's pages in hand take a few before the disk is needed
            s.add_sample(run, Sample("v", r, 0, 0, wall_s=1.0, counters={"pad": "x" * 4000}))
    stored = len(s.samples(run))
    small_fs.free()
    assert s.add_sample(run, Sample("v", 1000, 0, 0, wall_s=1.0))
    assert [x.round for x in s.samples(run)][:3] == [0, 1, 2] and len(s.samples(run)) == stored + 1
    s.engine.dispose()


def test_a_full_disk_at_a_runs_start_is_not_a_race_for_its_id(small_fs):
    s = Store(f"sqlite:///{small_fs.path / 'store.sqlite'}")
    small_fs.fill()
    with pytest.raises(FlagsweepError, match="cannot be written: database or disk is full"):
        for i in range(1000):  # SQLite's pages in hand take a few before the disk is needed
            s.create_unique_run(f"run-{i}", "gzip", "olevels", Path("/tmp/out"),
                                {"target_path": "x" * 4000}, {})
    s.engine.dispose()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]       # nothing listens on it once the socket is closed


@pytest.mark.parametrize("how", ["--db", "FLAGSWEEP_DB"])
@pytest.mark.parametrize("url, says", [
    ("postgresql://u:Top@Secret:77@host/db", "is not a database URL"),        # unencoded @
    ("postgresql://u:Top@Secret@host/db", "holds more than one '@'"),          # read as a host
    ("postgresql://u@Top:Secret@host/db", "holds more than one '@'"),          # read as a user
    ("postgresql://u:TopSecret@host:port/db", "is not a database URL"),        # bad port
    ("mongodb://u:TopSecret@host/db", "scheme mongodb:// is not one flagsweep can use"),
    ("postgresql://u:Top:Secret@127.0.0.1:{port}/db", "Connection refused"),   # ':' in it
    ("postgresql://u:Top%40Secret@127.0.0.1:{port}/db", "Connection refused"),
    ("postgresql://u@127.0.0.1:{port}/db?password=TopSecret", "Connection refused"),
])
def test_a_store_url_error_is_one_line_without_the_password(url, says, how, main, monkeypatch):
    """An unencoded '@' ended in a ValueError traceback holding part of the password; a
    refused connection was two lines. In this process (the `main` fixture runs cli.main as the
    script does): the test is what is printed, not the interpreter's start."""
    url = url.format(port=_closed_port())
    monkeypatch.delenv("FLAGSWEEP_DB", raising=False)
    if how == "FLAGSWEEP_DB":
        monkeypatch.setenv("FLAGSWEEP_DB", url)
    code, err = main(*(["--db", url] if how == "--db" else []), "history", "gzip")
    assert code == 2, err
    assert main.out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("flagsweep: ") and says in err
    for part in ("Top", "Secret"):
        assert part not in err


def test_a_refused_store_is_one_line_from_the_script_too(tmp_path):
    """The same from a process of its own, which is what a user runs: nothing the driver writes
    to the file descriptor itself, under the interpreter's streams, adds a line."""
    url = f"postgresql://u:Top%40Secret@127.0.0.1:{_closed_port()}/db"
    done = subprocess.run([sys.executable, "-m", "flagsweep", "--db", url, "history", "gzip"],
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Connection refused" in done.stderr, done.stderr
    assert "Top" not in done.stderr and "Secret" not in done.stderr
