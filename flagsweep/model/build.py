"""A variant's build record (compilation): its binary, its fingerprints, its layouts."""

from __future__ import annotations

from flagsweep.model.values import Bool, Num, Record, Str


class LayoutBuild(Record):
    id: Str
    seed: Num
    status: Str
    binary: Str | None = None
    code_sha256: Str | None = None
    functions_sha256: Str | None = None
    flags_verified: Bool | None = None
    identical_to: Str | None = None          # the layout whose code it has
    log: Str | None = None


class AuditSummary(Record):
    """What the compiler wrapper's log showed of a build (compilation.audit): whether every
    compile and link had the variant's flags, and what did not."""
    verified: Bool
    compiles: Num = None
    links: Num = None
    problems: list[Str] = []
    tolerated_seen: list[Str] = []
    compile_line: list[Str] | None = None    # the first compile's argv, shown in the report
    # programs compiled and linked in one go that the binary holds none of (a generator the
    # build runs, nettle's eccdata): not held to the flags, named here
    build_programs: list[Str] = []


class Pgo(Record):
    """A profile-guided build (compilation.pgo): its training and the profile it used."""
    training: Str | None = None              # the training command
    input: Str | None = None
    profile_sha256: Str | None = None
    matched: Bool | None = None              # every compile of the last stage found its profile
    objects_without_profile: Num = None
    use_flags: list[Str] = []


class SharedLibrary(Record):
    """A shared library the binary loads from outside its build tree (compilation.binaries):
    its code is whoever built it (the distribution's), never built with the variant's flags."""
    name: Str                                # as the binary (or a library it loads) asks for it
    path: Str | None = None                  # where the loader's search finds it; null: nowhere
    runtime: Bool = False                    # the C/C++ runtime (libc, libm, libstdc++...)


class DependencyBuild(Record):
    """A library built before the program from its own source, with the variant's flags, into
    its tree (compilation.dependency): which source."""
    name: Str
    version: Str
    system: Str
    sha256: Str | None = None                # the source tarball's; null: a local folder
class LeftOut(Record):
    """An optional SIMD or assembly path the build's configure or cmake left out
    (compilation.features): the code built is the plain one, not what a distribution ships."""
    kind: Str                                # SIMD | assembly
    said: list[Str] = []                     # the configure output's lines that say so
    missing: list[Str] = []                  # assemblers they name that the build's PATH lacks


class PackageTests(Record):
    """The package's own test suite run on the variant's build (compilation.package_tests):
    passed, failed, timeout, or none (no suite found, `tests = false`, or not run)."""
    status: Str                              # passed | failed | timeout | none
    command: list[Str] | None = None
    seconds: Num = None
    log: Str | None = None
    tail: Str | None = None                  # a failure's last log lines


class Build(Record):
    status: Str
    seconds: Num = None
    log: Str | None = None
    binary: Str | None = None
    code_sha256: Str | None = None
    functions_sha256: Str | None = None     # functions by name and size, whatever their places
    reference_sha256: Str | None = None
    size_bytes: Num = None                  # the binary's file, with its tree's libraries
    sizes: dict[str, Num] | None = None     # the ELF image: text, data, bss bytes
    libraries: list[Str] | None = None      # build-tree shared libraries it loads, in the hash
    external_libraries: list[SharedLibrary] | None = None   # the ones from outside the tree
    cpu_seconds: Num = None                 # the build's CPU time (its configure, compiles, link)
    lto: Bool | None = None                 # -flto given and verified on the binary's link
    pgo: Pgo | None = None                  # profile-guided: training command, profile sha256
    identical_to: Str | None = None
    flags_verified: Bool | None = None
    reused: Bool | None = None          # from the build cache (build/cache.py)
    same_functions: Bool | None = None  # with layouts: every layout has the same functions
    layouts: list[LayoutBuild] | None = None   # with layouts: each layout's own binary
    detail: Str | None = None               # why it failed, or what it is (an A/A copy)
    binary_sha256: Str | None = None        # a fleet build: the bytes the worker shipped
    audit: AuditSummary | None = None       # null: not audited (a copy, a cached build)
    package_tests: PackageTests | None = None   # null: not run (identical code, a cached build)
    dependencies: list[DependencyBuild] | None = None   # built first, in the tree, with its flags
    left_out: LeftOut | None = None         # a SIMD or assembly path configure left out
