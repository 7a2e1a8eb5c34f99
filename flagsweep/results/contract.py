"""The results contract: results.json, suite.json and merged.json as pydantic models.

Other tools (merge, pick, suite, history, anyone's script) read these files, so the names here
are stable: a key is added freely, but renamed or retyped only with a new schema version and an
entry in UPGRADES that turns the older document into the current one. Every object allows keys
it does not name (extra="allow"): a results.json from a newer minor writer still loads, and a
machine's state or a sample's counters are open-ended by nature. What the models do pin down is
the kind of every value the report, compare, merge, pick and suite compute with: a number or
null, or a pair of numbers (an interval) or null.

`flagsweep schema results|suite|merged` prints the JSON Schema the models generate.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Callable, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictBool,
    StrictStr,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from flagsweep.errors import FlagsweepError

SCHEMA = "flagsweep/1"                  # results.json, as written now
SUITE_SCHEMA = "flagsweep-suite/1"
MERGE_SCHEMA = "flagsweep-merge/1"
TUNE_SCHEMA = "flagsweep-tune/1"
# The recipe names of a tune's own sweeps that are steps of its search, not answers: its batches
# (quick input, random flag sets) and its ablation. `history` leaves them out; the proof is a
# sweep like any other and counts.
TUNE_STEPS = ("tune-search", "tune-ablation")
AA_SUFFIX = ".aa"                       # the A/A twin's id is the baseline's id plus this
REF_SUFFIX = ".ref"                      # the reference arm's id (run --reference), likewise


def is_control(variant_id: str) -> bool:
    """The A/A twin or the reference arm: measured and compared with the baseline like any
    variant, but no cell of the design and never a flag set to choose."""
    return variant_id.endswith((AA_SUFFIX, REF_SUFFIX))

# Older results.json schema -> a function returning that document one version on (its
# "schema" key set to the version it now is). flagsweep/1 is the first: nothing to upgrade yet.
UPGRADES: dict[str, Callable[[dict], dict]] = {}


# ---- the kinds of values ------------------------------------------------------------------------

def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _number(value: Any) -> Any:
    if value is None or _is_number(value):
        return value
    raise PydanticCustomError("expected", "a number or null")


def _pair(value: Any) -> Any:
    if value is None or (isinstance(value, list) and len(value) == 2
                         and all(map(_is_number, value))):
        return value
    raise PydanticCustomError("expected", "a pair of numbers or null")


# Null passes: a number that does not exist (no samples, too few pairs) is null.
Num = Annotated[Any, PlainValidator(_number), WithJsonSchema({"type": ["number", "null"]})]
Pair = Annotated[Any, PlainValidator(_pair), WithJsonSchema({
    "type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2})]
Str = StrictStr
Bool = StrictBool


class Open(BaseModel):
    """An object of the contract: its named keys typed, any other key allowed. Read it by
    attribute (`doc.machine.cpu_model`); a key it does not name is an attribute too."""
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def dump(self) -> dict:
        """The object as JSON: the keys it was given (explicit nulls kept), by their names."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


# ---- results.json -------------------------------------------------------------------------------

class CpuLoad(Open):
    """One CPU as the choice saw it over its window (host.load)."""
    cpu: Num
    idle_pct: Num = None                     # null: not measured
    runnable: Num = None                     # tasks running or waiting there at the window's end
    pinned: Num = None                       # user tasks whose affinity is this CPU alone
    isolated: Bool | None = None
    held_by: Str | None = None               # the other sweep holding it, null when free


class CpuChoice(Open):
    """Which CPU the sweep measured on and why (host.placement)."""
    cpu: Num
    how: Str                                 # given (--cpu) | isolated | quietest
    why: Str                                 # the line the sweep printed
    window_s: Num = None                     # the load window; null when --cpu gave the CPU
    cost_s: Num = None                       # what the choice took, the window included
    cpus: list[CpuLoad] | None = None


class Machine(Open):
    hostname: Str | None = None
    cpu_model: Str | None = None
    cpu_flags: list[Str] | None = None
    march_native: Str | None = None
    isa_levels: list[Str] | None = None
    kernel: Str | None = None
    hypervisor: Bool | None = None
    governor: Str | None = None
    aslr: Num = None
    perf_event_paranoid: Num = None
    hw_counters: Bool | None = None
    pinned_cpu: Num = None
    cpu_choice: CpuChoice | None = None


class Compiler(Open):
    name: Str
    path: Str | None = None
    version: Str | None = None


class Workload(Open):
    argv: list[Str] | None = None
    inputs: list[Str] | None = None
    stdout: Str | None = None
    input_sha256: Str | None = None
    timeout: Num = None


class Skipped(Open):
    id: Str
    flags: list[Str]
    reason: Str


class Layouts(Open):
    k: Num
    seeds: Str | None = None
    flags: list[Str] | None = None
    method: Str | None = None


class Distro(Open):
    name: Str
    source: Str                              # how the flags were read (dpkg-buildflags ...)
    flags: list[Str]                         # what every variant starts from
    parts: dict[str, list[Str]] | None = None    # each variable as read (CPPFLAGS, CFLAGS, ...)


class Sequential(Open):
    """The levels a sweep spent (stats.sequential.Design): BH at `alpha` at the end, `stops_alpha`
    over the variant stops, equivalence by two one-sided tests at `tost_level` each."""
    alpha: Num = None
    stops_alpha: Num = None
    tost_level: Num = None


class ShortRun(Open):
    """A baseline whose runs are too short to time (flagsweep.measure.resolution)."""
    median_s: Num = None
    shortest_s: Num = None
    input_key: Str | None = None
    input_size: Num = None
    input_needed: Num = None
    warning: Str


class PilotFigures(Open):
    """One schedule in the pilot (measure.pilot): its complete pairs, the paired spread (sd of
    the pairs' log-ratios, in %), a round's wall time, and the half-width of a 95% interval
    after a minute of measuring at that spread and pace (%)."""
    pairs: Num = None
    sd_pct: Num = None
    round_s: Num = None
    minute_pct: Num = None


class BiasCheck(Open):
    """One comparison in duet and in serial (measure.pilot): each estimate (% change), their
    difference and Welch's interval's half-width (%, at the pilot's `level`); whether they
    agree (null: too few pairs to tell)."""
    variant: Str
    duet_pct: Num = None
    serial_pct: Num = None
    difference_pct: Num = None
    half_pct: Num = None
    agrees: Bool | None = None


class Pilot(Open):
    """The schedule's pilot: `pairs` a comparison in each schedule, over `comparisons`."""
    pairs: Num = None
    comparisons: Num = None
    level: Num = None                        # the bias check's intervals: 1 - 0.05 / comparisons
    seconds: Num = None                      # what the pilot took (this session's part)
    serial: PilotFigures | None = None
    duet: PilotFigures | None = None
    bias: list[BiasCheck] | None = None


class Schedule(Open):
    """How the counted rounds ran (jobs.schedule): duet (each variant at once with a run of the
    baseline on two CPUs) or serial, what was asked, why, and the pilot's figures when one ran."""
    asked: Str | None = None                 # --schedule: auto | duet | serial
    schedule: Str                            # duet | serial
    cpus: list[Num] | None = None            # duet: [first, second]; serial: [the one]
    reason: Str
    design: Str | None = None                # duet: how the pairs are made
    pilot: Pilot | None = None
    warning: Str | None = None               # a forced duet whose bias check failed


class LengthPoint(Open):
    """What the run-length pilot measured at one input size (flagsweep.measure.length)."""
    size: Num = None                         # in the target's unit
    run_s: Num = None                        # the baseline's median run there
    sd: Num = None                           # spread of the A/A pair's log ratio
    pair_s: Num = None                       # seconds a pair cost there
    pairs: Num = None


class RunLength(Open):
    """run --input-size auto: the input size chosen for the narrowest interval per minute of
    measuring, and why (flagsweep.measure.length). size null: none chosen, the full input used."""
    size: Num = None
    unit: Str | None = None                  # of size: MB (corpus) or s (audio)
    run_s: Num = None                        # predicted run at that size
    sd: Num = None                           # predicted spread (log ratio of an A/A pair)
    half_per_minute: Num = None              # predicted 95% half-width after a minute (log)
    relative: Num = None                     # a of sd^2 = a^2 + (b/L)^2
    fixed_s: Num = None                      # b
    metric: Str | None = None                # the column the spreads are of
    pilot_s: Num = None                      # what the pilot took
    why: Str
    measured: list[LengthPoint] = []


class Measurement(Open):
    seed: Num = None
    warmup: Num = None
    min_runs: Num = None
    max_runs: Num = None
    runs: Num = None
    budget: Num = None
    precision_pct: Num = None
    threshold_pct: Num = None
    disturbed: Num = None
    retaken: Num = None
    still_disturbed: Num = None
    runs_saved: Num = None
    reference: Str | None = None
    metric: Str | None = None               # the --metric option (auto, wall, ...); `metric` is the column
    layouts: Layouts | None = None          # run --layouts: how many, how made, how compared
    sequential: Sequential | None = None    # the error the sweep's looks spent
    short_run: ShortRun | None = None       # the baseline's runs shorter than a sample resolves
    schedule: Schedule | None = None        # duet or serial rounds, and why (null: before them)
    input_size: Str | None = None           # --input-size: full, quick or auto
    run_length: RunLength | None = None     # auto's choice and its figures
    confirm_layouts: Num = None             # --confirm-layouts (0: sized by power)
    confirm_rows: Num = None                # --confirm-rows


class LayoutBuild(Open):
    id: Str
    seed: Num
    status: Str
    binary: Str | None = None
    code_sha256: Str | None = None
    functions_sha256: Str | None = None
    flags_verified: Bool | None = None


class Build(Open):
    status: Str
    seconds: Num = None
    log: Str | None = None
    binary: Str | None = None
    code_sha256: Str | None = None
    functions_sha256: Str | None = None     # functions by name and size, whatever their places
    reference_sha256: Str | None = None
    size_bytes: Num = None
    sizes: dict[str, Num] | None = None     # the ELF image: text, data, bss bytes
    cpu_seconds: Num = None                 # the build's CPU time (its configure, compiles, link)
    lto: Bool | None = None                 # -flto given and verified on the binary's link
    pgo: dict | None = None                 # profile-guided: training command, profile sha256
    identical_to: Str | None = None
    flags_verified: Bool | None = None
    reused: Bool | None = None          # from the build cache (build/cache.py)
    same_functions: Bool | None = None  # with layouts: every layout has the same functions
    layouts: list[LayoutBuild] | None = None   # with layouts: each layout's own binary


class Quality(Open):
    """The `quality` check's figures: the product decoded by the one fixed decoder, its SNR
    against the input (flagsweep.workload.quality), and the baseline's beside it."""
    snr_db: Num = None                       # null: no noise at all
    baseline_snr_db: Num = None              # absent on the baseline itself
    size_bytes: Num = None
    baseline_size_bytes: Num = None
    lag_frames: Num = None                   # decoded frame i + lag is input frame i
    frames: Num = None                       # input frames compared
    snr_tolerance_db: Num = None
    size_rel_tolerance: Num = None
    decoder: Str | None = None               # the target's decode_argv, as written


class Check(Open):
    status: Str                              # ok | equivalent | differs | failed
    detail: Str | None = None
    quality: Quality | None = None           # method "quality" only


class LayoutSummary(Open):
    id: Str
    seed: Num
    code_sha256: Str | None = None
    median: Num = None
    n: Num = None


class Summary(Open):
    n: Num = None
    median: Num = None
    mean: Num = None
    ci95: Pair = None
    cv: Num = None
    outliers: Num = None
    disturbed: Num = None
    retaken: Num = None
    stopped_at: Num = None                 # stopped early: the counted rounds it ran
    stopped_why: Str | None = None
    layouts: list[LayoutSummary] | None = None  # with layouts: each layout's median and n




class LayoutEstimate(Open):
    """A winner against the baseline in one layout, or over K layouts each."""
    ratio: Num = None
    ci95: Pair = None
    verdict: Str | None = None
    layouts: Num = None
    layout_sd_pct: Num = None
    p_adjusted: Num = None
    ci_fcr: Pair = None                      # the interval its verdict used, and its level
    fcr_level: Num = None


class LayoutLuck(Open):
    """A faster or slower call whose 95% CI comes within the reach of layout luck, i.e. of what
    one build's code layout alone can do (flagsweep.results.confirmation): `confirmed` (called
    the same over K layouts a side: the verdict stands), `not-distinguishable` (measured again
    over layouts and not called the same) or `one-layout` (not measured again; `why` says why).
    Only a confirmed call is settled: the others read "faster (one layout, within layout
    luck)" and no reader should act on them as decided."""
    status: Str
    reach_pct: Num = None                     # the reach it came within, in percent
    why: Str | None = None
    over_layouts: LayoutEstimate | None = None   # the confirmation's estimate, when measured


class Comparison(Open):
    """A ratio to a reference with its intervals and verdict: a variant's vs_baseline, a
    suite row's pooled estimate."""
    verdict: Str
    ratio: Num = None
    ci95: Pair = None
    ci90: Pair = None
    p_value: Num = None
    p_adjusted: Num = None
    n_pairs: Num = None
    rounds_needed: Num = None
    why: Str | None = None
    # Where the estimate lies beyond the threshold: the false-coverage-rate adjusted interval
    # a faster/slower verdict needs wholly beyond it, and its level (stats.fcr_intervals).
    ci_fcr: Pair = None
    fcr_level: Num = None
    ci_tost: Pair = None                   # equivalence's interval when tost_level < 0.05
    tost_level: Num = None


class VsBaseline(Comparison):
    identical_to: Str | None = None
    layout_sd_pct: Num = None
    # a faster/slower call of a sweep of one build a variant, within layout luck's reach
    layout_luck: LayoutLuck | None = None


class FunctionRemarks(Open):
    """What the vectorisers said about one function (flagsweep.explain.remarks)."""
    vectorized: list[Str] = []             # "file.c:56: loop vectorized using 32 byte vectors"
    missed: list[Str] = []                 # the first few "not vectorized: <reason>"
    missed_total: Num = None
    loops: Num = None                      # loops vectorised
    blocks: Num = None                     # basic blocks vectorised (SLP)
    widest: Num = None                     # bytes of the widest vectors (gcc; null for clang)


class RemarksRun(Open):
    """How one binary's remarks were collected: a rebuild of its compile commands."""
    status: Str                            # ok | failed | skipped (LTO)
    why: Str | None = None
    commands: Num = None
    compiler: Str | None = None            # gcc | clang


class ExplainFunction(Open):
    """One function's part in a variant's change (flagsweep.explain.attribution)."""
    function: Str
    baseline: Num = None                   # its cost in the baseline's profile (explain.unit)
    variant: Num = None                    # and in the variant's
    change: Num = None                     # variant - baseline
    change_pct: Num = None                 # of its own baseline cost; null when that is 0
    share_pct: Num = None                  # |change| / the gross change (sum of |change|)
    symbols_baseline: list[Str] | None = None   # the symbols summed into it (clones, parts)
    symbols_variant: list[Str] | None = None
    size_baseline: Num = None              # bytes in the symbol table; null: not a function there
    size_variant: Num = None
    note: Str | None = None                # why it costs on one side only (inlined, ...)
    events_baseline: dict[str, Num] | None = None   # every event of the profile (Cachegrind's
    events_variant: dict[str, Num] | None = None    # cache and branch simulation)
    share_ci_baseline: Pair = None         # perf: its share of cycles, 95% CI over the records
    share_ci_variant: Pair = None
    remarks_baseline: FunctionRemarks | None = None   # the compiler's vectorisation remarks;
    remarks_variant: FunctionRemarks | None = None    # null: not collected (Explain.remarks says why)


class Explain(Open):
    """Why one variant is faster or slower: its change attributed to functions."""
    status: Str                            # ok | failed
    method: Str | None = None              # cachegrind | perf
    failure: Str | None = None
    unit: Str | None = None                # instructions (Cachegrind) | cycles (perf)
    baseline_total: Num = None
    variant_total: Num = None
    change: Num = None
    change_pct: Num = None
    gross_change: Num = None
    top_share_pct: Num = None              # the listed functions' shares, summed (<= 100)
    functions: list[ExplainFunction] = []
    baseline_profile: Str | None = None
    variant_profile: Str | None = None
    samples: Pair = None                   # perf: samples per record, baseline and variant
    unknown_share_pct: Pair = None         # perf: % of samples in no known symbol
    remarks: RemarksRun | None = None      # the variant's remarks rebuild


class ExplainTop(Open):
    function: Str
    cost: Num = None
    share_pct: Num = None
    size: Num = None
    remarks: FunctionRemarks | None = None


class ExplainBaseline(Open):
    variant: Str
    total: Num = None
    profile: Str | None = None
    samples: Num = None
    unknown_share_pct: Num = None
    functions: list[ExplainTop] = []
    remarks: RemarksRun | None = None      # the baseline's remarks rebuild


class ExplainRun(Open):
    """run --explain / flagsweep explain: how the profiles were taken, the baseline's own."""
    method: Str | None = None
    unit: Str | None = None
    baseline: ExplainBaseline | None = None
    explained: list[Str] = []              # the variants with an `explain` entry
    failure: Str | None = None
    note: Str | None = None


class Variant(Open):
    id: Str
    compiler: Str
    flags: list[Str]
    factors: dict[str, Any] | None = None
    build: Build
    check: Check | None = None
    samples: dict[str, list[Num]] | None = Field(None, description=(
        "the counted samples as columns; always holds the run's `metric` (cpu_s: user_s + sys_s)"))
    summary: Summary | None = None
    vs_baseline: VsBaseline | None = None
    explain: Explain | None = None         # run --explain: faster/slower variants only


class Effect(Open):
    factor: Str
    level: Str
    reference: Str | None = None
    effect_pct: Num = None
    ci95_pct: Pair = None
    p_value: Num = None
    p_adjusted: Num = None
    matters: Bool | None = None
    ci_fcr_pct: Pair = None
    fcr_level: Num = None                  # ci_fcr_pct's level, 1 - R 0.05 / m
    layout_luck: LayoutLuck | None = None    # "matters" within layout luck's reach: settled
                                             # only when its status is `confirmed`


class AA(Open):
    variant: Str
    verdict: Str
    ratio: Num = None
    ci95: Pair = None
    p_value: Num = None
    bound_pct: Num = None


class Noise(Open):
    baseline_cv: Num = None
    mde_pct: Num = None
    sd_log_diff: Num = None
    power: Num = None
    n_pairs: Num = None
    comparisons: Num = None
    rounds_needed: Num = None


class Excluded(Open):
    """A variant called faster but left out of the recommendation: its output did not pass."""
    variant: Str
    flags: list[Str]
    ratio: Num = None
    ci95: Pair = None
    check: Str | None = None                 # its check's status (differs, failed)
    why: Str | None = None                   # its check's detail


class Confirmation(Open):
    """A recommendation's confirmation over code layouts (flagsweep.results.confirmation)."""
    status: Str
    variant: Str | None = None
    why: Str | None = None
    layouts: Num = None
    reach_pct: Num = None
    reach_source: Str | None = None
    one_layout: LayoutEstimate | None = None      # the sweep's own comparison
    over_layouts: LayoutEstimate | None = None    # the confirmation's, over the layouts
    run_id: Str | None = None
    results: Str | None = None
    seconds: Num = None
    # Every faster/slower row within the reach is measured again in the same sweep: which
    # (`variants`), which were not and why (`left_out`, `left_out_why`), each one's estimate
    # over the layouts (`rows`), and how K was sized (`power` at the reach's edge, `sizing`).
    variants: list[Str] | None = None
    left_out: list[Str] | None = None
    left_out_why: Str | None = None
    rows: dict[str, LayoutEstimate] | None = None
    power: Num = None
    sizing: Str | None = None
    estimated_s: Num = None                       # its builds and least rounds, estimated


class Estimate(Open):
    """The estimate and interval a recommendation prints (flagsweep.results.estimate): the
    interval its verdict used, adjusted for choosing the winner, and which kind it is."""
    ratio: Num = None
    ci: Pair = None
    level: Num = None
    kind: Str                     # selection-adjusted | with-layout-luck | over-layouts | unadjusted
    layouts: Num = None           # over this many layouts each; null: one build each
    comparisons: Num = None       # how many comparisons the adjustment chose among
    p_adjusted: Num = None        # of the comparison it comes from
    why: Str | None = None        # which interval this is and why, in words


class Recommendation(Open):
    flags: list[Str] | None = None
    variant: Str | None = None
    why: Str
    excluded: list[Excluded] | None = None   # fastest first
    confirmation: Confirmation | None = None
    estimate: Estimate | None = None         # what the headline prints; null: keep the baseline


class HistoryPoint(Open):
    run_id: Str
    started: Num = None
    median: Num = None
    ci95: Pair = None
    n: Num = None


class HistoryStep(Open):
    run_id: Str
    verdict: Str
    ratio: Num = None
    ci95: Pair = None


class HistoryUnjudged(Open):
    run_id: Str
    started: Num = None
    why: Str


class HistoryLatest(Open):
    """The latest sweep of a series against its segment (the sweeps since the last step)."""
    run_id: Str
    verdict: Str                            # faster | slower | equivalent | ... | unjudged
    ratio: Num = None
    ci95: Pair = None
    why: Str | None = None
    against: list[Str] = []                 # the segment's run ids


class HistorySeries(Open):
    """One variant's earlier sweeps on this machine (flagsweep.across.history)."""
    variant: Str
    flags: list[Str]
    machine: Str
    points: list[HistoryPoint]
    steps: list[HistoryStep]
    latest: HistoryLatest | None = None
    reference: Str | None = None            # the reference binary's sha256: points are ratios to it
    metric: Str | None = None               # the series' metric (its first sweep's)
    unjudged: list[HistoryUnjudged] | None = None   # nights neither a pass nor a step, and why


class Results(Open):
    """results.json: one sweep of one target on one machine."""
    schema_: Literal[SCHEMA] = Field(alias="schema")   # `schema` is a BaseModel method
    target: Str
    recipe: Str
    metric: Str
    baseline: Str
    machine: Machine
    variants: list[Variant]
    run_id: Str | None = None
    target_version: Str | None = None
    started: Str | None = None
    finished: Str | None = None
    status: Str | None = None               # complete | busy | interrupted | failed | running
    stop_reason: Str | None = None
    compilers: list[Compiler] | None = None
    workload: Workload | None = None
    design: Str | None = None
    distro: Distro | None = None            # a distribution's flags every variant starts from
    skipped: list[Skipped] | None = None
    measurement: Measurement | None = None
    threshold_pct: Num = None
    effects: list[Effect] | None = None
    aa: AA | None = None
    noise: Noise | None = None
    recommendation: Recommendation | None = None
    history: list[HistorySeries] | None = None
    explain: ExplainRun | None = None


# ---- suite.json and merged.json -----------------------------------------------------------------

class ProgramCell(Open):
    """One program's (or machine's) own comparison of a variant (flagsweep.across.pick.Pair)."""
    program: Str | None = None
    machine: Str | None = None
    ratio: Num = None
    ci95: Pair = None
    verdict: Str


class SuiteProgram(Open):
    target: Str
    version: Str | None = None
    status: Str | None = None
    results: Str                                  # its results.json, relative to suite.json
    stop_reason: Str | None = None
    recommendation: Str | None = None
    unstable: Bool | None = None                  # its A/A gate failed: shown, not pooled


class SuiteVariant(Open):
    id: Str
    compiler: Str
    flags: list[Str]
    label: Str | None = None                      # what people call it (results.names.label)
    per_program: dict[str, ProgramCell | None]
    suite: Comparison | None = None
    missing: Str | None = None
    faster_on: list[Str] = []
    slower_on: list[Str] = []


class SuiteFailure(Open):
    target: Str
    error: Str


class Suite(Open):
    """suite.json: one recipe over several programs on one machine (flagsweep.across.suite)."""
    schema_: Literal[SUITE_SCHEMA] = Field(alias="schema")
    machine: Str
    metric: Str
    baseline: Str
    threshold_pct: Num = None
    recommendation: Str | None = None
    warnings: list[Str] = []
    failed: list[SuiteFailure] = []
    programs: list[SuiteProgram]
    variants: list[SuiteVariant]


class MergeCell(Open):
    change_pct: Num = None
    ci: Pair = None
    verdict: Str


class MergedMachine(Open):
    label: Str
    path: Str
    machine: Machine


class MergedVariant(Open):
    id: Str
    compiler: Str
    flags: list[Str]
    per_machine: list[MergeCell]


class Merged(Open):
    """merged.json: one target's results from several machines (flagsweep.across.merge)."""
    schema_: Literal[MERGE_SCHEMA] = Field(alias="schema")
    target: Str
    machines: list[MergedMachine]
    variants: list[MergedVariant]


# ---- tune.json ----------------------------------------------------------------------------------

class TuneSpace(Open):
    """What the search chose from (flagsweep.experiment.space)."""
    source: Str                              # "gcc-optimizers" or the space file's path
    base: Str                                # the flags every candidate starts from
    compiler: Str
    dimensions: Num                          # switches + choices searched
    switches: Num = None                     # of them, on/off switches
    excluded: list[Str] = []                 # switches left out, each "flag: why"
    starts: list[list[Str]] = []             # the sets the search began with, as changes


class TuneTrial(Open):
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


class TuneProgress(Open):
    """The best-so-far curve: one point per batch."""
    batch: Num
    trials: Num
    builds: Num
    runs: Num
    elapsed_s: Num
    best: Num = None                         # the best trial's number
    ratio: Num = None                        # its ratio to the base, with its interval
    ci95: Pair = None


class TuneBroken(Open):
    """A flag that broke a build or the output check, or flags that broke it only together,
    never recommended."""
    flag: Str                                # the flag, or the flags together, spaced
    flags: list[Str] = []                    # the same, one by one
    minimal: Bool | None = None              # leaving out any one of them makes it pass
    kind: Str                                # build | check
    detail: Str | None = None
    trial: Num = None


class TuneEstimate(Open):
    """A set against a reference in the proof, over its layouts."""
    ratio: Num = None
    ci95: Pair = None
    verdict: Str | None = None
    p_adjusted: Num = None
    ci_fcr: Pair = None          # the false-coverage adjusted interval a verdict needs, and
    fcr_level: Num = None        # its level (as a sweep's Comparison)
    why: Str | None = None       # how the verdict was reached, or why the A/A gate overruled it


class TuneCandidate(Open):
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


class TuneProofPlan(Open):
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


class TuneProof(Open):
    run_id: Str | None = None
    results: Str | None = None               # the proof sweep's results.json
    layouts: Num = None
    status: Str                              # complete|failed|interrupted|skipped|busy
    why: Str | None = None
    candidates: list[TuneCandidate] = []
    plan: TuneProofPlan | None = None        # null in a tune.json written before plans


class TuneAblationRow(Open):
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


class TuneLayoutCheck(Open):
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


class TuneGreedyStep(Open):
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


class TuneGreedy(Open):
    """The greedy minimal subset: the shortest of those steps that gives the winner's effect."""
    status: Str                              # complete | skipped | failed
    why: Str | None = None
    run_id: Str | None = None
    results: Str | None = None
    steps: list[TuneGreedyStep] = []
    chosen: Num = None                       # the steps the minimal subset takes; None: none


class TuneAblation(Open):
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


class TuneCost(Open):
    builds: Num = None
    runs: Num = None
    wall_s: Num = None
    search_s: Num = None
    ablation_s: Num = None
    proof_s: Num = None


class Tune(Open):
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


KINDS: dict[str, type[Open]] = {"results": Results, "suite": Suite, "merged": Merged,
                                 "tune": Tune}


# ---- reading ------------------------------------------------------------------------------------

def json_schema(kind: str) -> str:
    """The JSON Schema of results.json, suite.json or merged.json, as JSON text."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              **KINDS[kind].model_json_schema()}
    return json.dumps(schema, indent=1)


def readable() -> list[str]:
    """The results.json schema versions this flagsweep reads: the current one and every one
    UPGRADES turns into it."""
    return [*UPGRADES, SCHEMA]


def upgrade(doc: dict, path) -> dict:
    """doc as the current schema: each older version upgraded in turn; FlagsweepError naming
    the file and the version for one that this flagsweep does not know (or a newer one)."""
    seen = []
    while doc.get("schema") != SCHEMA:
        version = doc.get("schema")
        step = UPGRADES.get(version) if isinstance(version, str) else None
        if step is None or version in seen:
            raise FlagsweepError(f"{path}: key 'schema' is {version!r}; this flagsweep reads "
                         f"{', '.join(map(repr, readable()))} (a newer flagsweep wrote it? "
                         "upgrade flagsweep to read it)")
        seen.append(version)
        doc = step(doc)
    return doc


def validate(doc: Any, path, kind: str = "results") -> Open:
    """The document as its model; refused, with the file and the key path named, when it is
    not a document of this kind."""
    what = "results.json" if kind == "results" else f"{kind}.json"
    if not isinstance(doc, dict):
        raise FlagsweepError(f"{path}: not a {what} (expected a JSON object)")
    try:
        return KINDS[kind].model_validate(doc)
    except ValidationError as e:
        raise FlagsweepError(f"{path}: {_first_problem(e.errors(), what)}") from None


def _first_problem(errors: list[dict], what: str) -> str:
    """One line for the first thing wrong: keys missing from an object (all of that object's
    at once), else the value at a key path and the kind that was expected there."""
    missing = [e for e in errors if e["type"] == "missing"]
    top = [e["loc"][0] for e in missing if len(e["loc"]) == 1]
    if top:
        return f"not a {what}: missing key(s) {', '.join(map(str, top))}"
    first = errors[0]
    if first["type"] == "missing":
        parent = first["loc"][:-1]
        gone = [e["loc"][-1] for e in missing if e["loc"][:-1] == parent]
        return f"{key_path(parent)} lacks key(s) {', '.join(map(str, gone))}"
    return (f"key '{key_path(first['loc'])}': expected {_expected(first)}, "
            f"got {_shown(first['input'])}")


EXPECTED = {"string_type": "a string", "bool_type": "true or false", "list_type": "a list",
            "model_type": "an object", "dict_type": "an object", "int_type": "a whole number"}


def _expected(error: dict) -> str:
    if error["type"] == "expected":
        return error["msg"]
    if error["type"] == "literal_error":      # a schema version: suite.json's, merged.json's
        return error["ctx"]["expected"]
    return EXPECTED.get(error["type"], error["msg"])


def key_path(loc: tuple) -> str:
    """A pydantic error location as the key path a reader types: variants[2].vs_baseline.ratio."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."

