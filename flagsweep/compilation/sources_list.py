"""The private apt tree's sources list: a `deb-src` entry for each enabled Debian entry of the
system's apt configuration (one-line sources.list files and deb822 .sources files alike)."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path


APT_ETC = Path("/etc/apt")


def private_sources(apt_etc: Path = APT_ETC) -> str:
    """deb822 text of deb-src entries for every enabled Debian entry of the system's apt
    configuration under apt_etc; empty when there is none."""
    stanzas: list[dict[str, str]] = []
    for path in _system_source_files(apt_etc):
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            stanzas += src_stanzas_from_deb822(text)
        else:
            stanzas += src_stanzas_from_one_line(text)
    return render_deb822(stanzas)


def _system_source_files(apt_etc: Path) -> list[Path]:
    """sources.list and sources.list.d/*.{list,sources}, as apt reads them (sorted), minus
    files renamed to disable them."""
    paths = [apt_etc / "sources.list"]
    parts = apt_etc / "sources.list.d"
    if parts.is_dir():
        paths += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources"))
    return [p for p in paths if p.is_file() and ".disabled" not in p.name]


# deb822 field names as apt documents them; apt matches field names case-insensitively.
_FIELD_NAMES = {name.lower(): name for name in (
    "Types", "URIs", "Suites", "Components", "Enabled", "Signed-By", "Architectures",
    "Languages", "Targets", "Trusted", "PDiffs", "By-Hash")}
# One-line [options] whose deb822 field name is not just the option capitalised.
_ONE_LINE_OPTIONS = {"arch": "Architectures", "lang": "Languages", "target": "Targets"}


def src_stanzas_from_deb822(text: str) -> list[dict[str, str]]:
    """deb-src stanzas for the enabled Debian stanzas of a deb822 .sources text."""
    stanzas = []
    for fields in _parse_deb822(text):
        types = fields.get("Types", "").split()
        if not {"deb", "deb-src"} & set(types) or fields.get("Enabled", "yes").lower() == "no":
            continue
        if not _is_debian(fields.get("URIs", "").split(), fields.get("Signed-By", "")):
            continue
        fields.pop("Enabled", None)
        stanzas.append({"Types": "deb-src", **{k: v for k, v in fields.items() if k != "Types"}})
    return stanzas


def _parse_deb822(text: str) -> list[dict[str, str]]:
    """Stanzas of a deb822 text: comments dropped, continuation lines (an inline Signed-By
    key) kept with their newlines and leading space."""
    stanzas: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields, key = {}, None
        elif line[0] in " \t" and key is not None:
            fields[key] += "\n" + line
        elif ":" in line:
            name, value = line.split(":", 1)
            key = _FIELD_NAMES.get(name.strip().lower(), name.strip())
            fields[key] = value.strip()
    if fields:
        stanzas.append(fields)
    return stanzas


def src_stanzas_from_one_line(text: str) -> list[dict[str, str]]:
    """deb-src stanzas for the Debian entries of a one-line-format sources.list text."""
    stanzas = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)(.*)", line)
        if not match:
            continue
        _, options, uri, suite, components = match.groups()
        fields = {"Types": "deb-src", "URIs": uri, "Suites": suite}
        if components.split():
            fields["Components"] = " ".join(components.split())
        fields.update(_one_line_options(options or ""))
        if _is_debian([uri], fields.get("Signed-By", "")):
            stanzas.append(fields)
    return stanzas


def _one_line_options(options: str) -> dict[str, str]:
    """[key=value ...] as deb822 fields; arch+=/arch-= edits are dropped (they only change
    which binary indexes are fetched, nothing a deb-src entry uses)."""
    fields = {}
    for option in options.split():
        key, _, value = option.partition("=")
        if not value or key.endswith(("+", "-")):
            continue
        name = _ONE_LINE_OPTIONS.get(key) or "-".join(w.capitalize() for w in key.split("-"))
        fields[_FIELD_NAMES.get(name.lower(), name)] = value.replace(",", " ")
    return fields


def _is_debian(uris: list[str], signed_by: str) -> bool:
    """Whether an entry is Debian's own archive: signed with Debian's archive keyring when it
    names a keyring file (not an inline key or a fingerprint), else served from a path with a
    debian, debian-security or debian-ports segment. Third-party repos rarely publish
    sources, and each one would make apt-get update fail."""
    keyring = signed_by.strip()
    if keyring.startswith("/") and "\n" not in keyring:
        return "debian-archive-keyring" in keyring or "debian-ports-archive-keyring" in keyring
    for uri in uris:
        if uri.startswith("cdrom:"):
            continue
        segments = urllib.parse.urlsplit(uri).path.split("/")
        if any(s in ("debian", "debian-security", "debian-ports") for s in segments):
            return True
    return False


def render_deb822(stanzas: list[dict[str, str]]) -> str:
    """deb822 text of stanzas, duplicates removed (a system may list both deb and deb-src)."""
    seen: list[str] = []
    for fields in stanzas:
        block = "".join(f"{k}: {v}\n" for k, v in fields.items())
        if block not in seen:
            seen.append(block)
    return "\n".join(seen)
