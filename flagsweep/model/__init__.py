"""The typed model of the files flagsweep writes and reads: results.json, suite.json,
merged.json, tune.json, qualify.json and campaign.json as pydantic models, and the store's run record (run.py), at the
bottom of the package (it imports only pydantic), so each stage builds its part of it where
the data is made. Every object is closed: a key no model declares is refused.

Read a model by attribute (`doc.machine.cpu_model`). `flagsweep schema
results|suite|merged|tune|qualify|campaign` prints the JSON Schema the models generate.
"""

from __future__ import annotations

from flagsweep.model.values import Bool, Num, Pair, Record, Str  # noqa: F401
from flagsweep.model.machine import (  # noqa: F401
    Compiler, CpuChoice, CpuLoad, Distro, Environment, Machine
)
from flagsweep.model.measurement import (  # noqa: F401
    BiasCheck, ChosenMetric, DisturbanceRule, Layouts, LengthPoint, Measurement, Pilot,
    PilotFigures, RunLength, Schedule, Sequential, ShortRun
)
from flagsweep.model.build import (  # noqa: F401
    AuditSummary, Build, DependencyBuild, LayoutBuild, LeftOut, PackageTests, Pgo, SharedLibrary
)
from flagsweep.model.check import Check, Quality  # noqa: F401
from flagsweep.model.verdicts import (  # noqa: F401
    AA, Comparison, Confirmation, Effect, Estimate, Excluded, LayoutEstimate, LayoutLuck,
    LayoutSummary, Noise, Recommendation, Summary, VsBaseline
)
from flagsweep.model.explain import (  # noqa: F401
    Explain, ExplainBaseline, ExplainFunction, ExplainRun, ExplainTop, FunctionRemarks,
    RemarksRun
)
from flagsweep.model.history import (  # noqa: F401
    HistoryLatest, HistoryPoint, HistorySeries, HistoryStep, HistoryUnjudged
)
from flagsweep.model.results import (  # noqa: F401
    AA_SUFFIX, EffectsDesign, Failure, is_control, PriorStudy, REF_SUFFIX, Replaced, Results,
    SCHEMA, Skipped, StudyTimings, Variant, Workload
)
from flagsweep.model.across import (  # noqa: F401
    MERGE_SCHEMA, MergeCell, Merged, MergedMachine, MergedVariant, ProgramCell, Suite,
    SUITE_SCHEMA, SuiteFailure, SuiteProgram, SuiteVariant
)
from flagsweep.model.tuning import (  # noqa: F401
    Tune, TUNE_SCHEMA, TUNE_STEPS, TuneAblation, TuneAblationRow, TuneBroken, TuneCandidate,
    TuneCost, TuneEstimate, TuneGreedy, TuneGreedyStep, TuneLayoutCheck, TuneProgress,
    TuneProof, TuneProofPlan, TuneSpace, TuneTrial
)
from flagsweep.model.campaign import (  # noqa: F401
    Campaign, CAMPAIGN_SCHEMA, CampaignPackage
)
from flagsweep.model.qualification import (  # noqa: F401
    GateSetting, PlantCaught, QUALIFY_SCHEMA, Qualification
)
from flagsweep.model.run import (  # noqa: F401
    Confirms, CounterSetup, EarlyStop, FleetLabel, RunOptions, RunRecord, StoredExplain
)
from flagsweep.model.schema import (  # noqa: F401
    declared, EXPECTED, json_schema, key_path, KINDS, problem, readable, UPGRADES
)
