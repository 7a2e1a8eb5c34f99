"""`flagsweep campaign PACKAGES.txt`: a distribution's question over dozens of Debian packages.

Each line of the list names a Debian source package and the one thing its metadata cannot say,
the command a run measures (`zopfli --run '{binary} -c {input}'`). Each package goes through two
stages, in turn, into one folder:

- generate: `flagsweep new --debian` writes OUT/targets/NAME/target.toml from a trial build
  (jobs/scaffold.py: the release, its build dependencies, the executable, the input, the check);
- sweep: the recipe's variants built, their own tests run, measured, into OUT/runs/NAME.

OUT/campaign.json (model.Campaign) is rewritten after every stage, so a campaign stopped
anywhere resumes where it was: a package that finished a stage never redoes it, an interrupted
sweep is resumed from the store with every sample it took. A package that fails is recorded with
its stage and its one-line error, and the campaign goes on with the next. Failures are not
retried unless asked (--retry-failed): a broken package fails the same way every night.
At the end the distro report is drawn over every package swept (report.write_distro).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from flagsweep import caches, files, model
from flagsweep.compilation import selection
from flagsweep.errors import FlagsweepError, Interrupted
from flagsweep.host import launcher
from flagsweep.host.executor import Executor
from flagsweep.jobs import scaffold, sweep
from flagsweep.measure.options import MeasureOptions
from flagsweep.results.store import Store

LIST_OPTIONS = ("--name", "--binary", "--run", "--version", "--input")
# options of a list line that take no value
LIST_SWITCHES = ("--no-patches",)


@dataclass
class CampaignFolder:
    """A campaign on disk: its folder and its progress (the model written to campaign.json)."""
    out: Path
    doc: model.Campaign

    @property
    def path(self) -> Path:
        return self.out / "campaign.json"

    def save(self) -> None:
        files.write_atomic(self.path, json.dumps(self.doc.dump(), indent=1) + "\n")


def read_list(path: Path) -> list[model.CampaignPackage]:
    """The packages of a list file, in order. A line: PACKAGE [--name N] [--binary B]
    [--run 'COMMAND'] [--version V] [--input FILE] [--no-patches]; `#` starts a comment; FILE
    is relative to the list's folder."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise FlagsweepError(f"{path}: cannot read the package list ({e})") from None
    entries: list[model.CampaignPackage] = []
    for number, line in enumerate(text.splitlines(), 1):
        try:
            words = shlex.split(line, comments=True)
        except ValueError as e:
            raise FlagsweepError(f"{path}:{number}: {e}") from None
        if words:
            entries.append(_entry(words, path, number))
    names = [e.name for e in entries]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise FlagsweepError(f"{path}: target name(s) {', '.join(twice)} on more than one line: "
                             "give one of them --name")
    if not entries:
        raise FlagsweepError(f"{path}: no package in the list (expected a line per package: "
                             "PACKAGE --run '{binary} ... {input}')")
    return entries


def _entry(words: list[str], path: Path, number: int) -> model.CampaignPackage:
    where = f"{path}:{number}"
    package, rest = words[0], words[1:]
    if not scaffold.NAME.fullmatch(package):
        raise FlagsweepError(f"{where}: {package!r} is not a Debian source package name")
    given: dict[str, str] = {}
    while rest:
        option, *rest = rest
        if option in LIST_SWITCHES:
            given[option[2:]] = ""
            continue
        if option not in LIST_OPTIONS or not rest:
            raise FlagsweepError(f"{where}: {option!r}: expected one of {', '.join(LIST_OPTIONS)}"
                                 f" followed by its value, or {', '.join(LIST_SWITCHES)}")
        given[option[2:]], rest = rest[0], rest[1:]
    name = given.get("name", package)
    if not scaffold.NAME.fullmatch(name):
        raise FlagsweepError(f"{where}: --name {name!r}: expected letters, digits, '._+-'")
    run = shlex.split(given["run"]) if "run" in given else None
    if run is None:
        raise FlagsweepError(f"{where}: {package}: no --run '{{binary}} ... {{input}}': a "
                             "campaign measures a command nobody has to write afterwards")
    return model.CampaignPackage(name=name, package=package, line=number,
                                 binary=given.get("binary"), run=run,
                                 version=given.get("version"),
                                 patches="no-patches" not in given,
                                 input=str((path.parent / given["input"]).absolute())
                                 if "input" in given else None)


def open_campaign(list_path: Path, out: Path, recipe: str) -> CampaignFolder:
    """OUT's campaign: resumed from its campaign.json (the list's new lines added, lines gone
    from the list left alone), or started."""
    entries = read_list(list_path)
    c = CampaignFolder(out, model.Campaign(schema=model.CAMPAIGN_SCHEMA,
                                           packages_file=str(list_path), recipe=recipe,
                                           packages=[]))
    if c.path.is_file():
        c.doc = _load(c.path)
        _check_paths(c)
        if c.doc.recipe != recipe:
            raise FlagsweepError(f"{c.path}: this campaign measures recipe {c.doc.recipe!r}, "
                                 f"not {recipe!r}: give another --out")
    known = {p.name: p for p in c.doc.packages}
    for e in entries:
        p = known.get(e.name)
        if p is None:
            c.doc.packages.append(e)
        elif p.status == "swept" and _line(p) != _line(e):
            raise FlagsweepError(f"{list_path}:{e.line}: {e.name} was swept with another "
                                 f"package, version, binary or run command; give it another "
                                 f"--name or another --out")
        elif p.status != "swept" and _line(p) != _line(e):
            # not measured yet: the line as it reads now (a binary named right this time)
            for key in ("package", "version", "binary", "run", "input", "patches", "line"):
                setattr(p, key, getattr(e, key))
            p.status, p.failed_stage, p.error, p.target = "pending", None, None, None
    files.make_dir(out, "--out")
    c.save()
    return c


def _check_paths(c: CampaignFolder) -> None:
    """campaign.json is data anyone may have edited: a target or results path it names is
    where the campaign reads and sweeps into, so it must stay inside the campaign's folder."""
    root = c.out.resolve()
    for i, p in enumerate(c.doc.packages):
        if not scaffold.NAME.fullmatch(p.name):     # a folder name under targets/ and runs/
            raise FlagsweepError(f"{c.path}: packages[{i}].name {p.name!r}: expected letters, "
                                 "digits, '._+-'")
        for key in ("target", "results"):
            value = getattr(p, key)
            if value is None:
                continue
            where = (c.out / value).resolve()
            if Path(value).is_absolute() or ".." in Path(value).parts \
                    or not where.is_relative_to(root):
                raise FlagsweepError(f"{c.path}: packages[{i}].{key} {value!r}: expected a "
                                     f"path inside the campaign's folder {c.out}")


def _line(p: model.CampaignPackage) -> tuple:
    return p.package, p.version, p.binary, p.run, p.input, p.patches


def _load(path: Path) -> model.Campaign:
    try:
        return model.Campaign.model_validate(json.loads(path.read_text()))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise FlagsweepError(f"{path}: not a campaign.json ({e})") from None
    except ValidationError as e:
        raise FlagsweepError(f"{path}: {model.problem(e.errors(), 'campaign.json')}") from None


@dataclass
class Stages:
    """How each stage runs: `generate` is scaffold.new, `execute` how a sweep runs a binary
    (the seams the tests plant)."""
    generate: Callable[..., Path] = scaffold.new
    execute: Executor = launcher.run_once
    jobs: int = 2


def run(c: CampaignFolder, sel: selection.Selection, opts: MeasureOptions, store: Store,
        say: Callable[[str], None], stages: Stages = Stages(), retry_failed: bool = False,
        wait: bool = False, retry: frozenset[str] = frozenset()) -> None:
    """Take every package of the campaign as far as it goes; campaign.json after each stage.
    Ctrl-C saves what finished and stops (resumed by running the same command again). A failed
    package is taken again with retry_failed, or when `retry` names it."""
    for p in c.doc.packages:
        if p.status == "swept" and _unanswered(c, p):
            p.status = "generated"      # its sweep is resumed from the store, samples kept
    todo = [p for p in c.doc.packages if p.status != "swept"]
    for i, p in enumerate(todo, 1):
        if p.status == "failed" and not (retry_failed or p.name in retry):
            say(f"campaign: {p.name}: failed at {p.failed_stage} before, left out "
                f"(--retry {p.name} or --retry-failed takes it again)")
            continue
        say(f"campaign: {p.name} ({i} of {len(todo)} left)")
        again = p.status == "failed"    # its stored sweep failed: swept afresh, not resumed
        if again:
            p.status = "generated" if p.failed_stage == "sweep" else "pending"
            p.failed_stage = p.error = None
        try:
            if p.status == "pending":
                _stage(c, p, "generate", lambda: _generate(c, p, say, stages))
            if p.status == "generated":
                _stage(c, p, "sweep",
                       lambda: _sweep(c, p, sel, opts, store, say, stages, wait, again))
        finally:
            c.save()


def _unanswered(c: CampaignFolder, p: model.CampaignPackage) -> bool:
    """Whether a package's sweep ended without an answer (stopped busy, interrupted): run
    again, the campaign resumes it, as `run --resume` would."""
    path = c.out / (p.results or "")
    if not path.is_file():
        return False        # missing, or not a file to read (a pipe would never end)
    try:
        status = json.loads(path.read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        return False        # unreadable: the report says so; nothing to resume
    return status not in (None, "complete")


def _stage(c: CampaignFolder, p: model.CampaignPackage, stage: str,
           work: Callable[[], None]) -> None:
    started = time.monotonic()
    try:
        work()
    except Interrupted:
        raise
    except FlagsweepError as e:
        # the whole message: a failed build's lines follow its first (bounded: a log is not)
        p.status, p.failed_stage, p.error = "failed", stage, str(e)[:4000]
    finally:
        setattr(p, f"{stage}_seconds", round(time.monotonic() - started, 1))


def _generate(c: CampaignFolder, p: model.CampaignPackage, say: Callable[[str], None],
              stages: Stages) -> None:
    folder = c.out / "targets" / p.name
    # A `new` stopped half-way left its files: take them away, as `new --force` would.
    again = (folder / "target.toml").exists()
    stages.generate(p.name, p.package, folder, say, version=p.version, jobs=stages.jobs,
                    argv=list(p.run or []), binary=p.binary, force=again,
                    given=Path(p.input) if p.input else None, patched=p.patches)
    p.status, p.target = "generated", str((folder / "target.toml").relative_to(c.out))


def _sweep(c: CampaignFolder, p: model.CampaignPackage, sel: selection.Selection,
           opts: MeasureOptions, store: Store, say: Callable[[str], None], stages: Stages,
           wait: bool, afresh: bool = False) -> None:
    # where an earlier attempt swept (a retry's folder is numbered), else the package's own
    out = (c.out / p.results).parent if p.results else c.out / "runs" / p.name
    if afresh:
        # the failed attempt's folder stays as it was (its logs say why); a new one beside it
        out = next(o for n in range(2, 10**6)
                   if not (o := c.out / "runs" / f"{p.name}.{n}").exists()) \
            if out.exists() else out
    before = None if afresh else _stored(store, out)
    p.results = str((out / "results.json").relative_to(c.out))     # found again if cut off
    if before == "complete" and (out / "results.json").is_file():
        path = out / "results.json"     # it finished; the campaign stopped before saying so
    elif before is not None:
        say(f"campaign: {p.name}: resuming its interrupted sweep")
        path = sweep.resume(str(out), store, say, execute=stages.execute, wait=wait)
    else:
        t, r, m, build_opts = selection.prepare(
            replace(sel, target_name=str(c.out / "targets" / p.name), out_dir=out), say)
        path = sweep.start(t, r, m, build_opts, replace(opts), store, say,
                           run_name=f"{c.out.name}-{p.name}", execute=stages.execute, wait=wait)
    p.status, p.results = "swept", str(path.relative_to(c.out))


def _stored(store: Store, out: Path) -> str | None:
    """The status of the store's newest sweep into this folder, if any (an earlier attempt)."""
    run_id = store.find_run(str(out))
    try:
        return store.run(run_id).status
    except FlagsweepError:
        return None


def report(c: CampaignFolder, threshold_pct: float, say: Callable[[str], None]) -> Path:
    """The distro report over the packages swept (report.write_distro), after a line on how
    far the campaign got; returns the page."""
    from flagsweep import report as pages

    by = {s: [p.name for p in c.doc.packages if p.status == s]
          for s in ("swept", "failed", "generated", "pending")}
    say(f"campaign: {len(by['swept'])} of {len(c.doc.packages)} packages swept"
        + "".join(f"; {len(v)} {s}: {', '.join(v)}" for s, v in by.items() if v and s != "swept"))
    for p in c.doc.packages:
        if p.status == "failed":
            say(f"  {p.name} failed at {p.failed_stage}: {(p.error or '').splitlines()[0]}")
    return pages.write_distro(c.path, c.out, threshold_pct)


def run_on(scheduler: str, c: CampaignFolder, sel: selection.Selection, opts: MeasureOptions,
           store_url: str, say: Callable[[str], None], retry_failed: bool = False,
           retry: frozenset[str] = frozenset()) -> None:
    """The campaign on a Dask cluster (`flagsweep worker`s): one package a task, generated and
    swept whole on one worker, which holds its bench slot for it (so a worker measures one
    package at a time, never beside another's build); its target file and results.json come
    back into OUT, campaign.json after each. A package cut off on a worker starts again whole
    on the next run: its samples are in the store, but a resume needs the worker's folder."""
    from distributed import as_completed

    from flagsweep.jobs import fleet, worker

    todo = [p for p in c.doc.packages if p.status != "swept"
            and (p.status != "failed" or retry_failed or p.name in retry)]
    client = fleet.connect(scheduler)
    try:
        # the worker's own CPUs build; its folders are its own
        what = replace(sel, target_name=None, out_dir=None, jobs=None)
        jobs = {client.submit(package_task, _afresh(p), c.doc.recipe, what, opts, store_url,
                              f"{c.out.name}-{p.name}",
                              pure=False, resources={worker.BENCH: 1}): p for p in todo}
        say(f"campaign: {len(jobs)} packages sent to the cluster at {scheduler}, one a worker")
        for future in as_completed(jobs):
            p = jobs[future]
            try:
                _take(c, p, future.result())
            except FlagsweepError as e:
                p.status, p.failed_stage, p.error = "failed", p.failed_stage or "sweep", str(e)
            c.save()
            say(f"campaign: {p.name} {p.status}" + (f" at {p.failed_stage}" if p.error else ""))
    finally:
        client.close()


def _afresh(p: model.CampaignPackage) -> dict:
    """The package as a worker takes it: from the start (its folder here is not the worker's)."""
    return p.model_copy(update={"status": "pending", "failed_stage": None, "error": None,
                                "target": None, "results": None}).dump()


def package_task(entry: dict, recipe_name: str, sel: selection.Selection,
                 opts: MeasureOptions, store_url: str, run_name: str) -> dict:
    """On a worker: one package generated and swept in a folder of the worker's own, into the
    store the driver names (refused if the worker's is another). Returns the package's record
    and the texts of its target file and results.json."""
    from flagsweep.jobs import worker
    from flagsweep.results.store import Store

    db = Store()
    if db.url != store_url:
        raise FlagsweepError(f"worker {socket.gethostname()} writes to the store {db.url}, the "
                             f"campaign to {store_url}: start the worker with the same --db / "
                             "FLAGSWEEP_DB")
    p = model.CampaignPackage.model_validate(entry)
    out = caches.FLEET.folder() / "campaign" / run_name
    shutil.rmtree(out, ignore_errors=True)      # a package is redone whole on a worker
    c = CampaignFolder(out, model.Campaign(schema=model.CAMPAIGN_SCHEMA, packages_file="-",
                                           recipe=recipe_name, packages=[p]))
    files.make_dir(out)
    if os.environ.get(worker.CPU_ENV):
        opts.cpu = int(os.environ[worker.CPU_ENV])
    run(c, sel, opts, db, lambda text: None, Stages(jobs=selection.cpu_count()), True)
    return {"package": p.dump(),
            "target": _text(out / p.target) if p.target else None,
            "results": _text(out / p.results) if p.results else None}


def _text(path: Path) -> str:
    return path.read_text()


def _take(c: CampaignFolder, p: model.CampaignPackage, got: dict) -> None:
    """A worker's answer into OUT: the package's record (its own name and list line kept), the
    target file and results.json written under OUT and read back as the models they must be,
    the results' page drawn here."""
    from flagsweep import report as pages
    from flagsweep.results import reader

    done = model.CampaignPackage.model_validate(got["package"])
    for key in ("status", "failed_stage", "error", "generate_seconds", "sweep_seconds"):
        setattr(p, key, getattr(done, key))
    if got.get("target"):
        target_file = c.out / "targets" / p.name / "target.toml"
        files.make_dir(target_file.parent)
        files.write_atomic(target_file, got["target"])
        p.target = str(target_file.relative_to(c.out))
    if p.status == "swept":
        results = c.out / "runs" / p.name / "results.json"
        files.make_dir(results.parent)
        files.write_atomic(results, got["results"] or "")
        reader.load(results)            # a worker's answer is data: refused unless results
        p.results = str(results.relative_to(c.out))
        pages.write(results, results.parent)
