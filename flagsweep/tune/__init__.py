"""`flagsweep tune`, by phase. The driver (tune) runs the phases in order and resumes them: the
search, batches of candidates raced as sweeps (race), the ablation (ablation) and its check over
layouts (layouts), the proof (proving), then tune.json and its page (document). What the phases
share: the tune in progress and its record (record; the model is flagsweep.model.tune's), what
was spent and what is left (cost), a phase's sweeps (sweeps), the sets ranked (ranking). Below
them, the parts that know no tune in progress: a batch as one sweep (batch), the Optuna study
(search), the flags that break a build (culprit), the ablation's and the proof's rows (proof),
the one sentence (answer), what the budget buys (budget), the search space (space) and what a
compiler offers it (dimensions)."""
