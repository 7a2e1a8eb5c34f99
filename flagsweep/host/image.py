"""The software image a sweep ran in: the distribution (os-release) and, in CI, the runner's
image. Beside the kernel and the microcode (host.system), these are what can move a nightly
series' timings without a line of the program or a compiler changing: a hosted runner's image
is replaced every week or two, and with it the kernel, the C library and the distribution's
own packages (docs/history.md, "Environment changes").

The distribution is /etc/os-release's ID, VERSION_ID and PRETTY_NAME (os-release(5)), read by
host.system under its root so tests can point it at a recorded tree. The runner's image comes
from variables the CI service sets: GitHub's hosted images set ImageOS ("ubuntu24") and
ImageVersion ("20250105.1.0"), its runner RUNNER_OS, RUNNER_ARCH and RUNNER_ENVIRONMENT
(github-hosted | self-hosted); GitLab sets CI_JOB_IMAGE (the job's container image),
CI_RUNNER_VERSION, CI_RUNNER_EXECUTABLE_ARCH and CI_RUNNER_DESCRIPTION (docs.gitlab.com,
"Predefined CI/CD variables reference").

Both are untrusted: anyone who can set a variable or write /etc can put anything there, and
the values go into results.json, the store, the report and a terminal. They are only ever
kept as text, never run or interpreted: each keeps printable characters only (no escape
sequence or newline reaches a terminal or a junit file) and at most LIMIT of them.
"""

from __future__ import annotations

import shlex
from typing import Mapping

LIMIT = 200                                  # characters kept of one value
OS_RELEASE = {"distro_id": "ID", "distro_version": "VERSION_ID", "distro": "PRETTY_NAME"}
# The CI service -> the variable that says a job runs under it, and the record's keys from
# its variables (each value the listed variables' non-empty values joined by a space).
SERVICES = {
    "github": ("GITHUB_ACTIONS", {"image": ("ImageOS", "ImageVersion"),
                                  "runner": ("RUNNER_ENVIRONMENT", "RUNNER_OS", "RUNNER_ARCH")}),
    "gitlab": ("GITLAB_CI", {"image": ("CI_JOB_IMAGE",),
                             "runner": ("CI_RUNNER_VERSION", "CI_RUNNER_EXECUTABLE_ARCH",
                                        "CI_RUNNER_DESCRIPTION")}),
}


def text(value: str | None) -> str | None:
    """An untrusted value as the record keeps it: its printable characters (a control
    character, an escape sequence's ESC included, becomes a space), whitespace runs made one
    space, at most LIMIT characters; None when nothing is left."""
    if value is None:
        return None
    kept = "".join(ch if ch.isprintable() else " " for ch in value[:4 * LIMIT])
    kept = " ".join(kept.split())[:LIMIT]
    return kept or None


def os_release(content: str | None) -> dict[str, str | None]:
    """The distribution's keys from an os-release file's text (None: no such file). Its values
    are shell-quoted assignments; they are split as words, never evaluated."""
    found: dict[str, str] = {}
    for line in (content or "").splitlines()[:200]:
        name, sep, value = line.strip().partition("=")
        if not sep or name not in OS_RELEASE.values():
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            words = [value]
        found[name] = " ".join(words)
    return {key: text(found.get(name)) for key, name in OS_RELEASE.items()}


def ci(environ: Mapping[str, str]) -> dict[str, str | None]:
    """The CI service and its runner's image from its variables; all None outside CI."""
    for service, (marker, keys) in SERVICES.items():
        if (environ.get(marker) or "").lower() == "true":
            return {"ci": service, **{key: text(" ".join(
                environ[n] for n in names if environ.get(n))) for key, names in keys.items()}}
    return {"ci": None, "image": None, "runner": None}


def environment(os_release_text: str | None, environ: Mapping[str, str]) -> dict:
    """The machine block's `environment` (model.machine.Environment)."""
    return {**os_release(os_release_text), **ci(environ)}
