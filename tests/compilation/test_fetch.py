"""Tests for flagsweep.compilation.fetch: checksums, the cache, safe extraction, the Debian fallback.

Everything runs offline (file:// URLs, a loopback HTTP server, a fake apt-get) except the
one test marked `network`, which really fetches gzip's Debian source package.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from flagsweep import files
from flagsweep.compilation import debian, fetch, sources_list
from flagsweep.compilation import tarball as tarball_module
from flagsweep.compilation.tarball import extract
from flagsweep.errors import ConfigError, FetchError
from flagsweep.experiment.source import DebianSource, Source

MTIME = 1_500_000_000  # an mtime far from "now", so preserving it is visible
GZIP_112_SHA256 = "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956"


# --- helpers -------------------------------------------------------------------------------

def make_tarball(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    """Write a .tar.gz of members: (name, content) pairs for files, or raw TarInfo."""
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
                continue
            name, data = member
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def entry(name: str, kind: bytes, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mtime = kind, linkname, MTIME
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    return info


def good_tarball(path: Path) -> Path:
    return make_tarball(path, [entry("pkg-1.0", tarfile.DIRTYPE),
                               ("pkg-1.0/configure", b"#!/bin/sh\n"),
                               entry("pkg-1.0/src", tarfile.DIRTYPE),
                               ("pkg-1.0/src/main.c", b"int main(void){return 0;}\n"),
                               entry("pkg-1.0/src/link.c", tarfile.SYMTYPE, "main.c")])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_for(url: str, digest: str, debian: DebianSource | None = None) -> Source:
    return Source(name="pkg", version="1.0", urls=(url,) if url else (), sha256=digest,
                  debian=debian)


def cache_files(cache: Path) -> list[str]:
    """Every file under cache/downloads, hidden temp files included."""
    downloads = cache / "downloads"
    return sorted(str(p.relative_to(downloads)) for p in downloads.rglob("*") if p.is_file()) \
        if downloads.exists() else []


@pytest.fixture
def http_dir(tmp_path):
    """A loopback HTTP server over a directory; yields (directory, base URL)."""
    root = tmp_path / "served"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


# --- Source and cache_dir ------------------------------------------------------------------

def test_source_rejects_malformed_sha256():
    with pytest.raises(ConfigError, match="sha256"):
        source_for("file:///x.tar.gz", "ABC")


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLAGSWEEP_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert files.cache_dir() == tmp_path / "home" / ".cache" / "flagsweep"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert files.cache_dir() == tmp_path / "xdg" / "flagsweep"
    monkeypatch.setenv("FLAGSWEEP_CACHE", str(tmp_path / "fs"))
    assert files.cache_dir() == tmp_path / "fs"


def test_debian_upstream_version():
    assert DebianSource("lame", "3.100-6").upstream_version == "3.100"
    assert DebianSource("x", "1:2.0-1-3").upstream_version == "2.0-1"
    assert DebianSource("x", "7.1").upstream_version == "7.1"


# --- fetch ---------------------------------------------------------------------------------

def test_wrong_sha256_is_refused_and_nothing_cached(tmp_path):
    tarball = good_tarball(tmp_path / "pkg-1.0.tar.gz")
    wrong = "0" * 64
    cache = tmp_path / "cache"
    with pytest.raises(FetchError) as err:
        fetch.fetch(source_for(tarball.as_uri(), wrong), cache=cache)
    message = str(err.value)
    got = sha256(tarball)
    kept = cache / "downloads" / "quarantine" / f"{got[:16]}-pkg-1.0.tar.gz"
    assert message == (f"target 'pkg': could not obtain its tarball (sha256 {wrong}); attempts:\n"
                       f"  - {tarball.as_uri()}: sha256 mismatch for {tarball.as_uri()}: the "
                       f"target expects {wrong}, the file has {got}; it is kept, unused, as "
                       f"{kept}. If the target's sha256 is a placeholder (or you have checked "
                       f'the file), put sha256 = "{got}" in the target file')
    # Nothing unverified is cached; the download is kept aside, byte for byte, to look at.
    assert cache_files(cache) == [f"quarantine/{kept.name}"]
    assert kept.read_bytes() == tarball.read_bytes()


def test_download_then_cached_without_network(tmp_path, http_dir):
    served, base = http_dir
    tarball = good_tarball(served / "pkg-1.0.tar.gz")
    digest = sha256(tarball)
    source = source_for(f"{base}/pkg-1.0.tar.gz", digest)
    cache = tmp_path / "cache"

    first = fetch.fetch(source, cache=cache)
    assert first == cache / "downloads" / f"{digest[:16]}-pkg-1.0.tar.gz"
    assert sha256(first) == digest
    assert cache_files(cache) == [first.name]  # no temp file left behind

    tarball.unlink()  # a second download would now fail (404)
    assert fetch.fetch(source, cache=cache) == first
    assert fetch.fetch(source, cache=cache, offline=True) == first


def test_http_error_is_reported_with_url(tmp_path, http_dir):
    _, base = http_dir
    url = f"{base}/missing.tar.gz"
    with pytest.raises(FetchError, match="404") as err:
        fetch.fetch(source_for(url, "1" * 64), cache=tmp_path / "cache")
    assert url in str(err.value)
    assert cache_files(tmp_path / "cache") == []


def test_second_url_used_when_first_fails(tmp_path):
    tarball = good_tarball(tmp_path / "pkg-1.0.tar.gz")
    source = Source(name="pkg", version="1.0", sha256=sha256(tarball), debian=None,
                    urls=((tmp_path / "nope.tar.gz").as_uri(), tarball.as_uri()))
    assert sha256(fetch.fetch(source, cache=tmp_path / "cache")) == sha256(tarball)


def test_offline_with_empty_cache(tmp_path):
    source = source_for("file:///nonexistent/pkg-1.0.tar.gz", "2" * 64)
    with pytest.raises(FetchError, match="offline"):
        fetch.fetch(source, offline=True, cache=tmp_path / "cache")


def test_corrupt_cached_file_is_replaced(tmp_path):
    tarball = good_tarball(tmp_path / "pkg-1.0.tar.gz")
    source = source_for(tarball.as_uri(), sha256(tarball))
    cached = fetch.fetch(source, cache=tmp_path / "cache")
    cached.write_bytes(b"bit rot")
    assert sha256(fetch.fetch(source, cache=tmp_path / "cache")) == sha256(tarball)
    cached.write_bytes(b"bit rot")
    with pytest.raises(FetchError, match="offline"):
        fetch.fetch(source, cache=tmp_path / "cache", offline=True)
    assert not cached.exists()
    assert (cached.parent / "quarantine" / f"{hashlib.sha256(b'bit rot').hexdigest()[:16]}-"
            f"{cached.name}").read_bytes() == b"bit rot"


def test_no_sources_at_all(tmp_path):
    with pytest.raises(FetchError, match="no upstream URL and no Debian source"):
        fetch.fetch(source_for("", "3" * 64), cache=tmp_path / "cache")


# --- extract and prepare -------------------------------------------------------------------


@pytest.fixture(params=["tarfile-filters", "legacy-checks"], autouse=False)
def tar_filters(request, monkeypatch):
    """Run an extraction test with tarfile's data_filter and with the fallback checks used on
    Pythons older than 3.11.4 (Debian 12's python3 is 3.11.2)."""
    if request.param == "tarfile-filters":
        if not hasattr(tarfile, "data_filter"):
            pytest.skip("this Python's tarfile has no extraction filters")
    else:
        monkeypatch.setattr(tarball_module, "_HAS_TAR_FILTERS", False)

def test_extract_strips_top_dir_and_keeps_mtimes(tmp_path, tar_filters):
    dest = extract(good_tarball(tmp_path / "t.tar.gz"), tmp_path / "out")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == \
        ["configure", "src", "src/link.c", "src/main.c"]
    assert (dest / "src" / "link.c").is_symlink()
    assert (dest / "configure").stat().st_mtime == MTIME
    assert (dest / "src").stat().st_mtime == MTIME  # directories too, despite later writes


def test_extract_strip_zero_and_two(tmp_path, tar_filters):
    tarball = good_tarball(tmp_path / "t.tar.gz")
    assert (extract(tarball, tmp_path / "zero", 0) / "pkg-1.0" / "configure").is_file()
    nested = make_tarball(tmp_path / "n.tar.gz", [entry("pkg-1.0", tarfile.DIRTYPE),
                                                  entry("pkg-1.0/pkg", tarfile.DIRTYPE),
                                                  ("pkg-1.0/pkg/main.c", b"int x;\n"),
                                                  ("pkg-1.0/pkg/sub/a.c", b"int a;\n")])
    two = extract(nested, tmp_path / "two", 2)
    assert sorted(p.relative_to(two).as_posix() for p in two.rglob("*")) == \
        ["main.c", "sub", "sub/a.c"]


# ssdeep's orig: its files at the top, no folder of its own
FLAT = [("configure.ac", b"AC_INIT\n"), entry("src", tarfile.DIRTYPE),
        ("src/main.c", b"int main(void){return 0;}\n")]


@pytest.mark.parametrize("members, strip, why, fits", [
    (FLAT, 1, "member 'configure.ac' would be dropped: nothing of its name is left once its "
              "first part is removed", "do not all sit in one folder: its top holds 2 names "
              "(configure.ac, src): set strip_components = 0"),
    ([("a-1.0/x.c", b"x"), ("b-1.0/x.c", b"y")], 1,
     "members 'a-1.0/x.c' and 'b-1.0/x.c' are in different folders, which it would merge",
     "set strip_components = 0"),
    ([("pkg-1.0/configure", b"#!/bin/sh\n"), ("pkg-1.0/src/main.c", b"int x;\n")], 2,
     "member 'pkg-1.0/configure' would be dropped: nothing of its name is left once its "
     "first 2 parts are removed", "all sit in one folder, pkg-1.0/: set strip_components = 1"),
    ([entry("pkg-1.0", tarfile.DIRTYPE), ("pkg-1.0/configure", b"#!/bin/sh\n"),
      entry("m4", tarfile.DIRTYPE)], 1,
     "folder 'm4' would be dropped: it is not one of the leading folders removed",
     "set strip_components = 0"),
], ids=["file-at-top", "two-top-folders", "strip-too-deep", "empty-folder-at-top"])
def test_a_strip_that_drops_or_merges_members_is_refused_naming_what_fits(
        tmp_path, members, strip, why, fits):
    tarball = make_tarball(tmp_path / "t.tar.gz", members)
    with pytest.raises(FetchError) as e:
        extract(tarball, tmp_path / "out", strip)
    message = str(e.value)
    assert message.startswith(f"{tarball}: refusing strip_components = {strip}: {why}")
    assert "nothing was unpacked" in message and message.endswith(f"{fits} in the target's "
                                                                  "[source]")
    assert "\n" not in message and not (tmp_path / "out").exists()


def test_a_tarball_without_a_top_folder_unpacks_whole_with_strip_zero(tmp_path):
    tarball = make_tarball(tmp_path / "t.tar.gz", FLAT)
    tree = extract(tarball, tmp_path / "out", 0)
    assert sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*")) == \
        ["configure.ac", "src", "src/main.c"]


@pytest.mark.parametrize("members, strip, said", [
    ([entry("pkg-1.0", tarfile.DIRTYPE), ("pkg-1.0/configure", b"x")], 1,
     "its members all sit in one folder, pkg-1.0/"),
    ([("./pkg-1.0/configure", b"x"), ("./pkg-1.0/src/a.c", b"y")], 1,
     "its members all sit in one folder, pkg-1.0/"),
    (FLAT, 0, "its members do not all sit in one folder: its top holds 2 names "
              "(configure.ac, src)"),
    ([("pkg-1.0", b"a file, not a folder")], 0,
     "its members do not all sit in one folder: its top holds 1 name (pkg-1.0)"),
    ([(f"f{i}\n", b"x") for i in range(6)], 0,
     "its members do not all sit in one folder: its top holds 6 names "
     "('f0\\n', 'f1\\n', 'f2\\n', 'f3\\n', ...)"),
], ids=["one-folder", "dot-slash", "flat", "one-file", "unprintable-names"])
def test_the_layout_gives_the_strip_that_unpacks_the_tree_whole(tmp_path, members, strip,
                                                                 said):
    layout = tarball_module.layout(make_tarball(tmp_path / "t.tar.gz", members))
    assert (layout.strip_components, layout.said()) == (strip, said)


def test_a_tree_unpacked_with_another_strip_is_another_tree_in_the_cache(tmp_path):
    tarball = make_tarball(tmp_path / "pkg-1.0.tar.gz", FLAT)
    digest = sha256(tarball)
    wrong = source_for(tarball.as_uri(), digest)
    with pytest.raises(FetchError, match="set strip_components = 0"):
        fetch.prepare(wrong, cache=tmp_path / "cache")
    assert not any((tmp_path / "cache" / "src").iterdir())     # no tree, not even a draft
    right = Source(name="pkg", version="1.0", urls=(tarball.as_uri(),), sha256=digest,
                   debian=None, strip_components=0, autoreconf=False)
    tree = fetch.prepare(right, cache=tmp_path / "cache", offline=True)
    assert tree.name == f"pkg-1.0-{digest[:12]}-strip0" and (tree / "configure.ac").is_file()
    assert (wrong.unpacking, right.unpacking) == ([], ["strip0"])


def test_extract_handles_dot_slash_prefix_and_xz(tmp_path, tar_filters):
    path = tmp_path / "t.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        info = tarfile.TarInfo("./pkg-1.0/README")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    assert (extract(path, tmp_path / "out") / "README").read_bytes() == b"hi"


@pytest.mark.parametrize("members", [
    [("pkg-1.0/../evil", b"x")],
    [("/tmp/evil-absolute", b"x")],
    [entry("pkg-1.0/escape", tarfile.SYMTYPE, "../../outside")],
    [entry("pkg-1.0/abs-link", tarfile.SYMTYPE, "/etc/passwd")],
    [entry("pkg-1.0/hard", tarfile.LNKTYPE, "../etc/passwd")],
    [entry("pkg-1.0/hard", tarfile.LNKTYPE, "/etc/passwd")],
    [entry("pkg-1.0/dev", tarfile.CHRTYPE)],
    [entry("pkg-1.0/fifo", tarfile.FIFOTYPE)],
], ids=["dotdot", "absolute", "symlink-out", "symlink-abs", "hardlink-dotdot",
        "hardlink-abs", "chardev", "fifo"])
def test_extract_refuses_unsafe_members(tmp_path, tar_filters, members):
    tarball = make_tarball(tmp_path / "evil.tar.gz", [("pkg-1.0/ok.c", b"ok")] + members)
    with pytest.raises(FetchError, match="refusing member|outside|special"):
        extract(tarball, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # no partial tree
    assert not (tmp_path / "evil").exists() and not (tmp_path / "outside").exists()


def test_extract_refuses_symlink_then_write_through_it(tmp_path, tar_filters):
    # The classic two-step escape: a link to outside, then a file "inside" that link.
    tarball = make_tarball(tmp_path / "evil.tar.gz", [
        entry("pkg-1.0/dir", tarfile.SYMTYPE, ".."), ("pkg-1.0/dir/evil", b"x")])
    with pytest.raises(FetchError):
        extract(tarball, tmp_path / "out", strip_components=1)
    assert not (tmp_path / "evil").exists()


def test_extract_refuses_escape_through_chained_links(tmp_path, tar_filters):
    # Each link looks inside on its own ("a/.." is lexically dest); only once "a" exists as a
    # link to "." does "b" resolve to dest's parent. The tree built so far must be removed.
    tarball = make_tarball(tmp_path / "evil.tar.gz", [
        entry("pkg-1.0/a", tarfile.SYMTYPE, "."), entry("pkg-1.0/b", tarfile.SYMTYPE, "a/.."),
        ("pkg-1.0/b/evil", b"x")])
    with pytest.raises(FetchError, match="outside"):
        extract(tarball, tmp_path / "out")
    assert not (tmp_path / "evil").exists() and not (tmp_path / "out").exists()


def test_extract_needs_empty_dest(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old").write_text("x")
    with pytest.raises(FetchError, match="not an empty directory"):
        extract(good_tarball(tmp_path / "t.tar.gz"), tmp_path / "out")
    assert (tmp_path / "out" / "old").exists()


def test_extract_refuses_garbage(tmp_path, tar_filters):
    (tmp_path / "t.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(FetchError, match="cannot extract"):
        extract(tmp_path / "t.tar.gz", tmp_path / "out")


def test_prepare_extracts_once(tmp_path):
    tarball = good_tarball(tmp_path / "pkg-1.0.tar.gz")
    digest = sha256(tarball)
    source = source_for(tarball.as_uri(), digest)
    tree = fetch.prepare(source, cache=tmp_path / "cache")
    assert tree == tmp_path / "cache" / "src" / f"pkg-1.0-{digest[:12]}"
    assert (tree / "configure").is_file()
    (tree / "marker").write_text("still the same tree")
    tarball.unlink()
    shutil.rmtree(tmp_path / "cache" / "downloads")
    assert fetch.prepare(source, cache=tmp_path / "cache", offline=True) == tree
    assert (tree / "marker").exists()
    assert [p.name for p in tree.parent.iterdir()] == [tree.name]  # no temp dirs left


def test_use_source_dir(tmp_path):
    assert fetch.use_source_dir(tmp_path / "." / "") == tmp_path.resolve()
    with pytest.raises(FetchError, match="no such"):
        fetch.use_source_dir(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(FetchError, match="not a directory"):
        fetch.use_source_dir(tmp_path / "file")


# --- the private sources list --------------------------------------------------------------

DEB822 = """\
Types: deb
# a comment inside the stanza, as Debian's own images write them
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian
Suites: trixie
Components: main
Enabled: no

Types: deb
URIs: https://thirdparty.example/node_20.x
Suites: nodistro
Components: main
Signed-By: /usr/share/keyrings/nodesource.gpg
"""

ONE_LINE = """\
# comment line
deb http://mirror.example/debian bookworm main non-free-firmware
deb-src http://mirror.example/debian bookworm main non-free-firmware
deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian-security bookworm-security main  # trailing
deb [signed-by=/usr/share/keyrings/docker.gpg] https://thirdparty.example/linux/debian bookworm stable
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
deb https://thirdparty.example/apt cloud-sdk main
"""


def test_deb822_to_deb_src():
    assert sources_list.src_stanzas_from_deb822(DEB822) == [
        {"Types": "deb-src", "URIs": "http://mirror.example/debian",
         "Suites": "bookworm bookworm-updates", "Components": "main contrib",
         "Signed-By": "/usr/share/keyrings/debian-archive-keyring.gpg"},
        {"Types": "deb-src", "URIs": "http://mirror.example/debian-security",
         "Suites": "bookworm-security", "Components": "main",
         "Signed-By": "/usr/share/keyrings/debian-archive-keyring.gpg"},
    ]


def test_deb822_inline_key_kept():
    text = ("Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n"
            "Components: main\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n"
            " abc\n -----END PGP PUBLIC KEY BLOCK-----\n")
    [stanza] = sources_list.src_stanzas_from_deb822(text)
    rendered = sources_list.render_deb822([stanza])
    assert "Signed-By: \n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n" in rendered
    assert sources_list.src_stanzas_from_deb822(rendered) == [stanza]


def test_one_line_to_deb_src():
    stanzas = sources_list.src_stanzas_from_one_line(ONE_LINE)
    assert stanzas == [
        {"Types": "deb-src", "URIs": "http://mirror.example/debian", "Suites": "bookworm",
         "Components": "main non-free-firmware"},
        {"Types": "deb-src", "URIs": "http://mirror.example/debian", "Suites": "bookworm",
         "Components": "main non-free-firmware"},
        {"Types": "deb-src", "URIs": "http://mirror.example/debian-security",
         "Suites": "bookworm-security", "Components": "main",
         "Architectures": "amd64 arm64",
         "Signed-By": "/usr/share/keyrings/debian-archive-keyring.gpg"},
    ]
    # The deb and deb-src lines for the same archive become one entry.
    assert sources_list.render_deb822(stanzas).count("Suites: bookworm\n") == 1


def test_private_sources_reads_the_system_layout(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(ONE_LINE)
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    (tmp_path / "sources.list.d" / "old.list.disabled-by-admin").write_text(
        "deb http://mirror.example/debian buster main\n")
    (tmp_path / "sources.list.d" / "x.disabled.sources").write_text(
        DEB822.replace("bookworm", "bullseye"))
    text = sources_list.private_sources(tmp_path)
    assert "Types: deb\n" not in text and "buster" not in text and "bullseye" not in text
    assert "thirdparty" not in text and "cdrom" not in text
    assert text.count("Types: deb-src") == 4
    assert sources_list.private_sources(tmp_path / "nothing-here") == ""


# --- the Debian fallback, with a fake apt-get ----------------------------------------------

FAKE_APT_GET = """\
#!{python}
# Stands in for apt-get: logs its argv; `source` copies FAKE_ORIG into the cwd. Its settings
# are a file beside it: apt gets no variable of the test's environment but PATH.
import json, os, shutil, sys
env = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake.json")))
with open(env["FAKE_APT_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if "--print-uris" in sys.argv:
    print("'" + env["FAKE_ORIG_URI"] + "' " + env["FAKE_ORIG_NAME"] + " 200 SHA256:" + "0" * 64)
    print("'http://mirror.example/debian/pool/main/p/pkg/pkg_1.0-1.dsc' pkg_1.0-1.dsc 100 "
          "SHA256:" + "d" * 64)
elif "source" in sys.argv:
    if env.get("FAKE_APT_404"):
        print("E: Failed to fetch http://mirror.example/debian/pool/main/p/pkg/"
              "pkg_1.0-1.debian.tar.xz  404  Not Found", file=sys.stderr)
        sys.exit(100)
    if env.get("FAKE_APT_FAIL") or sys.argv[-1] in env.get("FAKE_APT_GONE", "").split():
        print("E: Unable to find a source package for " + sys.argv[-1], file=sys.stderr)
        sys.exit(100)
    shutil.copy(env["FAKE_ORIG"], env["FAKE_ORIG_NAME"])
    open("pkg_1.0-1.dsc", "w").write("fake")
"""


FAKE_APT_CACHE = """\
#!{python}
# Stands in for apt-cache showsrc: prints FAKE_SHOWSRC (the Sources stanzas), else knows nothing.
import json, os, sys
env = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake.json")))
text = env.get("FAKE_SHOWSRC")
if not text:
    print("W: Unable to locate package " + sys.argv[-1], file=sys.stderr)
    sys.exit(0)
print(text)
"""


def showsrc(version: str, orig_sha: str, orig: str = "pkg_1.0.orig.tar.gz") -> str:
    return (f"Package: pkg\nVersion: {version}\nFormat: 3.0 (quilt)\nChecksums-Sha256:\n"
            f" {'d' * 64} 100 pkg_{version}.dsc\n {orig_sha} 200 {orig}\n"
            f" {'e' * 64} 300 pkg_{version}.debian.tar.xz\nDirectory: pool/main/p/pkg\n")


@pytest.fixture
def fake_apt(tmp_path, monkeypatch):
    """A fake apt-get first on PATH and a fixture apt config; yields the argv log path."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "apt-get"
    script.write_text(FAKE_APT_GET.format(python=sys.executable))
    script.chmod(0o755)
    cache_script = bin_dir / "apt-cache"
    cache_script.write_text(FAKE_APT_CACHE.format(python=sys.executable))
    cache_script.chmod(0o755)
    etc = tmp_path / "etc-apt"
    etc.mkdir()
    (etc / "sources.list").write_text("deb http://mirror.example/debian bookworm main\n")
    log = tmp_path / "apt-argv.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sources_list, "APT_ETC", etc)
    fake_setting(log, "FAKE_APT_LOG", str(log))
    return log


def fake_setting(log: Path, name: str, value: str) -> None:
    """Tell the fake apt-get and apt-cache (of the fake_apt whose log is `log`) a setting."""
    settings = log.parent / "bin" / "fake.json"
    known = json.loads(settings.read_text()) if settings.exists() else {}
    settings.write_text(json.dumps(known | {name: value}))


def test_debian_fallback_caches_verified_orig(tmp_path, fake_apt, monkeypatch):
    orig = good_tarball(tmp_path / "orig.tar.gz")
    fake_setting(fake_apt, "FAKE_ORIG", str(orig))
    fake_setting(fake_apt, "FAKE_ORIG_NAME", "pkg_1.0.orig.tar.gz")
    dead_url = (tmp_path / "gone" / "pkg-1.0.tar.gz").as_uri()
    source = source_for(dead_url, sha256(orig), DebianSource("pkg", "1.0-1"))
    cache = tmp_path / "cache"

    path = fetch.fetch(source, cache=cache)
    assert path == cache / "downloads" / f"{sha256(orig)[:16]}-pkg-1.0.tar.gz"
    assert cache_files(cache) == [path.name]  # the .dsc and the temp dir are gone
    update, download = [json.loads(line) for line in fake_apt.read_text().splitlines()]
    assert update[-1] == "update"
    assert download[-3:] == ["source", "--download-only", "pkg=1.0-1"]
    options = dict(a.split("=", 1) for a in download[:-3] if a != "-o")
    sources = Path(options["Dir::Etc::SourceList"])
    assert sources.read_text().startswith("Types: deb-src\nURIs: http://mirror.example/debian\n")
    assert options["Dir::State"].startswith(str(cache / "apt"))
    assert options["Debug::NoLocking"] == "1"


def test_debian_fallback_without_urls_keeps_orig_name(tmp_path, fake_apt, monkeypatch):
    orig = good_tarball(tmp_path / "orig.tar.gz")
    fake_setting(fake_apt, "FAKE_ORIG", str(orig))
    fake_setting(fake_apt, "FAKE_ORIG_NAME", "pkg_1.0.orig.tar.gz")
    source = source_for("", sha256(orig), DebianSource("pkg", "1:1.0-1"))
    path = fetch.fetch(source, cache=tmp_path / "cache")
    assert path.name == f"{sha256(orig)[:16]}-pkg_1.0.orig.tar.gz"
    assert fetch.fetch(source, cache=tmp_path / "cache", offline=True) == path


def test_debian_orig_with_other_bytes_is_refused(tmp_path, fake_apt, monkeypatch):
    orig = good_tarball(tmp_path / "orig.tar.gz")
    fake_setting(fake_apt, "FAKE_ORIG", str(orig))
    fake_setting(fake_apt, "FAKE_ORIG_NAME", "pkg_1.0.orig.tar.gz")
    source = source_for("", "4" * 64, DebianSource("pkg", "1.0-1"))
    with pytest.raises(FetchError, match="sha256 mismatch for Debian's pkg_1.0.orig.tar.gz"):
        fetch.fetch(source, cache=tmp_path / "cache")
    assert cache_files(tmp_path / "cache") == [f"quarantine/{sha256(orig)[:16]}-pkg_1.0.orig.tar.gz"]


def test_a_version_the_mirror_lost_falls_back_to_another_with_the_same_orig(
        tmp_path, fake_apt, monkeypatch):
    orig = good_tarball(tmp_path / "orig.tar.gz")
    fake_setting(fake_apt, "FAKE_ORIG", str(orig))
    fake_setting(fake_apt, "FAKE_ORIG_NAME", "pkg_1.0.orig.tar.gz")
    # The target names a security update the mirror no longer serves; the index lists it, the
    # release it was made from (same orig), an older upload with other bytes, and a newer one.
    fake_setting(fake_apt, "FAKE_APT_GONE", "pkg=1.0-3+deb12u1 pkg=1.0-4")
    fake_setting(fake_apt, "FAKE_SHOWSRC", "\n".join([
        showsrc("1.0-3", sha256(orig)), showsrc("0.9-1", "f" * 64, "pkg_0.9.orig.tar.gz"),
        showsrc("1.0-4", sha256(orig)), showsrc("1.0-3+deb12u1", sha256(orig))]))
    source = source_for("", sha256(orig), DebianSource("pkg", "1.0-3+deb12u1"))
    path = fetch.fetch(source, cache=tmp_path / "cache")
    assert sha256(path) == sha256(orig)
    calls = [json.loads(line) for line in fake_apt.read_text().splitlines()]
    tried = [argv[-1] for argv in calls if "source" in argv]
    # The recorded version, then the same bytes newest first; never 0.9-1.
    assert tried == ["pkg=1.0-3+deb12u1", "pkg=1.0-4", "pkg=1.0-3"]


def test_a_debian_part_gone_from_the_mirror_takes_the_orig_alone(tmp_path, fake_apt, caplog):
    # opus-tools: the mirror answered 404 for the Debian diff while its orig tarball was there.
    orig = good_tarball(tmp_path / "orig.tar.gz")
    fake_setting(fake_apt, "FAKE_APT_404", "1")
    fake_setting(fake_apt, "FAKE_ORIG_URI", orig.as_uri())
    fake_setting(fake_apt, "FAKE_ORIG_NAME", "pkg_1.0.orig.tar.gz")
    fake_setting(fake_apt, "FAKE_SHOWSRC", showsrc("1.0-1", sha256(orig)))
    source = source_for("", sha256(orig), DebianSource("pkg", "1.0-1"))
    path = fetch.fetch(source, cache=tmp_path / "cache")
    assert sha256(path) == sha256(orig)
    assert path.name == f"{sha256(orig)[:16]}-pkg_1.0.orig.tar.gz"
    said = caplog.text
    assert "404" in said and "took its orig tarball pkg_1.0.orig.tar.gz alone" in said


def test_the_orig_alone_needs_the_sources_index_to_list_its_sha256(tmp_path, fake_apt):
    orig = good_tarball(tmp_path / "orig.tar.gz")
    fake_setting(fake_apt, "FAKE_APT_404", "1")
    fake_setting(fake_apt, "FAKE_ORIG_URI", orig.as_uri())
    fake_setting(fake_apt, "FAKE_ORIG_NAME", "pkg_1.0.orig.tar.gz")
    fake_setting(fake_apt, "FAKE_SHOWSRC", showsrc("1.0-1", "c" * 64))
    source = source_for("", sha256(orig), DebianSource("pkg", "1.0-1"))
    with pytest.raises(FetchError, match=f"lists {'c' * 64} for pkg=1.0-1, not the target's"):
        fetch.fetch(source, cache=tmp_path / "cache")
    assert cache_files(tmp_path / "cache") == []


def test_debian_releases_lists_versions_newest_first_with_their_orig(tmp_path, fake_apt,
                                                                       monkeypatch):
    fake_setting(fake_apt, "FAKE_SHOWSRC", "\n".join([showsrc("1.0-3", "a" * 64),
                                                  showsrc("1:0.1-1", "b" * 64, "pkg_0.1.orig.tar.xz"),
                                                  showsrc("1.0-3+deb12u1", "a" * 64)]))
    got = debian.debian_releases("pkg", cache=tmp_path / "cache")
    assert [(r.version, r.orig, r.orig_sha256) for r in got] == [
        ("1:0.1-1", "pkg_0.1.orig.tar.xz", "b" * 64),          # an epoch wins
        ("1.0-3+deb12u1", "pkg_1.0.orig.tar.gz", "a" * 64),
        ("1.0-3", "pkg_1.0.orig.tar.gz", "a" * 64)]


def test_debian_releases_finds_the_source_package_of_a_binary_name(tmp_path, fake_apt,
                                                                     monkeypatch):
    stanza = showsrc("1.5-2", "a" * 64, "libzz_1.5.orig.tar.xz").replace(
        "Package: pkg\n", "Package: libzz\nBinary: zz, libzz1, libzz-dev\n"
        "Build-Depends: debhelper-compat (= 13),\n libfoo-dev [linux-any]\n"
        "Build-Depends-Arch: nasm\nPackage-List: \n zz deb utils optional arch=any\n")
    fake_setting(fake_apt, "FAKE_SHOWSRC", stanza)
    (got,) = debian.debian_releases("zz", cache=tmp_path / "cache")
    assert (got.package, got.version, got.orig) == ("libzz", "1.5-2", "libzz_1.5.orig.tar.xz")
    # the stanza's build dependencies (a folded field, then the arch-only ones) and binaries
    assert got.build_depends == "debhelper-compat (= 13),\nlibfoo-dev [linux-any], nasm"
    assert got.package_list.split() == ["zz", "deb", "utils", "optional", "arch=any"]
    assert got.binary == "zz, libzz1, libzz-dev"


def test_debian_failure_lists_every_attempt(tmp_path, fake_apt, monkeypatch):
    fake_setting(fake_apt, "FAKE_APT_FAIL", "1")
    url = (tmp_path / "gone.tar.gz").as_uri()
    source = source_for(url, "5" * 64, DebianSource("pkg", "1.0-1"))
    with pytest.raises(FetchError) as err:
        fetch.fetch(source, cache=tmp_path / "cache")
    message = str(err.value)
    assert url in message and "pkg=1.0-1" in message
    assert "Unable to find a source package" in message


def test_missing_apt_get(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    etc = tmp_path / "etc-apt"
    etc.mkdir()
    (etc / "sources.list").write_text("deb http://mirror.example/debian bookworm main\n")
    monkeypatch.setattr(sources_list, "APT_ETC", etc)
    url = (tmp_path / "gone.tar.gz").as_uri()
    with pytest.raises(FetchError, match="apt-get is not installed") as err:
        fetch.fetch(source_for(url, "6" * 64, DebianSource("pkg", "1.0-1")),
                    cache=tmp_path / "cache")
    assert url in str(err.value)


# --- the real thing ------------------------------------------------------------------------

@pytest.mark.network
def test_real_debian_fallback_gzip(tmp_path):
    """gzip 1.12 from Debian's source package (bookworm's 1.12-1) matches the GNU tarball.

    The expected sha256 is that of upstream's gzip-1.12.tar.xz, as other distributions'
    recipes record it; Debian's gzip_1.12.orig.tar.xz keeps those bytes.
    """
    if shutil.which("apt-get") is None:
        pytest.skip("apt-get is not installed")
    if not sources_list.private_sources():
        pytest.skip("no Debian entries in the system's apt sources")
    source = Source(name="gzip", version="1.12", urls=(), sha256=GZIP_112_SHA256,
                    debian=DebianSource("gzip", "1.12-1"))
    tree = fetch.prepare(source, cache=tmp_path / "cache")
    assert (tree / "configure").is_file() and (tree / "gzip.c").is_file()
    assert sha256(fetch.fetch(source, cache=tmp_path / "cache", offline=True)) == GZIP_112_SHA256


# --- unpack limits ---------------------------------------------------------------------------

class _Zeros(io.RawIOBase):
    """`size` zero bytes, read in chunks: a bomb's member without holding it in memory."""

    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def bomb(path: Path, megabytes: int) -> Path:
    """A real gzip bomb: megabytes of zeros in one member, a few hundred KB packed."""
    with tarfile.open(path, "w:gz") as tar:
        tar.addfile(entry("pkg-1.0", tarfile.DIRTYPE))
        tar.addfile(entry("pkg-1.0/main.c", tarfile.REGTYPE))
        info = tarfile.TarInfo("pkg-1.0/zeros.bin")
        info.size, info.mtime, info.mode = megabytes * 10**6, MTIME, 0o644
        tar.addfile(info, _Zeros(info.size))
    return path


def _used_bytes(folder: Path) -> int:
    """Real disk use under folder (allocated blocks, holes not counted)."""
    return sum(p.lstat().st_blocks * 512 for p in folder.rglob("*")) if folder.exists() else 0


def test_a_gzip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    """A 14 MB gzip bomb used to unpack 3.1 GB into the cache: 200 MB of zeros here."""
    tarball = bomb(tmp_path / "pkg-1.0.tar.gz", 200)
    packed = tarball.stat().st_size
    assert packed < 10**6
    with pytest.raises(FetchError) as e:
        extract(tarball, tmp_path / "out")
    ratio = 200 * 10**6 / packed
    assert str(e.value).startswith(
        f"{tarball}: refusing member 'pkg-1.0/zeros.bin': it unpacks to 200.0 MB, which brings "
        f"the tree to 200.0 MB from a {packed / 1e6:.1f} MB tarball, {ratio:.0f} times its "
        "size, beyond the limit of 100 (FLAGSWEEP_UNPACK_RATIO); nothing was unpacked")
    assert _used_bytes(tmp_path / "out") < 10**6


def _sparse_tarball(tmp_path: Path, megabytes: int) -> Path:
    """A real GNU sparse member (tar -S): `megabytes` long, a few bytes of data."""
    tree = tmp_path / "sparse-src" / "pkg-1.0"
    tree.mkdir(parents=True)
    (tree / "main.c").write_text("int main(void){return 0;}\n")
    with open(tree / "holes.img", "wb") as f:
        f.seek(megabytes * 10**6 - 5)
        f.write(b"data\n")
    tarball = tmp_path / "pkg-1.0.tar.gz"
    subprocess.run(["tar", "-C", str(tree.parent), "-cSzf", str(tarball), "pkg-1.0"], check=True)
    return tarball


def test_a_sparse_member_beyond_the_file_limit_is_refused(tmp_path, monkeypatch):
    """A 621-byte tarball with a 10 GB sparse member: here 300 MB, with the file limit set to
    100 MB (FLAGSWEEP_UNPACK_FILE_MB), refused by its size whatever its holes."""
    tarball = _sparse_tarball(tmp_path, 300)
    assert tarball.stat().st_size < 10**5
    monkeypatch.setenv("FLAGSWEEP_UNPACK_FILE_MB", "100")
    monkeypatch.setenv("FLAGSWEEP_UNPACK_RATIO", "1e12")      # the file limit alone
    with pytest.raises(FetchError) as e:
        extract(tarball, tmp_path / "out")
    assert str(e.value).startswith(
        f"{tarball}: refusing member 'pkg-1.0/holes.img': it unpacks to 300.0 MB (a sparse "
        "file), beyond the limit of 100 MB for one file (FLAGSWEEP_UNPACK_FILE_MB); nothing "
        "was unpacked")
    assert _used_bytes(tmp_path / "out") < 10**6


def test_the_unpack_limits_are_configured_by_environment(tmp_path, monkeypatch):
    two = os.urandom(2 * 10**6)          # incompressible: no ratio to speak of
    tarball = make_tarball(tmp_path / "pkg-1.0.tar.gz",
                           [entry("pkg-1.0", tarfile.DIRTYPE), ("pkg-1.0/a.bin", two),
                            ("pkg-1.0/b.bin", two)])
    assert (extract(tarball, tmp_path / "default") / "b.bin").read_bytes() == two
    monkeypatch.setenv("FLAGSWEEP_UNPACK_TOTAL_MB", "3")
    with pytest.raises(FetchError, match=r"refusing member 'pkg-1.0/b.bin': it unpacks to 2.0 "
                                         r"MB, which brings the tree to 4.0 MB, beyond the limit "
                                         r"of 3 MB \(FLAGSWEEP_UNPACK_TOTAL_MB\)"):
        extract(tarball, tmp_path / "total")
    monkeypatch.setenv("FLAGSWEEP_UNPACK_FILE_MB", "1.5")
    with pytest.raises(FetchError, match=r"refusing member 'pkg-1.0/a.bin': it unpacks to 2.0 "
                                         r"MB, beyond the limit of 1.5 MB for one file"):
        extract(tarball, tmp_path / "file")
    for bad in ("lots", "0", "-5", "inf"):
        monkeypatch.setenv("FLAGSWEEP_UNPACK_FILE_MB", bad)
        with pytest.raises(FetchError) as e:
            extract(tarball, tmp_path / "bad")
        assert str(e.value) == (f"FLAGSWEEP_UNPACK_FILE_MB={bad!r}: expected a number above 0 "
                                "(default 1024)")
    assert not (tmp_path / "total").exists() or not any((tmp_path / "total").iterdir())


def test_a_target_whose_tarball_is_a_bomb_is_one_line_and_leaves_no_tree(tmp_path,
                                                                         isolated_cache):
    tarball = bomb(tmp_path / "pkg-1.0.tar.gz", 200)
    (tmp_path / "target.toml").write_text(
        f'summary = "a bomb"\nversion = "1.0"\nname = "pkg"\n[source]\n'
        f'urls = ["file://{tarball}"]\nsha256 = "{sha256(tarball)}"\n'
        '[build]\nsystem = "make"\nbinary = "prog"\n[inputs]\nkind = "corpus"\nmegabytes = 1\n'
        'quick_megabytes = 1\n[run]\nargv = ["{binary}"]\n[check]\nmethod = "exact"\n')
    done = subprocess.run([sys.executable, "-m", "flagsweep", "build", str(tmp_path),
                           "--flags", "-O2", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[-1].startswith(f"flagsweep: {isolated_cache / 'downloads'}/")
    assert "refusing member 'pkg-1.0/zeros.bin': it unpacks to 200.0 MB" in lines[-1]
    assert "Traceback" not in done.stderr
    assert _used_bytes(isolated_cache / "src") < 10**6


def test_apt_config_from_the_environment_never_runs_a_command(tmp_path, monkeypatch):
    """apt-get runs as root when a target comes from Debian's source packages; APT_CONFIG
    names a configuration file apt reads first, whose APT::Update::Pre-Invoke runs a command.
    The private apt tree's apt gets an environment flagsweep writes, so it is never read."""
    if shutil.which("apt-get") is None:
        pytest.skip("apt-get is not installed")
    marker = tmp_path / "pre-invoke-ran"
    planted = tmp_path / "planted.conf"
    planted.write_text(f'APT::Update::Pre-Invoke {{"touch {marker}";}};\n')
    monkeypatch.setenv("APT_CONFIG", str(planted))
    etc = tmp_path / "etc-apt"
    etc.mkdir()
    (tmp_path / "debian").mkdir()      # an empty mirror: the update fails, after Pre-Invoke
    (etc / "sources.list").write_text(f"deb file://{tmp_path / 'debian'} bookworm main\n")
    monkeypatch.setattr(sources_list, "APT_ETC", etc)

    assert debian.debian_releases("pkg", cache=tmp_path / "cache") == []
    assert not marker.exists()
