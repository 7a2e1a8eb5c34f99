#!/usr/bin/env python3
"""A newcomer's first sweep of three programs flagsweep does not ship, end to end, as
docs/targets.md ("Your own program: three shapes") tells it: from an empty folder, the input
written by the user, `flagsweep new NAME --debian PACKAGE --run COMMAND --input FILE`, at most
one hand edit (the [check], which only the user knows), then `flagsweep run ./NAME --recipe
olevels --quick --wait`.

The three shapes:
  lua    an interpreter (lua5.4, plain Makefile) running a benchmark script written here
  cwebp  an image encoder (libwebp, autotools and libtool) reading a PPM image generated here
  lzip   a C++ compressor (lzip, a hand-written configure) reading a corpus generated here

Every input is generated from a fixed seed with integer arithmetic only (numpy's PCG64 raw
output, or plain Python integers), so another machine writes the same bytes.

For each program it prints the commands run, the edits made to target.toml (none but the
[check]), the seconds from the empty folder to the verdicts, and the verdict lines. Anything
else the target file needed is a failure of `new`, reported as such, never patched here.

Usage: python bench/newcomer.py [PROGRAM ...] [--workdir DIR] [--flagsweep CMD] [--run-arg ARG ...]
       (e.g. --run-arg=--cpu --run-arg=0 on a machine where another sweep holds the default CPU)
Exit status: 0 when every program reached its verdicts, 1 when one did not, 3 when this
flagsweep's `new` has no --input (the interface the acceptance is written against).
The store is $FLAGSWEEP_DB, else an SQLite file in the work folder.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

LUA_SEED = 12345
IMAGE_SEED = 31
CORPUS_SEED = 7


def lua_script(path: Path) -> None:
    """A benchmark script of about 0.3 s at -O2: sorting, hashing of strings, pattern matching,
    recursion and floating point, with its own linear congruential generator (seeded) so the
    interpreter's own random numbers play no part."""
    path.write_text(f"""\
-- flagsweep newcomer benchmark: tables, strings, closures, floats (deterministic)
local seed = {LUA_SEED}
local function rand(n)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % n
end
local t = {{}}
for i = 1, 300000 do t[i] = rand(1000000) end
table.sort(t)
local words = {{}}
for i = 1, 100000 do words[#words + 1] = string.format("w%05d", rand(5000)) end
local counts = {{}}
for _, w in ipairs(words) do counts[w] = (counts[w] or 0) + 1 end
local distinct = 0
for _ in pairs(counts) do distinct = distinct + 1 end
local s = table.concat(words, " ", 1, 20000)
local hits = 0
for _ in s:gmatch("w0%d+") do hits = hits + 1 end
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local x = 0.0
for i = 1, 1000000 do x = x + (i % 977) * 0.001 / (1 + (i % 13)) end
print(t[1], t[#t], distinct, hits, fib(27), string.format("%.6f", x))
""")


def ppm_image(path: Path, width: int = 2048, height: int = 1536) -> None:
    """A photo-like PPM (about 0.3 s for cwebp -q 80 at -O2): integer gradients, filled discs
    and uniform noise from PCG64's raw output (stable across numpy versions)."""
    rng = np.random.Generator(np.random.PCG64(IMAGE_SEED))
    y, x = np.mgrid[0:height, 0:width].astype(np.int64)
    img = np.empty((height, width, 3), dtype=np.int64)
    img[..., 0] = 40 + (x * 160) // width + ((x // 64 + y // 48) % 2) * 20
    img[..., 1] = 30 + (y * 180) // height
    img[..., 2] = 200 - ((x + y) * 150) // (width + height)
    raw = rng.bit_generator.random_raw(160)
    for i in range(40):
        cx, cy = int(raw[4 * i] % width), int(raw[4 * i + 1] % height)
        r = 12 + int(raw[4 * i + 2] % 180)
        colour = [(int(raw[4 * i + 3]) >> s) & 0xFF for s in (0, 8, 16)]
        disc = (x - cx) ** 2 + (y - cy) ** 2 < r * r
        img[disc] = (img[disc] * 2 + np.array(colour) * 3) // 5
    noise = rng.bit_generator.random_raw(height * width * 3).reshape(height, width, 3)
    img += (noise % 25).astype(np.int64) - 12
    pixels = np.clip(img, 0, 255).astype(np.uint8)
    path.write_bytes(b"P6\n%d %d\n255\n" % (width, height) + pixels.tobytes())


def text_corpus(path: Path, megabytes: float = 0.6) -> None:
    """Prose-like text with Zipf-skewed words and numbered records, then incompressible
    bytes (a twentieth), about 0.35 s for lzip -6 at -O2."""
    rng = np.random.Generator(np.random.PCG64(CORPUS_SEED))
    size = int(megabytes * 1_000_000)
    letters = b"etaoinshrdlucmfwypvbgkqjxz"
    vocab_raw = rng.bit_generator.random_raw(4000)
    vocab = [bytes(letters[(int(v) >> (5 * k)) % 13 + (k % 2) * 13] for k in range(2 + int(v) % 8))
             for v in vocab_raw]
    picks = rng.bit_generator.random_raw(size // 4)
    out = bytearray()
    for n, r in enumerate(picks):
        a, b = int(r) & 0xFFFF, (int(r) >> 16) & 0xFFFF
        out += vocab[(a % 4000) * (b % 4000) // 4000]  # a product of uniforms: skewed to low ranks
        out += b"\n" if n % 13 == 12 else b" "
        if n % 997 == 0:
            out += b"record %d;%d;%d\n" % (n, a, b)
        if len(out) >= size * 19 // 20:
            break
    out += rng.bit_generator.random_raw(size // 160 + 1).astype("<u8").tobytes()
    path.write_bytes(bytes(out[:size]))


@dataclass
class Program:
    name: str
    debian: str
    run: str
    input_name: str
    make_input: Callable[[Path], None]
    check: dict[str, object] | None = None   # the one edit: the [check] only the user knows
    expect: list[str] = field(default_factory=list)  # what `new` should have found, said if not


PROGRAMS = {
    "lua": Program(
        "lua", "lua5.4", "{binary} {input}", "bench.lua", lua_script,
        check=None,  # `new`'s exact check of stdout is right for a script printing its result
        expect=["project_flags", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX"]),
    "cwebp": Program(
        "cwebp", "libwebp", "{binary} -q 80 {input} -o {output}", "photo.ppm", ppm_image,
        check={"method": "exact", "of": "output"},
        expect=['binary = "examples/cwebp"', "--disable-shared"]),
    "lzip": Program(
        "lzip", "lzip", "{binary} -6 -c {input}", "corpus.txt", text_corpus,
        check={"method": "roundtrip", "of": "stdout", "roundtrip_argv": ["{binary}", "-d", "-c"]},
        expect=[]),
}


@dataclass
class Outcome:
    commands: list[str] = field(default_factory=list)
    edits: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    seconds: float = 0.0
    ok: bool = False


def flagsweep_command() -> list[str]:
    """The flagsweep beside this Python (a checkout's .venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "flagsweep"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("flagsweep")
    return [found] if found else [sys.executable, "-m", "flagsweep"]


def has_input_option(flagsweep: list[str]) -> bool:
    help_text = subprocess.run([*flagsweep, "new", "--help"], capture_output=True, text=True).stdout
    return "--input" in help_text


def toml_value(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def edit_check(target: Path, check: dict[str, object]) -> str:
    """Replace the [check] table (to the next table or the end) with the user's check; the
    file must still parse. Returns the edit as one line."""
    text = target.read_text()
    block = "[check]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in check.items())
    edited, count = re.subn(r"(?ms)^\[check\]\n.*?(?=^\[|\Z)", lambda _: block + "\n", text)
    if count != 1:
        raise SystemExit(f"{target}: expected one [check] table, found {count}")
    tomllib.loads(edited)
    target.write_text(edited)
    return f"{target}: [check] " + ", ".join(f"{k} = {toml_value(v)}" for k, v in check.items())


def run_step(cmd: list[str], cwd: Path, outcome: Outcome) -> subprocess.CompletedProcess[str]:
    outcome.commands.append(f"(in {cwd}) " + shlex.join(cmd))
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def verdict_lines(stderr: str, stdout: str) -> list[str]:
    """The verdicts table through the recommendation, the stop reason and the report's path."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if ", recipe olevels" in line
                  and not line.startswith("building")), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("A/A arm:")),
               len(lines) - 1)
    table = [line.rstrip() for line in lines[start:end + 1]]
    stop = [line for line in lines[end:] if line.startswith(("recommendation:", "stopped:"))]
    return table + stop + stdout.strip().splitlines()


def attempt(program: Program, root: Path, flagsweep: list[str], run_args: list[str]) -> Outcome:
    outcome = Outcome()
    folder = root / program.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    started = time.monotonic()
    program.make_input(folder / program.input_name)
    new = run_step([*flagsweep, "new", program.name, "--debian", program.debian,
                    "--run", program.run, "--input", program.input_name], folder, outcome)
    if new.returncode != 0:
        outcome.notes.append(f"new exited {new.returncode}: " + " | ".join(new.stderr.strip().splitlines()[-4:]))
        outcome.seconds = time.monotonic() - started
        return outcome
    target = folder / program.name / "target.toml"
    text = target.read_text()
    missing = [word for word in program.expect if word not in text]
    if missing:
        outcome.notes.append(f"{target} lacks what new should have found: {', '.join(missing)}")
    if program.check is not None:
        outcome.edits.append(edit_check(target, program.check))
    run = run_step([*flagsweep, "run", f"./{program.name}", "--recipe", "olevels", "--quick",
                    "--wait", *run_args], folder, outcome)
    outcome.seconds = time.monotonic() - started
    outcome.verdicts = verdict_lines(run.stderr, run.stdout)
    outcome.ok = run.returncode == 0 and bool(outcome.verdicts)
    if not outcome.ok:
        outcome.notes.append(f"run exited {run.returncode}: " + " | ".join(run.stderr.strip().splitlines()[-4:]))
    return outcome


def show(program: Program, outcome: Outcome) -> None:
    print(f"== {program.name} (Debian {program.debian}): "
          f"{'verdicts' if outcome.ok else 'NO VERDICTS'} after {outcome.seconds:.0f} s from an empty folder")
    for cmd in outcome.commands:
        print(f"  $ {cmd}")
    print(f"  edits: {len(outcome.edits)}" + "".join(f"\n    {e}" for e in outcome.edits))
    for note in outcome.notes:
        print(f"  note: {note}")
    for line in outcome.verdicts:
        print(f"  | {line}")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("programs", nargs="*", help=f"some of {', '.join(PROGRAMS)} (default: all)")
    parser.add_argument("--workdir", type=Path, help="where the empty folders go (default: a new temporary folder)")
    parser.add_argument("--flagsweep", help="the flagsweep command to use (default: the one beside this Python, else on PATH)")
    parser.add_argument("--run-arg", action="append", default=[], help="extra argument for `flagsweep run` (repeatable)")
    args = parser.parse_args()
    unknown = [name for name in args.programs if name not in PROGRAMS]
    if unknown:
        parser.error(f"unknown program {unknown[0]!r}: expected one of {', '.join(PROGRAMS)}")
    flagsweep = shlex.split(args.flagsweep) if args.flagsweep else flagsweep_command()
    if not has_input_option(flagsweep):
        print(f"newcomer: `{shlex.join(flagsweep)} new` has no --input option: this flagsweep predates "
              "`new --input FILE`, so the acceptance cannot run as written (nothing was run)")
        return 3
    root = args.workdir or Path(tempfile.mkdtemp(prefix="newcomer-"))
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FLAGSWEEP_DB", f"sqlite:///{(root / 'store.sqlite').resolve()}")
    print(f"work folder {root}, store {os.environ['FLAGSWEEP_DB']}")
    failed = 0
    for name in args.programs or list(PROGRAMS):
        outcome = attempt(PROGRAMS[name], root, flagsweep, args.run_arg)
        show(PROGRAMS[name], outcome)
        failed += not outcome.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
