"""Debian's source packages, through a private apt tree: the versions the system's Debian
mirrors list (each with its orig tarball's name and sha256), and `apt-get source` of one.

It never edits the system's apt configuration: the tree has its own sources file
(sources_list.py derives it from the system's Debian entries), lists and cache directories.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from flagsweep import process
from flagsweep.caches import APT, DOWNLOADS
from flagsweep.compilation import sources_list
from flagsweep.errors import FetchError
from flagsweep.experiment.source import DebianSource
from flagsweep.host import environment

log = logging.getLogger("flagsweep.compilation.debian")


APT_TIMEOUT = 900  # seconds for one apt-get run (update fetches ~10 MB of Sources indexes)
APT_GET = "apt-get"
APT_CACHE = "apt-cache"


@dataclass(frozen=True)
class DebianRelease:
    """One version of a source package as the archive's Sources index lists it."""

    package: str
    version: str
    orig: str | None           # the orig tarball's file name (None: a native package)
    orig_sha256: str | None
    # the stanza's relation fields and binary packages, as the index writes them (untrusted)
    build_depends: str = ""         # Build-Depends, then Build-Depends-Arch
    package_list: str = ""
    binary: str = ""
    # the Debian part of a 3.0 (quilt) package (debian.tar.*): its file name and sha256
    debian_part: str | None = None
    debian_sha256: str | None = None


def debian_releases(package: str, cache: Path | None = None) -> list[DebianRelease]:
    """Every version of a Debian source package the system's Debian mirrors list, newest
    first, each with its orig tarball's name and sha256 (from the Sources index, before any
    download). A binary package's name finds the source package that builds it."""
    downloads = DOWNLOADS.folder(cache)
    downloads.mkdir(parents=True, exist_ok=True)
    with apt_tree(downloads) as (options, _):
        return releases(options, package, downloads, by_binary=True)


@contextlib.contextmanager
def apt_tree(downloads: Path) -> Iterator[tuple[list[str], process.Result]]:
    """The private apt tree, locked and updated: its apt options and the update's result."""
    apt_root = APT.folder(downloads.parent)
    sources_text = sources_list.private_sources(sources_list.APT_ETC)
    if not sources_text:
        raise FetchError(f"no Debian entries found in {sources_list.APT_ETC}/sources.list or "
                         f"{sources_list.APT_ETC}/sources.list.d to derive deb-src entries from")
    with _locked(apt_root):
        options = _prepare_apt_tree(apt_root, sources_text)
        update = _run_apt(options, ["update"], apt_root, environment.apt())
        # A failed update may still have refreshed the lists that matter (one third-party
        # mirror without sources is enough to fail it), so go on and let `source` decide.
        if not update.ok:
            log.info("apt-get update failed (exit %d), trying apt-get source anyway:\n%s",
                     update.returncode, update.tail(5))
        yield options, update


def releases(options: list[str], package: str, workdir: Path,
             by_binary: bool = False) -> list[DebianRelease]:
    """The index's versions of the source package, newest first; [] when apt-cache knows none.
    by_binary: when no source package has that name, the one that builds a binary package of
    that name (zstd is built from libzstd)."""
    stanzas = _showsrc(options, package, workdir, only_source=not by_binary)
    named = [f for f in stanzas if f.get("Package") == package]
    if not named and by_binary:
        builders = {f.get("Package") for f in stanzas
                    if package in (f.get("Binary") or "").replace(",", " ").split()}
        if len(builders) == 1:
            named = [f for f in stanzas if f.get("Package") in builders]
    found: dict[str, DebianRelease] = {}
    for fields in named:
        if "Version" not in fields:
            continue
        listed = [(name, sha) for sha, _, name in
                  (line.split() for line in fields.get("Checksums-Sha256", "").splitlines()
                   if len(line.split()) == 3)]
        orig = next(((n, sha) for n, sha in listed if ".orig.tar." in n), (None, None))
        part = next(((n, sha) for n, sha in listed if ".debian.tar." in n), (None, None))
        depends = ", ".join(v.strip() for k in ("Build-Depends", "Build-Depends-Arch")
                            if (v := fields.get(k, "")).strip())
        found.setdefault(fields["Version"], DebianRelease(
            fields["Package"], fields["Version"], *orig, build_depends=depends,
            package_list=fields.get("Package-List", ""), binary=fields.get("Binary", ""),
            debian_part=part[0], debian_sha256=part[1]))
    return sorted(found.values(), key=functools.cmp_to_key(_version_order))


def _showsrc(options: list[str], package: str, workdir: Path,
             only_source: bool) -> list[dict[str, str]]:
    """apt-cache showsrc's stanzas for a name; [] when it fails or knows nothing."""
    args = ["showsrc", *(["--only-source"] if only_source else []), package]
    try:
        shown = _run_apt(options, args, workdir, environment.apt(), tool=APT_CACHE)
    except FetchError as err:
        log.info("apt-cache showsrc %s: %s", package, err)
        return []
    return [_showsrc_fields(stanza) for stanza in shown.stdout.split("\n\n")] if shown.ok else []


def _showsrc_fields(stanza: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in stanza.splitlines():
        if line[:1] in (" ", "\t") and key:
            # a folded field (Build-Depends over lines) keeps its words apart
            fields[key] += ("\n" if not fields[key].endswith("\n") else "") + line.strip() + "\n"
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip() + ("\n" if not value.strip() else "")
    return fields


def _version_order(a: DebianRelease, b: DebianRelease) -> int:
    """Newest first, by dpkg's own comparison (epochs, ~, +deb12u1)."""
    try:
        newer = process.run(["dpkg", "--compare-versions", a.version, "gt", b.version]).ok
    except FileNotFoundError:  # not Debian: keep the index's order
        return 0
    return -1 if newer else (0 if a.version == b.version else 1)


@contextlib.contextmanager
def _locked(apt_root: Path) -> Iterator[None]:
    """Serialise users of the private apt tree: we run apt with Debug::NoLocking, so two
    flagsweep processes updating the same lists at once would corrupt them."""
    apt_root.mkdir(parents=True, exist_ok=True)
    with open(apt_root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _prepare_apt_tree(apt_root: Path, sources_text: str) -> list[str]:
    """Write the private sources file and dirs; return the apt-get -o options using them."""
    etc, state, cache = apt_root / "etc", apt_root / "state", apt_root / "cache"
    for d in (etc / "sources.list.d", state / "lists" / "partial",
              cache / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    # The .sources suffix tells apt the file is deb822, which can carry inline Signed-By keys.
    sources = etc / "flagsweep.sources"
    sources.write_text(sources_text)
    return [
        "-o", f"Dir::Etc::SourceList={sources}",
        # An empty private dir, so the system's sources.list.d is not read at all.
        "-o", f"Dir::Etc::SourceParts={etc / 'sources.list.d'}",
        "-o", f"Dir::State={state}",
        "-o", f"Dir::State::Lists={state / 'lists'}",
        "-o", f"Dir::Cache={cache}",
        # Our private state needs no lock on the system's dirs (and a non-root user has none).
        "-o", "Debug::NoLocking=1",
        # As root apt downloads as _apt, which cannot write into a private dir under /root.
        "-o", "APT::Sandbox::User=root",
    ]


def apt_get_source(debian: DebianSource, options: list[str], workdir: Path,
                   update: process.Result) -> None:
    """apt-get source --download-only into workdir; FetchError with the error tails (the
    update's too, when it failed) if the download did not happen."""
    spec = f"{debian.package}={debian.version}"
    result = _run_apt(options, ["source", "--download-only", spec], workdir, environment.apt())
    if not result.ok:
        detail = f"apt-get source {spec} failed (exit {result.returncode}):\n{result.tail(10)}"
        if not update.ok:
            detail += (f"\napt-get update had failed too (exit {update.returncode}):\n"
                       f"{update.tail(10)}")
        raise FetchError(detail)


def orig_uri(debian: DebianSource, options: list[str], workdir: Path) -> tuple[str, str]:
    """The URI the mirror serves the orig tarball at and its file name, as `apt-get source
    --print-uris` lists them from the index (no download): the orig alone, when the Debian
    part of the package cannot be had (a mirror answered 404 for opus-tools' diff)."""
    return file_uri(debian, options, workdir, f"{debian.upstream_version}.orig")


def file_uri(debian: DebianSource, options: list[str], workdir: Path,
             part: str) -> tuple[str, str]:
    """The URI and file name of one file of the source package, <package>_<part>.tar.*, as
    `apt-get source --print-uris` lists them (part: "<upstream>.orig", or the Debian part
    "<version without epoch>.debian")."""
    spec = f"{debian.package}={debian.version}"
    result = _run_apt(options, ["source", "--print-uris", spec], workdir, environment.apt())
    pattern = re.compile(re.escape(f"{debian.package}_{part}.tar.") + r"(gz|xz|bz2|lzma|zst)")
    # Each file is one line: 'URI' NAME SIZE HASH
    for words in (line.split() for line in result.stdout.splitlines()):
        if len(words) >= 2 and words[0][:1] == "'" and pattern.fullmatch(words[1]):
            return words[0].strip("'"), words[1]
    raise FetchError(f"apt-get source --print-uris {spec} lists no {debian.package}_"
                     f"{part}.tar.* (exit {result.returncode})")


def _run_apt(options: list[str], command: list[str], workdir: Path,
             env: dict[str, str], tool: str = APT_GET) -> process.Result:
    """Run apt-get (or apt-cache) with the private-tree options; FetchError when it is missing
    or hangs."""
    try:
        return process.run([tool, *options, *command], cwd=workdir, env=env,
                           timeout=APT_TIMEOUT, guard=True)
    except FileNotFoundError as err:
        raise FetchError(f"{tool} is not installed (or not on PATH): {err}") from err
    except process.TimeoutExpired as err:
        raise FetchError(f"{tool} {' '.join(command)} timed out after "
                         f"{APT_TIMEOUT} s") from err


def pick_orig(debian: DebianSource, workdir: Path) -> Path:
    """The <package>_<upstream>.orig.tar.* file among what apt-get source downloaded."""
    pattern = re.compile(re.escape(f"{debian.package}_{debian.upstream_version}.orig.tar.")
                         + r"(gz|xz|bz2|lzma|zst)")
    files = sorted(p.name for p in workdir.iterdir())
    for name in files:
        if pattern.fullmatch(name):
            return workdir / name
    raise FetchError(f"apt-get source downloaded no {debian.package}_"
                     f"{debian.upstream_version}.orig.tar.* (got: {', '.join(files) or 'nothing'})")


def source_of(path: str) -> DebianSource | None:
    """The Debian source package (at its installed version) whose binary package installed
    the file at path, as dpkg knows it, or None: `dpkg-query -S` names the binary package, its
    source:Package field the source. With /usr merged, the loader finds in /lib what dpkg lists
    under /usr/lib, so both are asked. The path is one argument, never a shell's or an option."""
    if not path.startswith("/"):
        return None
    env = environment.clean()
    for asked in [path] + (["/usr" + path] if path.startswith("/lib") else []):
        try:
            owner = process.run(["dpkg-query", "-S", asked], env=env, timeout=60)
            if not owner.ok or ": " not in owner.stdout:
                continue
            package = owner.stdout.split(": ", 1)[0].split(", ")[0]
            fields = process.run(["dpkg-query", "-W", "-f=${source:Package} ${source:Version}",
                                  package], env=env, timeout=60)
        except (OSError, process.TimeoutExpired):      # no dpkg here
            return None
        words = fields.stdout.split()
        if fields.ok and len(words) == 2:
            return DebianSource(*words)
    return None
