"""tune.json: a search over flag sets, its proof and its ablation (flagsweep tune)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flagsweep.model.check import Check
from flagsweep.model.machine import Machine
from flagsweep.model.values import Bool, Num, Record, Pair, Str


TUNE_SCHEMA = "flagsweep-tune/1"
# The recipe names of a tune's own sweeps that are steps of its search, not answers: its batches
# (quick input, random flag sets) and its ablation. `history` leaves them out; the proof is a
# sweep like any other and counts.
TUNE_STEPS = ("tune-search", "tune-ablation")


class TuneSpace(Record):
    """What the search chose from (flagsweep.experiment.space)."""
    source: Str                              # "gcc-optimizers" or the space file's path
    base: Str                                # the flags every candidate starts from
    compiler: Str
    dimensions: Num                          # switches + choices searched
    switches: Num = None                     # of them, on/off switches
    excluded: list[Str] = []                 # switches left out, each "flag: why"
    starts: list[list[Str]] = []             # the sets the search began with, as changes


class TuneTrial(Record):
    """One candidate flag set as the search tried it."""
    number: Num
    flags: list[Str]                         # the whole set, base first
    changes: list[Str]                       # what it adds to the base
    state: Str               # measured | identical | repeat | failed-build | failed-check | pending
    batch: Num = None
    run_id: Str | None = None                # the batch sweep that measured it
    variant: Str | None = None               # its id in that sweep
    ratio: Num = None                        # against the base, search input (<1: faster)
    ci95: Pair = None
    verdict: Str | None = None               # against the best so far, in its batch
    runs: Num = None                         # the runs it cost
    identical_to: Str | None = None          # the trial (or "base") whose code it has
    detail: Str | None = None
    elapsed_s: Num = None                    # since the tune began, when it was decided


class TuneProgress(Record):
    """The best-so-far curve: one point per batch."""
    batch: Num
    trials: Num
    builds: Num
    runs: Num
    elapsed_s: Num
    best: Num = None                         # the best trial's number
    ratio: Num = None                        # its ratio to the base, with its interval
    ci95: Pair = None


class TuneBroken(Record):
    """A flag that broke a build or the output check, or flags that broke it only together,
    never recommended."""
    flag: Str                                # the flag, or the flags together, spaced
    flags: list[Str] = []                    # the same, one by one
    minimal: Bool | None = None              # leaving out any one of them makes it pass
    kind: Str                                # build | check
    detail: Str | None = None
    trial: Num = None


class TuneEstimate(Record):
    """A set against a reference in the proof, over its layouts."""
    ratio: Num = None
    ci95: Pair = None
    verdict: Str | None = None
    p_adjusted: Num = None
    ci_fcr: Pair = None          # the false-coverage adjusted interval a verdict needs, and
    fcr_level: Num = None        # its level (as a sweep's Comparison)
    why: Str | None = None       # how the verdict was reached, or why the A/A gate overruled it


class TuneCandidate(Record):
    """A set the proof measured on the full input over layouts."""
    role: Str                                # winner | minimal | runner-up | base | -O3
    variant: Str
    flags: list[Str]
    changes: list[Str] = []
    trial: Num = None
    identical_to: Str | None = None          # the set of the proof whose code it has
    vs_base: TuneEstimate | None = None
    vs_o3: TuneEstimate | None = None
    # the minimal subset against the best set it was taken from (>1: the winner's other flags
    # add to the gain, and the answer names the whole set)
    vs_winner: TuneEstimate | None = None
    check: Check | None = None               # its output check on the full input


class TuneProofPlan(Record):
    """How the proof was sized (jobs.budget): the layouts at which the smallest gain worth
    claiming is confirmed with the wanted power, its sets, cut to what the budget left."""
    status: Str                              # sized | cut | skipped
    why: Str | None = None                   # the sentence the tune said
    layouts: Num = None                      # K a set (null: not run)
    asked: Num = None                        # --layouts, when given
    wanted: Num = None                       # K for the wanted power (at most 16)
    power: Num = None                        # against the base, for claim_pct, at `layouts`
    wanted_power: Num = None
    claim_pct: Num = None                    # the smallest gain worth claiming
    spread_pct: Num = None                   # a layout's spread the power was computed at
    spread_source: Str | None = None
    sets: Num = None                         # the sets measured (the base, -O3 included)
    dropped: Num = None                      # runners-up left out to fit
    left_s: Num = None                       # the budget's seconds left when planned
    builds_s: Num = None                     # the builds' estimate
    rounds_s: Num = None                     # ... and the least rounds'
    build_s: Num = None                      # the pace: a set's build
    run_s: Num = None                        # ... a run of the full input
    rounds: Num = None                       # ... the least rounds


class TuneProof(Record):
    run_id: Str | None = None
    results: Str | None = None               # the proof sweep's results.json
    layouts: Num = None
    status: Str                              # complete|failed|interrupted|skipped|busy
    why: Str | None = None
    candidates: list[TuneCandidate] = []
    plan: TuneProofPlan | None = None        # null in a tune.json written before plans


class TuneAblationRow(Record):
    """The winner without one of its flags, or without a group of them: what they are worth."""
    flag: Str                                # the flag removed, or the group's flags, spaced
    flags: list[Str] = []                    # the flags removed (one, or a group's)
    variant: Str | None = None
    ratio: Num = None                        # without it / the winner (>1: the flag helps)
    ci95: Pair = None
    verdict: Str | None = None               # slower: the flag matters
    p_adjusted: Num = None                   # a verdict's other half, beside the interval
    ci_fcr: Pair = None                      # the false-coverage adjusted interval the verdict needs
    identical: Bool = False                  # the same code without it: it does nothing here
    status: Str = "measured"                 # measured | identical | failed-build | failed-check
    # Decided slower within layout luck's reach, so measured again over layouts (against the
    # winner): only a row decided slower there too counts as mattering.
    over_layouts: TuneEstimate | None = None

    def matters(self) -> bool:
        """Decided slower without it, and decided slower again where measured over layouts."""
        again = self.over_layouts
        return self.verdict == "slower" and (again is None or again.verdict == "slower")


class TuneLayoutCheck(Record):
    """The ablation's rows decided slower by less than layout luck reaches, measured again over
    K layouts each of the winner and the winner without them (results.confirmation's rule)."""
    status: Str                              # complete | not-needed | skipped | failed
    why: Str | None = None
    reach_pct: Num = None
    reach_source: Str | None = None
    layouts: Num = None
    doubtful: list[Str] = []                 # every row within the reach, most doubtful first
    rows: list[Str] = []                     # ... those measured again (the rest did not fit)
    confirmed: list[Str] = []                # ... and decided slower again
    rounds_s: Num = None                     # the seconds of rounds its sweep was given
    run_id: Str | None = None
    results: Str | None = None


class TuneGreedyStep(Record):
    """The base with the flags that matter added, costliest first, up to this step's: what the
    winner's effect needs of them."""
    added: list[Str]                         # this step's flag, or its group's flags
    flags: list[Str] = []                    # the winner's changes kept so far, in its order
    variant: Str | None = None
    ratio: Num = None                        # these flags alone / the winner (>1: they lack)
    ci95: Pair = None
    verdict: Str | None = None               # slower: they do not give the winner's effect
    p_adjusted: Num = None
    ci_fcr: Pair = None
    identical: Bool = False                  # the winner's own code
    status: Str = "measured"                 # measured | identical | failed-build | ...


class TuneGreedy(Record):
    """The greedy minimal subset: the shortest of those steps that gives the winner's effect."""
    status: Str                              # complete | skipped | failed
    why: Str | None = None
    run_id: Str | None = None
    results: Str | None = None
    steps: list[TuneGreedyStep] = []
    chosen: Num = None                       # the steps the minimal subset takes; None: none


class TuneAblation(Record):
    run_id: Str | None = None
    results: Str | None = None
    status: Str
    why: Str | None = None
    of: list[Str] = []                       # the winner's changes
    method: Str = "leave-one-out"            # leave-one-out | groups (then their flags)
    rows: list[TuneAblationRow] = []
    minimal: list[Str] = []                  # the flags that matter, in order of cost
    layout_check: TuneLayoutCheck | None = None  # the costs near no change, over layouts
    greedy: TuneGreedy | None = None         # how few of them give the winner's effect


class TuneCost(Record):
    builds: Num = None
    runs: Num = None
    wall_s: Num = None
    search_s: Num = None
    ablation_s: Num = None
    proof_s: Num = None


class Tune(Record):
    """tune.json: a search over flag sets, its proof and its ablation (flagsweep.jobs.tune)."""
    schema_: Literal[TUNE_SCHEMA] = Field(alias="schema")
    tune_id: Str
    target: Str
    status: Str                              # running | complete | interrupted | failed
    phase: Str                               # search | ablation | proof | done
    sampler: Str
    seed: Num
    budget_s: Num = None
    threshold_pct: Num = None
    space: TuneSpace
    machine: Machine | None = None
    trials: list[TuneTrial] = []
    progress: list[TuneProgress] = []
    broken: list[TuneBroken] = []
    ablation: TuneAblation | None = None
    proof: TuneProof | None = None
    answer: Str | None = None                # the one sentence the terminal ends with
    recommended: list[Str] | None = None     # the set to use (null: keep the base or -O3)
    cost: TuneCost | None = None
