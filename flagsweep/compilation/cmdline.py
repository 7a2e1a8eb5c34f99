"""How a gcc or clang command line is read: which words are options, which are an option's
value, and which are the files it compiles or links.

One table for both compilers, used by everything that splits a recorded command (the audit's
flag comparison, its kind of call, its -o, its link inputs, its preprocessing run). A value
read as a word of its own breaks them all alike: `-I inc` made `inc` an input and `-include
config.h` a stray file, so the audit's own preprocessing of an honest project failed; `-MF
-O0.d` would have been an -O0.
"""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep.errors import ConfigError
from flagsweep.host import toolchain

# Options whose value is the next word(s) when written alone (`-I dir`; `-Idir` is one word),
# with how many words they take. Each family's own drivers were asked (gcc 12, clang 14: with
# `-###`, is the word after the option read as its value or as an option of its own?), and an
# option is listed for a family only where that family reads it so: where they differ, a word
# taken for a value that the compiler reads as an option would hide an -O0 or a source.
BOTH: dict[str, int] = dict.fromkeys((
    "-A", "-D", "-U", "-I", "-F", "-include", "-imacros", "-idirafter", "-iquote", "-isystem",
    "-iprefix", "-iwithprefix", "-iwithprefixbefore", "-isysroot", "-imultilib",
    "-MF", "-MT", "-MQ", "-o", "-x", "-Xlinker", "-Xassembler", "-Xpreprocessor",
    "-L", "-l", "-u", "-e", "-T", "-Tbss", "-Tdata", "-Ttext", "-z", "-B", "-specs", "--param",
    "--sysroot", "--specs", "--prefix", "--output", "--language", "--include", "--imacros",
    "--include-directory", "--include-directory-after", "--include-prefix",
    "--include-with-prefix", "--include-with-prefix-after", "--include-with-prefix-before",
    "--define-macro", "--undefine-macro", "--assert", "--for-linker", "--force-link",
    "--library-directory"), 1)
# clang 14 reads the word after these as an option of its own (-aux-info -O0 compiles at -O0).
GCC_ONLY: dict[str, int] = dict.fromkeys((
    "-aux-info", "-dumpbase", "-dumpbase-ext", "-dumpdir", "-imultiarch", "-wrapper", "-J",
    "-fintrinsic-modules-path", "-gnatO", "-Hd", "-Hf", "-Xf", "--entry", "--dump",
    "--dumpbase", "--dumpbase-ext", "--dumpdir"), 1)
# gcc reads the word after these as an option or an input of its own (-include-pch is
# -include of a file named -pch to it).
CLANG_ONLY: dict[str, int] = {
    **dict.fromkeys((
        "-include-pch", "-isystem-after", "-iwithsysroot", "-iframework",
        "-iframeworkwithsysroot", "-ivfsoverlay", "-cxx-isystem", "-MJ", "-dependency-file",
        "-dependency-dot", "-serialize-diagnostics", "-Xclang", "-Xanalyzer",
        "-Xcuda-fatbinary", "-Xcuda-ptxas", "-Xopenmp-target", "-mllvm", "-rpath", "-G",
        "-target", "-arch", "-arch_only", "-ccc-gcc-name", "-ccc-install-dir",
        "-ccc-arcmt-migrate", "-resource-dir", "-working-directory", "-ftrapv-handler",
        "--config", "--serialize-diagnostics", "--analyzer-output",
        # Darwin's linker options, which clang's driver takes everywhere
        "-allowable_client", "-bundle_loader", "-client_name", "-compatibility_version",
        "-current_version", "-dylib_file", "-dylinker_install_name", "-exported_symbols_list",
        "-filelist", "-framework", "-image_base", "-init", "-install_name", "-lazy_framework",
        "-lazy_library", "-multiply_defined", "-multiply_defined_unused", "-read_only_relocs",
        "-seg_addr_table", "-seg_addr_table_filename", "-seg1addr", "-segs_read_only_addr",
        "-segs_read_write_addr", "-sub_library", "-sub_umbrella", "-umbrella",
        "-unexported_symbols_list", "-weak_framework", "-weak_library",
        "-weak_reference_mismatches"), 1),
    "-sectobjectsymbols": 2, "-segaddr": 2,
    "-sectalign": 3, "-sectcreate": 3, "-sectorder": 3, "-segcreate": 3, "-segprot": 3,
}
SEPARATE = {"gcc": {**BOTH, **GCC_ONLY}, "clang": {**BOTH, **CLANG_ONLY}, None: BOTH}
# Families of clang options each of which takes the next word: `-Xarch_x86_64 -O0`,
# `-Xopenmp-target=x86_64 -O0`.
SEPARATE_FAMILIES = {"gcc": (), "clang": ("-Xarch_", "-Xopenmp-target="), None: ()}
# Options that hand their value on to the compiler proper, where it can choose code: their
# value is a flag of the compile, compared as one word with the option (`--param=n=v`).
PASSED_ON = ("--param", "-Xclang", "-mllvm", "-Xarch_", "-Xopenmp-target")
# Options whose value (or comma-separated values) gcc's integrated preprocessor, cc1 itself,
# reads as its own options: `-Xpreprocessor -fno-tree-vectorize` and
# `-Wp,-fno-tree-vectorize` change the code as the flag written plainly does.
TO_CC1 = "-Xpreprocessor"
TO_CC1_JOINED = "-Wp,"

# The language of an input by its suffix, when no -x says otherwise; other suffixes are the
# linker's (objects, archives, scripts).
LANGUAGES = {".c": "c", ".i": "cpp-output", ".ii": "c++-cpp-output", ".s": "assembler",
             ".S": "assembler-with-cpp", ".sx": "assembler-with-cpp",
             **dict.fromkeys((".cc", ".cp", ".cxx", ".cpp", ".CPP", ".c++", ".C"), "c++")}
# Languages whose text goes through the preprocessor; the -output ones are preprocessed text.
PREPROCESSED = ("c", "c++", "objective-c", "objective-c++", "assembler-with-cpp", "c-header",
                "c++-header", "objective-c-header", "objective-c++-header")
READ_AS_IS = ("cpp-output", "c++-cpp-output", "objective-c-cpp-output",
              "objective-c++-cpp-output")
# What the wrapper compiles in place of a source (wrapper.c): the language its snapshot is
# compiled as, and whether the source is preprocessed into it (else copied as it is). Others
# (headers for a precompiled header) are compiled as they are, and have no snapshot.
SNAPSHOT = {"c": ("cpp-output", True), "c++": ("c++-cpp-output", True),
            "objective-c": ("objective-c-cpp-output", True),
            "objective-c++": ("objective-c++-cpp-output", True),
            "assembler-with-cpp": ("assembler", True),
            **{language: (language, False) for language in (*READ_AS_IS, "assembler")}}


@dataclass(frozen=True)
class Word:
    """An option with its separate values, or an input (option None) in its -x language."""

    text: str
    values: tuple[str, ...] = ()
    option: bool = True
    language: str | None = None    # inputs: the -x in force, else by suffix (None: the linker's

    @property
    def words(self) -> list[str]:
        return [self.text, *self.values]


def family(compiler: str) -> str | None:
    """'gcc' or 'clang' as the compiler says of itself; None when it cannot be asked (then only
    what both families read alike is read as a value)."""
    try:
        return toolchain.resolve(compiler).family
    except (ConfigError, OSError):
        return None


def arity(option: str, kind: str | None) -> int:
    """How many following words the option takes as its value for a compiler of that family
    (0: the word stands alone)."""
    if option in SEPARATE[kind]:
        return SEPARATE[kind][option]
    return 1 if option.startswith(SEPARATE_FAMILIES[kind]) else 0


def split(argv: list[str]) -> list[Word]:
    """argv[1:] as options with their values and inputs with their language, as argv[0] reads
    them."""
    kind = family(argv[0]) if argv else None
    out, i, forced = [], 1, None
    while i < len(argv):
        word = argv[i]
        if word.startswith("-") and word != "-":
            n = arity(word, kind)
            values = tuple(argv[i + 1:i + 1 + n])
            language = values[0] if word == "-x" and values else (
                word[2:] if word.startswith("-x") and len(word) > 2 else None)
            if language is not None:
                forced = None if language == "none" else language
            out.append(Word(word, values))
            i += 1 + n
        else:
            suffix = word[word.rfind("."):] if "." in word.rsplit("/", 1)[-1] else ""
            out.append(Word(word, option=False, language=forced or LANGUAGES.get(suffix)))
            i += 1
    return out


def options(argv: list[str]) -> list[str]:
    """The option words alone, without their values or the inputs."""
    return [w.text for w in split(argv) if w.option]


def sources(argv: list[str]) -> list[Word]:
    """The inputs the compiler compiles (not the linker's): by -x or suffix; `-` is stdin."""
    return [w for w in split(argv) if not w.option and w.language is not None]


def output(argv: list[str]) -> str | None:
    """The -o value ("-o FILE" or "-oFILE"; the last one wins, as in gcc)."""
    out = None
    for w in split(argv):
        if w.text == "-o" and w.values:
            out = w.values[0]
        elif w.option and w.text.startswith("-o") and len(w.text) > 2 and not w.values:
            out = w.text[2:]
    return out


def passed_on(word: Word) -> list[str]:
    """The compile flags an option stands for, as the audit compares them: a value handed to
    the compiler joined to its option (`--param=n=v`), words for cc1 unwrapped, else the
    option itself; [] for an option whose value is not a flag."""
    if word.text.startswith(PASSED_ON) and word.values:
        return [f"{word.text}={' '.join(word.values)}"]
    if word.text == TO_CC1:
        return list(word.values)
    if word.text.startswith(TO_CC1_JOINED):
        return [w for w in word.text[len(TO_CC1_JOINED):].split(",") if w]
    return [] if word.values else [word.text]
