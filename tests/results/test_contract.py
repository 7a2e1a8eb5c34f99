"""The results contract: the models' JSON Schema (`flagsweep schema`), the one loader with its
upgrade path, and the check that every contract file a test writes follows the schema."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import report_fixture as rf
from conftest import contract_problems, contract_validator, planted_session
from tiny_target import write_tiny_target

from flagsweep.errors import FlagsweepError
from flagsweep import model
from flagsweep.results import reader


def test_schema_command_prints_pure_json_for_each_kind():
    for kind, title in (("results", "Results"), ("suite", "Suite"), ("merged", "Merged")):
        done = subprocess.run([sys.executable, "-m", "flagsweep", "schema", kind],
                              capture_output=True, text=True)
        assert (done.returncode, done.stderr) == (0, "")
        schema = json.loads(done.stdout)
        assert schema["title"] == title and "variants" in schema["required"]


def test_the_schema_keeps_the_contracts_names():
    schema = json.loads(model.json_schema("results"))
    assert {"schema", "target", "recipe", "metric", "baseline", "machine", "variants"} \
        <= set(schema["required"])
    for key in ("started", "finished", "compilers", "workload", "effects", "aa", "noise",
                "recommendation", "measurement", "history"):
        assert key in schema["properties"], key
    defs = schema["$defs"]
    assert {"ratio", "ci95", "p_value", "p_adjusted", "verdict"} \
        <= set(defs["VsBaseline"]["properties"])
    assert defs["VsBaseline"]["properties"]["ci95"]["minItems"] == 2
    assert {"code_sha256", "identical_to", "flags_verified"} <= set(defs["Build"]["properties"])
    assert "build_programs" in defs["AuditSummary"]["properties"]


def test_a_written_document_loads_as_it_was_written(tmp_path):
    path = rf.write(tmp_path / "run", rf.results_doc(counters=True, study=True))
    assert reader.load(path).dump() == json.loads(path.read_text())   # no default added, nothing coerced
    assert contract_problems(tmp_path) == []


@pytest.mark.breaks_contract
def test_keys_no_model_declares_are_refused_now_and_left_out_of_older_files(tmp_path):
    """Every object is closed: a key its model does not declare is refused by its key path,
    when written as when read. flagsweep/1 was open (a newer minor writer's keys loaded), so
    a flagsweep/1 file still loads, upgraded without them."""
    doc = rf.results_doc()
    doc["variants"][2]["summary"]["quantiles"] = [{"q": 0.9, "value": 1.0}]
    path = rf.write(tmp_path / "run", doc)
    with pytest.raises(FlagsweepError) as e:
        reader.load(path)
    assert str(e.value) == (f"{path}: key 'variants[2].summary.quantiles' is not a key of "
                            "results.json (`flagsweep schema results` names them all)")
    with pytest.raises(ValueError, match="quantiles"):
        model.Summary(n=3, quantiles=[])
    older = {**doc, "schema": "flagsweep/1", "annotations": [{"variant": "gcc-O3"}]}
    path = rf.write(tmp_path / "older", older)
    assert reader.load(path).dump() == rf.results_doc()


def test_every_object_of_every_schema_is_closed():
    """additionalProperties false on every object a model declares, and a map (samples,
    sizes, per_program) says what each of its values is: no key of any depth is untyped."""
    for kind in model.KINDS:
        schema = json.loads(model.json_schema(kind))
        assert _open_objects(schema) == [], kind


@pytest.mark.integration
def test_a_real_sweeps_results_json_follows_the_closed_schema(tmp_path):
    """A sweep of the real tiny program (built, checked, timed, with counters where the
    machine has them): every key its results.json holds is one `flagsweep schema results`
    declares, in a schema whose every object is closed, and it loads as it was written."""
    tiny = write_tiny_target(tmp_path / "tiny")
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "flagsweep", "run", str(tiny),
                           "--flags", "-O2", "--flags", "-O1", "--flags", "-O2 -mfpmath=sse",
                           "--runs", "3", "--warmup", "0", "--quick", "--seed", "11",
                           "--out", str(out),
                           # CPU time, serial: a loaded machine cannot stop it busy (exit 3)
                           "--metric", "cpu", "--schedule", "serial"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    assert _open_objects(json.loads(model.json_schema("results"))) == []
    assert [e.message for e in contract_validator("results").iter_errors(doc)] == []
    assert reader.load(out / "results.json").dump() == doc


def _open_objects(node, where: str = "$") -> list[str]:
    found = []
    if isinstance(node, dict):
        if "properties" in node and node.get("additionalProperties") is not False:
            found.append(where)
        elif node.get("type") == "object" and "properties" not in node \
                and not isinstance(node.get("additionalProperties"), dict):
            found.append(where)
        for key, value in node.items():
            found += _open_objects(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _open_objects(value, f"{where}[{i}]")
    return found


@pytest.mark.breaks_contract
def test_a_renamed_key_fails_the_loader_and_the_schema(tmp_path):
    doc = rf.results_doc()
    doc["variant_list"] = doc.pop("variants")
    path = rf.write(tmp_path / "run", doc)
    with pytest.raises(FlagsweepError, match=r"results.json: not a results.json: missing key\(s\) "
                                             r"variants$"):
        reader.load(path)
    assert contract_problems(tmp_path) == [f"{path}: (the document): Additional properties are "
                                           "not allowed ('variant_list' was unexpected)"]


@pytest.mark.breaks_contract
def test_load_names_the_key_path_of_a_wrong_kind(tmp_path):
    for key, value, message in [
            ("machine", [1], "key 'machine': expected an object, got [1]"),
            ("variants", {}, "key 'variants': expected a list, got {}"),
            ("target", 3, "key 'target': expected a string, got 3"),
            ("variants[1].build.flags_verified", "yes",
             "key 'variants[1].build.flags_verified': expected true or false, got \"yes\"")]:
        doc = rf.results_doc()
        _set(doc, key, value)
        path = rf.write(tmp_path / "run", doc)
        with pytest.raises(FlagsweepError) as e:
            reader.load(path)
        assert str(e.value) == f"{path}: {message}"


def _set(doc: dict, key: str, value) -> None:
    *parents, last = key.replace("[", ".").replace("]", "").split(".")
    node = doc
    for p in parents:
        node = node[int(p) if p.isdigit() else p]
    node[last] = value


@pytest.mark.breaks_contract
def test_an_older_schema_is_upgraded_on_load(tmp_path, monkeypatch):
    """The upgrade table turns each older version into the next; the loader applies it."""
    def zero_to_one(doc: dict) -> dict:
        doc = dict(doc, schema=model.SCHEMA)
        doc["threshold_pct"] = doc.pop("threshold")
        return doc

    monkeypatch.setitem(model.UPGRADES, "flagsweep/0", zero_to_one)
    old = rf.results_doc()
    old["schema"], old["threshold"] = "flagsweep/0", old.pop("threshold_pct")
    path = rf.write(tmp_path / "run", old)
    doc = reader.load(path).dump()
    assert doc["schema"] == model.SCHEMA and doc["threshold_pct"] == old["threshold"]
    assert model.readable() == ["flagsweep/1", "flagsweep/0", "flagsweep/2"]


@pytest.mark.breaks_contract
def test_an_unknown_or_newer_schema_is_refused_by_name(tmp_path):
    for version in ("flagsweep/3", "nonsense", 7):
        path = rf.write(tmp_path / "run", {**rf.results_doc(), "schema": version})
        with pytest.raises(FlagsweepError) as e:
            reader.load(path)
        assert str(e.value) == (f"{path}: key 'schema' is {version!r}; this flagsweep reads "
                                "'flagsweep/1', 'flagsweep/2' (a newer flagsweep wrote it? "
                                "upgrade flagsweep "
                                "to read it)")


@pytest.mark.breaks_contract
@pytest.mark.parametrize("token", ["NaN", "-Infinity", "1e999", "1" + "0" * 400])
@pytest.mark.parametrize("key", ["noise.baseline_cv", "variants[3].summary.median"])
def test_load_refuses_a_number_json_has_not_got_by_its_key(tmp_path, token, key):
    """Python's json reads NaN and Infinity, and 1e999 or a 401-digit integer as infinite
    or beyond a double; none is a JSON number flagsweep writes. Before: each loaded."""
    doc = rf.results_doc()
    _set(doc, key, "@planted@")
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc).replace('"@planted@"', token))
    with pytest.raises(FlagsweepError) as e:
        reader.load(path)
    assert str(e.value) == f"{path}: key '{key}': expected a finite number or null, got {token}"


@pytest.mark.breaks_contract     # a flagsweep/1 file: the current schema names no such key
def test_the_depth_limit_counts_no_bracket_inside_a_string(tmp_path):
    """Only JSON's own nesting counts: a flag full of brackets and quotes, and a key 60 levels
    deep (below the limit of 64) of a flagsweep/1 file (whose objects were open), load."""
    doc = {**rf.results_doc(), "schema": "flagsweep/1"}
    doc["variants"][1]["flags"].append('-DX="[[[[{{{{' + "[" * 500 + '\\"]"')
    deep: list = []
    for _ in range(59):
        deep = [deep]
    doc["annotations"] = deep
    path = rf.write(tmp_path / "run", doc)
    loaded = reader.load(path).dump()
    assert loaded["variants"][1]["flags"][-1] == doc["variants"][1]["flags"][-1]
    assert loaded == {**{k: v for k, v in doc.items() if k != "annotations"},
                      "schema": model.SCHEMA}
    assert reader.MAX_DEPTH == 64


def test_suite_and_merged_json_follow_their_schemas():
    suite_doc = {"schema": model.SUITE_SCHEMA, "machine": "m", "metric": "wall_s",
                 "baseline": "gcc -O2", "threshold_pct": 1.0, "programs": [],
                 "variants": [{"id": "a", "compiler": "gcc", "flags": [], "per_program": {
                     "p": {"program": "p", "machine": "m", "ratio": "fast", "ci95": None,
                           "verdict": "faster"}}}]}
    error = jsonschema.exceptions.best_match(contract_validator("suite").iter_errors(suite_doc))
    assert error.json_path == "$.variants[0].per_program.p.ratio"
    with pytest.raises(FlagsweepError, match=r"s.json: key 'variants\[0\].per_program.p.ratio': "
                                             r"expected a number or null, got \"fast\""):
        reader.validate(suite_doc, "s.json", "suite")


PLANTED = '''
import json
import pytest

DOC = {"schema": "flagsweep/2", "target": "t", "recipe": "r", "metric": "wall_s",
       "baseline": "a", "machine": {},
       "variants": [{"id": "a", "compiler": "gcc", "flags": [], "build": {"status": "ok"},
                     "vs_baseline": {"verdict": "faster", "ratio": "fast"}}]}


def test_writes_a_broken_results_json(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").write_text(json.dumps(DOC))


@pytest.mark.breaks_contract
def test_plants_one_on_purpose(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps(DOC))
'''


@pytest.mark.breaks_contract   # its own tmp_path holds the inner session's broken file
def test_the_check_after_each_test_catches_a_broken_file(tmp_path):
    """The conftest's check really runs: in a pytest of its own, a test that writes a broken
    results.json errors at teardown, naming the file and the key; a marked one passes."""
    done = planted_session(tmp_path, PLANTED)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed" in done.stdout and "1 error" in done.stdout   # its error is at teardown
    assert "ERROR at teardown of test_writes_a_broken_results_json" in done.stdout, done.stdout
    broken = next((tmp_path / "base").glob("test_writes_a_broken*0/out/results.json"))
    assert f"{broken}: variants[0].vs_baseline.ratio: 'fast' is not of type 'number', 'null'" \
        in done.stdout
