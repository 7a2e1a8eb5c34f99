"""The tune's search: the samplers it asks, and where their sets lie against the base."""

from __future__ import annotations

import random
import statistics

import optuna
import pytest

from flagsweep.results.store import Store
from flagsweep.tune import search
from flagsweep.tune.space import Dimension, Space

SWITCHES = 60


def _space() -> Space:
    dims = tuple(Dimension(f"-fs{i}", ("", f"-fs{i}")) for i in range(SWITCHES))
    return Space("-O2", "gcc", "test", dims)


def _changes(chosen: dict[str, str]) -> int:
    return sum(1 for v in chosen.values() if v)


def _batches(study, space: Space, name: str, seed: int, n: int, value) -> list[dict]:
    """n batches of 6 asked together and told, as a tune asks them; every set asked."""
    asked = []
    for _ in range(n):
        batch = [search.ask(study, space, set(), name, seed) for _ in range(6)]
        for trial, chosen in batch:
            study.tell(trial, value(chosen))
            asked.append(chosen)
    return asked


@pytest.mark.integration
def test_the_genetic_search_starts_near_the_base_and_breeds_near_its_sets(tmp_path):
    store, space, seed = Store(f"sqlite:///{tmp_path / 'store.sqlite'}"), _space(), 3
    study = search.create(store, "ga", "ga", seed, {"sampler": "ga", "seed": seed})
    noise = random.Random(1)
    first = _batches(study, space, "ga", seed, 2, lambda c: noise.random())
    # its first generation is the random search's own sets, drawn near the base
    assert first == [search.near_base(list(space.dimensions), random.Random(f"{seed}:{n}"))
                     for n in range(search.POPULATION)]
    # resumed from the store, it breeds from them: children stay near their parents. Bred from
    # sets drawn uniformly instead (what the first generation is unless the enqueued sets are
    # counted in it), they would change about half the switches.
    again = search.load(store, "ga")
    bred = _batches(again, space, "ga", seed, 6, lambda c: noise.random())
    assert statistics.median(_changes(c) for c in bred) < \
        max(_changes(c) for c in first) < SWITCHES / 2


def test_the_genetic_search_keeps_what_did_well():
    """Fewer changes better: its sets come to change fewer switches than its first ones."""
    space, seed, noise = _space(), 3, random.Random(1)
    study = optuna.create_study(sampler=search.sampler("ga", seed), direction="minimize")
    asked = _batches(study, space, "ga", seed, 14, lambda c: _changes(c) + noise.random())
    first, last = asked[:search.POPULATION], asked[-search.POPULATION:]
    assert statistics.median(map(_changes, last)) < statistics.median(map(_changes, first)) / 2


def test_a_set_that_broke_in_the_first_generation_leaves_room_for_one_near_the_base():
    """The genetic search counts only measured sets into a generation: two sets that broke in
    the first batch keep the third batch in the first generation, drawn near the base too."""
    space, seed, noise = _space(), 4, random.Random(2)
    study = optuna.create_study(sampler=search.sampler("ga", seed), direction="minimize")
    asked = []
    for b in range(5):
        batch = [search.ask(study, space, set(), "ga", seed) for _ in range(6)]
        for i, (trial, chosen) in enumerate(batch):
            if b == 0 and i < 2:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, noise.random())
            asked.append(chosen)
    dims = list(space.dimensions)
    assert asked[:18] == [search.near_base(dims, random.Random(f"{seed}:{n}")) for n in range(18)]
    assert max(_changes(c) for c in asked[18:]) < SWITCHES / 2


def test_every_sampler_named_is_one_the_command_offers():
    from flagsweep.cli.tuning import tune_cmd
    offered = next(p for p in tune_cmd.params if p.name == "sampler").type.choices
    assert tuple(offered) == search.SAMPLERS


@pytest.mark.integration
def test_tpe_local_takes_turns_with_small_changes_to_the_best_set(tmp_path):
    """After its start, every other set of tpe-local is the best set so far with a few
    switches changed; the others are TPE's own. Resumed from the store it goes on alike."""
    store, space, seed = Store(f"sqlite:///{tmp_path / 'store.sqlite'}"), _space(), 5
    study = search.create(store, "mix", "tpe-local", seed, {"sampler": "tpe-local", "seed": seed})
    noise = random.Random(3)
    asked, best = [], None            # (number, set, the best set it was asked near)
    for b in range(6):
        if b == 3:
            study = search.load(store, "mix")
        near = search.choices(study, best) if best is not None else None
        batch = [search.ask(study, space, set(), "tpe-local", seed, near) for _ in range(6)]
        for trial, chosen in batch:
            # the more switches a set changes the better here: the best set is far from the
            # base, so sets near it are told apart from sets near the base
            study.tell(trial, -_changes(chosen) + noise.random())
            asked.append((trial.number, chosen, near))
        best = study.best_trial.number
    dims = list(space.dimensions)
    start = [c for n, c, _ in asked if n < search.STARTUP_TRIALS]
    assert start == [search.near_base(dims, random.Random(f"{seed}:{n}"))
                     for n in range(search.STARTUP_TRIALS)]
    later = [(n, c, near) for n, c, near in asked if n >= search.STARTUP_TRIALS]
    local = [(c, near) for n, c, near in later if n % 2 == 1]
    assert len(local) == len(later) // 2 and all(near for _, near in local)
    apart = [sum(c[d] != near[d] for d in c) for c, near in local]
    assert max(apart) <= SWITCHES * search.LOCAL_MOST + 5
    assert min(_changes(near) for _, near in local) > SWITCHES * search.LOCAL_MOST + 5


def test_a_small_change_keeps_most_of_the_set_and_starts_new_dimensions_at_the_base():
    dims = list(_space().dimensions)
    best = {d.name: d.choices[1] for d in dims[:30]}        # 30 on, the rest not held
    rng = random.Random(7)
    moved = [search.near(dims, best, rng) for _ in range(200)]
    differ = [sum(m[d.name] != best.get(d.name, d.choices[0]) for d in dims) for m in moved]
    assert statistics.median(differ) <= 3 and max(differ) <= SWITCHES * search.LOCAL_MOST + 5
    assert all(m[d.name] in d.choices for m in moved for d in dims)


def _marched() -> Space:
    dims = (*_space().dimensions, Dimension("march", ("", "-march=x86-64-v3", "-march=native")))
    return Space("-O2", "gcc", "test", dims)


def test_the_starts_are_the_level_the_top_march_and_both():
    level = {"-fs1": "-fs1", "-fs2": "-fs2"}
    assert search.starts(_marched(), level) == [
        level, {"march": "-march=native"}, {**level, "march": "-march=native"}]
    # no march dimension, or nothing the level turns: only what differs from the base
    assert search.starts(_space(), level) == [level]
    assert search.starts(_marched(), {}) == [{"march": "-march=native"}]


@pytest.mark.integration
def test_every_sampler_but_random_begins_with_the_starts_then_draws(tmp_path):
    """The starts come first, whole (a dimension a start leaves alone keeps the base's
    default, not a sampler's draw), without a flag found to break; resumed from the store the
    search goes on after them. The random search never takes them."""
    space, seed = _marched(), 6
    begin = search.starts(space, {"-fs1": "-fs1", "-fs2": "-fs2"})
    dims = list(space.dimensions)
    for name in ("tpe", "ga", "tpe-local"):
        store = Store(f"sqlite:///{tmp_path / f'{name}.sqlite'}")
        study = search.create(store, name, name, seed, {"sampler": name, "seed": seed})
        first = [search.ask(study, space, {"-fs2"}, name, seed, None, begin) for _ in range(2)]
        for trial, _ in first:
            study.tell(trial, 0.0)
        study = search.load(store, name)
        rest = [search.ask(study, space, {"-fs2"}, name, seed, None, begin) for _ in range(4)]
        chosen = [c for _, c in first + rest]
        base = {d.name: d.choices[0] for d in dims if d.name != "-fs2"}
        assert chosen[:3] == [{**base, "-fs1": "-fs1"}, {**base, "march": "-march=native"},
                              {**base, "-fs1": "-fs1", "march": "-march=native"}], name
        assert chosen[3] == search.near_base([d for d in dims if d.name != "-fs2"],
                                             random.Random(f"{seed}:3")), name
    store = Store(f"sqlite:///{tmp_path / 'random.sqlite'}")
    study = search.create(store, "random", "random", seed, {"sampler": "random", "seed": seed})
    drawn = [search.ask(study, space, set(), "random", seed, None, begin)[1] for _ in range(3)]
    assert drawn == [search.near_base(dims, random.Random(f"{seed}:{n}")) for n in range(3)]


def test_drawing_a_batch_in_a_large_space_says_how_far_it_is(tmp_path):
    # A generated space of 400 switches (legal: its longest set fits a variant's flags), read
    # as a tune reads it: each of a batch's 6 sets writes a store row per dimension.
    from flagsweep.tune import space as spaces

    switches = ", ".join(f'"-falign-loops={n}"' for n in range(1, 401))
    path = tmp_path / "large.toml"
    path.write_text(f'summary = "generated"\nswitches = [{switches}]\n')
    large = spaces.load(str(path), "gcc", None)
    study = optuna.create_study(sampler=search.sampler("tpe", 1), direction="minimize")
    said: list[str] = []
    asked = search.ask_batch(study, large, 6, set(), "tpe", 1, None, [], said.append)
    assert len(asked) == 6
    assert said == [f"drawing set {i}/6 of the batch: 400 dimensions, a store row each"
                    for i in range(1, 7)]
    # a space of gcc's own size (~210 dimensions) draws a batch quietly
    said.clear()
    gccs = Space("-O2", "gcc", "test", tuple(Dimension(f"-fs{i}", ("", f"-fs{i}"))
                                            for i in range(210)))
    search.ask_batch(study, gccs, 6, set(), "tpe", 1, None, [], said.append)
    assert said == []
