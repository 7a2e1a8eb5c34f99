"""Steps labelled by the environment (across.cause through across.history): a step that comes
with a kernel or runner image change names it, and the reference arm says whose it was (moved
too: the environment's; held: not the machine's; none: cannot be told); a microcode update no
longer splits a series; an older store whose machine blocks have no environment still reads;
an older kept reference is still found. Synthetic points and recorded stores: no sweep."""

from __future__ import annotations

import numpy as np
import pytest
import report_fixture as rf
import sqlalchemy as sa

from flagsweep import caches, files
from flagsweep.across import cause, history
from flagsweep.jobs import controls
from flagsweep.model import Environment, HistorySeries, Machine
from flagsweep.report import history as report_history
from flagsweep.report import method
from flagsweep.results import tables
from flagsweep.results.store import Store

KERNEL_A = "6.8.0-1017-azure #17~22.04.1-Ubuntu SMP Mon Oct 14 12:00:00 UTC 2024"
KERNEL_B = "6.8.0-1020-azure #23~22.04.1-Ubuntu SMP Fri Nov 22 12:00:00 UTC 2024"
STEADY = [1.0, 1.01, 0.99, 1.0, 1.01]


def _environment(night: int, change_at: int = 5) -> dict:
    after = night >= change_at
    return {"kernel": KERNEL_B if after else KERNEL_A, "microcode": "0xa0011d5",
            "distro": "Ubuntu 22.04.5 LTS", "runner": "github-hosted Linux X64",
            "image": "ubuntu22 " + ("20250112.1.0" if after else "20250105.1.0")}


def _series(levels: list[float], reference_levels: list[float] | None,
            reference: str | None = "ab" * 32) -> history.VariantSeries:
    """Nights r0.. of a series at these levels (ratios to the reference arm when it has one),
    the reference arm's own raw level each night, the environment changing at r5."""
    rng = np.random.default_rng(11)
    s = history.VariantSeries("gcc-O2", ["-O2"], "cpu", reference=reference, metric="wall_s")
    for i, level in enumerate(levels):
        x = list(level * np.exp(rng.normal(0, 0.003, 10)))
        s.points.append(history.Point(
            f"r{i}", float(i), x, float(np.median(x)), None, {"target": "1.0"},
            environment=_environment(i),
            reference_level=reference_levels[i] if reference_levels else None))
    history._detect([s], threshold_pct=1.0)
    return s


CHANGED = ("environment: kernel 6.8.0-1017-azure -> 6.8.0-1020-azure, "
           "image ubuntu22 20250105.1.0 -> ubuntu22 20250112.1.0; ")


def test_a_step_where_the_reference_moved_too_is_the_environments():
    s = _series(STEADY + [1.15], [2.0, 2.01, 1.99, 2.0, 2.01, 2.2])
    (step,) = s.steps
    assert step.run_id == "r5" and step.verdict == "slower"
    (changed,) = step.changed
    assert changed.startswith(CHANGED + "the reference arm moved +9.")
    assert changed.endswith(" too: the environment's")
    # every place that names the step carries it: --check and junit (judged), the report
    outcome, why = history.judged(s.document(), "r5")
    assert outcome == "regression" and "the environment's" in why
    row = report_history.history_row(HistorySeries.model_validate(s.document().dump()), {})
    assert "kernel 6.8.0-1017-azure -> 6.8.0-1020-azure" in row.steps
    assert s.document().points[-1].environment["image"] == "ubuntu22 20250112.1.0"


def test_a_step_where_the_reference_held_is_not_the_machines():
    s = _series(STEADY + [1.15], [2.0, 2.01, 1.99, 2.0, 2.01, 2.005])
    (step,) = s.steps
    (changed,) = step.changed
    assert changed.startswith(CHANGED + "the reference arm held (+0.")
    assert changed.endswith("): not the machine's")


def test_without_a_reference_arm_it_cannot_be_told():
    s = _series(STEADY + [1.15], None, reference=None)
    (changed,) = s.steps[0].changed
    assert changed.startswith(CHANGED + "no reference arm: whether the machine or the "
                                        "program moved cannot be told")


def test_no_step_no_label():
    """The environment changes on a night with no step: nothing is said of it."""
    s = _series(STEADY + [1.002], [2.0] * 6)
    assert s.steps == [] and s.latest.verdict in ("equivalent", "inconclusive")


def test_only_what_both_nights_recorded_is_compared():
    old = {"kernel": KERNEL_A, "microcode": "0x1"}           # before flagsweep read the rest
    new = {**old, "distro": "Debian GNU/Linux 12 (bookworm)", "image": None, "runner": None}
    assert cause.changes(old, new) == []
    rebuilt = {**new, "kernel": KERNEL_A.replace("#17", "#18"), "image": "debian:12"}
    assert cause.changes(new, rebuilt) == [f"kernel {KERNEL_A} -> {rebuilt['kernel']}",
                                           "image none -> debian:12"]


# ---- a recorded store: four nights of tiny, an older flagsweep's machine blocks first --------

def _machine(kernel: str, microcode: str, environment: dict | None = None) -> dict:
    return {"cpu_model": "Test CPU", "family": "25", "model": "1", "cpu_flags": ["sse2"],
            "kernel": kernel, "microcode": microcode,
            **({"environment": environment} if environment else {})}


DEBIAN = {"distro_id": "debian", "distro_version": "12", "distro": "Debian GNU/Linux 12 (bookworm)"}
MACHINES = [_machine("6.1.0-26-amd64 #1 SMP", "0xa0011d5"),          # no environment: older
            _machine("6.1.0-26-amd64 #1 SMP", "0xa0011d5"),
            _machine("6.1.0-26-amd64 #1 SMP", "0xa0011d5", DEBIAN),
            _machine("6.1.0-28-amd64 #1 SMP", "0xa0011d7", DEBIAN)]   # kernel and microcode


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """tiny's nights 1-4 without a reference arm, -O3 10% faster than -O2 until night 4, where
    it is as slow as -O2 and the kernel and microcode changed; tiny-ref's with one."""
    folder = tmp_path_factory.mktemp("environment-store")
    db = Store(f"sqlite:///{folder / 'store.sqlite'}")
    for night, machine in enumerate(MACHINES, start=1):
        plan = dict(rf.NIGHTS_PLAN)
        if night == 4:
            plan["gcc-O3"] = (["-O3"], 1.0, 0.004)
        run_id = f"tiny-night-{night}"
        rf.recorded(db, run_id, "tiny", plan, out=folder / run_id, seed=night)
        with db.engine.begin() as c:
            c.execute(sa.update(tables.runs).where(tables.runs.c.run_id == run_id)
                      .values(machine=machine))
    _referenced_nights(db, folder)
    yield db
    db.engine.dispose()


def _referenced_nights(db: Store, folder) -> None:
    """tiny-ref's nights 1-4 with a reference arm (gcc-O2.ref, a kept binary); on night 4 the
    kernel changed and the machine ran everything 10% slower, gcc-O3 20%."""
    for night, machine in enumerate(MACHINES, start=1):
        slow = 1.1 if night == 4 else 1.0
        plan = {vid: (flags, ratio * slow, cv)
                for vid, (flags, ratio, cv) in rf.NIGHTS_PLAN.items()}
        plan["gcc-O2.ref"] = (["-O2"], slow, 0.004)
        if night == 4:
            plan["gcc-O3"] = (["-O3"], 0.9 * 1.2, 0.004)
        run_id = f"tiny-ref-night-{night}"
        rf.recorded(db, run_id, "tiny-ref", plan, out=folder / run_id, seed=night)
        (ref,) = [v for v in db.variants(run_id) if v.id == "gcc-O2.ref"]
        doc = {**ref.dump(), "build": {**ref.build.dump(), "reference_sha256": "ab" * 32}}
        doc.pop("check", None)
        with db.engine.begin() as c:
            c.execute(sa.update(tables.runs).where(tables.runs.c.run_id == run_id)
                      .values(machine=machine))
            c.execute(sa.update(tables.variants).where(
                tables.variants.c.run_id == run_id, tables.variants.c.variant_id == "gcc-O2.ref")
                .values(doc=doc))


def test_an_older_store_reads_and_a_microcode_update_does_not_split_the_series(store):
    assert store.run("tiny-night-1").machine.environment is None
    series = {s.variant: s for s in history.collect(store, "tiny")}
    assert sorted(series) == ["gcc-O2", "gcc-O3"]
    assert all(len(s.points) == 4 for s in series.values())
    (step,) = series["gcc-O3"].steps
    assert step.run_id == "tiny-night-4" and step.verdict == "slower"
    (changed,) = step.changed
    assert changed.startswith("environment: kernel 6.1.0-26-amd64 -> 6.1.0-28-amd64, "
                              "microcode 0xa0011d5 -> 0xa0011d7; no reference arm")
    points = series["gcc-O3"].document().points
    assert "distro" not in points[0].environment
    assert points[2].environment["distro"] == "Debian GNU/Linux 12 (bookworm)"


def test_a_recorded_step_where_the_machine_moved_too_says_so(store):
    """Through the store: the reference arm's raw level is read from its samples that night."""
    series = {s.variant: s for s in history.collect(store, "tiny-ref")}
    assert sorted(series) == ["gcc-O2", "gcc-O3"] and series["gcc-O2"].reference == "ab" * 32
    assert series["gcc-O2"].steps == []          # the machine's 10% divides out
    (step,) = series["gcc-O3"].steps
    (changed,) = step.changed
    assert changed.startswith("environment: kernel 6.1.0-26-amd64 -> 6.1.0-28-amd64, "
                              "microcode 0xa0011d5 -> 0xa0011d7; the reference arm moved +")
    assert changed.endswith("% too: the environment's")


def test_a_reference_an_older_flagsweep_kept_by_microcode_is_still_found(store, tmp_path):
    """Kept under the key with the microcode in it (as before it moved to the environment): a
    sweep after the upgrade measures the same reference instead of keeping a new one."""
    machine = MACHINES[3]
    old_key = history.machine_key(machine, microcode=True)
    assert "microcode 0xa0011d7" in old_key and "microcode" not in history.machine_key(machine)
    binary = tmp_path / "kept"
    binary.write_bytes(b"\x7fELF not run here")
    sha = files.sha256_file(binary)
    assert store.keep_reference("tiny-kept", old_key, "gcc-O2", binary, ["-O2"], "night-1", sha)
    caches.REFERENCES.write(controls.kept_copy(sha), binary.read_bytes(), mode=0o755)
    found = controls.kept_reference(store, "tiny-kept", machine, "gcc-O2", tmp_path / "out",
                                    lambda _: None)
    assert found is not None and found[1] == ["-O2"]
    assert files.sha256_file(found[0]) == sha


def test_the_report_shows_the_distribution_and_the_runner():
    m = Machine(kernel=KERNEL_A, environment=Environment(
        **DEBIAN, ci="github", image="ubuntu24 20250105.1.0", runner="github-hosted Linux X64"))
    rows = dict(method.machine_rows(m, []))
    assert rows["distribution"] == "Debian GNU/Linux 12 (bookworm)"
    assert rows["CI runner"] == ("github: image ubuntu24 20250105.1.0, runner "
                                 "github-hosted Linux X64")
    assert "distribution" not in dict(method.machine_rows(Machine(kernel=KERNEL_A), []))


def test_results_json_with_an_environment_follows_the_closed_schema():
    doc = rf.results_doc()
    doc["machine"]["environment"] = {**DEBIAN, "ci": "gitlab", "image": "debian:12",
                                     "runner": "17.7.0 linux/amd64 bench-1"}
    assert rf.model(doc).machine.environment.image == "debian:12"
    doc["machine"]["environment"]["os"] = "linux"
    with pytest.raises(Exception, match="os"):
        rf.model(doc)


def test_compare_names_a_changed_environment_and_not_an_unrecorded_one(tmp_path):
    from flagsweep.report import compare

    old, a, b = (rf.results_doc() for _ in range(3))
    a["machine"]["environment"] = {**DEBIAN, "ci": "github", "image": "ubuntu24 20250105.1.0"}
    b["machine"]["environment"] = {**DEBIAN, "ci": "github", "image": "ubuntu24 20250112.1.0"}
    two = compare.build(rf.model(a), tmp_path / "a", rf.model(b), tmp_path / "b", tmp_path)
    assert two.differences == [("CI runner image", "ubuntu24 20250105.1.0",
                                "ubuntu24 20250112.1.0")]
    assert any("different machines" in w for w in two.warnings)
    two = compare.build(rf.model(old), tmp_path / "a", rf.model(b), tmp_path / "b", tmp_path)
    assert two.differences == []
