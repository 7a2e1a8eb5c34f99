"""Why a variant is faster or slower: its change attributed to functions (flagsweep.explain)."""

from __future__ import annotations

from flagsweep.model.values import Num, Record, Pair, Str


class FunctionRemarks(Record):
    """What the vectorisers said about one function (flagsweep.explain.remarks)."""
    vectorized: list[Str] = []             # "file.c:56: loop vectorized using 32 byte vectors"
    missed: list[Str] = []                 # the first few "not vectorized: <reason>"
    missed_total: Num = None
    loops: Num = None                      # loops vectorised
    blocks: Num = None                     # basic blocks vectorised (SLP)
    widest: Num = None                     # bytes of the widest vectors (gcc; null for clang)


class RemarksRun(Record):
    """How one binary's remarks were collected: a rebuild of its compile commands."""
    status: Str                            # ok | failed | skipped (LTO)
    why: Str | None = None
    commands: Num = None
    compiler: Str | None = None            # gcc | clang


class ExplainFunction(Record):
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


class Explain(Record):
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


class ExplainTop(Record):
    function: Str
    cost: Num = None
    share_pct: Num = None
    size: Num = None
    remarks: FunctionRemarks | None = None


class ExplainBaseline(Record):
    variant: Str
    total: Num = None
    profile: Str | None = None
    samples: Num = None
    unknown_share_pct: Num = None
    functions: list[ExplainTop] = []
    remarks: RemarksRun | None = None      # the baseline's remarks rebuild
    libraries: dict[Str, Num] | None = None   # % of the cost in each library from outside its
                                              # build tree (exported functions: a lower bound)


class ExplainRun(Record):
    """run --explain / flagsweep explain: how the profiles were taken, the baseline's own."""
    method: Str | None = None
    unit: Str | None = None
    baseline: ExplainBaseline | None = None
    explained: list[Str] = []              # the variants with an `explain` entry
    failure: Str | None = None
    note: Str | None = None
