"""Obtain a target's source tarball, verify it, and unpack it once into a shared cache.

Order of attempts: the cache (re-verified), each upstream URL, then Debian's source package
through a private apt tree. Every byte that lands in the cache has matched the target's
sha256; nothing half-downloaded or unverified is ever left there under its final name.

The Debian fallback exists because upstream sites (GNU, SourceForge) are often unreachable
from build machines that can still reach a Debian mirror. It never edits the system's apt
configuration: it derives `deb-src` entries from the system's Debian `deb` entries into a
private sources file, with private lists and cache directories (debian.py, sources_list.py).
Unpacking, and the limits that refuse a tarball bomb, are tarball.py's.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from flagsweep import __version__, files, process
from flagsweep.caches import DOWNLOADS, SOURCES
from flagsweep.compilation.debian import (apt_get_source, apt_tree, orig_uri, pick_orig,
                                          releases)
from flagsweep.compilation import cache as build_cache
from flagsweep.compilation.manifest import Dependency
from flagsweep.compilation.tarball import extract
from flagsweep.errors import FetchError
from flagsweep.experiment.source import DebianSource, Source
from flagsweep.experiment.target import Target
from flagsweep.host import environment

log = logging.getLogger("flagsweep.compilation.fetch")

URL_TIMEOUT = 20  # seconds without data before an upstream URL counts as failed
_CHUNK = 1 << 20


def fetch(source: Source, *, offline: bool = False, cache: Path | None = None) -> Path:
    """Return the path of the verified tarball in cache/downloads/, obtaining it on first use.

    Tries each upstream URL (urllib), then Debian's source package. A cached file is
    re-verified before use. offline=True never touches the network. Raises FetchError listing
    every attempt when none gave the expected bytes.
    """
    downloads = DOWNLOADS.folder(cache)
    cached = _find_cached(source, downloads)
    if cached is not None:
        return cached
    if offline:
        raise FetchError(f"target {source.name!r}: offline and its tarball is not in the cache "
                         f"{downloads} (expected a file named {source.sha256[:16]}-* "
                         f"with sha256 {source.sha256}); run once without --offline, "
                         f"or use --source-dir")
    downloads.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for url in source.urls:
        log.info("%s: downloading %s", source.name, url)
        try:
            return _download(source, url, downloads)
        except FetchError as err:
            log.info("%s: %s", source.name, err)
            failures.append(f"{url}: {err}")
    if source.debian is not None:
        log.info("%s: trying Debian source package %s=%s", source.name,
                 source.debian.package, source.debian.version)
        try:
            return _fetch_from_debian(source, downloads)
        except FetchError as err:
            log.info("%s: %s", source.name, err)
            failures.append(f"Debian source {source.debian.package}={source.debian.version}: "
                            f"{err}")
    if not failures:
        raise FetchError(f"target {source.name!r} has no upstream URL and no Debian source")
    raise FetchError(f"target {source.name!r}: could not obtain its tarball "
                     f"(sha256 {source.sha256}); attempts:\n" +
                     "\n".join(f"  - {f}" for f in failures))


def _cache_name(source: Source, fallback: str) -> str:
    """cache/downloads file name: sha256 prefix plus the upstream file name when a URL gives
    one (whichever source the bytes came from), else fallback."""
    for url in source.urls:
        base = Path(urllib.parse.urlsplit(url).path).name
        # SourceForge-style URLs end in /download; such a name says nothing.
        if ".tar" in base or base.endswith((".tgz", ".tbz2", ".txz")):
            return f"{source.sha256[:16]}-{base}"
    return f"{source.sha256[:16]}-{fallback}"


def _find_cached(source: Source, downloads: Path) -> Path | None:
    """A cached tarball with the expected bytes, or None; a corrupt one is deleted."""
    # Globbing on the hash prefix finds the file whichever source (upstream or Debian) named it.
    for path in sorted(downloads.glob(f"{source.sha256[:16]}-*")):
        got = files.sha256_file(path)
        if got == source.sha256:
            DOWNLOADS.usable(path)   # touched: the last to go when the cache is trimmed
            log.debug("%s: using cached %s", source.name, path)
            return path
        kept = _quarantine(path, got, downloads)
        log.warning("%s: cached %s has sha256 %s, expected %s; moved to %s",
                    source.name, path, got, source.sha256, kept)
    return None


def _quarantine(path: Path, got: str, downloads: Path, name: str | None = None) -> Path:
    """Keep a file whose bytes are not the expected ones where it is never used, named by its
    own sha256, so the user can look at it (a placeholder sha256 in a new target file, a
    re-released tarball, a corrupt mirror) instead of downloading it again."""
    folder = downloads / "quarantine"
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / f"{got[:16]}-{name or path.name}"
    os.replace(path, kept)
    return kept


def _install_verified(source: Source, candidate: Path, downloads: Path, origin: str,
                      fallback_name: str) -> Path:
    """Rename candidate into the cache if its sha256 is the expected one, else refuse."""
    got = files.sha256_file(candidate)
    if got != source.sha256:
        kept = _quarantine(candidate, got, downloads, fallback_name)
        raise FetchError(f"sha256 mismatch for {origin}: the target expects {source.sha256}, "
                         f"the file has {got}; it is kept, unused, as {kept}. If the target's "
                         "sha256 is a placeholder (or you have checked the file), put "
                         f"sha256 = \"{got}\" in the target file")
    final = DOWNLOADS.publish(candidate, downloads / _cache_name(source, fallback_name),
                              downloads.parent)
    log.info("%s: verified and cached %s", source.name, final)
    return final


def _download(source: Source, url: str, downloads: Path, name: str | None = None) -> Path:
    """Download url into a temp file next to the cache, verify it, rename it into place
    (name: the file's own name, when the URL's last part is not it)."""
    request = urllib.request.Request(url, headers={"User-Agent": f"flagsweep/{__version__}"})
    with DOWNLOADS.draft(downloads.parent) as part:
        try:
            with urllib.request.urlopen(request, timeout=URL_TIMEOUT) as response, \
                    open(part, "wb") as out:
                shutil.copyfileobj(response, out, _CHUNK)
        except (OSError, ValueError) as err:  # URLError, HTTPError, timeouts are OSErrors
            raise FetchError(f"download failed: {err}") from err
        base = name or Path(urllib.parse.urlsplit(url).path).name
        return _install_verified(source, part, downloads, url,
                                 base if ".tar" in base else f"{source.name}-{source.version}.tar")


def _fetch_from_debian(source: Source, downloads: Path) -> Path:
    """Download Debian's source package through a private apt tree; cache its orig tarball.

    The recorded version first, then every other version whose orig tarball the index says
    has the recorded sha256, newest first: a target that names a security update
    (1.2-3+deb12u1) that a mirror no longer serves still gets the same bytes from 1.2-3. When
    none of them downloads whole, the orig tarball alone (_orig_alone)."""
    assert source.debian is not None
    with apt_tree(downloads) as (options, update):
        listed = {r.version: r.orig_sha256
                  for r in releases(options, source.debian.package, downloads)}
        versions = [source.debian.version,
                    *(v for v, sha in listed.items()
                      if sha == source.sha256 and v != source.debian.version)]
        failures = []
        for version in versions:
            debian = DebianSource(source.debian.package, version)
            # The download dir lives inside downloads/ so the orig tarball is renamed, not copied.
            with tempfile.TemporaryDirectory(dir=downloads, prefix=".debian-") as workdir:
                try:
                    apt_get_source(debian, options, Path(workdir), update)
                except FetchError as err:
                    failures.append(str(err) if not failures else f"then {version}: {err}")
                    continue
                if version != source.debian.version:
                    log.warning("%s: %s=%s could not be fetched; %s has the same orig tarball",
                                source.name, debian.package, source.debian.version, version)
                orig = pick_orig(debian, Path(workdir))
                return _install_verified(source, orig, downloads,
                                         f"Debian's {orig.name} (expected upstream bytes; "
                                         f"Debian may have repacked it)", orig.name)
        return _orig_alone(source, versions, listed, options, downloads, failures)


def _orig_alone(source: Source, versions: list[str], listed: dict[str, str | None],
                options: list[str], downloads: Path, failures: list[str]) -> Path:
    """The orig tarball without the Debian part (debian.tar.*, diff.gz), which is all a build
    of the upstream source needs: apt-get source fails whole when one of its files is gone
    from the mirror (opus-tools' diff answered 404). Taken only where the Sources index lists
    the orig with the target's sha256, which the downloaded bytes must then match.
    FetchError with every failure when no version's orig can be had either."""
    assert source.debian is not None
    why = next((line.strip() for f in failures for line in f.splitlines()
                if line.strip().startswith("E:")), "apt-get source failed")
    for version in versions:
        debian = DebianSource(source.debian.package, version)
        if listed.get(version) != source.sha256:
            failures.append(f"the orig tarball alone: the Sources index lists "
                            f"{listed.get(version) or 'no orig tarball'} for "
                            f"{debian.package}={version}, not the target's sha256")
            continue
        try:
            uri, name = orig_uri(debian, options, downloads)
            path = _download(source, uri, downloads, name)
        except FetchError as err:
            failures.append(f"the orig tarball alone of {debian.package}={version}: {err}")
            continue
        log.warning("%s: apt-get source %s=%s failed (%s); took its orig tarball %s alone, "
                    "its sha256 the one the Sources index lists", source.name, debian.package,
                    version, why, name)
        return path
    raise FetchError("\n".join(failures))


def prepare(source: Source, *, offline: bool = False, cache: Path | None = None) -> Path:
    """fetch + extract into cache/src/<name>-<version>-<sha256[:12]>/ once; return the tree
    (another strip_components than 1 adds -strip<N> to the name; with source.autoreconf,
    `autoreconf -fi` is run in it, and the name ends -autoreconf: Source.unpacking).

    Extraction goes to a temp dir renamed into place, so an existing tree is always complete
    and a second call just returns it. Trees are shared read-only by all variant builds
    (builds are out-of-tree).
    """
    name = "-".join([source.name, source.version, source.sha256[:12], *source.unpacking])
    tree = SOURCES.entry(name, cache)
    if SOURCES.usable(tree):
        return tree
    tarball = fetch(source, offline=offline, cache=cache)
    with SOURCES.draft(cache, folder=True) as draft:
        extract(tarball, draft, source.strip_components)
        log.info("%s: extracted %s into %s", source.name, tarball.name, tree)
        if source.autoreconf:
            autoreconf(draft, source.name)
        return SOURCES.publish(draft, tree, cache)


AUTORECONF_TIMEOUT = 900


def autoreconf(tree: Path, name: str) -> None:
    """`autoreconf -fi` in an unpacked tree, as Debian's dh_autoreconf runs it: configure,
    the Makefile.in files and libtool's scripts made from configure.ac by this machine's
    autotools. The project's own build system, trusted as its Makefile is, run in the build's
    written environment; FetchError with its last lines when it fails."""
    argv = ["autoreconf", "-fi"]
    try:
        done = process.run(argv, cwd=tree, env=environment.clean(), timeout=AUTORECONF_TIMEOUT,
                           guard=True)
    except FileNotFoundError:
        raise FetchError(f"target {name!r}: [build] autoreconf needs autoreconf, which is not "
                         "installed: apt-get install autoconf automake libtool (as root)") \
            from None
    except process.TimeoutExpired:
        raise FetchError(f"target {name!r}: autoreconf -fi ran over {AUTORECONF_TIMEOUT} s") \
            from None
    if not done.ok:
        raise FetchError(f"target {name!r}: autoreconf -fi failed (exit {done.returncode}) in "
                         f"its unpacked source:\n{done.tail(8)}")
    shutil.rmtree(tree / "autom4te.cache", ignore_errors=True)


def use_source_dir(path: Path) -> Path:
    """--source-dir for air-gapped machines: check path is a directory, return it resolved."""
    path = Path(path).expanduser()
    if not path.exists():
        raise FetchError(f"--source-dir {path}: no such file or directory")
    if not path.is_dir():
        raise FetchError(f"--source-dir {path}: not a directory (expected an unpacked "
                         f"source tree)")
    return path.resolve()


def dependencies(target: Target, *, offline: bool = False,
                 cache: Path | None = None) -> list[Dependency]:
    """Each of the target's dependencies with its source tree: a local folder, or its tarball
    fetched, verified and unpacked as the program's is (dependency.py builds them)."""
    found = []
    for d in target.spec.dependency:
        tarball = target.tarball(d)
        tree = (target.local_source(d) if tarball is None
                else prepare(tarball, offline=offline, cache=cache))
        if d.system == "autotools" and not (tree / "configure").is_file():
            raise FetchError(f"{target.path}: dependency {d.name!r}: its source {tree} has no "
                             "configure script, which an autotools dependency is built with "
                             "(a source without one needs its autoreconf run first)")
        found.append(Dependency(name=d.name, version=d.version, system=d.system, source=tree,
                                source_id=build_cache.source_id(tarball and tarball.sha256, tree),
                                configure_args=d.configure_args, make_args=d.make_args,
                                flags_at=d.flags_at))
    return found
