"""campaign.json: a list of Debian packages, each generated into a target and swept, and how
far each one got (flagsweep.jobs.distro_campaign). A campaign is resumed from this file: a
package whose stage is done is not redone, and every failure stays recorded with its stage.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flagsweep.model.values import Num, Record, Str


CAMPAIGN_SCHEMA = "flagsweep-campaign/1"

# generate: `new --debian` writes the target file from a trial build; sweep: the recipe's
# variants built, their own tests run, measured; report: in the distro report.
STAGES = ("generate", "sweep", "report")


class CampaignPackage(Record):
    """One line of the package list and what became of it."""
    name: Str                                   # the target's name (the package's, unless given)
    package: Str                                # Debian's source package
    line: int                                   # its line in the list
    version: Str | None = None                  # --version (Debian's), from the list
    binary: Str | None = None                   # --binary, from the list
    run: list[Str] | None = None                # the run command, from the list
    input: Str | None = None                    # --input: the user's input file, measured whole
    patches: bool = True                        # Debian's patches applied (--no-patches: not)
    status: Literal["pending", "generated", "swept", "failed"] = "pending"
    failed_stage: Literal["generate", "sweep"] | None = None
    error: Str | None = None                    # the failure's one line
    target: Str | None = None                   # target.toml, relative to campaign.json
    results: Str | None = None                  # results.json, relative to campaign.json
    generate_seconds: Num = None                # wall time of `new`
    sweep_seconds: Num = None                   # wall time of the sweep (builds, tests, runs)


class Campaign(Record):
    """campaign.json, written after every package so an interrupted campaign resumes."""
    schema_: Literal[CAMPAIGN_SCHEMA] = Field(alias="schema")
    packages_file: Str                          # the list it was started from
    recipe: Str
    packages: list[CampaignPackage]
