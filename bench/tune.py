#!/usr/bin/env python3
"""What `flagsweep tune` finds, at what cost, against a plain random search: figures from real
tunes (real builds, checks and timings), each through the real `flagsweep tune` with its own
private store.

  known    the bundled `duo` kernel, whose speed hangs on two switches named in advance in
           targets/duo/space.toml among 50 that do not matter: over N seeds, how often the
           tune's recommended set and its ablation name exactly those two.
  versus   one program, TPE (or, with --arm ga or tpe-local, that sampler) against Optuna's random
           sampler, the same budget and the same evaluation, over N seeds: the best confirmed
           gain of each and the runs each search spent until its best-so-far first reached
           the random search's best (the fastest its best-so-far showed, an estimate later
           batches may have measured again); then the same by the proofs (the full input,
           over layouts): the runs each search spent until it drew a set its proof measured as
           fast as the random search's fastest; then by the confirmed gains: the runs each
           spent until it drew the set behind its confirmed answer (a random search that
           confirmed none is held to all its runs); on duo, also the runs until its
           best-so-far first held the known answer.
  referee  the half-the-runs clause measured rather than read from two tunes' estimates, for
           seeds `versus` ran (same --work): the arm's best-so-far set when it had spent half
           the runs the random search took to draw the set behind its answer (all its runs
           when its answer is a level), against the random search's answer, both (and the
           random search's own best-so-far, and the base) built again and timed in one sweep
           on the full input over layouts, the half-way set its baseline. The clause holds
           when the sweep does not decide the random search's answer faster, and is shown
           when the answer's 95% interval against the set ends above -threshold.
  program  one tune of one program: the answer, the proof against the base and -O3, the
           ablation and the cost.

  known --space decoys   the same two among 50 decoys of which 17 change duo's code outside
           its kernels (targets/duo/decoys.toml): identical code no longer answers for them.

On duo the tunes search with --no-starts: -O3's switches hold duo's two, so a tune that began
from them (what it does by default) would hold the answer before it searched. Elsewhere TPE (and
the genetic search, and tpe-local) begin from -O3's switches and -march=native, and the random
search, the plain baseline, does not.

Usage: python bench/tune.py known [--seeds 10] [--budget 4m] [--space decoys]
       python bench/tune.py versus gzip [--seeds 3] [--budget 20m]
       python bench/tune.py versus duo --space decoys [--seeds 3] [--budget 3m]
       python bench/tune.py versus gzip --side-by-side --seeds 3 --budget 1h
       python bench/tune.py versus lame --arm ga --from-seed 2 --seeds 1 --budget 1h
       python bench/tune.py referee lame --from-seed 1 --seeds 1 --work W [--cpu 0]
                                     [--layouts 8 --rounds-s 960]
       python bench/tune.py program gzip [--budget 1h] [--seed 1]
--side-by-side runs a seed's two arms at once, each pinned to a CPU of its own with one build
job (the CPUs swapped from seed to seed), so a two-CPU machine measures both in the time of one
and a disturbance falls on both arms alike; each arm then builds on one CPU, not two.
Every tune's folder is kept under --work (default: a new folder in /tmp), tune.json and
tune.html in each; given the same --work again, a finished tune is read, not run again, and
one that was stopped part way is resumed: so an arm run before (the random search's, when
--arm changes) is read, not run again, and --from-seed runs seeds from there, another bench
beside it running the others. A seed whose arms searched different spaces (a recorded arm of
code before a change to the space) is not compared, and the bench says why.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGSWEEP = [sys.executable, "-m", "flagsweep"]
DUO = Path(__file__).resolve().parent.parent / "targets" / "duo"


def tune(work: Path, name: str, target: str, budget: str, seed: int, *extra: str) -> dict:
    """One real `flagsweep tune` in its own folder and store; its tune.json."""
    return finish(start(work, name, target, budget, seed, *extra))


def start(work: Path, name: str, target: str, budget: str, seed: int, *extra: str):
    """A real `flagsweep tune` started (None when it finished before: it is read, not run; one
    stopped part way, by a kill or a reboot, is resumed with the options it began with)."""
    out = work / name
    if _recorded(out) is not None:
        return (work, name, None, None)
    env = {**os.environ, "FLAGSWEEP_DB": f"sqlite:///{work / (name + '.db')}"}
    # Its folder exists: it began (its study is in the store before the first tune.json).
    command = ["tune", "--resume", str(out)] if out.is_dir() else \
        ["tune", target, "--budget", budget, "--seed", str(seed), "--out", str(out), *extra]
    log = (work / f"{name}.log").open("a")
    child = subprocess.Popen([*FLAGSWEEP, *command], stdout=log, stderr=subprocess.STDOUT,
                             env=env)
    log.close()
    return (work, name, child, time.monotonic())


def finish(started) -> dict:
    """The tune.json of a started tune, once it has ended."""
    work, name, child, began = started
    if child is not None and (code := child.wait()) != 0:
        print(f"flagsweep tune {name} exited {code}: see {work / (name + '.log')}")
    doc = json.loads((work / name / "tune.json").read_text())
    doc["bench_seconds"] = doc["cost"]["wall_s"] if child is None else time.monotonic() - began
    return doc


def pct(ratio) -> str:
    return "n/a" if ratio is None else f"{100 * (ratio - 1):+.1f}%"


def interval(e: dict | None) -> str:
    if not e or e.get("ratio") is None:
        return "not measured"
    ci = e.get("ci95")
    text = pct(e["ratio"])
    return text + (f" [{pct(ci[0])}, {pct(ci[1])}]" if ci else "") + f" {e.get('verdict')}"


def proven(doc: dict) -> dict | None:
    """The set the tune recommends, as the proof measured it (None: it recommends the base or
    -O3)."""
    use = doc.get("recommended") or []
    for c in (doc.get("proof") or {}).get("candidates", []):
        if c["flags"] == use and c["role"] not in ("base", "-O3"):
            return c
    return None


def gain(doc: dict) -> float:
    """The confirmed gain against the base: the recommended set's ratio, 1 when none."""
    c = proven(doc)
    return c["vs_base"]["ratio"] if c and c.get("vs_base") else 1.0


def runs_to_reach(doc: dict, ratio: float) -> int | None:
    """Runs the search had spent when its best-so-far first reached `ratio` (None: never)."""
    p = first_reaching(doc, ratio)
    return p["runs"] if p else None


def after(runs: int | None, total: int) -> str:
    """When a search got somewhere, in runs of its `total` (None: it never did)."""
    return f"never in its {total} runs" if runs is None else f"after {runs} runs of {total}"


def first_reaching(doc: dict, ratio: float) -> dict | None:
    """The search's first progress point whose best-so-far reached `ratio`."""
    return next((p for p in doc.get("progress", [])
                 if p.get("ratio") is not None and p["ratio"] <= ratio), None)


def reached_by_start(doc: dict, ratio: float) -> bool:
    """Whether the set that first reached `ratio` was one the search began with (-O3's
    switches, -march=native, both), not one its sampler drew: what the runs then measure is
    the starts, not the sampler."""
    p = first_reaching(doc, ratio)
    starts = [list(s) for s in (doc.get("space") or {}).get("starts") or []]
    trial = next((t for t in doc.get("trials", []) if p and t["number"] == p.get("best")), None)
    return trial is not None and trial["changes"] in starts


def proof_best(doc: dict) -> dict | None:
    """The fastest set the search drew, as its proof measured it against the base (the full
    input, over layouts): a steadier reading of "its best" than the search's own estimate on
    the quick input, which on gzip was once a single lucky batch."""
    drawn = [c for c in (doc.get("proof") or {}).get("candidates", [])
             if c.get("trial") is not None and (c.get("vs_base") or {}).get("ratio")]
    return min(drawn, key=lambda c: c["vs_base"]["ratio"], default=None)


def runs_to_draw(doc: dict, ratio: float) -> int | None:
    """Runs the search had spent by the end of the batch that first drew a set its proof
    measured at `ratio` or faster against the base (None: none of its proof's sets is)."""
    found = [runs_when_drawn(doc, c["trial"])
             for c in (doc.get("proof") or {}).get("candidates", [])
             if c.get("trial") is not None and (c.get("vs_base") or {}).get("ratio")
             and c["vs_base"]["ratio"] <= ratio]
    return min((r for r in found if r is not None), default=None)


def runs_when_drawn(doc: dict, trial: int | None) -> int | None:
    """Runs the search had spent by the end of the batch that drew `trial` (None: no such
    trial, or its batch has no progress point)."""
    batch = next((t.get("batch") for t in doc.get("trials", []) if t["number"] == trial), None)
    return next((p["runs"] for p in doc.get("progress", []) if p["batch"] == batch), None)


def confirmed_trial(doc: dict) -> int | None:
    """The drawn set behind the tune's confirmed answer: the recommended set's trial, or, for a
    subset the ablation took from the best set, the best set's (None: the answer is a level)."""
    c = proven(doc)
    if c is None:
        return None
    if c.get("trial") is not None:
        return c["trial"]
    winner = next((w for w in doc["proof"]["candidates"] if w["role"] == "winner"), None)
    return winner.get("trial") if winner else None


def runs_to_confirmed(doc: dict) -> int | None:
    """Runs the search had spent by the end of the batch that drew the set behind its confirmed
    answer (None: it confirmed no drawn set)."""
    return runs_when_drawn(doc, confirmed_trial(doc))


def by_confirmed(seed: int, docs: dict[str, dict], arm: str) -> bool | None:
    """The confirmed reading: whether the arm drew the set behind its confirmed gain, that gain
    at least the random search's, with at most half the runs the random search took to draw the
    set behind its own. A random search that confirmed no set did not reach the arm's gain in
    any of its runs: half its whole run count is then the bar. None when neither confirmed a
    set: with no confirmed gain there is nothing reached, and the seed is not counted."""
    mine, theirs = runs_to_confirmed(docs[arm]), runs_to_confirmed(docs["random"])
    total = docs["random"]["cost"]["runs"]
    if mine is None and theirs is None:
        print(f"seed {seed}: by the confirmed gains: neither search confirmed a drawn set; "
              f"not counted")
        return None
    if mine is None or gain(docs["random"]) < gain(docs[arm]):
        print(f"seed {seed}: by the confirmed gains: random confirmed "
              f"{pct(gain(docs['random']))}, {arm} {pct(gain(docs[arm]))}: missed")
        return False
    bar = total if theirs is None else theirs
    print(f"seed {seed}: by the confirmed gains: {arm} drew the set behind its confirmed "
          f"{pct(gain(docs[arm]))} after {mine} runs; random "
          + (f"did not reach it in its {total} runs" if theirs is None else
             f"drew the set behind its confirmed {pct(gain(docs['random']))} after {theirs}")
          + f": {100 * mine / bar:.0f}%")
    return mine <= bar / 2


def show(doc: dict) -> None:
    print(f"  answer: {doc.get('answer')}")
    for c in (doc.get("proof") or {}).get("candidates", []):
        print(f"  proof {c['role']:>9}: {' '.join(c['changes']) or '(base)'}")
        print(f"      vs base {interval(c.get('vs_base'))}; vs -O3 {interval(c.get('vs_o3'))}")
    ab = doc.get("ablation") or {}
    for r in ab.get("rows", []):
        print(f"  ablation without {r['flag']}: {pct(r.get('ratio'))} {r.get('verdict')}")
    print(f"  minimal: {' '.join(ab.get('minimal', [])) or '(none)'} of {len(ab.get('of', []))}")
    states: dict[str, int] = {}
    for t in doc["trials"]:
        states[t["state"]] = states.get(t["state"], 0) + 1
    cost = doc.get("cost") or {}
    print(f"  cost: {len(doc['trials'])} candidates ({states}), {cost.get('builds')} builds, "
          f"{cost.get('runs')} runs, {cost.get('wall_s')} s; broken: "
          f"{[b['flag'] for b in doc.get('broken', [])]}")


def known(args, work: Path) -> None:
    space = DUO / f"{args.space}.toml"
    answer = _duo_answer(space)
    print(f"duo ({space.name}): the known answer is {' '.join(sorted(answer))}")
    hits = ablated = 0
    prefix = "duo" if args.space == "space" else f"duo-{args.space}"
    for seed in range(1, args.seeds + 1):
        doc = tune(work, f"{prefix}-{seed}", "duo", args.budget, seed, "--space", str(space),
                   "--no-starts")
        found = _winner(doc)
        minimal = set((doc.get("ablation") or {}).get("minimal", []))
        hits += answer <= found
        ablated += minimal == answer
        print(f"seed {seed}: best set holds {' '.join(sorted(answer & found)) or 'neither'}; "
              f"recommended {' '.join(doc.get('recommended') or []) or '(none)'}; ablation "
              f"{' '.join(sorted(minimal)) or '(none)'}; {len(doc['trials'])} candidates, "
              f"{doc['cost']['runs']} runs, {doc['bench_seconds']:.0f} s")
    print(f"known answer: both switches in the best set found in {hits}/{args.seeds} seeds; "
          f"the ablation named exactly the two in {ablated}/{args.seeds}")


def _winner(doc: dict) -> set[str]:
    """The changes of the best set the tune found (the proof's winner)."""
    for c in (doc.get("proof") or {}).get("candidates", []):
        if c["role"] == "winner":
            return set(c["changes"])
    return set()


def _duo_answer(space: Path) -> set[str]:
    """The two switches the space file names as the ones that matter (its `# answer:` line)."""
    for line in space.read_text().splitlines():
        if line.startswith("# answer:"):
            return set(line.split(":", 1)[1].split())
    sys.exit(f"{space}: no '# answer: -fA -fB' line")


def versus(args, work: Path) -> None:
    """TPE against random search; on duo, also when each first held the known answer."""
    extra, answer, prefix = (), None, args.target
    if args.target == "duo":
        space = DUO / f"{args.space}.toml"
        extra, answer = ("--space", str(space), "--no-starts"), _duo_answer(space)
        prefix = f"duo-{args.space}"
        print(f"duo ({space.name}): the known answer is {' '.join(sorted(answer))}")
    rows, drawn, confirmed, arm = [], [], [], args.arm
    for seed in range(args.from_seed, args.from_seed + args.seeds):
        docs = arms(args, work, f"{prefix}-{{}}-{seed}", seed, extra)
        if (differ := spaces_differ(docs)) is not None:
            print(f"seed {seed}: not compared, the arms searched different spaces ({differ}); "
                  f"a recorded arm predates a change to the space: move it aside to run it again")
            continue
        final = min(p["ratio"] for p in docs["random"]["progress"] if p.get("ratio")) \
            if any(p.get("ratio") for p in docs["random"]["progress"]) else 1.0
        row = {s: (gain(d), runs_to_reach(d, final), d["cost"]["runs"],
                   runs_to_hold(d, answer) if answer else None) for s, d in docs.items()}
        rows.append(row)
        for s, (g, reach, total, held) in row.items():
            known = f"; best set first held the answer {after(held, total)}" if answer else ""
            by = " (by a start)" if reached_by_start(docs[s], final) else ""
            print(f"seed {seed} {s:>6}: confirmed {pct(g)}; reached random's best "
                  f"({pct(final)}) {after(reach, total)}{by}{known}; "
                  f"{len(docs[s]['trials'])} candidates; answer: {docs[s]['answer']}")
        drawn.append(by_proof(seed, docs, arm))
        confirmed.append(by_confirmed(seed, docs, arm))
    better = sum(r[arm][0] <= r["random"][0] for r in rows)
    halved = sum(r[arm][1] is not None and r["random"][1] is not None
                 and r[arm][1] <= r["random"][1] / 2 for r in rows)
    print(f"{prefix}: {arm}'s confirmed gain at least random's in {better}/{len(rows)} seeds; "
          f"reached random's best with at most half its runs in {halved}/{len(rows)}")
    met = sum(d is not None and d[arm] is not None and d[arm] <= d["random"] / 2 for d in drawn)
    print(f"{prefix}: by the proofs, {arm} drew a set measured as fast as random's fastest "
          f"with at most half the runs random took to draw it in {met}/{len(rows)} seeds")
    counted = [c for c in confirmed if c is not None]
    print(f"{prefix}: by the confirmed gains, {arm} drew the set behind a confirmed gain at "
          f"least random's with at most half random's runs in {sum(counted)}/{len(counted)} "
          f"seeds where either confirmed one (neither did in {len(rows) - len(counted)})")
    if answer:
        for s in (arm, "random"):
            held = [r[s][3] for r in rows]
            print(f"{prefix} {s}: the best set held the answer in "
                  f"{sum(h is not None for h in held)}/{len(rows)} seeds, after "
                  f"{sorted(h for h in held if h is not None)} runs")


def by_proof(seed: int, docs: dict[str, dict], arm: str) -> dict[str, int | None] | None:
    """The runs each search took to draw a set its own proof measured as fast as the random
    search's fastest proved set (None: the random search's proof measured no drawn set)."""
    best = proof_best(docs["random"])
    if best is None:
        print(f"seed {seed}: by the proofs: random's proof measured none of its drawn sets")
        return None
    ratio = best["vs_base"]["ratio"]
    runs = {s: runs_to_draw(docs[s], ratio) for s in (arm, "random")}
    print(f"seed {seed}: by the proofs: random's fastest drawn set, trial {best['trial']}, was "
          f"{interval(best['vs_base'])} against the base; {arm} drew one as fast "
          f"{after(runs[arm], docs[arm]['cost']['runs'])}, random "
          f"{after(runs['random'], docs['random']['cost']['runs'])}")
    return runs


def arms(args, work: Path, name: str, seed: int, extra: tuple) -> dict[str, dict]:
    """The arm's (TPE's, or the genetic search's) and the random search's tunes of one seed: one
    after the other, or side by side, each on a CPU of its own with one build job, alternating
    the CPUs by seed, so whatever else the machine does falls on both arms alike and both see
    the same machine."""
    samplers = (args.arm, "random")
    if not args.side_by_side:
        return {s: tune(work, name.format(s), args.target, args.budget, seed, "--sampler", s,
                        *extra) for s in samplers}
    started = {s: start(work, name.format(s), args.target, args.budget, seed, "--sampler", s,
                        "--cpu", str((seed + i) % 2), "-j", "1", *extra)
               for i, s in enumerate(samplers)}
    try:
        return {s: finish(started[s]) for s in samplers}
    finally:        # a bench stopped early leaves no tune measuring behind it (SIGTERM: resumable)
        for _, _, child, _ in started.values():
            if child is not None and child.poll() is None:
                child.terminate()
                child.wait()


def spaces_differ(docs: dict[str, dict]) -> str | None:
    """What differs between the spaces the arms searched (a recorded arm may be of older code),
    or None. The starts are the arm's own, not the space's."""
    seen = {s: {k: v for k, v in d["space"].items() if k != "starts"} for s, d in docs.items()}
    (a, first), (b, second) = seen.items()
    keys = sorted(k for k in first.keys() | second.keys() if first.get(k) != second.get(k))
    if not keys:
        return None
    shown = [f"{k} {first.get(k)} against {second.get(k)}" for k in keys if k != "excluded"]
    return f"{a} against {b}: " + ("; ".join(shown) or "the switches left out")


def runs_to_hold(doc: dict, answer: set[str]) -> int | None:
    """Runs the search had spent when its best-so-far first held every switch of `answer`."""
    changes = {t["number"]: set(t.get("changes") or []) for t in doc["trials"]}
    for p in doc.get("progress", []):
        if answer <= changes.get(p.get("best"), set()):
            return p["runs"]
    return None


def referee(args, work: Path) -> None:
    """The clause measured: per seed, the arm's set at half the random search's runs against
    the random search's answer, in one sweep over layouts (see the module's docstring)."""
    held = []
    for seed in range(args.from_seed, args.from_seed + args.seeds):
        docs = {s: _recorded(work / f"{args.target}-{s}-{seed}") for s in (args.arm, "random")}
        if any(d is None for d in docs.values()):
            print(f"seed {seed}: not refereed, the bench has no complete tune of each arm "
                  f"under {work}")
            continue
        sets = referee_sets(docs, args.arm)
        # A referee with other layouts keeps its own folder, beside the 4-layout one.
        name = f"referee-{args.arm}-{seed}" + ("" if args.layouts == 4 else f"-{args.layouts}")
        found = _refereed(args, work / name, sets, seed,
                          docs["random"]["space"]["compiler"])
        held.append(said_referee(seed, args.arm, sets, found))
    counted = [h for h in held if h is not None]
    print(f"{args.target}: refereed, random's answer was not decided faster than {args.arm}'s set "
          f"at half the runs in {sum(h for h, _ in counted)}/{len(counted)} seeds, and shown no "
          f"faster than the threshold in {sum(s for _, s in counted)}/{len(counted)}")


def _recorded(out: Path, file: str = "tune.json") -> dict | None:
    """A finished tune's (or sweep's) record in `out`; None when it has none or did not end."""
    path = out / file
    doc = json.loads(path.read_text()) if path.is_file() else None
    return doc if doc and doc["status"] == "complete" else None


def referee_sets(docs: dict[str, dict], arm: str) -> dict[str, dict]:
    """The sets the referee times, by role, each {"flags", "why"}: `half` (the arm's best-so-far
    at half the random search's runs to its answer; the base when it had measured no set faster
    by then), `answer` (the random search's recommended set, a level when it kept one), `best`
    (the random search's final best-so-far, when that is another set) and `base`. A set in
    two roles is timed once, under the first."""
    rnd, mine = docs["random"], docs[arm]
    base = rnd["space"]["base"].split()
    drawn = runs_to_confirmed(rnd)
    bar = rnd["cost"]["runs"] if drawn is None else drawn
    point = next((p for p in reversed(mine.get("progress", [])) if p["runs"] <= bar / 2), None)
    best = point and point.get("best")
    sets = {"half": {"flags": _trial_flags(mine, best) or base, "why": (
        f"{arm}'s best-so-far after {point['runs']} runs, trial {best}" if best is not None else
        f"{arm} had measured no set faster than the base in its first {bar // 2} runs"),
        "bar": bar}}
    last = next((p for p in reversed(rnd.get("progress", [])) if p.get("best") is not None), None)
    for role, flags, why in (
            ("answer", rnd.get("recommended") or base,
             f"random's answer, the set drawn after {drawn} runs" if drawn is not None else
             "random's answer, a level: it confirmed no drawn set in its "
             f"{rnd['cost']['runs']} runs"),
            ("best", _trial_flags(rnd, last and last["best"]),
             f"random's best-so-far at its end, trial {last and last['best']}"),
            ("base", base, "the base")):
        if flags and all(flags != s["flags"] for s in sets.values()):
            sets[role] = {"flags": flags, "why": why}
    return sets


def _trial_flags(doc: dict, number: int | None) -> list[str] | None:
    return next((t["flags"] for t in doc.get("trials", []) if t["number"] == number), None)


def _refereed(args, out: Path, sets: dict[str, dict], seed: int, compiler: str) -> dict:
    """The referee's sweep (run, resumed, or read when complete): its results.json."""
    if (done := _recorded(out, "results.json")) is not None:
        return done
    env = {**os.environ, "FLAGSWEEP_DB": f"sqlite:///{out.parent / (out.name + '.db')}"}
    pinned = ("--cpu", str(args.cpu), "-j", "1") if args.cpu is not None else ()
    command = ["run", "--resume", str(out)] if out.is_dir() else [
        "run", args.target, "--compiler", compiler, "--layouts", str(args.layouts), "--no-confirm",
        "--no-reference", "--wait", "--budget", str(args.rounds_s), "--seed", str(seed),
        "--out", str(out), *pinned,
        *(a for s in sets.values() for a in ("--flags", " ".join(s["flags"])))]
    with (out.parent / f"{out.name}.log").open("a") as log:
        code = subprocess.run([*FLAGSWEEP, *command], stdout=log, stderr=subprocess.STDOUT,
                              env=env).returncode
    if code != 0 or not (out / "results.json").is_file():
        sys.exit(f"flagsweep run {out.name} exited {code}: see {out.parent / (out.name + '.log')}")
    return json.loads((out / "results.json").read_text())


def said_referee(seed: int, arm: str, sets: dict[str, dict], found: dict
                 ) -> tuple[bool, bool] | None:
    """Print what the referee's sweep found. Two answers: whether the random search's answer
    was not decided faster than the arm's half-way set (the sweep's own verdict), and whether
    it was shown to be no faster than the threshold allows (its 95% interval against the set
    ends above -threshold: "at least as large" with the noise bounded, not just undecided).
    None: the answer's set failed its build or check, so nothing was measured."""
    by_flags = {tuple(v["flags"]): v for v in found["variants"]}
    half = sets["half"]
    print(f"seed {seed}: refereed on the full input over layouts, against {arm}'s set at half "
          f"of random's {half['bar']} runs ({half['why']}; {len(half['flags']) - 1} flags)")
    for role, s in sets.items():
        if role != "half":
            v = by_flags.get(tuple(s["flags"]))
            print(f"  {role:>6} ({s['why']}): "
                  + (interval(v.get("vs_baseline")) if v else "not in the sweep"))
    answer = sets.get("answer")
    if answer is None:
        print(f"  held and shown: {arm}'s set at half the runs is random's answer")
        return True, True
    e = (by_flags.get(tuple(answer["flags"])) or {}).get("vs_baseline") or {}
    if e.get("verdict") is None:
        print("  the answer's set was not measured: not counted")
        return None
    held = e["verdict"] != "faster"
    floor = 1 - found["threshold_pct"] / 100
    shown = held and bool(e.get("ci95")) and e["ci95"][0] >= floor
    print(f"  {'held' if held else 'missed'}: random's answer against {arm}'s set at half the "
          f"runs: {e['verdict']}; "
          + (f"shown: its interval ends above {pct(floor)}" if shown else
             f"not shown: it may be up to {100 * (1 - e['ci95'][0]):.1f}% faster"
             if e.get("ci95") else
             "not shown: no interval"))
    return held, shown


def program(args, work: Path) -> None:
    doc = tune(work, f"{args.target}-tune", args.target, args.budget, args.seed)
    print(f"{args.target}: budget {args.budget}, seed {args.seed}, "
          f"{doc['bench_seconds']:.0f} s")
    show(doc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["known", "versus", "referee", "program"])
    p.add_argument("target", nargs="?", default="gzip")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--budget", default=None)
    p.add_argument("--work", type=Path, default=None)
    p.add_argument("--space", choices=["space", "decoys"], default="space",
                   help="known, versus duo: duo's space file (decoys: 17 of the 50 change "
                        "the code)")
    p.add_argument("--arm", choices=["tpe", "ga", "tpe-local"], default="tpe",
                   help="versus, referee: the sampler set against the random search")
    p.add_argument("--from-seed", type=int, default=1, help="versus, referee: the first seed")
    p.add_argument("--cpu", type=int, default=None,
                   help="referee: the CPU its sweeps measure on, with one build job")
    p.add_argument("--rounds-s", type=int, default=480,
                   help="referee: seconds of rounds each sweep is given at most (the proof's "
                        "share of a 1h tune, less its builds)")
    p.add_argument("--layouts", type=int, default=4,
                   help="referee: layouts each set is built in (more narrows the intervals "
                        "where the layouts' spread, not the runs', is the noise)")
    p.add_argument("--side-by-side", action="store_true",
                   help="versus: run the two arms of a seed at once, one CPU each (-j 1)")
    args = p.parse_args()
    args.seeds = args.seeds or {"known": 10, "versus": 3, "referee": 3}.get(args.what, 1)
    args.budget = args.budget or {"known": "4m", "versus": "20m", "program": "1h"}.get(args.what)
    work = args.work or Path(tempfile.mkdtemp(prefix="flagsweep-tune-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work folder: {work}")
    {"known": known, "versus": versus, "referee": referee,
     "program": program}[args.what](args, work)


if __name__ == "__main__":
    main()
