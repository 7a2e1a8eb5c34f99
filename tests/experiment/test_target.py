"""Tests for flagsweep.experiment.target: the shipped targets, and strict validation of target.toml files."""

from __future__ import annotations

from pathlib import Path

import pytest

from flagsweep import shipped
from flagsweep.errors import ConfigError
from flagsweep.experiment import target

# A complete, valid target file (a tarball source with a roundtrip check, like gzip's). Tests
# break one thing in it at a time with `_edit`, which insists the text it replaces is there so
# that a test can never pass by editing nothing.
VALID = """\
summary = "a test target"
version = "1.0"

[source]
urls = ["https://example.org/prog-1.0.tar.gz"]
sha256 = "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956"

[build]
system = "autotools"
binary = "prog"

[inputs]
kind = "corpus"
megabytes = 4
quick_megabytes = 1

[run]
argv = ["{binary}", "-c", "{input}"]
stdout = "compared"
timeout = 30

[check]
method = "roundtrip"
roundtrip_argv = ["{binary}", "-d"]
"""


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, f"test bug: {old!r} not in the template"
    return text.replace(old, new, 1)


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "target.toml"
    path.write_text(text)
    return path


def _load_error(tmp_path: Path, text: str) -> tuple[str, Path]:
    path = _write(tmp_path / "prog", text)
    with pytest.raises(ConfigError) as info:
        target.load(str(path))
    return str(info.value), path


# --- shipped targets ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["tiny", "duo", "gzip", "lame"])
def test_shipped_target_loads_by_name(name):
    t = target.load(name)
    assert t.name == name
    assert t.path == target.TARGETS_DIR / name / "target.toml"
    assert t.spec.run.argv[0] == "{binary}"


def test_available_lists_exactly_the_shipped_targets():
    assert [t.name for t in target.available()] == ["bzip2", "duo", "flac", "gzip", "lame",
                                                    "tiny", "xz", "zstd"]


def test_shipped_target_details():
    gzip = target.load("gzip")
    assert gzip.spec.build.system == "autotools"
    assert gzip.spec.check.method == "roundtrip"
    assert gzip.spec.check.roundtrip_argv == ["{binary}", "-d", "-c"]
    assert gzip.spec.source.debian.package == "gzip"
    assert gzip.local_source() is None

    lame = target.load("lame")
    assert lame.spec.inputs.kind == "wav"
    assert lame.spec.inputs.seconds == 200
    assert lame.spec.inputs.quick_seconds == 30
    assert lame.spec.build.binary == "frontend/lame"
    # A lossy float encoder: its MP3 decoded by the baseline's lame, judged by SNR.
    assert lame.spec.check.method == "quality" and lame.spec.check.of == "output"
    assert lame.spec.check.decode_argv[0] == "{baseline}"

    tiny = target.load("tiny")
    assert tiny.spec.build.system == "cmake"
    assert tiny.spec.check.rel_tolerance == pytest.approx(1e-5)
    assert tiny.local_source() == (target.TARGETS_DIR / "tiny" / "src").resolve()
    assert (tiny.local_source() / "CMakeLists.txt").is_file()


def test_integer_toml_values_are_accepted_for_float_fields():
    # strict mode must still take `timeout = 120` (a TOML integer) for a float field
    assert target.load("gzip").spec.run.timeout == 120.0


# --- loading by path ---------------------------------------------------------------------------

def test_target_outside_repo_takes_its_name_from_the_folder(tmp_path):
    path = _write(tmp_path / "my-prog_2.1", VALID)
    by_folder = target.load(str(path.parent))
    by_file = target.load(str(path))
    assert by_folder.name == by_file.name == "my-prog_2.1"
    assert by_folder.path == by_file.path == path.resolve()
    assert by_folder.folder == path.parent.resolve()


def test_name_key_overrides_the_folder_name(tmp_path):
    path = _write(tmp_path / "folder", 'name = "renamed"\n' + VALID)
    assert target.load(str(path)).name == "renamed"


def test_folder_name_that_is_not_filename_safe_is_rejected(tmp_path):
    path = _write(tmp_path / "my prog", VALID)
    with pytest.raises(ConfigError) as info:
        target.load(str(path))
    assert str(info.value) == (f"{path.resolve()}: key 'name': expected letters, digits, '._+-', "
                               "got 'my prog'")


def test_local_path_source_that_is_missing_is_reported(tmp_path):
    text = _edit(VALID, 'urls = ["https://example.org/prog-1.0.tar.gz"]\n'
                        'sha256 = "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956"',
                 'path = "src"')
    path = _write(tmp_path / "prog", text)
    t = target.load(str(path))
    with pytest.raises(ConfigError, match=r"key 'source.path': .*src is not a directory"):
        t.local_source()
    (path.parent / "src").mkdir()
    assert t.local_source() == (path.parent / "src").resolve()


def test_unknown_target_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError) as info:
        target.load("no-such-target")
    assert str(info.value) == ("no target 'no-such-target': not a target file or folder, "
                               "and not a shipped target or one in "
                               f"{shipped.user_dir() / 'targets'} "
                               "(bzip2, duo, flac, gzip, lame, tiny, xz, zstd)")


def test_folder_without_target_toml_is_not_a_target(tmp_path):
    with pytest.raises(ConfigError, match="no target"):
        target.load(str(tmp_path))


def test_invalid_toml_names_the_file(tmp_path):
    msg, path = _load_error(tmp_path, "summary = \n")
    assert msg.startswith(f"{path.resolve()}: not valid TOML: ")


# --- validation errors -------------------------------------------------------------------------

def test_unknown_key_names_file_and_dotted_key(tmp_path):
    msg, path = _load_error(tmp_path, _edit(VALID, 'system = "autotools"',
                                            'system = "autotools"\nsytem = "make"'))
    assert msg == f"{path.resolve()}: unknown key 'build.sytem'"


def test_unknown_top_level_key(tmp_path):
    msg, path = _load_error(tmp_path, "summery = 'x'\n" + VALID)
    assert msg == f"{path.resolve()}: unknown key 'summery'"


def test_wrong_type_names_key_expectation_and_value(tmp_path):
    msg, path = _load_error(tmp_path, _edit(VALID, "timeout = 30", 'timeout = "fast"'))
    assert msg == f"{path.resolve()}: key 'run.timeout': expected a valid number, got 'fast'"


def test_non_positive_timeout_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, "timeout = 30", "timeout = 0"))
    assert "key 'run.timeout': expected greater than 0, got 0" in msg


def test_missing_binary(tmp_path):
    msg, path = _load_error(tmp_path, _edit(VALID, 'binary = "prog"\n', ""))
    assert msg == f"{path.resolve()}: missing key 'build.binary'"


def test_unknown_build_system(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'system = "autotools"', 'system = "scons"'))
    assert ("key 'build.system': expected 'autotools', 'cmake', 'meson' or 'make', got 'scons'"
            in msg)


MESON = _edit(VALID, 'system = "autotools"', 'system = "meson"')


def test_a_meson_target_takes_setup_options_and_ninja_targets(tmp_path):
    text = _edit(MESON, 'binary = "prog"\n', 'binary = "bin/prog"\n'
                 'configure_args = ["-Ddocs=false", "-Ddefault_library=static", "-Dx=a b"]\n'
                 'make_args = ["bin/prog"]\n')
    b = target.load(str(_write(tmp_path / "ok", text))).spec.build
    assert b.system == "meson" and b.configure_args[2] == "-Dx=a b" and b.make_args == ["bin/prog"]


@pytest.mark.parametrize("line, said", [
    # two argv elements: meson would read "docs=false" as the source folder
    ('configure_args = ["-D", "docs=false"]', "'-D': a meson target's configure_args are "
                                              "`meson setup` options, one string each"),
    ('configure_args = ["--cross-file=x"]', "'--cross-file=x': a meson target's configure_args"),
    ('configure_args = ["../elsewhere"]', "'../elsewhere': a meson target's configure_args"),
    # what flagsweep sets itself would replace the variant's flags or its plain build type
    ('configure_args = ["-Dc_args=-O3"]', "'-Dc_args=-O3': flagsweep sets c_args itself"),
    ('configure_args = ["-Dbuildtype=release"]', "flagsweep sets buildtype itself"),
    ('make_args = ["-t", "clean"]', "key 'build.make_args': '-t': a meson target's make_args "
                                    "are Ninja targets"),
])
def test_a_meson_targets_arguments_are_refused_by_key(tmp_path, line, said):
    msg, _ = _load_error(tmp_path, _edit(MESON, 'binary = "prog"\n', f'binary = "prog"\n{line}\n'))
    assert said in msg and msg.count("\n") == 0
    assert ("key 'build.make_args'" if line.startswith("make") else
            "key 'build.configure_args'") in msg


def test_the_same_arguments_stay_free_for_other_systems(tmp_path):
    text = _edit(VALID, 'binary = "prog"\n', 'binary = "prog"\nconfigure_args = ["--x"]\n'
                 'make_args = ["-C", "src"]\n')
    assert target.load(str(_write(tmp_path / "ok", text))).spec.build.make_args == ["-C", "src"]


def test_every_problem_is_listed_at_once(tmp_path):
    msg, _ = _load_error(tmp_path, 'summary = 1\nversion = "1"\n')
    assert "key 'summary': expected a valid string, got 1" in msg
    for key in ("source", "build", "inputs", "run", "check"):
        assert f"missing key '{key}'" in msg
    assert "missing key 'version'" not in msg


@pytest.mark.parametrize("bad", [
    "CE5E03E519F637E1F814011ACE35C4F87B33C0BBABEEC35BAF5FBD3479E91956",   # upper case
    "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e9195",    # 63 digits
    "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956a",  # 65 digits
    "xe5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956",   # not hex
])
def test_bad_sha256_is_rejected(tmp_path, bad):
    good = "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956"
    msg, path = _load_error(tmp_path, _edit(VALID, f'sha256 = "{good}"', f'sha256 = "{bad}"'))
    assert msg.startswith(f"{path.resolve()}: key 'source.sha256': "
                          f"expected 64 lowercase hex digits, got '{bad}'")


def test_source_with_both_path_and_urls_is_rejected(tmp_path):
    msg, path = _load_error(tmp_path, _edit(VALID, "[source]\n", '[source]\npath = "src"\n'))
    assert msg == (f"{path.resolve()}: key 'source': "
                   "a local 'path' source takes no urls, sha256 or debian")


def test_tarball_source_without_sha256_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(
        VALID, 'sha256 = "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956"\n', ""))
    assert "key 'source': expected 'sha256' and at least one of 'urls' or 'debian'" in msg


def test_debian_only_source_is_accepted(tmp_path):
    text = _edit(VALID, 'urls = ["https://example.org/prog-1.0.tar.gz"]',
                 'debian = { package = "prog", version = "1.0-1" }')
    t = target.load(str(_write(tmp_path / "prog", text)))
    assert t.spec.source.urls == []
    assert t.spec.source.debian.version == "1.0-1"


def test_unknown_argv_placeholder_is_rejected(tmp_path):
    msg, path = _load_error(tmp_path, _edit(VALID, '"-c", "{input}"', '"-c", "{foo}"'))
    assert msg == (f"{path.resolve()}: key 'run.argv': unknown placeholder {{foo}} in '{{foo}}'; "
                   "expected one of ['binary', 'input', 'output']")


def test_argv0_must_be_the_binary(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'argv = ["{binary}", "-c", "{input}"]',
                                         'argv = ["time", "{binary}", "{input}"]'))
    assert "key 'run.argv': argv[0] must be '{binary}' (the measured executable)" in msg


def test_empty_argv_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'argv = ["{binary}", "-c", "{input}"]',
                                         "argv = []"))
    assert "key 'run.argv'" in msg


def test_all_known_placeholders_are_accepted(tmp_path):
    text = _edit(VALID, 'argv = ["{binary}", "-c", "{input}"]',
                 'argv = ["{binary}", "--in={input}", "-o", "{output}"]')
    t = target.load(str(_write(tmp_path / "prog", text)))
    assert t.spec.run.argv == ["{binary}", "--in={input}", "-o", "{output}"]


def test_roundtrip_check_needs_roundtrip_argv(tmp_path):
    msg, path = _load_error(tmp_path, _edit(VALID, 'roundtrip_argv = ["{binary}", "-d"]\n', ""))
    assert msg == f"{path.resolve()}: key 'check': check method 'roundtrip' needs 'roundtrip_argv'"


@pytest.mark.parametrize("method, key", [("sha256", "sha256"), ("tolerance", "rel_tolerance")])
def test_other_check_methods_need_their_key(tmp_path, method, key):
    text = _edit(VALID, 'method = "roundtrip"\nroundtrip_argv = ["{binary}", "-d"]',
                 f'method = "{method}"')
    msg, _ = _load_error(tmp_path, text)
    assert f"key 'check': check method '{method}' needs '{key}'" in msg


def test_exact_check_needs_nothing_more(tmp_path):
    text = _edit(VALID, 'method = "roundtrip"\nroundtrip_argv = ["{binary}", "-d"]',
                 'method = "exact"\nof = "output"')
    t = target.load(str(_write(tmp_path / "prog", text)))
    assert (t.spec.check.method, t.spec.check.of) == ("exact", "output")


def test_wav_input_requires_seconds_and_quick_seconds(tmp_path):
    text = _edit(VALID, 'kind = "corpus"\nmegabytes = 4\nquick_megabytes = 1', 'kind = "wav"')
    msg, _ = _load_error(tmp_path, text)
    assert "missing key 'inputs.seconds'; missing key 'inputs.quick_seconds'" in msg
    assert ".wav." not in msg  # pydantic's union member name is not a key in the file


def test_wav_input_with_seconds_loads(tmp_path):
    text = _edit(VALID, 'kind = "corpus"\nmegabytes = 4\nquick_megabytes = 1',
                 'kind = "wav"\nseconds = 2.5\nquick_seconds = 1')
    inputs = target.load(str(_write(tmp_path / "prog", text))).spec.inputs
    assert (inputs.kind, inputs.seconds, inputs.quick_seconds, inputs.seed) == ("wav", 2.5, 1.0, 0)


def test_unknown_input_kind_is_rejected(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'kind = "corpus"', 'kind = "mp3"'))
    assert "key 'inputs'" in msg and "'mp3'" in msg


def test_roundtrip_argv_placeholders_and_check_sha256_are_validated(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'roundtrip_argv = ["{binary}", "-d"]',
                                         'roundtrip_argv = ["{binry}", "-d"]'))
    assert "key 'check.roundtrip_argv': unknown placeholder {binry}" in msg
    msg, _ = _load_error(tmp_path, _edit(VALID, 'method = "roundtrip"\nroundtrip_argv = ["{binary}", "-d"]',
                                         'method = "sha256"\nsha256 = "abc"'))
    assert "key 'check.sha256': expected 64 lowercase hex digits" in msg


# --- fields that become paths or command lines -------------------------------------------------

@pytest.mark.parametrize("binary", ["/usr/bin/true", "../../../usr/bin/true", "src/../../x", "",
                                    "."])
def test_binary_must_stay_inside_the_build_tree(tmp_path, binary):
    message, path = _load_error(tmp_path, _edit(VALID, 'binary = "prog"', f'binary = "{binary}"'))
    assert message == (f"{path.resolve()}: key 'build.binary': expected a path inside the build "
                       f"tree, relative to it and without '..', got {binary!r}")


def test_binary_in_a_subfolder_is_fine(tmp_path):
    path = _write(tmp_path / "prog", _edit(VALID, 'binary = "prog"', 'binary = "src/prog"'))
    assert target.load(str(path)).spec.build.binary == "src/prog"


@pytest.mark.parametrize("version", ["1.0/../../x", "../1.0", "1 0", ".hidden", ""])
def test_version_must_be_one_plain_path_component(tmp_path, version, isolated_cache):
    message, path = _load_error(tmp_path, _edit(VALID, 'version = "1.0"', f'version = "{version}"'))
    assert message == (f"{path.resolve()}: key 'version': expected letters, digits and '._+~-', "
                       f"starting with a letter or digit (it names a folder in the cache), "
                       f"got {version!r}")
    assert not any(isolated_cache.glob("x-*")) and not any(isolated_cache.parent.glob("x-*"))


@pytest.mark.parametrize("key, value", [("package", "-oDebug::x=1"), ("package", "gz ip"),
                                        ("version", "--no-download"), ("version", "1.0/../x")])
def test_debian_fields_cannot_become_options_or_paths(tmp_path, key, value):
    debian = {"package": "prog", "version": "1.0-1", key: value}
    text = _edit(VALID, 'sha256 = "', f'debian = {{ package = "{debian["package"]}", '
                                     f'version = "{debian["version"]}" }}\nsha256 = "')
    message, path = _load_error(tmp_path, text)
    assert message.startswith(f"{path.resolve()}: key 'source.debian.{key}': expected a Debian ")
    assert message.endswith(f"got {value!r}")


def test_project_flags_are_data_too(tmp_path):
    text = _edit(VALID, 'binary = "prog"', 'binary = "prog"\nproject_flags = ["-DX=$(id)"]')
    message, path = _load_error(tmp_path, text)
    assert message.startswith(f"{path.resolve()}: key 'build.project_flags': flag '-DX=$(id)' "
                              "contains '$', which make, Ninja or the shell would evaluate")


def test_non_utf8_target_names_the_file(tmp_path):
    path = tmp_path / "prog" / "target.toml"
    path.parent.mkdir()
    path.write_bytes(VALID.replace("a test target", "caf\xe9").encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        target.load(str(path))
    assert str(info.value) == (f"{path.resolve()}: not UTF-8 text (TOML files are UTF-8): "
                               "byte 0xe9 at offset 14")



# --- build.goal: one argv element for make or cmake, never an option, a variable or a way out ---

def test_a_goal_and_its_folder_load_as_written(tmp_path):
    path = _write(tmp_path / "prog", _edit(VALID, 'binary = "prog"\n',
                                           'binary = "src/prog"\ngoal = "prog"\ngoal_dir = "src"\n'))
    b = target.load(str(path)).spec.build
    assert (b.goal, b.goal_dir) == ("prog", "src")


@pytest.mark.parametrize("goal", ["-k", "--eval=x", "CFLAGS=-O0", "../prog", "/usr/bin/prog",
                                  "a b", "$(shell id)", "prog;id", ""])
def test_a_goal_that_make_would_read_as_more_than_a_goal_is_refused(tmp_path, goal):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'binary = "prog"\n',
                                         f'binary = "prog"\ngoal = {goal!r}\n'.replace("'", '"')))
    assert "key 'build.goal'" in msg and "not starting with '-' or '/'" in msg


def test_a_goal_folder_needs_a_goal_and_a_make_build(tmp_path):
    msg, _ = _load_error(tmp_path, _edit(VALID, 'binary = "prog"\n',
                                         'binary = "prog"\ngoal_dir = "src"\n'))
    assert "goal_dir needs a goal, and a make build" in msg
    cmake = _edit(VALID, 'system = "autotools"', 'system = "cmake"')
    msg, _ = _load_error(tmp_path / "c", _edit(cmake, 'binary = "prog"\n',
                                                'binary = "prog"\ngoal = "prog"\ngoal_dir = "x"\n'))
    assert "goal_dir needs a goal, and a make build" in msg
    msg, _ = _load_error(tmp_path / "d", _edit(VALID, 'binary = "prog"\n',
                                                'binary = "prog"\ngoal = "p"\ngoal_dir = "-C"\n'))
    assert "key 'build.goal_dir'" in msg


def test_a_hand_written_configure_is_a_path_in_the_tree_for_autotools_only(tmp_path):
    path = _write(tmp_path / "ok", _edit(VALID, 'binary = "prog"\n',
                                         'binary = "prog"\nconfigure = "configure.sh"\n'))
    assert target.load(str(path)).spec.build.configure == "configure.sh"
    msg, _ = _load_error(tmp_path, _edit(VALID, 'binary = "prog"\n',
                                         'binary = "prog"\nconfigure = "../configure.sh"\n'))
    assert "key 'build.configure'" in msg and "without '..'" in msg
    cmake = _edit(VALID, 'system = "autotools"', 'system = "cmake"')
    msg, _ = _load_error(tmp_path / "c", _edit(cmake, 'binary = "prog"\n',
                                                'binary = "prog"\nconfigure = "configure.sh"\n'))
    assert 'only system = "autotools" runs; system is \'cmake\'' in msg
