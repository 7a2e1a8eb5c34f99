"""manifest.json and status.json: closed records the step driver reads back as they were
written, refusing a key neither side declares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flagsweep.compilation.manifest import (Manifest, ManifestError, Order, Profiling, Status,
                                            Template, Tools)


def _manifest(tmp_path: Path) -> Manifest:
    pgo = Profiling(profile_dir=tmp_path / "p", instrumented=["-O2", "-fprofile-generate"],
                    train_argv=["prog", "in"], timeout=30.0, input="the quick input")
    return Manifest(system="autotools", source=tmp_path / "src", binary="prog",
                    configure_args=["--disable-nls"], make_args=[], ccache_env={"CCACHE_DIR": "c"},
                    compilers={"gcc": Tools(cc="/w/cc", version="12.2.0")},
                    templates={"gcc": Template(compiler="gcc", dir=tmp_path / "t",
                                               log=tmp_path / "t.log")},
                    variants={"gcc-O2": Order(compiler="gcc", template="gcc", flags=["-O2"],
                                              dir=tmp_path / "b", jobs=2, pgo=pgo),
                              "own-flags-gcc": Order(compiler="gcc", template="gcc", flags=[],
                                                     dir=tmp_path / "o", jobs=2, own_flags=True)})


def test_the_manifest_reads_back_as_it_was_written(tmp_path):
    m = _manifest(tmp_path)
    m.write(tmp_path / "manifest.json")
    again = Manifest.read(tmp_path / "manifest.json")
    assert again == m
    assert isinstance(again.variants["gcc-O2"].pgo.profile_dir, Path)
    assert again.compilers["gcc"].key() == {"cc": "/w/cc", "version": "12.2.0"}


@pytest.mark.parametrize("path, key", [((), "planted"), (("variants", "gcc-O2"), "env"),
                                       (("variants", "gcc-O2", "pgo"), "shell"),
                                       (("compilers", "gcc"), "wrapper")])
def test_a_key_the_manifest_does_not_declare_is_refused_naming_it(tmp_path, path, key):
    _manifest(tmp_path).write(tmp_path / "manifest.json")
    doc = json.loads((tmp_path / "manifest.json").read_text())
    node = doc
    for part in path:
        node = node[part]
    node[key] = "x"
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match=f"key\\(s\\) {key} not declared"):
        Manifest.read(tmp_path / "manifest.json")


def test_a_missing_key_or_an_unknown_system_is_refused(tmp_path):
    _manifest(tmp_path).write(tmp_path / "manifest.json")
    doc = json.loads((tmp_path / "manifest.json").read_text())
    del doc["variants"]["gcc-O2"]["jobs"]
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(ManifestError, match="variants.gcc-O2.*jobs"):
        Manifest.read(tmp_path / "manifest.json")
    with pytest.raises(ManifestError, match="'scons' is not one of"):
        Manifest(**{**_manifest(tmp_path).__dict__, "system": "scons"})


def test_a_status_file_holds_only_the_keys_it_has(tmp_path):
    s = Status(status="ok", stage="done", started=1.5, seconds=2.0)
    assert json.loads(s.text()) == {"status": "ok", "stage": "done", "started": 1.5,
                                    "seconds": 2.0}
    (tmp_path / "status.json").write_text(s.text())
    assert Status.read(tmp_path) == s
    (tmp_path / "status.json").write_text('{"status": "ok", "stage": "done", "started": 1, '
                                          '"exit": 0}')
    assert Status.read(tmp_path) is None          # not a status this driver wrote
    assert Status.read(tmp_path / "nowhere") is None


def test_the_step_driver_starts_without_pydantic():
    """The step driver starts twice for every variant's build: the model's pydantic import
    (a quarter of a second) made every build in the suite slower when it crept in."""
    import subprocess
    import sys

    probe = ("import sys, flagsweep.compilation.steps; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
