"""Obtain a target's source tarball, verify it, and unpack it once into a shared cache.

Order of attempts: the cache (re-verified), each upstream URL, then Debian's source package
through a private apt tree. Every byte that lands in the cache has matched the target's
sha256; nothing half-downloaded or unverified is ever left there under its final name.

The Debian fallback exists because upstream sites (GNU, SourceForge) are often unreachable
from build machines that can still reach a Debian mirror. It never edits the system's apt
configuration: it derives `deb-src` entries from the system's Debian `deb` entries into a
private sources file, with private lists and cache directories.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import logging
import os
import re
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from flagsweep import __version__, files, process
from flagsweep.errors import FetchError
from flagsweep.caches import APT, DOWNLOADS, SOURCES
from flagsweep.experiment.source import DebianSource, Source
from flagsweep.host import environment

log = logging.getLogger("flagsweep.compilation.fetch")

URL_TIMEOUT = 20  # seconds without data before an upstream URL counts as failed
APT_TIMEOUT = 900  # seconds for one apt-get run (update fetches ~10 MB of Sources indexes)
APT_GET = "apt-get"
APT_CACHE = "apt-cache"
APT_ETC = Path("/etc/apt")
_CHUNK = 1 << 20


# --- fetching ------------------------------------------------------------------------------

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


def _download(source: Source, url: str, downloads: Path) -> Path:
    """Download url into a temp file next to the cache, verify it, rename it into place."""
    request = urllib.request.Request(url, headers={"User-Agent": f"flagsweep/{__version__}"})
    with DOWNLOADS.draft(downloads.parent) as part:
        try:
            with urllib.request.urlopen(request, timeout=URL_TIMEOUT) as response, \
                    open(part, "wb") as out:
                shutil.copyfileobj(response, out, _CHUNK)
        except (OSError, ValueError) as err:  # URLError, HTTPError, timeouts are OSErrors
            raise FetchError(f"download failed: {err}") from err
        base = Path(urllib.parse.urlsplit(url).path).name
        return _install_verified(source, part, downloads, url,
                                 base if ".tar" in base else f"{source.name}-{source.version}.tar")


# --- the Debian fallback -------------------------------------------------------------------

@dataclass(frozen=True)
class DebianRelease:
    """One version of a source package as the archive's Sources index lists it."""

    package: str
    version: str
    orig: str | None           # the orig tarball's file name (None: a native package)
    orig_sha256: str | None


def debian_releases(package: str, cache: Path | None = None) -> list[DebianRelease]:
    """Every version of a Debian source package the system's Debian mirrors list, newest
    first, each with its orig tarball's name and sha256 (from the Sources index, before any
    download). A binary package's name finds the source package that builds it."""
    downloads = DOWNLOADS.folder(cache)
    downloads.mkdir(parents=True, exist_ok=True)
    with _apt_tree(downloads) as (options, _):
        return _releases(options, package, downloads, by_binary=True)


def _fetch_from_debian(source: Source, downloads: Path) -> Path:
    """Download Debian's source package through a private apt tree; cache its orig tarball.

    The recorded version first, then every other version whose orig tarball the index says
    has the recorded sha256, newest first: a target that names a security update
    (1.2-3+deb12u1) that a mirror no longer serves still gets the same bytes from 1.2-3."""
    assert source.debian is not None
    with _apt_tree(downloads) as (options, update):
        same = [r.version for r in _releases(options, source.debian.package, downloads)
                if r.orig_sha256 == source.sha256 and r.version != source.debian.version]
        failures = []
        for version in [source.debian.version, *same]:
            debian = DebianSource(source.debian.package, version)
            # The download dir lives inside downloads/ so the orig tarball is renamed, not copied.
            with tempfile.TemporaryDirectory(dir=downloads, prefix=".debian-") as workdir:
                try:
                    _apt_get_source(debian, options, Path(workdir), update)
                except FetchError as err:
                    failures.append(str(err) if not failures else f"then {version}: {err}")
                    continue
                if version != source.debian.version:
                    log.warning("%s: %s=%s could not be fetched; %s has the same orig tarball",
                                source.name, debian.package, source.debian.version, version)
                orig = _pick_orig(debian, Path(workdir))
                return _install_verified(source, orig, downloads,
                                         f"Debian's {orig.name} (expected upstream bytes; "
                                         f"Debian may have repacked it)", orig.name)
        raise FetchError("\n".join(failures))


@contextlib.contextmanager
def _apt_tree(downloads: Path) -> Iterator[tuple[list[str], process.Result]]:
    """The private apt tree, locked and updated: its apt options and the update's result."""
    apt_root = APT.folder(downloads.parent)
    sources_text = private_sources(APT_ETC)
    if not sources_text:
        raise FetchError(f"no Debian entries found in {APT_ETC}/sources.list or "
                         f"{APT_ETC}/sources.list.d to derive deb-src entries from")
    with _locked(apt_root):
        options = _prepare_apt_tree(apt_root, sources_text)
        update = _run_apt(options, ["update"], apt_root, environment.apt())
        # A failed update may still have refreshed the lists that matter (one third-party
        # mirror without sources is enough to fail it), so go on and let `source` decide.
        if not update.ok:
            log.info("apt-get update failed (exit %d), trying apt-get source anyway:\n%s",
                     update.returncode, update.tail(5))
        yield options, update


def _releases(options: list[str], package: str, workdir: Path,
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
        orig = next(((name, sha) for sha, _, name in
                     (line.split() for line in fields.get("Checksums-Sha256", "").splitlines()
                      if len(line.split()) == 3)
                     if ".orig.tar." in name), (None, None))
        found.setdefault(fields["Version"],
                         DebianRelease(fields["Package"], fields["Version"], *orig))
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
            fields[key] += line.strip() + "\n"
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


def _apt_get_source(debian: DebianSource, options: list[str], workdir: Path,
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


def _pick_orig(debian: DebianSource, workdir: Path) -> Path:
    """The <package>_<upstream>.orig.tar.* file among what apt-get source downloaded."""
    pattern = re.compile(re.escape(f"{debian.package}_{debian.upstream_version}.orig.tar.")
                         + r"(gz|xz|bz2|lzma|zst)")
    files = sorted(p.name for p in workdir.iterdir())
    for name in files:
        if pattern.fullmatch(name):
            return workdir / name
    raise FetchError(f"apt-get source downloaded no {debian.package}_"
                     f"{debian.upstream_version}.orig.tar.* (got: {', '.join(files) or 'nothing'})")


# --- the private sources list --------------------------------------------------------------

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


# --- extraction ----------------------------------------------------------------------------

# tarfile's extraction filters arrived in 3.11.4; Debian 12's python3 is 3.11.2.
_HAS_TAR_FILTERS = hasattr(tarfile, "data_filter")

# What a tarball may unpack to (docs/targets.md): a 621-byte tarball held a 10 GB sparse file
# and a 14 MB one 3.1 GB of zeros. Real source trees are far below these (gcc's is ~1 GB).
UNPACK_LIMITS = {"FLAGSWEEP_UNPACK_FILE_MB": 1024.0,     # one member, by its unpacked size
                 "FLAGSWEEP_UNPACK_TOTAL_MB": 8192.0,    # every member together
                 "FLAGSWEEP_UNPACK_RATIO": 100.0}        # unpacked bytes per tarball byte
# Below this many unpacked megabytes the ratio does not matter: a small file of zeros is no bomb.
RATIO_FLOOR_MB = 64


def unpack_limits() -> dict[str, float]:
    """The limits, each from its environment variable when set."""
    limits = {}
    for name, default in UNPACK_LIMITS.items():
        raw = os.environ.get(name)
        try:
            value = float(raw) if raw else default
        except ValueError:
            value = float("nan")
        if not 0 < value < float("inf"):
            raise FetchError(f"{name}={raw!r}: expected a number above 0 "
                             f"(default {default:g})")
        limits[name] = value
    return limits


def file_limit() -> tuple[int, str]:
    """The most bytes one file flagsweep takes in may hold (a tarball's member, a user's
    input for `new`), and the words a refusal names it by."""
    mb = unpack_limits()["FLAGSWEEP_UNPACK_FILE_MB"]
    return round(mb * 1e6), _file_limit(mb)


def _file_limit(mb: float) -> str:
    return f"the limit of {mb:g} MB for one file (FLAGSWEEP_UNPACK_FILE_MB)"


class _Budget:
    """The limits, checked member by member as each header is read: a member beyond them is
    refused before its data is unpacked, so refusing a bomb costs no more than the limits."""

    def __init__(self, tarball: Path):
        self.tarball, self.limits = tarball, unpack_limits()
        try:
            self.packed = max(1, tarball.stat().st_size)
        except OSError:
            self.packed = 1          # tarfile.open names what is wrong with it
        self.total = 0

    def take(self, member: tarfile.TarInfo) -> None:
        if not member.isreg():
            return
        self.total += member.size
        file_mb = self.limits["FLAGSWEEP_UNPACK_FILE_MB"]
        total_mb = self.limits["FLAGSWEEP_UNPACK_TOTAL_MB"]
        ratio = self.limits["FLAGSWEEP_UNPACK_RATIO"]
        mb = files.megabytes
        what = f"{mb(member.size)}{' (a sparse file)' if member.sparse is not None else ''}"
        if member.size > file_mb * 1e6:
            self._refuse(member, f"it unpacks to {what}, beyond {_file_limit(file_mb)}")
        if self.total > total_mb * 1e6:
            self._refuse(member, f"it unpacks to {what}, which brings the tree to "
                                 f"{mb(self.total)}, beyond the limit of {total_mb:g} MB "
                                 "(FLAGSWEEP_UNPACK_TOTAL_MB)")
        if self.total > RATIO_FLOOR_MB * 1e6 and self.total > ratio * self.packed:
            self._refuse(member, f"it unpacks to {what}, which brings the tree to "
                                 f"{mb(self.total)} from a {mb(self.packed)} tarball, "
                                 f"{self.total / self.packed:.0f} times its size, beyond the "
                                 f"limit of {ratio:g} (FLAGSWEEP_UNPACK_RATIO)")

    def _refuse(self, member: tarfile.TarInfo, why: str) -> None:
        raise FetchError(f"{self.tarball}: refusing member {member.name!r}: {why}; nothing "
                         "was unpacked. A source tree this large is not expected: if it is "
                         "right, raise the limit (docs/targets.md)")


def extract(tarball: Path, dest: Path, strip_components: int = 1) -> Path:
    """Safely extract tarball (.tar.gz/.xz/.bz2, detected from content) into dest and return it.

    dest must be empty or absent. Every member is checked before anything is written, so a
    refused tarball leaves no partial tree: absolute names, '..' components, links leading
    outside dest, and device files raise FetchError. Each member is checked again against the
    tree as extracted so far, which catches links that only escape through earlier links.
    Modes are tamed as tarfile.data_filter does; mtimes are kept (autotools trees need them,
    or make tries to re-run automake). A member beyond the unpack limits (a file too large,
    sparse or not, a tree too large, or too many times the tarball's size) is refused too.
    """
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FetchError(f"cannot extract {tarball} into {dest}: it exists and is not an "
                         f"empty directory")
    budget = _Budget(tarball)
    existed = dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    member_filter = _member_filter(tarball, strip_components)
    try:
        with tarfile.open(tarball, "r:*") as tar:
            tar.errorlevel = 2  # every extraction error raises; none is only logged
            for member in tar:  # header by header: a member is judged before its data is read
                budget.take(member)
                member_filter(member, str(dest))
            if _HAS_TAR_FILTERS:
                tar.extractall(dest, filter=member_filter)
            else:
                _extract_one_by_one(tar, dest, member_filter)
    except BaseException as err:
        shutil.rmtree(dest, ignore_errors=True)
        if existed:
            dest.mkdir()
        if isinstance(err, (tarfile.TarError, OSError, EOFError)):
            raise FetchError(f"cannot extract {tarball}: {err}") from err
        raise
    return dest


def _member_filter(tarball: Path, strip_components: int):
    """The extraction filter: refuse unsafe members, strip leading components."""
    def member_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        _refuse_unsafe_name(tarball, member.name, member.name)
        name = _strip(member.name, strip_components)
        if name is None:
            return None  # the top directory itself: its contents are what we want
        stripped = copy.copy(member)
        stripped.name = name
        if member.islnk():
            # Hard link targets are archive member names, so they lose the same prefix.
            _refuse_unsafe_name(tarball, member.name, member.linkname)
            target = _strip(member.linkname, strip_components)
            if target is None:
                raise FetchError(f"{tarball}: hard link {member.name!r} points at "
                                 f"{member.linkname!r}, which strip_components removes")
            stripped.linkname = target
        try:
            if _HAS_TAR_FILTERS:
                return tarfile.data_filter(stripped, dest)
            return _legacy_data_filter(stripped, dest)
        except (tarfile.TarError, ValueError) as err:  # FilterError is a TarError
            raise FetchError(f"{tarball}: refusing member {member.name!r}: {err}") from err
    return member_filter


def _refuse_unsafe_name(tarball: Path, member: str, path: str) -> None:
    # data_filter would silently strip a leading '/'; a tarball with one is not to be trusted.
    if path.startswith("/"):
        raise FetchError(f"{tarball}: refusing member {member!r}: {path!r} is an absolute path")
    if ".." in path.split("/"):
        raise FetchError(f"{tarball}: refusing member {member!r}: {path!r} contains '..'")


def _strip(name: str, count: int) -> str | None:
    """name without its first count components ('.' components do not count, as in
    './pkg-1.0/configure'); None when nothing is left."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    rest = parts[count:]
    return "/".join(rest) if rest else None


def _legacy_data_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """The checks of tarfile.data_filter, for Pythons that lack it (member is our copy)."""
    root = os.path.realpath(dest)

    def refuse_outside(path: str, what: str) -> None:
        resolved = os.path.realpath(os.path.join(root, path))
        if os.path.commonpath([resolved, root]) != root:
            raise ValueError(f"{what} {resolved!r} is outside the destination")

    if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
        raise ValueError(f"{member.name!r} is a special file")
    refuse_outside(member.name, "it would be extracted to")
    if member.issym() or member.islnk():
        if os.path.isabs(member.linkname):
            raise ValueError(f"{member.name!r} is a link to an absolute path")
        base = os.path.dirname(member.name) if member.issym() else ""
        refuse_outside(os.path.join(base, member.linkname), "it would link to")
    # As data_filter: no setuid/sticky or group/other write bits, owner can read and write,
    # and files belong to whoever extracts them.
    member.mode = (member.mode & 0o755) | (0o600 if member.isreg() else 0)
    member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
    return member


def _extract_one_by_one(tar: tarfile.TarFile, dest: Path, member_filter) -> None:
    """extractall(filter=...) for Pythons without filters: each member is checked against
    the tree extracted so far, and directory mtimes are set last, as extractall does, so
    that writing their contents does not bump them."""
    directories = []
    for member in tar.getmembers():
        safe = member_filter(member, str(dest))
        if safe is None:
            continue
        tar.extract(safe, dest, set_attrs=not safe.isdir())
        if safe.isdir():
            directories.append(safe)
    for directory in sorted(directories, key=lambda d: d.name, reverse=True):
        os.utime(dest / directory.name, (directory.mtime, directory.mtime))


# --- source trees --------------------------------------------------------------------------

def prepare(source: Source, *, offline: bool = False, cache: Path | None = None) -> Path:
    """fetch + extract into cache/src/<name>-<version>-<sha256[:12]>/ once; return the tree.

    Extraction goes to a temp dir renamed into place, so an existing tree is always complete
    and a second call just returns it. Trees are shared read-only by all variant builds
    (builds are out-of-tree).
    """
    tree = SOURCES.entry(f"{source.name}-{source.version}-{source.sha256[:12]}", cache)
    if SOURCES.usable(tree):
        return tree
    tarball = fetch(source, offline=offline, cache=cache)
    with SOURCES.draft(cache, folder=True) as draft:
        extract(tarball, draft, source.strip_components)
        log.info("%s: extracted %s into %s", source.name, tarball.name, tree)
        return SOURCES.publish(draft, tree, cache)


def use_source_dir(path: Path) -> Path:
    """--source-dir for air-gapped machines: check path is a directory, return it resolved."""
    path = Path(path).expanduser()
    if not path.exists():
        raise FetchError(f"--source-dir {path}: no such file or directory")
    if not path.is_dir():
        raise FetchError(f"--source-dir {path}: not a directory (expected an unpacked "
                         f"source tree)")
    return path.resolve()
