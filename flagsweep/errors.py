"""The exceptions flagsweep raises on purpose.

Each one carries a message meant for the user: it names the file, key or flag at fault and
what was expected, so the CLI prints it as it is, without a traceback.
"""


class FlagsweepError(Exception):
    """Base class: an error the user can act on."""


class ConfigError(FlagsweepError):
    """A target or recipe file is malformed (unknown key, wrong type, missing field)."""


class FetchError(FlagsweepError):
    """A source could not be obtained or failed its checksum."""


class BuildError(FlagsweepError):
    """The build machinery itself failed (not one variant: those are recorded, not raised)."""


class Interrupted(FlagsweepError):
    """A sweep was stopped by Ctrl-C or SIGTERM; every finished sample is kept."""
