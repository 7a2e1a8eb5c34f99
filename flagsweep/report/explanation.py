"""The view of run --explain's entries (results.json `explain`): per explained variant, its top
functions with their cost in the baseline and the variant, the change and its share, as the
page's table and diverging bars and the terminal's top lines show them."""

from __future__ import annotations

from dataclasses import dataclass

from flagsweep import model

METHOD_TEXT = {"cachegrind": "Cachegrind, instructions executed (deterministic; not time)",
               "perf": "perf record, cycles sampled"}
TERMINAL_LINES = 3


@dataclass
class FunctionRow:
    function: str
    change: float
    share_pct: float
    baseline_text: str
    variant_text: str
    change_text: str         # e.g. "+1.2 G (+250%)"
    share_text: str          # e.g. "45%"
    size_text: str           # e.g. "1,204 -> 2,310 B"
    note: str
    events: str              # Cachegrind's cache and branch events where they moved
    vectorised: str          # "3 loops -> none", from the compiler's remarks ("" not collected)
    remarks: str             # the remarks themselves, one per line (the cell's tooltip)


@dataclass
class VariantExplain:
    id: str
    label: str
    verdict: str
    status: str
    failure: str | None
    baseline_total: float | None
    headline: str            # "instructions +212% (3.1 G -> 9.8 G); the 10 functions below: 97% of the change"
    rows: list[FunctionRow]

    def lines(self, n: int = TERMINAL_LINES) -> list[str]:
        """The terminal's top lines: the variant's n largest function changes."""
        if self.status != "ok":
            return [f"explain {self.label}: not profiled ({self.failure})"]
        return [f"explain {self.label} ({self.verdict}): {r.function} {r.change_text}, "
                f"{r.share_text} of the change" + (f"; {r.note}" if r.note else "")
                + (f"; vectorised {r.vectorised}" if _moved(r.vectorised) else "")
                for r in self.rows[:n]] or [f"explain {self.label}: no function changed"]


@dataclass
class Explained:
    method: str
    unit: str
    note: str                # the method in words, or why nothing was explained
    variants: list[VariantExplain]
    baseline_top: list[tuple[str, str, str]]     # function, cost, share


def explained(doc: model.Results, labels: dict[str, str]) -> Explained | None:
    run = doc.explain
    if not run:
        return None
    unit = run.unit or ""
    note = run.failure or run.note or METHOD_TEXT.get(run.method or "", "")
    rows = [_variant(v, labels, unit) for v in doc.variants if v.explain]
    top = [(f.function, count(f.cost), _share(f.share_pct))
           for f in (run.baseline.functions if run.baseline else [])]
    return Explained(run.method or "", unit, note, rows, top)


def _variant(v: model.Variant, labels: dict[str, str], unit: str) -> VariantExplain:
    e = v.explain
    verdict = v.vs_baseline.verdict if v.vs_baseline else ""
    rows = [_function(f) for f in e.functions]
    headline = ""
    if e.status == "ok":
        headline = (f"{unit} {_signed_pct(e.change_pct)} ({count(e.baseline_total)}"
                    f" -> {count(e.variant_total)}); the {len(rows)} functions below hold "
                    f"{_share(e.top_share_pct)} of the change")
    return VariantExplain(v.id, labels.get(v.id, v.id), verdict, e.status,
                          e.failure, e.baseline_total, headline, rows)


def _function(f: model.ExplainFunction) -> FunctionRow:
    change = f.change or 0.0
    pct = f.change_pct
    change_text = _signed_count(change) + (f" ({_signed_pct(pct)})" if pct is not None else "")
    return FunctionRow(f.function, change, f.share_pct or 0.0,
                       count(f.baseline), count(f.variant), change_text,
                       _share(f.share_pct), _sizes(f), f.note or "",
                       _events(f), _vectorised(f), _remarks(f))


def _vectorised(f: model.ExplainFunction) -> str:
    """What the vectorisers did to the function in each binary: "1 loop, 16 B vectors -> 2
    loops, 32 B vectors" (the widest vectors are what -march changes most often)."""
    b, v = f.remarks_baseline, f.remarks_variant
    if b is None and v is None:
        return ""
    return f"{_vector_count(b)} -> {_vector_count(v)}"


def _vector_count(r: model.FunctionRemarks | None) -> str:
    if r is None:
        return "-"          # not compiled as itself in that binary (inlined, a library's)
    parts = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in
             ((r.loops or 0, "loop"), (r.blocks or 0, "block")) if n]
    if parts and r.widest:
        parts.append(f"{r.widest} B vectors")
    return ", ".join(parts) or "none"


def _moved(vectorised: str) -> bool:
    """Worth the terminal's line: the vectorisers did something different in the two binaries."""
    before, _, after = vectorised.partition(" -> ")
    return bool(vectorised) and before != after and "-" not in (before, after)


def _remarks(f: model.ExplainFunction) -> str:
    lines = []
    for side, r in (("baseline", f.remarks_baseline), ("variant", f.remarks_variant)):
        if r is None:
            continue
        said = (r.vectorized or []) + (r.missed or [])
        more = (r.missed_total or 0) - len(r.missed or [])
        lines += [f"{side}:"] + [f"  {m}" for m in said] + ([f"  ... {more} more not vectorized"]
                                                            if more > 0 else [])
        if not said:
            lines.append("  no vectoriser remark")
    return "\n".join(lines)


def _sizes(f: model.ExplainFunction) -> str:
    b, v = f.size_baseline, f.size_variant
    if b is None and v is None:
        return "-"
    return f"{_bytes(b)} -> {_bytes(v)}"


def _bytes(n) -> str:
    return "none" if n is None else f"{int(n):,} B"


# Cachegrind's simulated events worth a reader's eye when they move, in the order shown.
EVENTS = (("Dr", "reads"), ("Dw", "writes"), ("D1mr", "L1d misses"), ("DLmr", "LL misses"),
          ("Bc", "branches"), ("Bcm", "mispredicts"))


def _events(f: model.ExplainFunction) -> str:
    b, v = f.events_baseline or {}, f.events_variant or {}
    parts = [f"{name} {count(b.get(k, 0))} -> {count(v.get(k, 0))}" for k, name in EVENTS
             if k in b or k in v]
    return "; ".join(parts)


def count(x) -> str:
    """A count in a few digits: 1234 -> 1,234; 3.1e9 -> 3.10 G."""
    if x is None:
        return "-"
    x = float(x)
    for scale, suffix in ((1e9, " G"), (1e6, " M"), (1e4, " k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{suffix}"
    return f"{x:,.0f}"


def _signed_count(x: float) -> str:
    return ("+" if x > 0 else "") + count(x)


def _signed_pct(p) -> str:
    return "-" if p is None else f"{p:+.1f}%"


def _share(p) -> str:
    return "-" if p is None else f"{p:.0f}%"
