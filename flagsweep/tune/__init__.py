"""`flagsweep tune`, by phase: the search space (space, dimensions), the Optuna study (search),
the batches raced as sweeps (batch, race), the flags that break a build (culprit), the ablation
and its layout check (ablation, layouts), the proof (proof, proving), what the budget buys
(budget, cost), the one sentence (answer), tune.json (document) and the driver that runs the
phases in order and resumes them (tune). Its record is flagsweep.model.tune's."""
