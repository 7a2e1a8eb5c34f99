"""The one sentence a tune ends with, from its proof: the set to use only when the proof decided
it faster than the base and than -O3 over layouts; -O3 when the best set found is -O3's own
code; else that nothing found beats them, with the interval that bounds what the search could
give, never a bound the measurement does not give."""

from __future__ import annotations

import math

from flagsweep import model, stats
from flagsweep.stats import gate
from flagsweep.stats.wording import level_text


def sentence(proof_: model.TuneProof | None, ablation: model.TuneAblation | None, n: int,
             base_flags: tuple[str, ...], threshold: float) -> tuple[str | None, list[str] | None]:
    """The one sentence after n candidates, and the set it names: the set to use when the
    proof found one faster than the base and than -O3, else that nothing found beats them
    beyond the threshold (percent) and layout luck. (None, None) until the proof is complete."""
    if proof_ is None or proof_.status != "complete":
        return None, None
    base = " ".join(base_flags)
    by_role = {c.role: c for c in proof_.candidates}
    tried = [c for c in proof_.candidates if c.role in ("winner", "minimal", "runner-up")]
    o3 = by_role.get("-O3")
    wins = [c for c in tried if c.vs_base and c.vs_base.verdict == "faster"
            and (o3 is None or (c.vs_o3 and c.vs_o3.verdict == "faster"))]
    k = proof_.layouts
    if wins:
        least = next((c for c in wins if c.role == "minimal"), None)
        fastest = min(wins, key=lambda c: (c.vs_o3 or c.vs_base).ratio)
        less = least is not None and least.vs_winner is not None \
            and least.vs_winner.verdict == "slower"
        use = least if least is not None and not less else fastest
        rest = _rest_matters(least, ablation) if less and use is not least else ""
        of = ""
        if use.role == "minimal" and ablation:
            of = f" ({len(ablation.minimal)} of the {len(ablation.of)} flags of the best set found)"
        against = (f"{_decided(use.vs_o3)} against -O3 and " if o3 else "")
        return (f"Use {' '.join(use.flags)}{of}: {against}{_decided(use.vs_base)} against "
                f"{base}, confirmed over {k} layouts after {n} candidates"
                f"{_adjusted(use.vs_o3 if o3 else None, use.vs_base)}{_output(use, base)}"
                f"{rest}.", list(use.flags))
    o3_wins = o3 is not None and o3.vs_base and o3.vs_base.verdict == "faster"
    same = [c for c in tried if o3 is not None and c.identical_to == o3.variant]
    if o3_wins and same:
        return _o3_code(same, o3, ablation, base, k, n), ["-O3"]
    best = min(tried, key=lambda c: (c.vs_o3 or c.vs_base).ratio
               if (c.vs_o3 or c.vs_base) and (c.vs_o3 or c.vs_base).ratio else math.inf,
               default=None)
    keep, ref = ("-O3", "-O3") if o3_wins or o3 is None and "-O3" in base else (base, base)
    if o3 is not None and not o3_wins:
        ref = f"{base} or -O3"
    use = [keep] if keep == "-O3" else list(base_flags)
    undecided = ""
    if o3 is not None and not o3_wins and o3.vs_base and o3.vs_base.ratio is not None \
            and o3.vs_base.ratio < 1 - stats.fraction(threshold):
        # -O3 looked faster but was not decided: keeping the base is the safe answer, and the
        # reader must see why, not read "nothing beats -O2 or -O3" as "they are equal".
        why = _inside(o3.vs_base, threshold)
        remedy = ("a quieter machine would" if _unstable(o3.vs_base)
                  else "more layouts (--layouts) would")
        undecided = (f"; -O3 measured {_interval(o3.vs_base)} against {base} but was not "
                     f"decided over {k} layouts{f' (its {why})' if why else ''}: {remedy} "
                     f"decide it")
    est, shown = _bound(best, o3, base, threshold, both=o3 is not None and not o3_wins,
                        said_o3=bool(undecided))
    if est is None or not est.ci95 or est.ci95[0] >= 1 - stats.fraction(threshold):
        return (f"Nothing found beats {ref} by more than {threshold:g}% beyond layout luck "
                f"after {n} candidates{shown}: keep {keep}{undecided}.", use)
    # The interval reaches below the threshold: the proof could not tell so small a gain, and
    # the sentence must not claim a bound the measurement does not give. The proof's intervals
    # are over its layouts, one level each, so more rounds leave them as wide as the layouts'
    # own spread makes them (gzip: +-1.1% a layout): more layouts narrow them, as a sweep's
    # verdict says (stats.verdicts).
    more = f", or prove it over more layouts than {k} (--layouts) on a quieter machine"
    return (f"Nothing found was shown to beat {ref} after {n} candidates, but the proof cannot "
            f"rule out a gain of up to {100 * (1 - est.ci95[0]):.1f}%{shown}: keep {keep}"
            f"{undecided or more}.", use)


def _bound(best: model.TuneCandidate | None, o3: model.TuneCandidate | None,
           base: str, threshold: float, both: bool, said_o3: bool
           ) -> tuple[model.TuneEstimate | None, str]:
    """The interval that bounds what the search could give, and the text that shows it.

    The claim holds against every reference the sentence names. Keeping -O3 (or the base when
    -O3 was not in the proof): the best set's interval against it. Keeping the base over an
    -O3 the proof measured (`both`): the best set's intervals against the base and -O3, and
    -O3's own against the base, since a gain over the base may hide in any of them. With no
    set of the search in the proof, -O3's own against the base. The binding interval is the
    one reaching furthest below 1; `said_o3` leaves -O3's own out of the text when the
    sentence gives it already."""
    named: list[tuple[str, model.TuneEstimate | None]] = []
    if best is not None and both:
        named = [(f"the best found: {{}} against {base}", best.vs_base),
                 ("{} against -O3", best.vs_o3)]
    elif best is not None:
        named = [(f"the best found: {{}} against {'-O3' if o3 else base}",
                  best.vs_o3 if o3 is not None else best.vs_base)]
    if o3 is not None and (both or best is None):
        named.append(("" if said_o3 else f"-O3: {{}} against {base}", o3.vs_base))
    named = [(text, e) for text, e in named if e is not None and e.ratio is not None]
    if not named:
        return None, ""
    bounded = [e for _, e in named if e.ci95]
    est = min(bounded, key=lambda e: e.ci95[0]) if bounded else named[0][1]
    parts = [text.format(_interval(e)) + (f", whose {why}" if (why := _inside(e, threshold))
                                          else "") for text, e in named if text]
    return est, f" ({'; '.join(parts)})" if parts else ""


def _rest_matters(least: model.TuneCandidate, ablation: model.TuneAblation | None) -> str:
    """Why the answer is not the minimal subset: the flags whose removal alone cost nothing
    decided were, together, worth more than the threshold (the subset was decided slower
    than the best set), so the answer keeps them and says what the subset alone gives."""
    n = len(ablation.minimal) if ablation else 0
    greedy = ablation is not None and ablation.greedy is not None and ablation.greedy.chosen
    which = ("its minimal subset gives" if n == 0 else
             f"the {n} flags of its greedy minimal subset give" if greedy else
             f"{least.changes[0] if least.changes else 'the flag'} alone, whose removal its "
             "ablation decided slower, gives" if n == 1 else
             f"the {n} flags whose removal its ablation decided slower give")
    return (f"; {which} less, {_interval(least.vs_winner)} against the best set found: its "
            "other flags matter together")


def _output(use: model.TuneCandidate, base: str) -> str:
    """What the reader must know before using a set whose output is not the base's own bytes
    (fast-math pieces stay in the space: the output check judges them, and the judgement holds
    for this workload's input only)."""
    if use.check is None or use.check.status != "equivalent":
        return ""
    q = use.check.quality
    if q is not None and q.snr_db is not None and q.baseline_snr_db is not None:
        why = (f"SNR {q.snr_db:.2f} dB against {q.baseline_snr_db:.2f} dB, within "
               f"{q.snr_tolerance_db:g} dB")
    else:
        why = use.check.detail or "no detail recorded"
    return (f"; its output is not {base}'s bytes but the output check judged it equivalent "
            f"({why}) on this workload's input")


def _o3_code(same: list[model.TuneCandidate], o3: model.TuneCandidate,
             ablation: model.TuneAblation | None, base: str, k: int, n: int) -> str:
    """The best set found builds -O3's own binary: the search rediscovered what -O3 adds for
    this program, and the flags that give it are named."""
    c = next((c for c in same if c.role == "minimal"), same[0])
    flags = " ".join(c.changes)
    of = (f", {len(ablation.minimal)} of the {len(ablation.of)} flags of the best set found"
          if c.role == "minimal" and ablation else "")
    return (f"Use -O3: the best set found is -O3's own code ({flags} on {base} gives the same "
            f"binary{of}), {_decided(o3.vs_base)} against {base}, confirmed over {k} layouts "
            f"after {n} candidates{_adjusted(o3.vs_base)}.")


def _inside(e: model.TuneEstimate | None, threshold: float) -> str:
    """Why an interval that lies wholly beyond the threshold was not decided, else "": the A/A
    gate overruled its call (stats.gate), or the proof judged it by the wider interval
    false-discovery control over its comparisons needs (stats.verdicts); without it the
    sentence would read as a contradiction."""
    if e is None or not e.ci95 or e.verdict in ("faster", "slower"):
        return ""
    lo, hi = 1 - stats.fraction(threshold), 1 + stats.fraction(threshold)
    if not (e.ci95[1] < lo or e.ci95[0] > hi):
        return ""
    if e.why and gate.overruled(e):
        was, _, because = gate.overrule_summary(e).partition(", overruled: ")
        return f"{was} call was overruled: {because}"
    if not e.ci_fcr or e.ci_fcr[1] < lo or e.ci_fcr[0] > hi:
        return ""
    return (f"{level_text(e.fcr_level)} interval for this many comparisons (false-coverage "
            f"adjusted), [{100 * (e.ci_fcr[0] - 1):+.1f}, {100 * (e.ci_fcr[1] - 1):+.1f}], "
            f"reaches inside {threshold:g}%")


def _unstable(e: model.TuneEstimate | None) -> bool:
    """Whether the gate overruled this call because the A/A arm itself moved."""
    return bool(e is not None and e.why and gate.overruled(e) and gate.UNSTABLE in e.why)


def _decided(e: model.TuneEstimate | None) -> str:
    """A decided estimate with the interval its verdict used: the proof's false-coverage
    adjusted one (stats.fcr_intervals), as a sweep's "Use X" prints, where it kept one. The
    proof's answer is the best of its sets, so a plain 95% interval would be too narrow."""
    if e is None or e.ratio is None or not _adjusted_kept(e):
        return _interval(e)
    return (f"{100 * (e.ratio - 1):+.1f}% ({level_text(e.fcr_level)} CI "
            f"[{100 * (e.ci_fcr[0] - 1):+.1f}, {100 * (e.ci_fcr[1] - 1):+.1f}])")


def _adjusted_kept(e: model.TuneEstimate | None) -> bool:
    return bool(e is not None and e.verdict in ("faster", "slower") and e.ci_fcr
                and e.fcr_level)


def _adjusted(*printed: model.TuneEstimate | None) -> str:
    """Names the intervals _decided printed: each the one its verdict used."""
    if not any(_adjusted_kept(e) for e in printed):
        return ""
    return (" (each interval the one its verdict used, adjusted for choosing among the "
            "proof's comparisons)")


def _interval(e: model.TuneEstimate | None) -> str:
    if e is None or e.ratio is None:
        return "not measured"
    ci = e.ci95
    text = f"{100 * (e.ratio - 1):+.1f}%"
    if ci:
        text += f" [{100 * (ci[0] - 1):+.1f}, {100 * (ci[1] - 1):+.1f}]"
    return text
