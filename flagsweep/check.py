"""The output check: every distinct binary proves its output before any timing (LNT's rule).

Each binary runs the workload once. Its product (stdout, or the file at {output}) is compared
by the target's method: `exact` bytes against the baseline's product, a fixed `sha256`, a
`roundtrip` (the product fed back through e.g. `gzip -d` must give the input), or `tolerance`
(numbers in the text within a relative tolerance of the baseline's, the rest exact). The result
is the contract's check object: status "ok", "differs" (shown, and timed unless --strict-check:
-ffast-math legitimately changes lame's bytes) or "failed" (the run itself failed: never timed).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from . import runner
from .target import Target

NUMBER = re.compile(rb"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Workload:
    """How to run one binary: the target's argv with its placeholders filled in."""

    target: Target
    input_path: Path
    scratch: Path          # where outputs and stderr of check and timing runs go

    def argv(self, binary: Path, output: Path) -> list[str]:
        values = {"binary": str(binary), "input": str(self.input_path), "output": str(output)}
        return [arg.format(**values) for arg in self.target.spec.run.argv]

    @property
    def timeout(self) -> float:
        return self.target.spec.run.timeout


def check_all(workload: Workload, binaries: dict[str, Path], baseline: str) -> dict[str, dict]:
    """{variant id: {"status", "detail"}} for each distinct binary; the baseline first (reference)."""
    spec = workload.target.spec.check
    products: dict[str, Path | None] = {}
    results: dict[str, dict] = {}
    for vid in sorted(binaries, key=lambda v: v != baseline):
        product, failure = _produce(workload, vid, binaries[vid])
        products[vid] = product
        if failure:
            results[vid] = {"status": "failed", "detail": failure}
            continue
        results[vid] = _compare(spec.method, workload, vid, binaries[vid], product,
                                products.get(baseline), vid == baseline)
    _group_outputs(results, products)
    return results


def _group_outputs(results: dict[str, dict], products: dict[str, Path | None]) -> None:
    """Which variants produce the very same bytes: with a -ffast-math baseline every strict
    variant 'differs', and the groups show which flags change the output and which do not."""
    first: dict[str, str] = {}
    for vid, product in products.items():
        if product is None:
            continue
        digest = _sha256(product)
        results[vid]["output_sha256"] = digest
        other = first.setdefault(digest, vid)
        if other != vid:
            results[vid]["same_output_as"] = other
            if results[vid]["status"] == "differs":
                results[vid]["detail"] += f"; same output as {other}"


def _produce(workload: Workload, vid: str, binary: Path) -> tuple[Path | None, str | None]:
    """Run the workload once; return its product file, or why it failed."""
    workload.scratch.mkdir(parents=True, exist_ok=True)
    stdout, output = workload.scratch / f"{vid}.stdout", workload.scratch / f"{vid}.out"
    result = runner.run_once(workload.argv(binary, output), env=runner.MINIMAL_ENV,
                             timeout=workload.timeout, stdout_path=stdout,
                             stderr_path=workload.scratch / f"{vid}.check.stderr")
    if result.failure:
        return None, f"the check run failed: {result.failure}"
    product = stdout if workload.target.spec.check.of == "stdout" else output
    if not product.exists():
        return None, f"the check run wrote no {workload.target.spec.check.of} ({product})"
    return product, None


def _compare(method: str, workload: Workload, vid: str, binary: Path, product: Path,
             reference: Path | None, is_baseline: bool) -> dict:
    spec = workload.target.spec.check
    if method == "sha256":
        got = _sha256(product)
        return _verdict(got == spec.sha256, f"sha256 {got[:16]}... expected {spec.sha256[:16]}...")
    if method == "roundtrip":
        return _roundtrip(workload, vid, binary, product)
    if is_baseline:
        return {"status": "ok", "detail": "reference output (the baseline's)"}
    if reference is None:
        return {"status": "failed", "detail": "no reference: the baseline's own check run failed"}
    if method == "exact":
        return _verdict(product.read_bytes() == reference.read_bytes(),
                        _first_difference(product.read_bytes(), reference.read_bytes()))
    return _tolerance(product.read_bytes(), reference.read_bytes(), spec.rel_tolerance)


def _roundtrip(workload: Workload, vid: str, binary: Path, product: Path) -> dict:
    spec = workload.target.spec.check
    back = workload.scratch / f"{vid}.roundtrip"
    argv = [a.format(binary=str(binary), input=str(workload.input_path), output=str(back))
            for a in spec.roundtrip_argv]
    result = runner.run_once(argv, env=runner.MINIMAL_ENV, timeout=workload.timeout,
                             stdin_path=product, stdout_path=back,
                             stderr_path=workload.scratch / f"{vid}.roundtrip.stderr")
    if result.failure:
        return {"status": "differs", "detail": f"the round trip failed: {result.failure}"}
    same = _sha256(back) == _sha256(workload.input_path)
    return _verdict(same, "the round trip did not give back the input: " + _first_difference(
        back.read_bytes(), workload.input_path.read_bytes(), "the input"))


def _tolerance(got: bytes, want: bytes, rel: float) -> dict:
    """Numbers within rel of the reference's, everything between them identical."""
    if NUMBER.sub(b"#", got) != NUMBER.sub(b"#", want):
        return {"status": "differs", "detail": "the text around the numbers differs from the baseline's"}
    worst = 0.0
    for a, b in zip(NUMBER.findall(got), NUMBER.findall(want)):
        x, y = float(a), float(b)
        worst = max(worst, 0.0 if x == y else abs(x - y) / max(abs(x), abs(y)))
    if worst <= rel:
        return {"status": "ok", "detail": f"numbers within {rel:g} of the baseline's (worst {worst:.2g})"}
    return {"status": "differs", "detail": f"a number differs by {worst:.3g} relative (tolerance {rel:g})"}


def _verdict(same: bool, why_not: str) -> dict:
    return {"status": "ok", "detail": ""} if same else {"status": "differs", "detail": why_not}


def _first_difference(a: bytes, b: bytes, other: str = "the baseline's") -> str:
    if a == b:
        return "identical"
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"output differs from {other} at byte {n} ({len(a)} vs {len(b)} bytes)"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
