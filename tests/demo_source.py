"""A source package as Debian's index would list it, its orig tarball already in flagsweep's
cache: what `flagsweep new` fetches in the tests, with nothing downloaded."""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from pathlib import Path

from flagsweep import files
from flagsweep.compilation import debian


def tarball(path: Path, top: str, members: dict[str, str]) -> Path:
    """A .tar.gz of members, each under the folder top ("": at the tarball's top)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def release_of(tmp_path, monkeypatch, members: dict[str, str],
               top: str = "demo-1.0") -> debian.DebianRelease:
    """Debian's index as it would list a source package 'demo-src' 1.0-2 of these files (in
    the folder top of its orig tarball), the tarball already in the cache (so nothing is
    downloaded)."""
    orig = tarball(tmp_path / "demo-src_1.0.orig.tar.gz", top, members)
    digest = hashlib.sha256(orig.read_bytes()).hexdigest()
    downloads = files.cache_dir() / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    shutil.copy(orig, downloads / f"{digest[:16]}-{orig.name}")
    release = debian.DebianRelease("demo-src", "1.0-2", orig.name, digest)
    older = debian.DebianRelease("demo-src", "0.9-1", "demo-src_0.9.orig.tar.gz", "0" * 64)
    monkeypatch.setattr(debian, "debian_releases", lambda package, cache=None: [release, older])
    return release
