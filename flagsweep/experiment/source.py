"""Where a target's source comes from: the upstream tarball and its Debian fallback."""

from __future__ import annotations

import re
from dataclasses import dataclass

from flagsweep.errors import ConfigError

_SHA256_RE = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class DebianSource:
    package: str  # Debian source package name, e.g. "lame"
    version: str  # Debian version, e.g. "3.100-6" (an epoch "1:" is allowed)

    @property
    def upstream_version(self) -> str:
        """The version in the orig tarball's name: no epoch, no Debian revision."""
        version = self.version.split(":", 1)[-1]
        return version.rsplit("-", 1)[0] if "-" in version else version


@dataclass(frozen=True)
class Source:
    name: str  # target name, for messages and cache paths
    version: str  # upstream version, e.g. "3.100"
    urls: tuple[str, ...]  # upstream tarball URLs, tried in order
    sha256: str  # of the upstream tarball (Debian's orig tarball has the same bytes)
    debian: DebianSource | None
    strip_components: int = 1  # tarballs hold one top dir; we extract its contents
    # `autoreconf -fi` on the unpacked tree, as the package's own build does (a tag archive
    # without `configure`; Debian's dh_autoreconf): another tree in the cache
    autoreconf: bool = False
    # the sha256 of the Debian part (debian.tar.*) whose debian/patches/series is applied to
    # the unpacked tarball, as Debian builds the package: another tree in the cache
    patches: str | None = None

    def __post_init__(self) -> None:
        # Checked here so that a typo in a target file fails before any download.
        if not _SHA256_RE.fullmatch(self.sha256):
            raise ConfigError(f"target {self.name!r}: sha256 must be 64 lowercase hex digits, "
                              f"got {self.sha256!r}")
        if self.patches is not None and (self.debian is None
                                         or not _SHA256_RE.fullmatch(self.patches)):
            raise ConfigError(f"target {self.name!r}: debian_patches must be the 64 lowercase "
                              "hex digits of a Debian part's sha256, with a Debian source "
                              f"package, got {self.patches!r}")
        if self.strip_components < 0:
            raise ConfigError(f"target {self.name!r}: strip_components must be >= 0, "
                              f"got {self.strip_components}")

    @property
    def identity(self) -> str:
        """What decides the tree's bytes before any build: the tarball's sha256 and, when
        they are applied, the Debian part's (a target without patches keeps its old key)."""
        return self.sha256 if self.patches is None else f"{self.sha256}+debian:{self.patches}"

    @property
    def unpacking(self) -> list[str]:
        """What besides the tarball's bytes makes the unpacked tree, as words for the keys of
        the caches that hold it or what was built from it (Debian's patches: their part's
        sha256, whole in `identity`). None for a tarball unpacked as most are (its one top
        folder removed, unpatched, not autoreconf'd), so the trees and builds
        cached before these words existed keep their keys."""
        words = [] if self.strip_components == 1 else [f"strip{self.strip_components}"]
        words += [f"debian-{self.patches[:12]}"] if self.patches else []
        return words + (["autoreconf"] if self.autoreconf else [])
