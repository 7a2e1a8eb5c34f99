"""A variant's build record (compilation): its binary, its fingerprints, its layouts."""

from __future__ import annotations

from flagsweep.model.values import Bool, Num, Open, Str


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
