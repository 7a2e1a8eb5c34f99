"""The view of a tune (tune.json, flagsweep.tune.tune): what its page and the terminal show.

    tune.json -> model.Tune -> build (every row and sentence) -> tune.html.j2, terminal

Every number is written by report/formats, as on a sweep's page: a ratio as a change in %
with its 95% interval. Flags are untrusted text: they reach the page only through the
template's autoescape, and the terminal only as rich Text (never markup).
"""

from __future__ import annotations

import collections
import shlex
from dataclasses import dataclass
from pathlib import Path

from flagsweep.report.formats import (
    ci_pct_text,
    duration,
    number,
    p_text,
    pct,
    pct_pair,
    signed_pct,
)
from flagsweep.report.variants import link
from flagsweep import model

SHOWN_CHANGES = 3            # a trial's changes in the collapsed table: the first few, then a count
RUNNING = {"running": "is still running", "interrupted": "was interrupted",
           "failed": "failed"}


@dataclass
class ChangeCell:
    """A ratio as the page writes it: the change in %, its interval, its verdict, and the
    adjusted p the verdict also needs (an interval clear of the threshold with p above 0.05
    is still inconclusive, and the reader should see why)."""
    pct: float | None
    text: str
    ci_text: str
    verdict: str
    p_text: str = ""


@dataclass
class ProofRow:
    role: str
    changes: str
    trial: str
    vs_base: ChangeCell
    vs_o3: ChangeCell
    output: str                    # its output check: "ok", or "equivalent" and why
    vs_winner: ChangeCell | None = None   # a minimal subset against the set it came from


@dataclass
class AblationLine:
    flag: str
    change: ChangeCell
    note: str                      # identical code, a failed build: what the row is instead
    matters: bool                  # in the minimal subset


@dataclass
class GreedyLine:
    added: str                     # the flag, or group, this step adds back
    kept: str                      # how many of the winner's flags the step's set holds
    change: ChangeCell             # the set against the winner (+: it lacks some of the gain)
    note: str
    chosen: bool                   # the step the minimal subset stops at


@dataclass
class CandidateRow:
    number: str
    changes: str                   # abbreviated
    all_changes: str
    state: str
    change: ChangeCell
    runs: str
    batch: str
    note: str


@dataclass
class SpentPoint:
    """Where something sits on the three x axes of the best-so-far curve."""
    builds: float | None
    runs: float | None
    elapsed_s: float | None
    change_pct: float
    ci_pct: tuple[float, float] | None = None


@dataclass
class SweepPart:
    """The proof or the ablation: a sweep of its own, or why it is not there."""
    status: str
    why: str
    results: str                   # the sweep's results.json as written in tune.json
    href: str | None               # a link to it, when it is a file inside the tune's folder
    page_href: str | None          # its index.html beside it, likewise
    layouts: str                   # the proof's K layouts a set, "" for the ablation
    plan: str = ""                 # how the proof was sized (tune.budget), "" for the others


@dataclass
class TuneView:
    doc: model.Tune
    title: str
    meta: str
    state: str | None              # "this tune was interrupted ..." or None when complete
    resume: str | None             # the command that continues it
    answer: str
    recommended: str | None        # the set to use, one shell-quoted line
    proof_rows: list[ProofRow]
    proof: SweepPart
    ablation_rows: list[AblationLine]
    ablation: SweepPart | None
    ablation_sentence: str
    greedy_rows: list[GreedyLine]
    greedy: SweepPart | None
    greedy_sentence: str
    curve: list[SpentPoint]
    dots: list[SpentPoint]
    trials: list[CandidateRow]
    broken: list[tuple[str, str, str, str]]        # flag, build|check, detail, trial
    space: list[tuple[str, str]]
    excluded: list[str]
    cost: list[tuple[str, str]]
    search: list[tuple[str, str]]


def build(doc: model.Tune, out: Path) -> TuneView:
    """Every decision the tune's page makes, from the document; `out` is the page's folder
    (links are relative to it and only to files inside it)."""
    proof = doc.proof or model.TuneProof(status="skipped", why="no proof was recorded")
    ablation_rows, sentence = ablation(doc.ablation, proof)
    g = doc.ablation.greedy if doc.ablation else None
    return TuneView(
        doc=doc, title=f"{doc.target}: tuned flags", meta=meta(doc), state=state(doc),
        resume=resume(doc), answer=answer(doc), recommended=recommended(doc),
        proof_rows=[proof_row(c) for c in proof.candidates], proof=section(proof, out),
        ablation_rows=ablation_rows,
        ablation=section(doc.ablation, out) if doc.ablation else None,
        ablation_sentence=sentence, greedy_rows=greedy_rows(g),
        greedy=section(g, out) if g else None, greedy_sentence=greedy_sentence(g),
        curve=curve(doc), dots=dots(doc),
        trials=[trial_row(t) for t in doc.trials], broken=broken(doc), space=space(doc.space),
        excluded=list(doc.space.excluded), cost=cost(doc), search=search(doc))


def change(ratio, ci, verdict: str | None, p: float | None = None) -> ChangeCell:
    """A ratio (<1: faster) as a change in % with its 95% interval and adjusted p; blank when
    unmeasured."""
    if ratio is None:
        return ChangeCell(None, "", "", verdict or "")
    return ChangeCell(pct(ratio), signed_pct(pct(ratio)), ci_pct_text(ci), verdict or "",
                      p_text(p))


def estimate(e: model.TuneEstimate | None) -> ChangeCell:
    return change(e.ratio, e.ci95, e.verdict, e.p_adjusted) if e else change(None, None, None)


def flags_text(flags: list[str]) -> str:
    """Flags as one line a shell takes back as the same words."""
    return shlex.join(flags)


def meta(doc: model.Tune) -> str:
    machine = doc.machine.cpu_model if doc.machine and doc.machine.cpu_model else None
    parts = [machine, doc.space.compiler, f"base {doc.space.base}",
             f"{doc.sampler} sampler, seed {number(doc.seed)}",
             f"budget {duration(doc.budget_s)}" if doc.budget_s is not None else None,
             f"threshold \u00b1{doc.threshold_pct:g}%" if doc.threshold_pct is not None else None,
             f"{doc.status}, phase {doc.phase}"]
    return " \u00b7 ".join(p for p in parts if p)


def state(doc: model.Tune) -> str | None:
    """Why the page is not the last word: a tune still running, interrupted or failed."""
    if doc.status not in RUNNING:
        return None
    return f"This tune {RUNNING[doc.status]} in its {doc.phase} phase: what follows is what " \
           "it had decided by then."


def resume(doc: model.Tune) -> str | None:
    if doc.status not in ("running", "interrupted"):
        return None
    return f"flagsweep tune --resume {shlex.quote(doc.tune_id)}"


def answer(doc: model.Tune) -> str:
    """The one sentence: the tune's own, or what stands in for it until it is written."""
    if doc.answer:
        return doc.answer
    tried = f"{len(doc.trials)} candidates ({sum(t.state == 'measured' for t in doc.trials)} " \
            "measured)"
    if doc.status in ("running", "interrupted"):
        return f"No answer yet: the tune {RUNNING[doc.status]} in its {doc.phase} phase " \
               f"after {tried}."
    proof = doc.proof
    why = (f"the proof {proof.status}" + (f" ({proof.why})" if proof.why else "")) if proof \
        else "no proof was recorded"
    return f"No answer after {tried}: {why}."


def recommended(doc: model.Tune) -> str | None:
    return flags_text(doc.recommended) if doc.recommended else None


def proof_row(c: model.TuneCandidate) -> ProofRow:
    changes = flags_text(c.changes) if c.changes else flags_text(c.flags)
    check = c.check
    output = "" if check is None else check.status + (
        f": {check.detail}" if check.status == "equivalent" and check.detail else "")
    return ProofRow(c.role, changes, f"#{number(c.trial)}" if c.trial is not None else "",
                    estimate(c.vs_base), estimate(c.vs_o3), output,
                    estimate(c.vs_winner) if c.vs_winner else None)


def section(part: model.TuneProof | model.TuneAblation | model.TuneGreedy,
            out: Path) -> SweepPart:
    """A proof's or an ablation's sweep: its results.json linked when it is a file inside the
    tune's folder (tune.json is input anyone may have written), shown as text otherwise."""
    results = part.results or ""
    href = page = None
    if results:
        path = out / results
        href = link(path, out, out)
        page = link(path.parent / "index.html", out, out)
    layouts = number(getattr(part, "layouts", None))
    plan = getattr(part, "plan", None)
    return SweepPart(part.status, part.why or "", results, href, page, layouts,
                     plan.why or "" if plan is not None else "")


def ablation(a: model.TuneAblation | None, proof: model.TuneProof
             ) -> tuple[list[AblationLine], str]:
    """The winner without each of its flags, the costliest first, and the sentence that says
    how many of its flags give its effect."""
    if a is None:
        return [], ""
    minimal = set(a.minimal)
    k = a.layout_check.layouts if a.layout_check else None
    lines = [AblationLine(r.flag, ablation_change(r), row_note(r) or again_note(r, k),
                          bool(minimal) and set(r.flags or [r.flag]) <= minimal)
             for r in a.rows]
    lines.sort(key=lambda x: (x.change.pct is None, -(x.change.pct or 0)))
    return lines, ablation_sentence(a, proof)


def ablation_change(r: model.TuneAblationRow | model.TuneGreedyStep) -> ChangeCell:
    """Identical code without the flag is its verdict: it does nothing here, and cost no run."""
    if identical(r):
        return change(None, None, "identical-code")
    return change(r.ratio, r.ci95, r.verdict, r.p_adjusted)


def identical(r: model.TuneAblationRow | model.TuneGreedyStep) -> bool:
    return r.identical or r.status == "identical"


def row_note(r: model.TuneAblationRow | model.TuneGreedyStep) -> str:
    """What a row is instead of a measurement: a build or a check the set without it failed."""
    return "" if r.status == "measured" or identical(r) else r.status


def again_note(r: model.TuneAblationRow, k: float | None) -> str:
    """A row measured again over layouts: what that found, and whether it still counts."""
    e = r.over_layouts
    if e is None:
        return ""
    if e.ratio is None:
        return e.why or "not measured over layouts"
    return (f"over {number(k)} layouts: {signed_pct(pct(e.ratio))} {ci_pct_text(e.ci95)}, "
            f"{e.verdict}" + ("" if r.matters() else ": not counted"))


def layout_sentence(a: model.TuneAblation) -> str:
    """What the check over layouts did to the costs decided nearer to no change than layout
    luck reaches (flagsweep.tune.proof.to_check)."""
    c = a.layout_check
    if c is None or c.status == "running":
        return ""
    reach = f"the {c.reach_pct:.1f}% layout luck reaches ({c.reach_source})"
    if c.status == "not-needed":
        decided = c.why and any(r.verdict == "slower" for r in a.rows)
        return f" {c.why[0].upper()}{c.why[1:]}." if decided else ""
    if c.status != "complete":
        # a record from before `doubtful` was kept does not say how many
        near = f"{len(c.doubtful)} cost(s)" if c.doubtful else "Costs decided"
        return (f" {near} came within {reach} and were not measured again over layouts "
                f"({c.why}): they may be a layout's luck.")
    rest = [f for f in c.rows if f not in c.confirmed]
    said = (f" {len(c.rows)} cost(s) came within {reach}, so were measured again over "
            f"{number(c.layouts)} layouts: ")
    said += (f"{', '.join(c.confirmed)} decided slower again" if c.confirmed
             else "none was decided slower again")
    said += f"; {', '.join(rest)} not, so not counted." if rest and c.confirmed else "."
    unchecked = [f for f in c.doubtful if f not in c.rows]
    return said + (f" {', '.join(unchecked)} came within it too, but their check did not fit "
                   f"the time left: counted, though they may be a layout's luck."
                   if unchecked else "")


def ablation_sentence(a: model.TuneAblation, proof: model.TuneProof) -> str:
    of = len(a.of) or len(a.rows)
    grouped = [r for r in a.rows if len(r.flags) > 1 and r.matters()]
    how = f" Ablated in groups: {a.why}." if a.method == "groups" and a.why else ""
    if grouped:
        how += (f" {len(grouped)} group(s) that matter were not taken apart, so their flags "
                "are counted whole.")
    how += layout_sentence(a)
    if a.minimal:
        return (f"{len(a.minimal)} of the winner's {of} flags give its effect on the search "
                f"input: {', '.join(a.minimal)}.{how}{unconfirmed(proof)}{short_of(proof)}")
    if a.status == "complete":
        what = "group of" if a.method == "groups" else "one of"
        return (f"Removing any {what} the winner's {of} flags did not make it measurably "
                f"slower.{how}")
    return ""


def greedy_rows(g: model.TuneGreedy | None) -> list[GreedyLine]:
    """Each greedy step in its order (it is the order that makes it greedy), the chosen one
    marked."""
    if g is None:
        return []
    return [GreedyLine(" ".join(st.added), number(len(st.flags)),
                       ablation_change(st), row_note(st),
                       g.chosen == n)
            for n, st in enumerate(g.steps, 1)]


def greedy_sentence(g: model.TuneGreedy | None) -> str:
    """What the greedy steps found: how few flags give the winner's effect."""
    if g is None:
        return ""
    if g.status != "complete":
        return f"The greedy subset was not measured: {g.why or g.status}."
    if g.chosen is None:
        return (f"None of its {len(g.steps)} steps gave the winner's effect on the search "
                "input, so the minimal subset is the flags whose removal was decided slower.")
    st = g.steps[int(g.chosen) - 1]
    return (f"The winner's effect on the search input needs the first {number(g.chosen)} of "
            f"its {len(g.steps)} steps: {len(st.flags)} flags.")


def unconfirmed(proof: model.TuneProof) -> str:
    """What the ablation's flags are worth when the proof confirmed neither the winner nor its
    minimal subset: the ablation times one layout on the quick input, where a layout's luck or
    the quick input can make flags look needed for a gain the full input over layouts does
    not show."""
    winner = next((c for c in proof.candidates if c.role == "winner"), None)
    if proof.status != "complete" or winner is None or winner.vs_base is None:
        return ""
    if any(c.role in ("winner", "minimal") and c.vs_base and c.vs_base.verdict == "faster"
           for c in proof.candidates):
        return ""
    e = winner.vs_base
    measured = (f" ({signed_pct(pct(e.ratio))} {ci_pct_text(e.ci95)} against the base, "
                f"{e.verdict})" if e.ratio is not None else "")
    return (" The proof did not confirm the winner's own gain on the full input over its "
            f"layouts{measured}: these are the flags the search's figure rests on, not a gain "
            "to count on.")


def short_of(proof: model.TuneProof) -> str:
    """What the minimal subset lacks when the proof decided it slower than the winner: flags
    whose removal was not decided alone (or in their group) still add to the effect together."""
    least = next((c for c in proof.candidates if c.role == "minimal"), None)
    e = least.vs_winner if least is not None else None
    if proof.status != "complete" or e is None or e.verdict != "slower" or e.ratio is None:
        return ""
    return (f" But in the proof they were {signed_pct(pct(e.ratio))} {ci_pct_text(e.ci95)} "
            "against the winner, slower: its other flags add to its effect together, though "
            "no removal of them alone was decided slower.")


def first_changes(changes: list[str]) -> str:
    """A candidate's changes in a table cell: the first few, then how many more."""
    shown = " ".join(changes[:SHOWN_CHANGES])
    rest = len(changes) - SHOWN_CHANGES
    return f"{shown} \u2026 (+{rest} more)" if rest > 0 else shown or "(the base)"


def trial_row(t: model.TuneTrial) -> CandidateRow:
    note = f"identical to {identity(t.identical_to)}" if t.identical_to else ""
    note = "; ".join(x for x in (note, t.detail or "") if x)
    return CandidateRow(number(t.number), first_changes(t.changes), " ".join(t.changes),
                        t.state, change(t.ratio, t.ci95, t.verdict), number(t.runs),
                        number(t.batch), note)


def identity(of: str) -> str:
    """identical_to is a trial's number or "base"."""
    return of if of == "base" else f"#{of}"


def curve(doc: model.Tune) -> list[SpentPoint]:
    """The best set so far after each batch: its change against the base with its interval."""
    return [SpentPoint(p.builds, p.runs, p.elapsed_s, pct(p.ratio), pct_pair(p.ci95))
            for p in doc.progress if p.ratio is not None]


def dots(doc: model.Tune) -> list[SpentPoint]:
    """Every measured trial where it was decided: its batch's builds and runs, its own time
    (or its batch's)."""
    batches = {p.batch: p for p in doc.progress}
    out = []
    for t in doc.trials:
        if t.state != "measured" or t.ratio is None:
            continue
        at = batches.get(t.batch)
        elapsed = t.elapsed_s if t.elapsed_s is not None else (at.elapsed_s if at else None)
        out.append(SpentPoint(at.builds if at else None, at.runs if at else None, elapsed,
                              pct(t.ratio)))
    return out


def broken(doc: model.Tune) -> list[tuple[str, str, str, str]]:
    return [(b.flag, _broke(b), b.detail or "",
             f"#{number(b.trial)}" if b.trial is not None else "") for b in doc.broken]


def _broke(b: model.TuneBroken) -> str:
    """What it broke, and whether its flags broke it only together."""
    if len(b.flags) < 2:
        return b.kind
    cut = ", not reduced to the end: some may not be needed" if b.minimal is False else ""
    return f"{b.kind}, its {len(b.flags)} flags only together{cut}"


def space(s: model.TuneSpace) -> list[tuple[str, str]]:
    dims = number(s.dimensions) + (f" ({number(s.switches)} on/off switches)"
                                   if s.switches is not None else "")
    began = "; ".join(f"#{i}: {first_changes(c)}" for i, c in enumerate(s.starts))
    rows = [("source", s.source), ("base", s.base), ("compiler", s.compiler),
            ("dimensions", dims), ("left out", number(len(s.excluded))), ("began with", began)]
    return [(name, value) for name, value in rows if value]


def cost(doc: model.Tune) -> list[tuple[str, str]]:
    c = doc.cost
    if c is None:
        return []
    rows = [("builds", number(c.builds)), ("runs", number(c.runs)),
            ("wall time", duration(c.wall_s)), ("search", duration(c.search_s)),
            ("ablation", duration(c.ablation_s)), ("proof", duration(c.proof_s))]
    return [(name, text) for name, text in rows if text]


def search(doc: model.Tune) -> list[tuple[str, str]]:
    """The search's settings and what its candidates came to, as name/value pairs."""
    states = collections.Counter(t.state for t in doc.trials)
    tried = ", ".join(f"{n} {s}" for s, n in states.most_common())
    return [("sampler", doc.sampler), ("seed", number(doc.seed)), ("tune id", doc.tune_id),
            ("candidates", f"{len(doc.trials)}" + (f" ({tried})" if tried else ""))]
