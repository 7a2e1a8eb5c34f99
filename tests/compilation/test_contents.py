"""The executables Debian ships: which binary packages are read (from a recorded Package-List),
the programs of a recorded `dpkg-deb -c` listing, and the downloads through a seam."""

from __future__ import annotations

from pathlib import Path

from flagsweep import process
from flagsweep.compilation import contents

# Recorded from bookworm's Sources index and `dpkg-deb -c` of its .debs.
LIBJPEG_TURBO = """
 libjpeg-turbo-progs deb graphics optional arch=any
 libjpeg62-turbo deb libs optional arch=any
 libjpeg62-turbo-dev deb libdevel optional arch=any
 libturbojpeg0 deb libs optional arch=any
 libturbojpeg0-dev deb libdevel optional arch=any
 libjpeg-turbo-doc deb doc optional arch=all
"""
LISTING = """\
drwxr-xr-x root/root         0 2023-02-02 10:00 ./
drwxr-xr-x root/root         0 2023-02-02 10:00 ./usr/bin/
-rwxr-xr-x root/root     60200 2023-02-02 10:00 ./usr/bin/cjpeg
-rwxr-xr-x root/root     51968 2023-02-02 10:00 ./usr/bin/djpeg
-rw-r--r-- root/root      1311 2023-02-02 10:00 ./usr/bin/README.not-a-program
lrwxrwxrwx root/root         0 2023-02-02 10:00 ./usr/bin/jpegexiforient -> exifautotran
-rwxr-xr-x root/root     14328 2023-02-02 10:00 ./usr/lib/x86_64-linux-gnu/helper
-rw-r--r-- root/root      2910 2023-02-02 10:00 ./usr/share/man/man1/cjpeg.1.gz
"""


def test_the_binary_packages_that_may_ship_a_program_are_read():
    assert contents.packages(LIBJPEG_TURBO, "") == [
        "libjpeg-turbo-progs", "libjpeg62-turbo", "libturbojpeg0"]
    # no Package-List (an older index): the Binary field, names checked
    assert contents.packages("", "jq, libjq1, libjq-dev, -oDir=x") == ["jq", "libjq1"]


def test_a_listing_gives_the_programs_in_bin_folders():
    assert contents.programs(LISTING) == ["cjpeg", "djpeg", "jpegexiforient"]


def test_each_package_is_downloaded_into_a_scratch_folder_and_listed(tmp_path):
    calls = []

    def run(argv, cwd, **kwargs):
        calls.append(argv)
        if "download" in argv:
            if argv[-1] == "gone":
                return process.Result(argv, 100, "", "E: Can't select candidate version")
            (Path(cwd) / f"{argv[-1]}_1.0_amd64.deb").write_bytes(b"!<arch>\n")
            return process.Result(argv, 0, "", "")
        return process.Result(argv, 0, LISTING if "progs" in argv[-1] else "", "")

    s = contents.shipped(["libjpeg-turbo-progs", "gone", "libturbojpeg0"], None, tmp_path,
                        run=run)
    assert s.programs == {"cjpeg": "libjpeg-turbo-progs", "djpeg": "libjpeg-turbo-progs",
                          "jpegexiforient": "libjpeg-turbo-progs"}
    assert s.read == ["libjpeg-turbo-progs", "libturbojpeg0"]
    assert s.missed == ["gone: apt-get download failed (E: Can't select candidate version)"]
    assert calls[1][:2] == ["dpkg-deb", "-c"] and calls[0][-2:] == ["download",
                                                                    "libjpeg-turbo-progs"]
    # the scratch folder is gone
    assert not list((tmp_path / "downloads").glob(".debs-*"))


def test_each_package_is_read_at_the_sources_version_else_at_apts_said(tmp_path):
    asked = []

    def run(argv, cwd, **kwargs):
        if "download" in argv:
            asked.append(argv[-1])
            if argv[-1] == "lzop=1.04-2":          # gone from the archive: a newer one is there
                return process.Result(argv, 100, "", "E: Version '1.04-2' for 'lzop' was not found")
            (Path(cwd) / f"{argv[-1].split('=')[0]}_1.0_amd64.deb").write_bytes(b"!<arch>\n")
            return process.Result(argv, 0, "", "")
        return process.Result(argv, 0, LISTING, "")

    s = contents.shipped(["libjpeg-turbo-progs"], "2.1.5-2", tmp_path, run=run)
    assert asked == ["libjpeg-turbo-progs=2.1.5-2"] and s.other_version == []
    asked.clear()
    s = contents.shipped(["lzop"], "1.04-2", tmp_path, run=run)
    assert asked == ["lzop=1.04-2", "lzop"] and s.read == ["lzop"]
    assert s.other_version == ["lzop"]
