"""What a flag may be: the one check every flag set passes before any program sees it.

The rule: **a flag is a code-generation option.** It changes the code the compiler generates
for the target's own sources and nothing else: flagsweep hands it to the compiler as data,
and it must not make the compiler run or load another program, read a file or folder the
build did not choose, write anywhere but the build's objects, or produce something other than
code. A flag is accepted only in these forms (an allow-list: an option outside them is
refused, whatever it does):

- `-O...`, `-g...`, `-f...`, `-m...`, `-W...` (warnings), `-std=...`, `-ansi`, `-pedantic`,
  `-pedantic-errors`, `-w`, `-pipe`, `-pthread`, `-s`, and the link modes `-static`,
  `-static-pie`, `-pie`, `-no-pie`, `-rdynamic`, `-static-libgcc`, `-shared-libgcc`;
- `--param NAME=VALUE` (one word or two), `-fuse-ld=` one of bfd, gold, lld, mold, and
  `-lNAME` (a library from the compiler's own search path);
- `-DNAME`, `-DNAME=VALUE`, `-UNAME` (also as two words, and as `-Wp,-D...`): an object-like
  macro whose value holds no `(){}[];`, so a define can set a value but not write a call or a
  statement (`-D'exit(x)=system("...")'` would). A define is still part of the program's
  source (`-Dfree=system` renames one identifier to another), so a recipe's defines deserve
  the reading its source does;
- linker options (`-Wl,...`, `-Xlinker ...`, `-z ...`): `-z KEYWORD` and the layout and
  hardening options of LINKER_OPTIONS; assembler options (`-Wa,...`): `-m...`, `--noexecstack`.

Within those forms a flag is still refused when it
- runs or loads another program: `-fplugin...`, `-fpass-plugin=`, `-foffload...`, `-mllvm`
  (LLVM's internal options load and write files); outside them `-wrapper`, `-B`, `-specs`,
  `--ld-path=`, `-ccc-...`, `-Xclang`, `-Wl,-plugin`, `@FILE` are refused too;
- names a file or folder, to read or to write: anything holding `/`, `-fdump-...`,
  `-fopt-info-...=FILE`, `-foptimization-record-file=`, `-fsave-optimization-record`,
  `-fstack-usage`, `-fcallgraph-info`, the profile files (`-fprofile-generate`, `-use`, `-dir`,
  `-instr-...`, `-fauto-profile`, `-fprofile-arcs`, ...: profile-guided builds are
  `build = "pgo"` levels, whose files flagsweep names), and the linker's `-o`, `-Map=`,
  `-rpath`, `--dynamic-linker`, `--version-script=`, `--dependency-file=` (outside the forms:
  `-o`, `-MD`, `-MF`, `-save-temps`, `-dumpdir`, `-I`, `-include`, `--sysroot`, `-iprefix`,
  `-L`, `-T`);
- changes what the compiler produces (`-E`, `-S`, `-c`, `-x`, `-###`, `-print-...`, a file);
- holds what make, Ninja or the shell would evaluate (`$`, `` ` ``, control characters);
- is longer than FLAG_MAX characters, or makes a variant's flags longer than SET_MAX (the
  kernel takes no single argument over 128 KiB: "Argument list too long", and make echoes
  every compile line).

Every message names the flag, cut to ABBREVIATED characters with its length when longer.
"""

from __future__ import annotations

import re
import shlex

FLAG_MAX = 1024          # characters in one flag
SET_MAX = 8192           # characters in one variant's flags, joined by spaces
ABBREVIATED = 200        # characters of a flag a message quotes

# What some layer between a recipe and the compiler would act on instead of passing it on:
# '$' (make's and Ninja's variables, make's $(shell ...), the shell's $(...) and ${...}; CMake
# writes flags into build.ninja unescaped), '`' (the shell's command substitution) and control
# characters (a newline ends a make or Ninja line). A flag is data, so these are refused.
EVALUATED = re.compile(r"[$`\x00-\x1f\x7f]")

ALONE = {"-ansi", "-pedantic", "-pedantic-errors", "-w", "-pipe", "-pthread", "-s", "-static",
         "-static-pie", "-pie", "-no-pie", "-rdynamic", "-static-libgcc", "-shared-libgcc"}
FAMILIES = ("-O", "-g", "-f", "-m", "-W", "-std=")
LINKERS = {"bfd", "gold", "lld", "mold"}
# The two-word options, each checked as the joined spelling of the pair.
PAIRED = {"--param": "--param=", "-D": "-D", "-U": "-U", "-Xlinker": "-Wl,", "-z": "-Wl,-z,"}
DEFINE = re.compile(r"-D[A-Za-z_][A-Za-z0-9_]*(=[^(){}\[\];]*)?|-U[A-Za-z_][A-Za-z0-9_]*")
PARAM = re.compile(r"--param=[A-Za-z0-9_-]+=[A-Za-z0-9_.+-]+")
LIBRARY = re.compile(r"-l[A-Za-z0-9_.+-]+")
# The linker's layout and hardening options; the rest read or write files (-o, -Map, -T,
# --version-script, --dependency-file), load plugins (-plugin) or change what the program
# loads when it runs (-rpath, --dynamic-linker, -L).
LINKER_OPTIONS = re.compile(
    r"-O[0-3]|--as-needed|--no-as-needed|--gc-sections|--no-gc-sections|--sort-common"
    r"|--relax|--no-relax|-s|--strip-all|-S|--strip-debug|-Bsymbolic|-Bsymbolic-functions"
    r"|--hash-style=(gnu|sysv|both)|--build-id(=(none|md5|sha1|uuid|fast))?|--icf=(all|safe|none)"
    r"|--enable-new-dtags|--disable-new-dtags|-pie|--pie|--no-undefined|--lto-O[0-3]"
    r"|--pack-dyn-relocs=(none|relr)|-x|--discard-all|-X|--discard-locals|--fatal-warnings"
    r"|--warn-common|--no-keep-memory|--reduce-memory-overheads|-z[a-z][a-z0-9-]*")
Z_KEYWORD = re.compile(r"[a-z][a-z0-9-]*(=(0x[0-9a-fA-F]+|[0-9]+))?")
ASSEMBLER_OPTIONS = re.compile(r"-m[A-Za-z0-9][A-Za-z0-9-]*(=[A-Za-z0-9_.+-]+)?|--noexecstack")

# Options with which the compiler runs or loads another program, or reads more options from a
# file: refused in flags, and in a build's logged commands before explain runs them again.
PROGRAM_OPTIONS = ("-wrapper", "-B", "-fplugin", "-fpass-plugin", "-specs", "--specs",
                   "--ld-path", "-ccc-", "-Xclang", "-mllvm", "--gcc-toolchain",
                   "--gcc-install-dir", "-no-integrated-as", "-integrated-as", "@")

# Code-generation families' members that are not code generation: (prefix, why).
RUNS = "runs or loads another program"
NAMES = "names a file or folder to read, or writes files other than the build's objects"
REFUSED_IN_FAMILIES = (
    ("-fplugin", RUNS), ("-fpass-plugin", RUNS), ("-mllvm", RUNS), ("-foffload", RUNS),
    ("-fdump-", NAMES), ("-foptimization-record-file", NAMES),
    ("-fsave-optimization-record", NAMES),
    ("-fprofile-generate", NAMES), ("-fprofile-use", NAMES), ("-fprofile-dir", NAMES),
    ("-fprofile-instr-", NAMES), ("-fprofile-sample-use", NAMES), ("-fprofile-list", NAMES),
    ("-fprofile-prefix-", NAMES), ("-fprofile-note", NAMES), ("-fprofile-remapping-file", NAMES),
    ("-fprofile-arcs", NAMES), ("-fauto-profile", NAMES), ("-fcs-profile-generate", NAMES),
    ("-fmemory-profile", NAMES), ("-ftest-coverage", NAMES), ("-fcoverage-", NAMES),
    ("-fsanitize-blacklist", NAMES), ("-fsanitize-ignorelist", NAMES),
    ("-fsanitize-system-", NAMES), ("-fsanitize-coverage-allowlist", NAMES),
    ("-fsanitize-coverage-ignorelist", NAMES), ("-fsanitize-coverage-blocklist", NAMES),
    ("-fxray-attr-list", NAMES), ("-fxray-always-instrument", NAMES),
    ("-fxray-never-instrument", NAMES), ("-fmodule", NAMES), ("-fprebuilt-module", NAMES),
    ("-fcrash-diagnostics", NAMES), ("-ftime-trace", NAMES), ("-fproc-stat-report", NAMES),
    ("-fdiagnostics-add-output", NAMES), ("-fdiagnostics-set-output", NAMES),
    ("-fdiagnostics-format=", NAMES), ("-fembed-offload-object", NAMES),
    ("-fthinlto-index", NAMES), ("-fself-test", NAMES), ("-fcompare-debug", NAMES),
    ("-fstack-usage", NAMES), ("-fcallgraph-info", NAMES),
)


def split_flags(text: str) -> tuple[str, ...]:
    """A flag string split as a shell splits it. An unbalanced quote (or a trailing backslash)
    is an error naming the string: shlex alone says only "No closing quotation"."""
    try:
        return tuple(shlex.split(text))
    except ValueError as e:
        raise ValueError(f"{abbreviated(text)}: {str(e).lower()}; quote flags as in a shell, "
                         "every quote closed (e.g. \"-O2 '-DNAME=a b'\")") from None


def abbreviated(flag: str) -> str:
    """A flag as a message quotes it: a long one cut, with its length."""
    if len(flag) <= ABBREVIATED:
        return repr(flag)
    return f"{flag[:ABBREVIATED]!r}... ({len(flag)} characters)"


def check_flags(text: str) -> str:
    """text, one flag set, unchanged; ValueError naming the first flag in it that is not a
    code-generation option (the module's rule) or is too long."""
    check_words(split_flags(text))
    return text


def check_words(words: tuple[str, ...] | list[str]) -> None:
    """check_flags for flags already split (a variant's, a distribution's); ValueError naming
    the first flag refused."""
    for word in words:
        _check_text(word)
    joined = " ".join(words)
    if len(joined) > SET_MAX:
        raise ValueError(f"the flags {abbreviated(joined)} are longer than {SET_MAX} "
                         "characters, the most a variant's flags may hold")
    for flag in _joined(list(words)):
        if why := refusal(flag):
            raise ValueError(f"flag {abbreviated(flag)} {why}; flags are code-generation "
                             "options only (docs/recipes.md#what-a-flag-may-be)")


def _check_text(word: str) -> None:
    found = EVALUATED.search(word)
    if found:
        raise ValueError(f"flag {abbreviated(word)} contains {found.group()!r}, which make, "
                         "Ninja or the shell would evaluate instead of passing it to the "
                         "compiler; flags are data: write them without '$', '`' or control "
                         "characters")
    if len(word) > FLAG_MAX:
        raise ValueError(f"flag {abbreviated(word)} is longer than {FLAG_MAX} characters, the "
                         "most one flag may hold")


def _joined(words: list[str]) -> list[str]:
    """The flags with each two-word option written as one (`-z relro` as `-Wl,-z,relro`), and
    `-Wl,-z -Wl,relro` (libtool's spelling) as one linker option."""
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in PAIRED:
            if i + 1 == len(words):
                raise ValueError(f"flag {abbreviated(word)} takes a value, and none follows it")
            word = PAIRED[word] + words[i + 1]
            i += 1
        if out and out[-1] in ("-Wl,-z", "-Wl,-z,") and word.startswith("-Wl,"):
            out[-1] = "-Wl,-z," + word.removeprefix("-Wl,")
        else:
            out.append(word)
        i += 1
    return out


def refusal(flag: str) -> str | None:
    """Why one flag (a two-word option joined) is not a code-generation option, or None."""
    if flag.startswith("@"):
        return "names a file of more flags to read"
    why = _form(flag)
    if why is None and "/" in flag:
        return NAMES      # a path, in an option that looked harmless
    return why


def _form(flag: str) -> str | None:
    """Why a flag is outside the code-generation forms, or None."""
    if flag.startswith("-Wl,"):
        return _linker(flag.removeprefix("-Wl,").split(","))
    if flag.startswith("-Wa,"):
        bad = _unmatched(flag, ASSEMBLER_OPTIONS)
        return bad and f"passes {bad!r} to the assembler, which takes only -m... and --noexecstack here"
    if flag.startswith("-Wp,"):
        bad = _unmatched(flag, DEFINE)
        return bad and f"passes {bad!r} to the preprocessor, which takes only defines here"
    if flag.startswith(("-D", "-U")):
        return None if DEFINE.fullmatch(flag) else (
            "is not an object-like macro with a value (-DNAME or -DNAME=VALUE, the value "
            "without brackets, braces, parentheses or ';'): a define may set a value, not write "
            "code")
    if flag.startswith("-fuse-ld="):
        return None if flag.removeprefix("-fuse-ld=") in LINKERS else (
            f"names a linker program; expected one of {sorted(LINKERS)}")
    if flag.startswith("--param="):
        return None if PARAM.fullmatch(flag) else "is not --param NAME=VALUE"
    if flag in ALONE or LIBRARY.fullmatch(flag):
        return None
    if flag.startswith(("-Xclang", "-Xassembler", "-Xpreprocessor", "-Xarch")):
        return "passes options to a program the compiler runs, past the driver's checks"
    if not flag.startswith(FAMILIES):
        return _outside(flag)
    for prefix, why in REFUSED_IN_FAMILIES:
        if flag.startswith((prefix, "-fno-" + prefix.removeprefix("-f"))):
            return why
    if flag.startswith("-fopt-info") and "=" in flag:
        return NAMES
    return None


def _unmatched(flag: str, allowed: re.Pattern) -> str | None:
    """The first word of a `-Wa,...` or `-Wp,...` flag that the pattern does not allow."""
    return next((w for w in flag[4:].split(",") if not allowed.fullmatch(w)), None)


def program_option(argv: list[str]) -> str | None:
    """The first word of a compile command (not its program) with which the compiler would run
    or load another program, or None. A build's own paths, defines and outputs are its
    business; this is what no command flagsweep runs again may hold."""
    return next((a for a in argv if a.startswith(PROGRAM_OPTIONS)), None)


def _linker(words: list[str]) -> str | None:
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-z" and i + 1 < len(words) and Z_KEYWORD.fullmatch(words[i + 1]):
            i += 2
            continue
        if not LINKER_OPTIONS.fullmatch(word):
            return (f"passes {word!r} to the linker, which takes only -z KEYWORD and layout "
                    "and hardening options here (the others write or read files, load "
                    "plugins or change what the program loads)")
        i += 1
    return None


def _outside(flag: str) -> str:
    """Why a flag outside the code-generation forms is refused, in the words of what it is."""
    if flag in ("-E", "-S", "-c", "-###", "-v") or flag.startswith(("-print-", "--print", "-x")):
        return "changes what the compiler produces, not the code it generates"
    if flag.startswith(("-o", "-M", "-save-temps", "-dump", "-aux-info", "--output")):
        return NAMES
    if flag.startswith(PROGRAM_OPTIONS):
        return RUNS
    if flag.startswith(("-I", "-i", "--sysroot", "-L", "-T", "-nostd", "--include", "-resource-dir")):
        return "changes where the compiler looks for headers, libraries or its own programs"
    return "is not one of the code-generation options flagsweep passes"
