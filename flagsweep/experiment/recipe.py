"""Sweep recipes: `recipes/<name>.toml` says which flag combinations to build and compare.

A recipe is data: axes of flag levels (crossed into a full factorial), exclude rules that drop
combinations, include entries that add hand-picked variants (how a study like seed-2003 lists
its rows), the compilers, and the baseline. docs/recipes.md documents the format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import Field, field_validator, model_validator

from flagsweep import shipped
from flagsweep.errors import ConfigError
from flagsweep.experiment.flags import abbreviated, check_flags, split_flags
from flagsweep.experiment.strict import Strict, read_toml, validate

RECIPES_DIR = shipped.RECIPES
DISTROS = ("debian",)                    # the distributions whose flags host.distro reads
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]*")


def _flag_string(text: str) -> str:
    split_flags(text)
    return text


class LabelledLevel(Strict):
    label: str
    flags: str
    build: Literal["pgo"] | None = None      # pgo: built twice, trained in between (build.pgo)

    _flags = field_validator("flags")(_flag_string)

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        if not LABEL.fullmatch(v):
            raise ValueError("a label is letters, digits and '._+=-', starting with a letter or digit")
        return v


Level = Union[str, LabelledLevel]


class Include(Strict):
    flags: str
    factors: dict[str, str]
    compiler: str | None = None

    _flags = field_validator("flags")(_flag_string)


class StudyMachine(Strict):
    """One machine's published timings: seconds per level of the study's factor."""

    name: str
    seconds: dict[str, float]


class Study(Strict):
    """A published study the recipe reproduces; the report sets today's results beside it."""

    title: str
    question: str
    factor: str                          # the factor whose levels are the study's rows
    baseline: str                        # the row the study's times are read against
    machines: Annotated[list[StudyMachine], Field(min_length=1)]


class RecipeFile(Strict):
    summary: str
    compilers: Annotated[list[str], Field(min_length=1)] = ["gcc"]
    design: Literal["factorial", "plackett-burman"] = "factorial"
    axes: dict[str, Annotated[list[Level], Field(min_length=1)]] = {}
    exclude: list[dict[str, str]] = []
    include: list[Include] = []
    baseline: dict[str, str] = {}
    base: str | None = None              # plackett-burman: the flags every row starts from
    distro: str | None = None            # every variant starts from this distribution's flags
    screen: list[str] = []               # plackett-burman: the on/off flags screened
    study: Study | None = None           # an earlier study's timings, for the report

    @field_validator("axes")
    @classmethod
    def _axis_flags(cls, axes: dict[str, list[Level]]) -> dict[str, list[Level]]:
        for levels in axes.values():
            for level in levels:
                if isinstance(level, str):
                    split_flags(level)
        return axes

    @field_validator("base")
    @classmethod
    def _base_flags(cls, base: str | None) -> str | None:
        return base if base is None else _flag_string(base)

    @model_validator(mode="after")
    def _consistent(self) -> "RecipeFile":
        for where, text in self._flag_texts():
            try:
                check_flags(text)
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
        if self.design == "plackett-burman":
            return self._screening()
        if self.base is not None or self.screen:
            raise ValueError("'base' and 'screen' belong to design = \"plackett-burman\"")
        if self.distro is not None and self.distro not in DISTROS:
            raise ValueError(f"distro is {self.distro!r}; expected one of {list(DISTROS)}")
        if not self.axes and not self.include:
            raise ValueError("a recipe needs 'axes' or 'include' entries (or both)")
        if not self.baseline:
            raise ValueError("missing key 'baseline'")
        factor_names = set(self.axes) | {f for inc in self.include for f in inc.factors}
        if "compiler" in factor_names:
            raise ValueError("'compiler' is not an axis or include factor name: it is reserved "
                             "for the compilers list, which becomes that factor by itself")
        for i, rule in enumerate(self.exclude):
            unknown = set(rule) - factor_names - {"compiler"}
            if unknown:
                raise ValueError(f"exclude[{i}] names unknown axes {sorted(unknown)}; "
                                 f"expected some of {sorted(factor_names)} or 'compiler'")
            if not rule:
                raise ValueError(f"exclude[{i}] is empty: it would exclude every variant")
            self._check_levels(f"exclude[{i}]", rule)
        unknown = set(self.baseline) - factor_names - {"compiler"}
        if unknown:
            raise ValueError(f"baseline names unknown axes {sorted(unknown)}; "
                             f"expected some of {sorted(factor_names)} or 'compiler'")
        self._check_levels("baseline", self.baseline)
        if self.study is not None:
            self._check_study(self.study, factor_names)
        return self

    def _flag_texts(self) -> list[tuple[str, str]]:
        """Every flag set of the recipe with the key that holds it."""
        texts = [(f"axes.{axis}[{i}]", v.flags if isinstance(v, LabelledLevel) else v)
                 for axis, values in self.axes.items() for i, v in enumerate(values)]
        texts += [(f"include[{i}].flags", inc.flags) for i, inc in enumerate(self.include)]
        texts += [("base", self.base)] if self.base is not None else []
        return texts + [(f"screen[{i}]", f) for i, f in enumerate(self.screen)]

    def _check_study(self, study: Study, factor_names: set[str]) -> None:
        """The study's rows are levels of one factor; its baseline must have a time everywhere."""
        if study.factor not in factor_names:
            raise ValueError(f"study.factor is {study.factor!r}, which is not one of the "
                             f"recipe's axes {sorted(factor_names)}")
        for i, m in enumerate(study.machines):
            self._check_levels(f"study.machines[{i}].seconds", {study.factor: study.baseline})
            for row in m.seconds:
                self._check_levels(f"study.machines[{i}].seconds", {study.factor: row})
            if study.baseline not in m.seconds:
                raise ValueError(f"study.machines[{i}].seconds has no time for the study's "
                                 f"baseline {study.baseline!r}")

    def _screening(self) -> "RecipeFile":
        """A screening recipe is base + screen only: its rows come from the design."""
        if self.base is None or len(self.screen) < 2:
            raise ValueError("design = \"plackett-burman\" needs 'base' (flags) and 'screen' "
                             "(at least two on/off flags)")
        if self.axes or self.include or self.exclude or self.baseline or self.distro:
            raise ValueError("design = \"plackett-burman\" takes no axes, include, exclude or "
                             "baseline: the rows come from the design, the baseline is 'base'")
        if len(set(self.screen)) != len(self.screen):
            raise ValueError("'screen' lists a flag twice")
        if any(len(split_flags(f)) != 1 for f in self.screen):
            raise ValueError("each 'screen' entry is one flag (it is switched on and off alone)")
        return self

    def _check_levels(self, where: str, rule: dict[str, str]) -> None:
        """A typo in a level ('-O9') would silently match nothing: name the levels there are."""
        for factor, value in rule.items():
            if factor == "compiler":
                continue  # --compiler may bring compilers the recipe does not list
            known = {level_of(v).label for v in self.axes.get(factor, [])}
            known |= {i.factors[factor] for i in self.include if factor in i.factors}
            if value not in known:
                raise ValueError(f"{where} has {factor} = {value!r}, which is not one of its "
                                 f"levels {sorted(known)}")


@dataclass(frozen=True)
class AxisLevel:
    """One level of an axis: the label results use for it, the flags it contributes, and
    whether it makes the variant a profile-guided build."""

    label: str
    flags: tuple[str, ...]
    pgo: bool = False


@dataclass(frozen=True)
class Recipe:
    name: str
    path: Path
    spec: RecipeFile

    def axes(self) -> dict[str, list[AxisLevel]]:
        return {axis: [level_of(v) for v in values] for axis, values in self.spec.axes.items()}


def level_of(value: str | LabelledLevel) -> AxisLevel:
    """A bare string is its own label ('' is 'none'); a table gives label and flags apart."""
    if isinstance(value, LabelledLevel):
        return AxisLevel(value.label, split_flags(value.flags), value.build == "pgo")
    return AxisLevel(value.strip() or "none", split_flags(value))


def load(name_or_path: str) -> Recipe:
    """Load a recipe by name (recipes/<name>.toml) or by path."""
    path = resolve(name_or_path)
    spec = validate(RecipeFile, read_toml(path), path)
    recipe = Recipe(name=path.stem, path=path, spec=spec)
    _check_labels_unique(recipe)
    return recipe


def _check_labels_unique(recipe: Recipe) -> None:
    for axis, levels in recipe.axes().items():
        labels = [lv.label for lv in levels]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ConfigError(f"{recipe.path}: key 'axes.{axis}': level labels must be unique, "
                              f"{dupes} repeat")


def resolve(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.is_file():
        return candidate.resolve()
    entries = shipped.recipes(RECIPES_DIR)
    name = name_or_path.removesuffix(".toml")
    named = shipped.find(entries, name, "recipe") if "/" not in name_or_path else None
    if named is not None:
        return named
    known = ", ".join(e.name for e in entries if not e.shadowed) or "none"
    raise ConfigError(f"no recipe '{name_or_path}': not a file, and not a shipped recipe or "
                      f"one in {shipped.user_dir() / 'recipes'} ({known})")


def available() -> list[Recipe]:
    return [load(str(p)) for p in sorted(RECIPES_DIR.glob("*.toml"))]


# The name of the recipe --flags makes: no file, so a Reproduce line repeats the --flags.
FLAGS_RECIPE = "cli-flags"


def from_flags(flag_sets: list[str], compilers: list[str]) -> Recipe:
    """An ad-hoc recipe from `--flags "..."` options: one variant per flag set, the first the baseline."""
    if not flag_sets or not compilers:
        raise ConfigError("--flags needs at least one flag set and one compiler")
    for f in flag_sets:
        try:
            split_flags(f)
        except ValueError as e:  # the message already quotes the flag string
            raise ConfigError(f"--flags {e}") from None
        try:
            check_flags(f)
        except ValueError as e:
            raise ConfigError(f"--flags {abbreviated(f)}: {e}") from None
    include = [Include(flags=f, factors={"flags": f.strip() or "none"}) for f in flag_sets]
    spec = RecipeFile(summary="flags given on the command line", compilers=compilers,
                      include=include, baseline={"flags": flag_sets[0].strip() or "none"})
    return Recipe(name=FLAGS_RECIPE, path=Path("<command line>"), spec=spec)
