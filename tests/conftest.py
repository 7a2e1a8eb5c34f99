"""Shared fixtures: the suite never touches (or depends on) the user's ~/.cache/flagsweep,
ccache, store or measurement lock, and never needs the network."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that fetch or build real programs first, the quick ones last. On two
    workers (pytest-xdist's worksteal) each takes tests from the front of its share and the
    idle one steals from the end of the other's, so the suite then ends on tests of a fraction
    of a second rather than on one worker's minute-long build while the other waits. A module
    stays in one piece (its module-scoped fixtures are made once) and in its order."""
    def weight(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("network") else \
            1 if item.get_closest_marker("integration") else 2

    modules: dict[object, int] = {}
    for item in items:
        modules[item.module] = min(modules.get(item.module, 2), weight(item))
    items.sort(key=lambda item: modules[item.module])


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("flagsweep-cache")


@pytest.fixture(autouse=True)
def isolated_cache(session_cache: Path, monkeypatch) -> Path:
    """One cache for the whole session (so ccache hits across tests are possible), never the
    user's (one for each worker when pytest-xdist runs the suite on several: tmp_path_factory
    gives each its own folder, so no worker waits on another's measurement lock); an empty
    store for each test, in the cache: what one test's sweeps leave there (a
    kept reference arm, a history) must not change what another measures."""
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(session_cache))
    store = session_cache / "store.sqlite"
    for leftover in (store, store.with_name("store.sqlite-wal"), store.with_name("store.sqlite-shm")):
        leftover.unlink(missing_ok=True)
    monkeypatch.setenv("FLAGSWEEP_DB", f"sqlite:///{store}")
    monkeypatch.setenv("FLAGSWEEP_LOCK_DIR", str(session_cache))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(session_cache / "config"))   # no user targets
    monkeypatch.delenv("CCACHE_DIR", raising=False)
    monkeypatch.delenv("FLAGSWEEP_HOST", raising=False)    # the live CPU unless a test records one
    return session_cache


@pytest.fixture(autouse=True)
def short_load_window(monkeypatch):
    """The load a sweep chooses its CPU by, measured over 50 ms instead of half a second in this
    process: the choice's rules are tested on recorded snapshots (tests/host/test_placement.py),
    and the sweeps here test what follows it, whichever CPU it takes. A sweep started as a
    process of its own still waits the whole window."""
    from flagsweep.host import load
    monkeypatch.setattr(load, "WINDOW_S", 0.05)


@pytest.fixture(autouse=True)
def no_sweep_outlives_its_test():
    """A test that starts a sweep with Popen and fails before it ends would leave the sweep
    holding this worker's CPU lock, and the worker's next sweeps would be refused: a failure
    that shows up in tests that did nothing wrong. What the test started is ended here."""
    from procs import end, own_sweeps
    before = own_sweeps()
    yield
    end(own_sweeps() - before)


@pytest.fixture
def main(monkeypatch, capsys):
    """The command line in this process, as the flagsweep script runs it (cli.main): no
    interpreter start per call. Returns the exit code and stderr; what the command printed on
    stdout is then main.out."""
    from flagsweep import cli

    def run(*args: str) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", ["flagsweep", *args])
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            cli.main()
        printed = capsys.readouterr()
        assert "Traceback" not in printed.err, printed.err
        run.out = printed.out
        return e.value.code or 0, printed.err
    return run


def raw_controls(text: str) -> list[str]:
    """The control characters in text that would act on a terminal: C0 but for tab and
    newline, DEL and C1 (flagsweep shows them written out instead, flagsweep.screen)."""
    return [c for c in text if (ord(c) < 0x20 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f]


def planted_session(folder: Path, source: str) -> subprocess.CompletedProcess:
    """`source` run as a test file in a pytest session of its own in `folder`, with a copy of
    this conftest (and procs.py, which it imports) beside it and this checkout's flagsweep: how
    a test shows that one of the suite's own guards acts."""
    for helper in ("conftest.py", "procs.py"):
        shutil.copy(Path(__file__).parent / helper, folder / helper)
    (folder / "test_planted.py").write_text(source)
    package_root = str(Path(__file__).parents[1])
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), "--basetemp", str(folder / "base"),
                           str(folder / "test_planted.py")],
                          capture_output=True, text=True, cwd=folder, timeout=600,
                          env={**os.environ, "PYTHONPATH": package_root})


HOSTS = FIXTURES / "hosts"
# planted_session runs a copy of this file in a folder of its own, without the fixtures beside it.
RECORDED_HOSTS = sorted(p.name for p in HOSTS.iterdir() if p.is_dir()) if HOSTS.is_dir() else []


@pytest.fixture(params=RECORDED_HOSTS)
def recorded_host(request, monkeypatch) -> Path:
    """Each recorded host in turn (tests/fixtures/hosts), read through $FLAGSWEEP_HOST: a test
    about CPU decisions then means the same on any machine it runs on."""
    folder = HOSTS / request.param
    monkeypatch.setenv("FLAGSWEEP_HOST", str(folder))
    return folder


# The files of the results contract, and the kind `flagsweep schema KIND` describes each with.
CONTRACT_FILES = {"results.json": "results", "suite.json": "suite", "merged.json": "merged",
                  "tune.json": "tune"}
_schemas: dict[str, object] = {}


def contract_validator(kind: str):
    """A validator for the JSON Schema `flagsweep schema KIND` prints (asked once a session)."""
    if kind not in _schemas:
        import jsonschema
        from click.testing import CliRunner

        from flagsweep.cli import cli

        done = CliRunner().invoke(cli, ["schema", kind])
        assert done.exit_code == 0, done.output
        schema = json.loads(done.stdout)
        jsonschema.Draft202012Validator.check_schema(schema)
        _schemas[kind] = jsonschema.Draft202012Validator(schema)
    return _schemas[kind]


def contract_problems(folder: Path) -> list[str]:
    """Every results.json, suite.json and merged.json under folder that the JSON Schema
    refuses, each as `file: key path: what is wrong`."""
    import jsonschema

    problems = []
    for name, kind in CONTRACT_FILES.items():
        for path in sorted(folder.rglob(name)):
            if not path.is_file():
                continue
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError) as e:
                problems.append(f"{path}: not JSON: {e}")
                continue
            error = jsonschema.exceptions.best_match(contract_validator(kind).iter_errors(doc))
            if error is not None:
                key = error.json_path.removeprefix("$").removeprefix(".") or "(the document)"
                problems.append(f"{path}: {key}: {error.message}")
    return problems


@pytest.fixture(autouse=True)
def results_follow_the_contract(request):
    """After each test, every results/suite/merged file it wrote in its tmp_path must validate
    against `flagsweep schema`: a writer that drifts from the contract fails the test that ran
    it. A test that plants a broken file on purpose is marked breaks_contract."""
    checked = "tmp_path" in request.fixturenames and \
        request.node.get_closest_marker("breaks_contract") is None
    folder = request.getfixturevalue("tmp_path") if checked else None
    yield
    problems = contract_problems(folder) if folder is not None else []
    if problems:
        pytest.fail("written against the results contract (flagsweep schema):\n"
                    + "\n".join(problems), pytrace=False)


class SmallFs:
    """A small tmpfs of a test's own: a disk that really fills, or really is read-only."""

    def __init__(self, path: Path):
        self.path = path

    def fill(self) -> None:
        """Write until the file system refuses: ENOSPC for whatever comes next."""
        # Unbuffered: a buffered file would hold the part of its last write the disk refused and
        # raise ENOSPC again when closed, depending on how much room happened to be left.
        with open(self.path / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as e:
                assert e.errno == errno.ENOSPC, e

    def free(self) -> None:
        (self.path / "filler").unlink()

    def read_only(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True)


@pytest.fixture
def small_fs(tmp_path) -> SmallFs:
    """A 4 MiB tmpfs mounted for the test (root only: skipped where mounting is refused, as
    in an unprivileged container); unmounted after it."""
    mount = tmp_path / "small-fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield SmallFs(mount)
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.fixture
def fixture_target():
    from flagsweep.experiment import target

    return lambda name: target.load(str(FIXTURES / name))


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session (starting it costs more than any page load).
    CI installs it through setup.sh, so there its absence is a failure, not a skip."""
    from browser import Browser, chromium_path

    executable = chromium_path()
    if executable is None:
        reason = "chromium is not installed (setup.sh installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI runs setup.sh, so it must be there", pytrace=False)
        pytest.skip(reason)
    with Browser(executable) as b:
        yield b


# ---- a throwaway PostgreSQL server for the store's tests ------------------------------------

PG_USER = "flagsweep_test"


def _postgres_bin() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin with initdb and pg_ctl (Debian's layout)."""
    def version(bindir: Path) -> tuple[int, ...]:
        return tuple(int(p) for p in bindir.parent.name.split(".") if p.isdigit())

    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")
             if (p.parent / "pg_ctl").exists()]
    return max(found, key=version) if found else None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_url():
    """postgresql://USER:PASSWORD@127.0.0.1:PORT/flagsweep on a server of its own, started for
    the session (TCP on 127.0.0.1 only, its socket in its temporary folder) and removed after.
    As root, the server runs as the `postgres` user (PostgreSQL refuses root). CI installs
    PostgreSQL through setup.sh, so there its absence is a failure, not a skip."""
    import secrets
    import shutil
    import subprocess
    import tempfile
    import time

    bindir = _postgres_bin()
    if bindir is None:
        reason = ("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb; "
                  "./setup.sh test installs it)")
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI runs setup.sh, so it must be there", pytrace=False)
        pytest.skip(reason)
    try:
        import psycopg
    except ImportError:
        pytest.fail("psycopg is not installed: pip install 'psycopg[binary]'", pytrace=False)

    as_root = os.geteuid() == 0
    # /tmp, not pytest's tmp_path: the postgres user must be able to reach the folder.
    base = Path(tempfile.mkdtemp(prefix="flagsweep-pg-", dir="/tmp" if as_root else None))
    data, sockets, log = base / "data", base / "sockets", base / "server.log"
    sockets.mkdir()
    password = "pw-" + secrets.token_hex(12)
    (base / "pwfile").write_text(password + "\n")
    if as_root:
        for p in (base, sockets, base / "pwfile"):
            shutil.chown(p, "postgres", "postgres")
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []

    def pg(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *argv], cwd=base, capture_output=True, text=True,
                              check=check, timeout=120)

    pg(str(bindir / "initdb"), "-D", str(data), "-U", PG_USER, f"--pwfile={base / 'pwfile'}",
       "--auth=scram-sha-256", "--no-locale", "-E", "UTF8", "--no-sync")
    port = None
    for _ in range(3):  # the free port may be taken between the probe and the start
        candidate = _free_port()
        options = (f"-h 127.0.0.1 -p {candidate} -k {sockets} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off")
        started = pg(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
                     "-o", options, "start", check=False)
        if started.returncode == 0:
            port = candidate
            break
    if port is None:
        text = log.read_text() if log.exists() else started.stdout + started.stderr
        shutil.rmtree(base, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start:\n{text}", pytrace=False)
    try:
        admin = f"host=127.0.0.1 port={port} user={PG_USER} password={password} dbname=postgres"
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(admin, autocommit=True) as c:
                    c.execute("CREATE DATABASE flagsweep")
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"postgresql://{PG_USER}:{password}@127.0.0.1:{port}/flagsweep"
    finally:
        pg(str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop", check=False)
        shutil.rmtree(base, ignore_errors=True)
