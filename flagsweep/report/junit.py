"""JUnit XML for CI: a sweep's junit.xml (beside summary.md) and `history --check --junit FILE`.

GitLab (`artifacts:reports:junit`), Jenkins (`junit` step) and the GitHub actions that publish
JUnit read one format: `<testsuites>` of `<testsuite>`s of `<testcase>`s, each passed, or with a
`<failure>` or `<skipped>` child whose `message` says why. A case fails only where the nightly
gate does: a regression `history --check` exits 1 on (a slower step this sweep found against
the series' earlier nights, with a reference arm; across.history.judged). A variant slower than
the sweep's baseline is a finding about flags, not a failure: -O0 is slower than -O2 every
night, and a job that always fails is ignored. What cannot be judged (an inconclusive
comparison, a failed build or output check, a sweep stopped early, an unstable night, a series
without a reference arm) is skipped with the reason, so it is neither a pass nor a failure.

Every name here comes from a target, a recipe or a store row, all data someone else may have
written: ElementTree escapes `<`, `&` and quotes, and what XML 1.0 cannot hold at all (control
characters, lone surrogates) is written out as text first (screen.shown), never dropped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime, timezone

from flagsweep import __version__, model
from flagsweep.across import history
from flagsweep.model import is_control
from flagsweep.report import variants as rows
from flagsweep.report.formats import VERDICT_TEXT
from flagsweep.screen import shown

# The outcomes of a case, as JUnit has them: passed has no child element.
PASSED, FAILURE, SKIPPED = "passed", "failure", "skipped"
# What the series' judgement (across.history.judged) makes of a case.
OUTCOME = {"regression": FAILURE, "unconfirmed": SKIPPED, "unchecked": SKIPPED,
           "absent": SKIPPED, "ok": PASSED}
# XML 1.0 has no place for these two besides the controls screen.shown writes out.
NONCHARACTERS = str.maketrans({"\ufffe": "\\ufffe", "\uffff": "\\uffff"})


@dataclass
class Case:
    """One <testcase>: a variant of a sweep, or a series of the history."""
    name: str
    classname: str
    outcome: str                     # PASSED | FAILURE | SKIPPED
    message: str                     # why: the failure's or the skip's message, a pass's note
    seconds: float = 0.0


@dataclass
class Group:
    """One <testsuite>: a sweep, or a target's history."""
    name: str
    cases: list[Case]
    properties: dict[str, str] = field(default_factory=dict)
    timestamp: str = ""
    hostname: str = ""
    seconds: float = 0.0


def of_sweep(doc: model.Results) -> bytes:
    """junit.xml of one sweep: a case per variant but its control arms (the A/A twin and the
    reference arm, named in the suite's properties)."""
    return document([_sweep_suite(doc)])


def of_history(target: str, all_series: list[history.VariantSeries],
               threshold_pct: float | None = None) -> bytes:
    """`history --junit FILE`: a case per series, judged at the newest sweep as `--check` is."""
    run_id = history.newest(all_series) or ""
    classname = f"flagsweep.{target}"
    cases, seen = [], {}
    for s in all_series:
        outcome, why = history.judged(s.document(), run_id)
        name = s.variant + (f" / ref {s.reference[:8]}" if s.reference else "") + f" on {s.machine}"
        seen[name] = seen.get(name, 0) + 1
        name += f" #{seen[name]}" if seen[name] > 1 else ""
        cases.append(Case(name, classname, OUTCOME[outcome], why))
    props = {"target": target, "newest_run": run_id, "series": str(len(all_series)),
             "threshold_pct": "" if threshold_pct is None else f"{threshold_pct:g}",
             "flagsweep": __version__}
    return document([Group(f"{target}: history at {run_id}", cases, props,
                           timestamp=_timestamp(datetime.now(timezone.utc).isoformat()))])


def _sweep_suite(doc: model.Results) -> Group:
    """The sweep as one suite: named by its target and machine, a case per variant."""
    classname = f"flagsweep.{doc.target}"
    series = {h.variant: h for h in doc.history or []}
    cases = []
    for v in doc.variants:
        if is_control(v.id):
            continue
        row = rows.variant_row(v, doc)
        outcome, why = _variant_outcome(v, row, doc, series.get(v.id))
        cases.append(Case(f"{row.label} [{v.id}]", classname, outcome, why, _seconds(v)))
    m = doc.machine
    return Group(f"{doc.target} on {m.hostname or '?'} ({m.cpu_model or '?'})", cases,
                 _sweep_properties(doc), timestamp=_timestamp(doc.started),
                 hostname=m.hostname or "", seconds=_span(doc.started, doc.finished))


def _variant_outcome(v: model.Variant, row: rows.VariantRow, doc: model.Results,
                     series: model.HistorySeries | None) -> tuple[str, str]:
    """(outcome, why) of one variant: what the nightly gate says of its series when the sweep
    has earlier nights, else what the sweep says against its baseline."""
    if doc.status not in (None, "complete"):
        return SKIPPED, f"the sweep is {doc.status}, not complete: {doc.stop_reason or '?'}"
    if v.build.status != "ok":
        return SKIPPED, f"build {v.build.status}: {_first_line(v.build.detail)}"
    if row.check == "failed":
        return SKIPPED, f"output check failed: {_first_line(row.check_detail)}"
    if row.own_tests:     # not timed, as a failed output check is not (jobs/checks.py)
        return SKIPPED, row.own_tests
    if doc.aa and doc.aa.unstable:
        return SKIPPED, f"an unstable night, every verdict overruled: {doc.aa.warning or ''}"
    if series is not None and doc.run_id:
        outcome, why = history.judged(series, doc.run_id)
        return OUTCOME[outcome], f"against earlier sweeps: {why}"
    return _against_baseline(row, doc.baseline)


def _against_baseline(row: rows.VariantRow, baseline: str) -> tuple[str, str]:
    """A sweep without earlier nights: faster, slower and no difference are findings that
    pass; what it could not decide is skipped."""
    if row.role == "baseline":
        return SKIPPED, ("the baseline: the other cases are measured against it, and no "
                         "earlier sweep of it is there to compare it with")
    if row.verdict == "identical-code":
        if row.same_code_as == baseline:
            return PASSED, "the baseline's own code: no difference"
        return SKIPPED, f"same code as {row.same_code_as}: judged in that case"
    text = VERDICT_TEXT.get(row.shown, row.shown)
    change = f"{row.change_text} {row.ci_text}".strip()
    if row.verdict in ("faster", "slower", "equivalent"):
        return PASSED, f"{text} than the baseline: {change}" if change else text
    return SKIPPED, f"{text} against the baseline" + (f": {row.why}" if row.why else "")


def _sweep_properties(doc: model.Results) -> dict[str, str]:
    props = {"target": doc.target, "run_id": doc.run_id or "", "status": doc.status or "",
             "stop_reason": doc.stop_reason or "", "recipe": doc.recipe or "",
             "metric": doc.metric, "baseline": doc.baseline,
             "threshold_pct": "" if doc.threshold_pct is None else f"{doc.threshold_pct:g}",
             "cpu_model": doc.machine.cpu_model or "", "flagsweep": __version__}
    if doc.aa:
        props["aa"] = f"{doc.aa.variant}: {doc.aa.verdict}"
    refs = [v.id for v in doc.variants if is_control(v.id) and not v.aa_of]
    if refs:
        props["reference"] = ", ".join(refs)
    return props


def document(suites: list[Group]) -> bytes:
    """The XML of the suites, with the counts and attributes every reader asks for."""
    root = ET.Element("testsuites", _counts([c for s in suites for c in s.cases]))
    for s in suites:
        root.append(_suite(s))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def _suite(s: Group) -> ET.Element:
    attrs = {"name": _text(s.name), **_counts(s.cases), "time": f"{s.seconds:.3f}"}
    if s.timestamp:
        attrs["timestamp"] = s.timestamp
    if s.hostname:
        attrs["hostname"] = _text(s.hostname)
    el = ET.Element("testsuite", attrs)
    props = ET.SubElement(el, "properties")
    for k, value in s.properties.items():
        ET.SubElement(props, "property", {"name": k, "value": _text(value)})
    for c in s.cases:
        el.append(_case(c))
    return el


def _case(c: Case) -> ET.Element:
    el = ET.Element("testcase", {"name": _text(c.name), "classname": _text(c.classname),
                                 "time": f"{c.seconds:.3f}"})
    message = _text(c.message)
    if c.outcome == FAILURE:
        ET.SubElement(el, "failure", {"message": message, "type": "regression"}).text = message
    elif c.outcome == SKIPPED:
        ET.SubElement(el, "skipped", {"message": message})
    else:
        ET.SubElement(el, "system-out").text = message
    return el


def _counts(cases: list[Case]) -> dict[str, str]:
    def count(outcome: str) -> str:
        return str(sum(c.outcome == outcome for c in cases))
    return {"tests": str(len(cases)), "failures": count(FAILURE), "errors": "0",
            "skipped": count(SKIPPED)}


def _text(value: str) -> str:
    """A string XML 1.0 can hold: control characters and lone surrogates written out."""
    return shown(str(value)).translate(NONCHARACTERS)


def _first_line(text: str | None) -> str:
    return (text or "?").strip().splitlines()[0] if (text or "").strip() else "?"


def _seconds(v: model.Variant) -> float:
    """The time its counted runs took (the wall time of each sample)."""
    return float(sum(x for x in (v.samples or {}).get("wall_s") or [] if x is not None))


def _parsed(stamp: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    except ValueError:
        return None


def _timestamp(stamp: str | None) -> str:
    """ISO 8601 in UTC without a zone, as the JUnit schema's timestamp has it ("" when
    unknown)."""
    when = _parsed(stamp)
    if when and when.tzinfo:
        when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S") if when else ""


def _span(start: str | None, end: str | None) -> float:
    a, b = _parsed(start), _parsed(end)
    return max(0.0, (b - a).total_seconds()) if a and b else 0.0
