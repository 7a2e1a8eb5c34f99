"""The fleet end to end: a real Dask scheduler and real `flagsweep worker`s on loopback with
different CPU labels, a sweep of the tiny target across both labels (one result set per label),
and a worker killed mid-sweep (the sweep completes, nothing lost or duplicated)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiny_target import write_tiny_target

from flagsweep.cli import cli
from flagsweep.results import store

pytest.importorskip("distributed")
pytestmark = pytest.mark.integration
FLAGSWEEP = [sys.executable, "-m", "flagsweep"]


class Cluster:
    def __init__(self, folder: Path):
        self.folder, self.procs, self.workers = folder, [], {}
        info = folder / "scheduler.json"
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--scheduler-file", str(info)],
            stdout=subprocess.DEVNULL, stderr=open(folder / "scheduler.log", "w"),
            start_new_session=True))
        self.address = _wait_for(lambda: json.loads(info.read_text())["address"]
                                 if info.exists() and info.stat().st_size else None)

    def worker(self, name: str, label: str, cpu: int) -> None:
        p = subprocess.Popen(FLAGSWEEP + ["worker", "--scheduler", self.address, "--cpu-label",
                                          label, "--cpu", str(cpu), "--name", name,
                                          "--host", "127.0.0.1"],
                             stdout=subprocess.DEVNULL,
                             stderr=open(self.folder / f"worker-{name}.log", "w"),
                             start_new_session=True)
        self.procs.append(p)
        self.workers[name] = p

    def wait_for(self, n: int) -> None:
        from distributed import Client
        with Client(self.address, timeout="60s") as c:
            c.wait_for_workers(n, timeout=180)

    def kill(self, name: str) -> None:
        os.killpg(self.workers[name].pid, signal.SIGKILL)

    def close(self) -> None:
        """Workers first, then the scheduler: a worker told to stop while the scheduler is
        going away too can wait out Dask's 10 s comm timeout on its goodbye."""
        scheduler, workers = self.procs[0], self.procs[1:]
        for group in (workers, [scheduler]):
            for p in group:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGTERM)
            for p in group:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)


# Liveness waits, not timings: generous, as the suite runs on two workers (setup.sh test) and a
# worker that starts Python and Dask beside another test's build takes far longer than alone.
def _wait_for(get, timeout: float = 180):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = get()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError("gave up waiting")


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def _pairs(run_id: str) -> Counter:
    return Counter((s.variant_id, s.round) for s in store.Store().samples(run_id))


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, monkeypatch):
    """The store the driver and the workers share: the session's SQLite file, or the real
    PostgreSQL server the test setup starts (workers inherit FLAGSWEEP_DB)."""
    if request.param == "postgresql":
        monkeypatch.setenv("FLAGSWEEP_DB", request.getfixturevalue("postgres_url"))
    return request.param


def test_a_sweep_across_two_labels_gives_one_result_set_per_label(backend, cluster, tmp_path):
    cluster.worker("wa", "alpha", 0)
    cluster.worker("wb", "beta", 1)
    cluster.wait_for(2)
    tiny = write_tiny_target(tmp_path / "tiny")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["run", str(tiny), "--scheduler", cluster.address,
                                   "--cpu-label", "alpha", "--cpu-label", "beta",
                                   "--flags", "-O2", "--flags", "-O1", "--runs", "3", "--quick",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.strip().splitlines()[-1] == str(out / "merged.html")
    for label, worker in (("alpha", "wa"), ("beta", "wb")):
        doc = json.loads((out / label / "results.json").read_text())
        assert doc["status"] == "complete" and label in doc["run_id"]
        measured = [v for v in doc["variants"] if v["build"]["status"] == "ok"]
        assert {v["id"] for v in measured} == {"gcc-O2", "gcc-O1", "gcc-O2.aa"}
        pairs = _pairs(doc["run_id"])
        # every measured binary once per round (one warmup round, -1, then 0..2), never twice
        want = {(v["id"], r) for v in measured if not v["build"]["identical_to"] for r in range(-1, 3)}
        assert set(pairs) == want and set(pairs.values()) == {1}
        assert {s.worker.split("@")[0] for s in store.Store().samples(doc["run_id"])} == {worker}
        assert doc["measurement"]["cpu"] is None and doc["machine"]["pinned_cpu"] == (
            0 if label == "alpha" else 1)
        assert (out / label / "index.html").exists()
    merged = json.loads((out / "merged.json").read_text())
    assert len(merged["machines"]) == 2
    # merge reads the store too: the runs by id, their results written from the database
    ids = [json.loads((out / label / "results.json").read_text())["run_id"]
           for label in ("alpha", "beta")]
    again = CliRunner().invoke(cli, ["merge", *ids, "--out", str(tmp_path / "m")])
    assert again.exit_code == 0, again.output
    assert [m["path"] for m in json.loads((tmp_path / "m" / "merged.json").read_text())["machines"]] \
        == [str(tmp_path / "m" / "runs" / i / "results.json") for i in ids]
    # history reads the shared store: one series per label's CPU run, each variant in it
    hist = CliRunner().invoke(cli, ["history", "tiny", "--json"])
    assert hist.exit_code == 0, hist.output
    assert {"gcc-O1", "gcc-O2"} <= {x["variant"] for x in json.loads(hist.stdout)}
    # the database password is in no output and no file the sweep wrote
    password = store.sa.make_url(os.environ["FLAGSWEEP_DB"]).password
    if password:
        assert password not in res.output + hist.output
        for f in out.rglob("*"):
            if f.is_file() and f.suffix in (".json", ".html", ".md", ".csv", ".log"):
                assert password not in f.read_text(errors="replace"), f


def test_a_worker_killed_mid_sweep_loses_nothing(cluster, tmp_path):
    cluster.worker("wa", "alpha", 0)
    cluster.worker("wb1", "beta", 1)
    cluster.worker("wb2", "beta", 1)
    cluster.wait_for(3)
    # runs of about a quarter second: a round of three binaries takes long enough to be
    # caught in the middle. Only beta sweeps; alpha's idle worker is there to be passed over
    # when wb1 dies (labels in parallel: test_a_sweep_across_two_labels_...).
    tiny = write_tiny_target(tmp_path / "tiny", megabytes=4, quick_megabytes=4, repeats=2)
    out = tmp_path / "out"
    driver = subprocess.Popen(FLAGSWEEP + ["run", str(tiny), "--scheduler", cluster.address,
                                           "--cpu-label", "beta",
                                           "--flags", "-O2", "--flags", "-O1", "--runs", "8",
                                           # CPU time: another test's work on this machine's
                                           # two CPUs would disturb wall time into retakes
                                           "--metric", "cpu",
                                           "--out", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ))

    def beta_run():
        runs = [r for r in store.Store().runs_of("tiny") if r.out_dir == str(out / "beta")]
        return runs[0].run_id if runs else None

    run_id = _wait_for(beta_run, timeout=300)
    _wait_for(lambda: any((s.worker or "").startswith("wb1@")
                          for s in store.Store().samples(run_id)), timeout=300)
    killed_at = time.time()
    cluster.kill("wb1")
    stdout, stderr = driver.communicate(timeout=600)
    assert driver.returncode == 0, stderr[-3000:]
    doc = json.loads((out / "beta" / "results.json").read_text())
    assert doc["status"] == "complete"
    pairs = _pairs(run_id)
    measured = {v["id"] for v in doc["variants"]
                if v["build"]["status"] == "ok" and not v["build"]["identical_to"]}
    assert set(pairs) == {(vid, r) for vid in measured for r in range(-1, 8)}
    assert set(pairs.values()) == {1}               # nothing duplicated
    samples = store.Store().samples(run_id)
    workers = Counter(s.worker.split("@")[0] for s in samples)
    assert workers["wb1"] >= 1 and workers["wb2"] >= 1 and "wa" not in workers
    # killed mid-sweep: rounds were left, and wb2 alone measured them
    after = {s.worker.split("@")[0] for s in samples if s.taken_at > killed_at + 1}
    assert after == {"wb2"}


def test_bytes_the_cluster_lost_are_sent_again(cluster):
    """A blob's one copy dies with its worker before another worker cached it: the task says
    Missing (rather than hanging or running something else), and after the driver sends the
    bytes again the same blob reads them."""
    from flagsweep import files
    from flagsweep.jobs import fleet, worker
    cluster.worker("wa", "alpha", 0)
    cluster.worker("wb", "alpha", 1)
    cluster.wait_for(2)
    client = fleet.connect(cluster.address)
    shipment = fleet.Shipment(client)
    try:
        data = os.urandom(4096)          # bytes no worker's cache has
        blob = shipment.send(files.sha256_bytes(data), data, "bin")
        names = {a: w["name"] for a, w in fleet.connected_workers(client).items()}
        held = shipment.names[blob.sha].get()
        holder = next(iter(client.who_has([held])[held.key]))
        other = next(a for a in names if a != holder)
        cluster.kill(names[holder])
        _wait_for(lambda: holder not in fleet.connected_workers(client))
        with pytest.raises(worker.Missing, match="no longer holds the bytes of bin"):
            client.submit(worker._local, blob, workers=[other], pure=False).result(timeout=120)
        shipment.again()
        path = client.submit(worker._local, blob, workers=[other], pure=False).result(timeout=120)
        assert Path(path).read_bytes() == data
    finally:
        shipment.close()
        client.close()



class _Flaky:
    """A client's scheduler whose first `fails` questions of every worker's `identity` fail, as
    a comm closed or timed out on a loaded machine makes them. (The client's own periodic
    question, for totals only, is let through and not counted.)"""

    def __init__(self, real, fails: int):
        self.real, self.address, self.fails, self.asked = real, real.address, fails, 0

    def __getattr__(self, name):
        if name != "identity":
            return getattr(self.real, name)

        async def identity(**kwargs):
            if kwargs.get("n_workers") != -1:
                return await self.real.identity(**kwargs)
            self.asked += 1
            if self.asked <= self.fails:
                raise OSError("comm closed")
            return await self.real.identity(**kwargs)
        return identity


def test_the_workers_are_asked_again_when_the_schedulers_answer_is_lost():
    """Dask's scheduler_info() answers a failed question with its copy from the handshake,
    which lists no workers: the fleet would say none is connected while one is."""
    from distributed import Client, LocalCluster

    from flagsweep.errors import FlagsweepError
    from flagsweep.jobs import fleet
    with LocalCluster(n_workers=1, processes=False, resources={"cpu-alpha": 1},
                      dashboard_address=None) as local:
        with Client(local.scheduler_address) as early:   # connected before any worker
            early.wait_for_workers(1, timeout=60)
        with Client(local.scheduler_address) as client:
            real = client.scheduler
            try:
                client.scheduler = _Flaky(real, fails=1)
                fleet._workers_for(client, ["alpha"])    # not "labels connected: none"
                assert client.scheduler.asked == 2
                client.scheduler = _Flaky(real, fails=3)
                with pytest.raises(FlagsweepError, match=f"scheduler at {real.address} did not "
                                                         "say which workers are connected: comm"):
                    fleet.connected_workers(client)
                assert client.scheduler.asked == 3
            finally:
                client.scheduler = real


@pytest.mark.parametrize("listen", [None, "10.1.2.3"])
def test_a_worker_listens_on_this_machine_unless_told_and_says_what_another_address_opens(
        listen, monkeypatch):
    """Dask runs what a connection to a worker's port sends, as the worker's user: the port is
    on loopback unless --host says otherwise, and then the start says who can run code."""
    started: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda path, argv, env: started.append(argv))
    res = CliRunner().invoke(cli, ["worker", "--scheduler", "tcp://10.1.2.1:8786", "--cpu-label",
                                   "alpha", *(["--host", listen] if listen else [])])
    assert res.exit_code == 0, res.output
    (argv,) = started
    assert argv[argv.index("--host") + 1] == (listen or "127.0.0.1")
    warned = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    if listen is None:
        assert warned == []
    else:
        assert warned == [f"warning: the worker listens on {listen} without TLS: anyone who can "
                          f"connect to that address can run code here as uid {os.geteuid()}"
                          f"{' (root)' if os.geteuid() == 0 else ''} (Dask runs what it is "
                          "sent); require a certificate with --tls-ca-file, --tls-cert and "
                          "--tls-key (docs/fleet.md, Security)"]


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> Path:
    """A CA, a certificate it signed for loopback (the scheduler's, the worker's, the
    driver's), and an intruder's self-signed one."""
    d = tmp_path_factory.mktemp("tls")
    days, subject = ["-days", "2"], ["-nodes", "-newkey", "rsa:2048"]
    _openssl("req", "-x509", *subject, "-keyout", d / "ca.key", "-out", d / "ca.pem", *days,
             "-subj", "/CN=fleet CA")
    _openssl("req", *subject, "-keyout", d / "node.key", "-out", d / "node.csr", "-subj", "/CN=node")
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", d / "node.csr", "-CA", d / "ca.pem", "-CAkey", d / "ca.key",
             "-CAcreateserial", "-out", d / "node.pem", *days, "-extfile", d / "san.cnf")
    _openssl("req", "-x509", *subject, "-keyout", d / "intruder.key", "-out", d / "intruder.pem",
             *days, "-subj", "/CN=intruder")
    return d


async def _identity(address: str, security) -> str:
    """What the worker at address answers a connection with: its type, or why it refused."""
    from distributed.comm import connect
    try:
        comm = await connect(address, timeout="10s", **(security.get_connection_args("client")
                                                         if security else {}))
        await comm.write({"op": "identity"})
        answer = await comm.read()
        await comm.close()
        return answer["type"]
    except OSError as e:         # distributed's CommClosedError is one
        return f"refused ({type(e).__name__})"


def test_a_worker_with_tls_serves_only_holders_of_a_certificate_its_ca_signed(certificates,
                                                                             tmp_path):
    import asyncio

    from distributed.security import Security
    c = certificates
    tls = ["--tls-ca-file", str(c / "ca.pem"), "--tls-cert", str(c / "node.pem"),
           "--tls-key", str(c / "node.key")]
    info = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                               "127.0.0.1", "--port", "0", "--no-dashboard", "--protocol", "tls",
                               *tls, "--scheduler-file", str(info)],
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "s.log", "w"),
                              start_new_session=True)]
    try:
        address = _wait_for(lambda: json.loads(info.read_text())["address"]
                            if info.exists() and info.stat().st_size else None)
        procs.append(subprocess.Popen(FLAGSWEEP + ["worker", "--scheduler", address,
                                                   "--cpu-label", "alpha", "--cpu", "0", *tls],
                                      stdout=subprocess.DEVNULL,
                                      stderr=open(tmp_path / "w.log", "w"),
                                      start_new_session=True))
        # The driver's side, as docs/fleet.md sets it: Dask's configuration, here its variables.
        driver = {**os.environ, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(c / "ca.pem"),
                  "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(c / "node.pem"),
                  "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(c / "node.key"),
                  "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "true"}
        asking = subprocess.Popen([sys.executable, "-c", (
            "import sys\nfrom flagsweep.jobs import fleet\n"
            "client = fleet.connect(sys.argv[1])\nclient.wait_for_workers(1, timeout=180)\n"
            "print(*fleet.connected_workers(client))\nclient.close()\n"), address],
            env=driver, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        procs.append(asking)
        _wait_for(lambda: asking.poll() is not None or procs[1].poll() is not None)
        assert procs[1].poll() is None, (tmp_path / "w.log").read_text()   # the worker runs
        out, err = asking.communicate(timeout=60)
        assert asking.returncode == 0, err
        worker = out.strip()
        assert worker.startswith("tls://127.0.0.1:")           # loopback, and TLS
        holder = Security(tls_ca_file=str(c / "ca.pem"), tls_client_cert=str(c / "node.pem"),
                          tls_client_key=str(c / "node.key"), require_encryption=True)
        intruder = Security(tls_ca_file=str(c / "ca.pem"), tls_client_cert=str(c / "intruder.pem"),
                            tls_client_key=str(c / "intruder.key"), require_encryption=True)
        assert asyncio.run(_identity(worker, holder)) == "Worker"
        assert asyncio.run(_identity(worker, intruder)).startswith("refused")
        assert asyncio.run(_identity(worker.replace("tls://", "tcp://"), None)).startswith("refused")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
