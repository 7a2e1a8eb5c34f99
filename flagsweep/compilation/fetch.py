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
import re
import shutil
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from flagsweep import __version__, files, process
from flagsweep.caches import DOWNLOADS, SOURCES
from flagsweep.compilation.debian import (apt_get_source, apt_tree, file_uri, orig_uri,
                                          pick_orig, releases)
from flagsweep.compilation import cache as build_cache, patches
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
                      fallback_name: str, key: str = "sha256") -> Path:
    """Rename candidate into the cache if its sha256 is the expected one, else refuse
    (key: the target file's key that holds the expected sha256)."""
    got = files.sha256_file(candidate)
    if got != source.sha256:
        kept = _quarantine(candidate, got, downloads, fallback_name)
        raise FetchError(f"sha256 mismatch for {origin}: the target expects {source.sha256}, "
                         f"the file has {got}; it is kept, unused, as {kept}. If the target's "
                         f"{key} is a placeholder (or you have checked the file), put "
                         f"{key} = \"{got}\" in the target file")
    final = DOWNLOADS.publish(candidate, downloads / _cache_name(source, fallback_name),
                              downloads.parent)
    log.info("%s: verified and cached %s", source.name, final)
    return final


def _download(source: Source, url: str, downloads: Path, name: str | None = None,
              key: str = "sha256") -> Path:
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
                                 base if ".tar" in base else f"{source.name}-{source.version}.tar",
                                 key)


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


def debian_part(source: Source, *, offline: bool = False, cache: Path | None = None) -> Path:
    """The Debian part (debian.tar.*) whose sha256 is source.patches, verified like the orig:
    from the cache, else from the address the mirror's index lists it at (`apt-get source
    --print-uris`, no other file downloaded). FetchError naming the package when it cannot be
    had."""
    assert source.patches is not None and source.debian is not None
    debian = source.debian
    part = Source(name=source.name, version=source.version, urls=(), sha256=source.patches,
                  debian=debian)
    downloads = DOWNLOADS.folder(cache)
    cached = _find_cached(part, downloads)
    if cached is not None:
        return cached
    what = f"target {source.name!r}: the Debian part of {debian.package}={debian.version}"
    if offline:
        raise FetchError(f"{what} (debian_patches {source.patches}) is not in the cache "
                         f"{downloads}, and --offline fetches nothing")
    downloads.mkdir(parents=True, exist_ok=True)
    with apt_tree(downloads) as (options, _):
        try:
            uri, name = file_uri(debian, options, downloads,
                                 f"{debian.version.split(':', 1)[-1]}.debian")
            return _download(part, uri, downloads, name, key="debian_patches")
        except FetchError as err:
            raise FetchError(f"{what}, which holds its patches, could not be had: {err}") \
                from None


def prepare(source: Source, *, offline: bool = False, cache: Path | None = None) -> Path:
    """fetch + extract into cache/src/<name>-<version>-<sha256[:12]>/ once; return the tree
    (another strip_components than 1 adds -strip<N> to the name; with source.patches,
    Debian's patches are applied, under -debian-<its sha256[:12]>; with source.autoreconf,
    `autoreconf -fi` is run in it after them, and the name ends -autoreconf: Source.unpacking).

    Extraction goes to a temp dir renamed into place, so an existing tree is always complete
    and a second call just returns it. Trees are shared read-only by all variant builds
    (builds are out-of-tree).
    """
    name = "-".join([source.name, source.version, source.sha256[:12], *source.unpacking])
    tree = SOURCES.entry(name, cache)
    if SOURCES.usable(tree):
        return tree
    tarball = fetch(source, offline=offline, cache=cache)
    part = debian_part(source, offline=offline, cache=cache) if source.patches else None
    with SOURCES.draft(cache, folder=True) as draft:
        extract(tarball, draft, source.strip_components)
        log.info("%s: extracted %s into %s", source.name, tarball.name, tree)
        if part is not None and source.debian is not None:
            applied = patches.apply(part, draft, source.debian.package)
            log.info("%s: applied Debian's %d patch(es) from %s", source.name, len(applied),
                     part.name)
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
    undefined = _UNDEFINED.findall(done.stdout + done.stderr)
    if not done.ok and not undefined:
        raise FetchError(f"target {name!r}: autoreconf -fi failed (exit {done.returncode}) in "
                         f"its unpacked source:\n{done.tail(8)}")
    shutil.rmtree(tree / "autom4te.cache", ignore_errors=True)
    configure = tree / "configure"
    left = undefined or (unexpanded(configure.read_text(errors="replace"))
                         if configure.is_file() else [])
    if left:
        raise FetchError(f"target {name!r}: autoreconf -fi left the macro {left[0]} unexpanded "
                         f"in configure{_shipped_by(left[0])}; the configure it makes would "
                         "run it as a command")


# autoconf's own word for a macro name it found no definition of (an AC_ or AM_ one)
_UNDEFINED = re.compile(r"possibly undefined macro: ([A-Za-z0-9_]+)")
# an unexpanded macro in a generated configure: its name, alone on a line (with its arguments)
_ALONE = re.compile(r"[ \t]*((?:AX|AC|AM)_[A-Z0-9_]+)(?:\(.*)?[ \t]*")
# a shell string over lines ("ac_subst_vars='...'" lists AM_V and its kin one a line), and a
# here-document (a test program's text, "cat ... <<_ACEOF >conftest.c")
_QUOTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*='[^']*")
_HEREDOC = re.compile(r"<<-?[ \t]*\\?[\"']?([A-Za-z_][A-Za-z0-9_]*)")
# the Debian package that ships a family of macros that autoconf and automake do not
MACRO_PACKAGES = {"AX_": "autoconf-archive"}


def unexpanded(configure: str) -> list[str]:
    """The macro names a generated configure holds alone on a line, outside its quoted
    strings, in order: the macros aclocal found no definition of (AX_CC_FOR_BUILD without
    autoconf-archive), which autoconf leaves as they are without a word."""
    found: list[str] = []
    quoted, until = False, None
    for line in configure.split("\n"):
        if quoted or until is not None:
            quoted = quoted and "'" not in line
            until = None if line.strip() == until else until
        elif _QUOTED.fullmatch(line):
            quoted = True
        elif heredoc := _HEREDOC.search(line):
            until = heredoc.group(1)
        elif (alone := _ALONE.fullmatch(line)) and alone.group(1) not in found:
            found.append(alone.group(1))
    return found


def _shipped_by(macro: str) -> str:
    """Where a missing macro is had, in the words of a message."""
    package = next((p for prefix, p in MACRO_PACKAGES.items() if macro.startswith(prefix)), None)
    if package is None:
        return " (no definition of it was found: autoconf's or automake's own, or the project's m4)"
    return f" (no definition of it was found: Debian's package {package} ships it, apt-get install {package})"


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
                                source_id=build_cache.source_id(tarball and tarball.identity, tree),
                                configure_args=d.configure_args, make_args=d.make_args,
                                flags_at=d.flags_at))
    return found
