"""`flagsweep tune --scheduler`: a real Dask scheduler and two real `flagsweep worker`s of one
made-up CPU label on loopback. The search's batches are fleet sweeps on both workers; the proof,
which builds layouts, is left for a machine of that label (this one is not), and the answer
says the set is not proved."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner
from test_fleet import Cluster
from tiny_target import write_tiny_target

from flagsweep.cli import cli
from flagsweep import model
from flagsweep.results import reader, store

pytest.importorskip("distributed")
pytestmark = pytest.mark.integration
LABEL = "made-up-cpu"          # no machine's -march=native resolves to this


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def test_a_tune_on_the_fleet_searches_on_the_workers_and_leaves_the_proof(cluster, tmp_path,
                                                                          isolated_cache):
    cluster.worker("wa", LABEL, 0)
    cluster.worker("wb", LABEL, 1)
    cluster.wait_for(2)
    tiny = write_tiny_target(tmp_path / "tiny", megabytes=0.2, quick_megabytes=0.1)
    space = tmp_path / "space.toml"
    space.write_text('summary = "three switches"\nbase = "-O2"\nswitches = '
                     '["-funroll-loops", "-fno-tree-vectorize", "-fpeel-loops"]\n')
    out = tmp_path / "tuned"
    cached = _entries(isolated_cache)
    res = CliRunner().invoke(cli, ["tune", str(tiny), "--space", str(space), "--scheduler",
                                   cluster.address, "--cpu-label", LABEL, "--trials", "4",
                                   "--batch", "2", "--budget", "600", "--max-runs", "5",
                                   "--metric", "wall", "--seed", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output + repr(res.exception)
    doc = reader.validate(json.loads((out / "tune.json").read_text()), out, "tune")
    assert doc.status == "complete" and doc.phase == "proof"
    assert len(doc.trials) == 4 and all(t.state != "pending" for t in doc.trials)
    # the batches' rounds ran on both workers, every (variant, round) once
    runs = {t.run_id for t in doc.trials if t.run_id}
    assert runs and all(r.endswith(f"-{LABEL}") for r in runs)
    samples = {r: store.Store().samples(r) for r in runs}
    assert {s.worker.split("@")[0] for got in samples.values() for s in got} == {"wa", "wb"}
    assert all(set(Counter((s.variant_id, s.round) for s in got).values()) == {1}
               for got in samples.values())
    # the ablation (when the search found a set faster than the base) is a fleet sweep too
    assert doc.ablation.status in ("complete", "skipped")
    if doc.ablation.status == "complete":
        assert {s.worker.split("@")[0] for s in store.Store().samples(doc.ablation.run_id)} \
            <= {"wa", "wb"}
    # the builds made: what the workers added to this machine's build cache, which they
    # share (the base, the candidates', the ablation's sets, each once; a set an earlier test
    # built, none); the A/A twin, a copy of the base, is none
    assert all(t.state in ("measured", "identical") for t in doc.trials)
    sets = {(), *(tuple(t.changes) for t in doc.trials)}
    sets |= {tuple(f for f in doc.ablation.of if f not in r.flags) for r in doc.ablation.rows}
    assert doc.cost.builds == len(_entries(isolated_cache) - cached) <= len(sets)
    # the proof needs layouts, which a fleet sweep cannot build, and this is no LABEL machine
    assert doc.proof.status == "skipped"
    assert f"flagsweep tune --resume {out.name}" in doc.proof.why and LABEL in doc.proof.why
    assert doc.answer.startswith("Not proved: ") and doc.recommended is None
    assert "Not proved" in res.output
    # the machine recorded is the label's worker's, as it described itself
    assert doc.machine is not None
    # a resume takes no option but --scheduler; here, on no LABEL machine, it skips the proof
    # again (it needs no scheduler for that), and says so
    refused = CliRunner().invoke(cli, ["tune", "--resume", out.name, "--budget", "2h"])
    assert refused.exit_code != 0 and "only --scheduler" in refused.output
    again = CliRunner().invoke(cli, ["tune", "--resume", out.name, "--scheduler",
                                     "tcp://127.0.0.1:9"])
    assert again.exit_code == 0, again.output + repr(again.exception)
    assert "Not proved" in again.output
    resumed = reader.validate(json.loads((out / "tune.json").read_text()), out, "tune")
    assert resumed.proof.status == "skipped" and len(resumed.trials) == 4


def _entries(cache) -> set[str]:
    """The build cache's entries: one for each set built with a binary."""
    folder = cache / "builds"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()
