"""A small "Use X" confirmed over code layouts before it is printed.

A sweep of one build a variant measures each binary in one code layout. Link order and section
placement move a program's speed by a few percent with no change to its code (Mytkowicz, Diwan,
Hauswirth & Sweeney, ASPLOS 2009; Curtsinger & Berger, STABILIZER, ASPLOS 2013), and no number of
runs averages that draw away (Kalibera & Jones, ISMM 2013). So a recommended change whose effect
is within reach of layout luck is measured again over layouts, the winner and the baseline K
relinked layouts each (flagsweep.compilation.layout, compared by flagsweep.stats.layout), before the
report says "Use X". This module holds the rule (when a confirmation is needed), the record it
leaves in results.json (`recommendation.confirmation`) and what that record does to the
recommendation; the stage that runs it is in flagsweep.jobs.sweep.

The rule. With L ~ N(0, s^2) the layout effect of one build (the spread between layouts of one
variant, measured by a sweep with --layouts), a one-build comparison carries L_v - L_b, whose sd
is sqrt(2) s; 95% of such draws lie within 1.96 sqrt(2) s of the true effect. That is the
*reach* of layout luck. A recommendation whose 95% interval comes closer to no change than the
reach could be layout alone, and is confirmed; one whose whole interval lies beyond it is not.
s is the latest measured spread of this target on this machine (a run with --layouts, its A/A
twin's layouts: `noise.sd_log_diff`), else DEFAULT_REACH_PCT: the reach of a spread of about
1.8%, between gzip's +-1.1% and the bundled tiny's +-2-3% (docs/layout-study.md).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from flagsweep import stats
from flagsweep.measure.options import DEFAULT_LAYOUTS

if TYPE_CHECKING:                    # the report reads records without opening a store
    from flagsweep.results.store import Store

DEFAULT_REACH_PCT = 5.0
Z95 = 1.959964
# The statuses of `recommendation.confirmation`; only "not-distinguishable" changes the answer.
CONFIRMED, LUCK = "confirmed", "not-distinguishable"
PENDING, SKIPPED, NOT_NEEDED = "running", "skipped", "not-needed"
FAILED, INTERRUPTED = "failed", "interrupted"


def reach_of_spread(sd_log: float) -> float:
    """The reach of layout luck in percent, from one build's layout sd (log scale)."""
    return 100 * math.expm1(Z95 * math.sqrt(2) * sd_log)


def measured_reach(store: Store, target: str, machine: dict) -> tuple[float, str] | None:
    """(reach %, where it comes from) from the newest complete --layouts run of `target` on
    this machine whose results.json still says its layout spread; None when there is none."""
    for run in reversed(store.runs_of(target)):
        layouts = ((run.get("options") or {}).get("measure") or {}).get("layouts")
        if run["status"] != "complete" or not layouts or not _same_machine(run["machine"], machine):
            continue
        sd = _spread(Path(run["out_dir"]) / "results.json")
        if sd is not None:
            return reach_of_spread(sd), (f"layout spread +-{100 * math.expm1(sd):.1f}% measured "
                                         f"by run {run['run_id']} ({layouts} layouts)")
    return None


def _same_machine(a: dict | None, b: dict | None) -> bool:
    a, b = a or {}, b or {}
    return all(a.get(k) == b.get(k) for k in ("hostname", "cpu_model"))


def _spread(path: Path) -> float | None:
    try:
        sd = json.loads(path.read_text()).get("noise", {}).get("sd_log_diff")
    except (OSError, ValueError, AttributeError):
        return None
    return sd if isinstance(sd, (int, float)) and sd > 0 else None


def plan(doc: dict, reach: tuple[float, str] | None, enabled: bool,
         k: int = DEFAULT_LAYOUTS) -> dict:
    """The record a sweep starts its confirmation with: status `running` when it is needed,
    else why not (`not-needed`, or `skipped` with --no-confirm)."""
    rec = doc.get("recommendation") or {}
    reach_pct, source = reach or (DEFAULT_REACH_PCT, "the default: no layout spread measured "
                                                     "for this program on this machine")
    record = {"status": NOT_NEEDED, "variant": rec.get("variant"), "layouts": k,
              "reach_pct": reach_pct, "reach_source": source, "one_layout": None,
              "over_layouts": None, "run_id": None, "results": None, "seconds": None}
    if (doc.get("measurement") or {}).get("layouts"):
        return {**record, "why": "the sweep compared every variant over its layouts already"}
    winner = _winner(doc)
    if winner is None:
        return {**record, "why": "the recommendation keeps the baseline"}
    vs = winner["vs_baseline"]
    record["one_layout"] = {"ratio": vs.get("ratio"), "ci95": vs.get("ci95")}
    nearest = _nearest_pct(vs)
    if nearest is not None and nearest >= reach_pct:
        return {**record, "why": f"its 95% CI ends {nearest:.1f}% from no change, beyond the "
                                 f"{reach_pct:.1f}% layout luck reaches ({source})"}
    if not enabled:
        return {**record, "status": SKIPPED,
                "why": f"not confirmed over layouts (--no-confirm): an effect this close to no "
                       f"change can be layout luck (reach {reach_pct:.1f}%, {source})"}
    return {**record, "status": PENDING,
            "why": f"being confirmed over {k} layouts each of it and the baseline: its 95% CI "
                   f"comes within {reach_pct:.1f}% of no change, where layout luck reaches "
                   f"({source})"}


def _winner(doc: dict) -> dict | None:
    rec = doc.get("recommendation") or {}
    if not rec.get("variant") or rec["variant"] == doc["baseline"]:
        return None
    v = next((v for v in doc["variants"] if v["id"] == rec["variant"]), None)
    return v if v and (v.get("vs_baseline") or {}).get("ratio") else None


def _nearest_pct(vs: dict) -> float | None:
    """How far from no change the interval's nearer end lies, in percent; None without one."""
    ci = vs.get("ci95")
    if not ci or None in ci:
        return None
    lo, hi = ci
    return 0.0 if lo <= 1 <= hi else 100 * min(abs(lo - 1), abs(hi - 1))


def outcome(record: dict, confirm_doc: dict, seconds: float, results: Path) -> dict:
    """The record once the confirmation sweep (its results.json, `confirm_doc`) has its
    answer: confirmed only when it calls the winner faster over the layouts, after its own A/A
    gate; anything else is not distinguishable from layout luck."""
    v = next((v for v in confirm_doc["variants"] if v["id"] == record["variant"]), None)
    vs = (v or {}).get("vs_baseline") or {}
    over = {"ratio": vs.get("ratio"), "ci95": vs.get("ci95"), "verdict": vs.get("verdict"),
            "layouts": vs.get("layouts"), "layout_sd_pct": vs.get("layout_sd_pct"),
            "p_adjusted": vs.get("p_adjusted")}
    done = {**record, "over_layouts": over, "run_id": confirm_doc.get("run_id"),
            "results": str(results), "seconds": round(seconds, 1)}
    one = _text(record["one_layout"])
    many = f"{_text(over)} over {over['layouts'] or record['layouts']} layouts each"
    if vs.get("verdict") == "faster":
        return {**done, "status": CONFIRMED,
                "why": f"confirmed over layouts: {many} (one layout: {one})"}
    return {**done, "status": LUCK,
            "why": f"not distinguishable from layout luck: {one} in one layout, but {many} "
                   f"({vs.get('verdict') or 'not measured'})"}


def ended(record: dict, status: str, why: str, run_id: str | None = None) -> dict:
    """The record of a confirmation that did not finish (failed, interrupted)."""
    return {**record, "status": status, "why": why, "run_id": run_id or record.get("run_id")}


def _text(c: dict | None) -> str:
    if not c or c.get("ratio") is None:
        return "no estimate"
    return stats.change_text(c["ratio"], c.get("ci95"))


def apply(doc: dict, record: dict | None) -> None:
    """The record into results.json's recommendation. A winner not distinguishable from layout
    luck is not recommended: the answer is the baseline's flags, saying why."""
    rec = doc.get("recommendation")
    if not record or not rec:
        return
    rec["confirmation"] = record
    if record["status"] != LUCK or record["variant"] != rec.get("variant"):
        return
    base = next(v for v in doc["variants"] if v["id"] == doc["baseline"])
    winner = " ".join(next((v["flags"] for v in doc["variants"] if v["id"] == record["variant"]),
                           [record["variant"]]))
    rec["why"] = (f"{winner} is {record['why']}. Keep the baseline's flags. (Before the "
                  f"confirmation: {rec['why']})")
    rec["flags"], rec["variant"] = base["flags"], base["id"]
