"""How a sweep measured: its options, the schedule and its pilot, the run length, the levels
its looks spent (measure, jobs.schedule, stats.sequential).
"""

from __future__ import annotations

from flagsweep.model.values import Bool, Num, Record, Str


class Layouts(Record):
    k: Num
    seeds: Str | None = None
    flags: list[Str] | None = None
    method: Str | None = None


class Sequential(Record):
    """The levels a sweep spent (stats.sequential.Design): BH at `alpha` at the end, `stops_alpha`
    over the variant stops, equivalence by two one-sided tests at `tost_level` each."""
    alpha: Num = None
    stops_alpha: Num = None
    tost_level: Num = None


class ShortRun(Record):
    """A baseline whose runs are too short to time (flagsweep.measure.resolution)."""
    median_s: Num = None
    shortest_s: Num = None
    input_key: Str | None = None
    input_size: Num = None
    input_needed: Num = None
    warning: Str


class PilotFigures(Record):
    """One schedule in the pilot (measure.pilot): its complete pairs, the paired spread (sd of
    the pairs' log-ratios, in %), a round's wall time, and the half-width of a 95% interval
    after a minute of measuring at that spread and pace (%)."""
    pairs: Num = None
    sd_pct: Num = None
    round_s: Num = None
    minute_pct: Num = None


class BiasCheck(Record):
    """One comparison in duet and in serial (measure.pilot): each estimate (% change), their
    difference and Welch's interval's half-width (%, at the pilot's `level`); whether they
    agree (null: too few pairs to tell)."""
    variant: Str
    duet_pct: Num = None
    serial_pct: Num = None
    difference_pct: Num = None
    half_pct: Num = None
    agrees: Bool | None = None


class Pilot(Record):
    """The schedule's pilot: `pairs` a comparison in each schedule, over `comparisons`."""
    pairs: Num = None
    comparisons: Num = None
    level: Num = None                        # the bias check's intervals: 1 - 0.05 / comparisons
    seconds: Num = None                      # what the pilot took (this session's part)
    serial: PilotFigures | None = None
    duet: PilotFigures | None = None
    bias: list[BiasCheck] | None = None


class Schedule(Record):
    """How the counted rounds ran (jobs.schedule): duet (each variant at once with a run of the
    baseline on two CPUs) or serial, what was asked, why, and the pilot's figures when one ran."""
    asked: Str | None = None                 # --schedule: auto | duet | serial
    schedule: Str                            # duet | serial
    cpus: list[Num] | None = None            # duet: [first, second]; serial: [the one]
    reason: Str
    design: Str | None = None                # duet: how the pairs are made
    pilot: Pilot | None = None
    warning: Str | None = None               # a forced duet whose bias check failed


class LengthPoint(Record):
    """What the run-length pilot measured at one input size (flagsweep.measure.length)."""
    size: Num = None                         # in the target's unit
    run_s: Num = None                        # the baseline's median run there
    sd: Num = None                           # spread of the A/A pair's log ratio
    pair_s: Num = None                       # seconds a pair cost there
    pairs: Num = None


class RunLength(Record):
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


class ChosenMetric(Record):
    """run --metric auto: the column chosen and why (measure.metric)."""
    metric: Str
    why: Str


class DisturbanceRule(Record):
    """When a counted run counts as disturbed and is taken again (measure.disturbance)."""
    off_cpu_share: Num = None
    steal_share: Num = None
    max_retakes: Num = None


class Measurement(Record):
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
    cpu: Num = None                         # the CPU the rounds ran on
    quick: Bool | None = None               # --quick: the target's quick input
    strict_check: Bool | None = None        # --strict-check: a differing output is not timed
    counters: Str | None = None             # --counters: auto | hardware | software | none
    metric_choice: ChosenMetric | None = None       # --metric auto's choice
    disturbance_rule: DisturbanceRule | None = None  # null: the metric is a count
