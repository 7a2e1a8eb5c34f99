"""A variant's output check verdict (workload.check, workload.quality)."""

from __future__ import annotations

from flagsweep.model.values import Num, Record, Str


class Quality(Record):
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


class Check(Record):
    status: Str                              # ok | equivalent | differs | failed
    detail: Str | None = None
    quality: Quality | None = None           # method "quality" only
    output_sha256: Str | None = None         # the product's bytes
    same_output_as: Str | None = None        # the first variant with the very same bytes
