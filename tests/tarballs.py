"""Tarballs made in a test and put in a cache's downloads, as if fetched."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path


def cached(cache: Path, name: str, members: dict[str, str], top: str = "",
           mode: int = 0o644) -> str:
    """A gzip tarball of these files (each under top) in cache/downloads named like a fetched
    `name`; its sha256."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        for path, text in members.items():
            info = tarfile.TarInfo(top + path)
            info.size, info.mode = len(text.encode()), mode
            tar.addfile(info, io.BytesIO(text.encode()))
    digest = hashlib.sha256(data.getvalue()).hexdigest()
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    (downloads / f"{digest[:16]}-{name}").write_bytes(data.getvalue())
    return digest
