"""The settings table: each key written once, every other form made from it.

A key's plan spelling and CI variable are public formats (plan JSON keys, `$GITHUB_ENV` names):
they are frozen here. A key added to the table reaches the schema, the plan, the CI variables,
`xcompat test`'s arguments and the docs with no other change.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

import pytest
from tests.helpers.matrix import sample_matrix_path

from xcompat.errors import InputError, UsageError
from xcompat.matrix import load_matrix
from xcompat.matrix.plan import expand, plan_document
from xcompat.settings.sections import SECTIONS
from xcompat.settings import render, resolve_settings, settings_from_document, settings_from_plan, table
from xcompat.settings.table import TableError, parse_row, setting_rows

ROOT = Path(__file__).resolve().parents[3]

# The public spellings: matrix key -> (key in a plan's settings, CI variable).
SPELLINGS = {
    "tests.kernels": ("tests.kernels", "XCOMPAT_TESTS_KERNELS"),
    "tests.pytest": ("tests.pytest", "XCOMPAT_TESTS_PYTEST"),
    "tests.pytest-args": ("tests.pytest_args", "XCOMPAT_TESTS_PYTEST_ARGS"),
    "tests.isolation": ("tests.isolation", "XCOMPAT_TESTS_ISOLATION"),
    "tests.timeout": ("tests.timeout", "XCOMPAT_TESTS_TIMEOUT"),
    "tests.operators": ("tests.operators", "XCOMPAT_TESTS_OPERATORS"),
    "abi.baseline": ("abi.baseline", "XCOMPAT_ABI_BASELINE"),
    "abi.baseline-required": ("abi.baseline_required", "XCOMPAT_ABI_BASELINE_REQUIRED"),
    "abi.gate": ("abi.gate", "XCOMPAT_ABI_GATE"),
    "abi.bumps": ("abi.bumps", "XCOMPAT_ABI_BUMPS"),
    "abi.extension-exports": ("abi.extension_exports", "XCOMPAT_ABI_EXTENSION_EXPORTS"),
    "abi.isa-floors": ("abi.isa_floors", "XCOMPAT_ABI_ISA_FLOORS"),
    "coverage.overall": ("coverage.overall", "XCOMPAT_COVERAGE_OVERALL"),
    "coverage.diff": ("coverage.diff", "XCOMPAT_COVERAGE_DIFF"),
    "gate.tag-pattern": ("gate.tag_pattern", "XCOMPAT_GATE_TAG_PATTERN"),
    "gate.required-backends": ("gate.required_backends", "XCOMPAT_GATE_REQUIRED_BACKENDS"),
    "contracts.stubs": ("contracts.stubs", "XCOMPAT_CONTRACTS_STUBS"),
    "contracts.runtime-libraries": ("contracts.runtime_libraries", "XCOMPAT_CONTRACTS_RUNTIME_LIBRARIES"),
    "contracts.python-floor": ("contracts.python_floor", "XCOMPAT_CONTRACTS_PYTHON_FLOOR"),
}

DUMMY = {"name": "tests.dummy-window", "type": "seconds", "default": 30, "override": True,
         "test_argv": "--dummy-window", "doc": "a key only this test adds"}


def test_the_public_spellings_follow_from_the_names():
    got = {row.name: (f"{row.section}.{row.plan_name}", row.env_name) for row in setting_rows()}
    assert got == SPELLINGS


def test_the_generated_schemas_and_docs_table_are_current():
    """After a change to table.json: python -m xcompat.settings.render --write."""
    for path, text in render.generated_files(ROOT).items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: python -m xcompat.settings.render --write"
    assert render.main([]) == 0


def test_every_field_of_the_sections_is_a_row_of_the_table():
    fields = {(section, f.name) for section, cls in SECTIONS.items() for f in dataclasses.fields(cls)
              if f.name != "extra"}
    assert fields == {(row.section, row.attr) for row in setting_rows()}


def test_the_plan_and_matrix_schemas_name_the_same_keys():
    plan = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())["$defs"]["settings"]["properties"]
    matrix = json.loads((ROOT / "schemas" / "matrix.schema.json").read_text())["properties"]
    for section in SECTIONS:
        rows = [row for row in setting_rows() if row.section == section]
        assert set(plan[section]["properties"]) == {row.plan_name for row in rows}, section
        assert set(matrix[section]["properties"]) == {row.leaf for row in rows}, section


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ({**DUMMY, "default": -1}, "default -1: expected seconds"),
        ({**DUMMY, "type": "duration"}, "unknown type 'duration'"),
        ({**DUMMY, "type": "percent"}, "a percent cannot be given on the command line"),
        ({**DUMMY, "default": None}, "a null default needs unset"),
        ({**DUMMY, "name": "build.jobs"}, "name 'build.jobs'"),
        ({**DUMMY, "type": "enum"}, "type enum needs values"),
        ({**DUMMY, "of": "paths"}, "type seconds takes no of"),
        ({**DUMMY, "test_argv": "paths"}, "test_argv: paths or -- for a list"),
        ({k: v for k, v in DUMMY.items() if k != "doc"}, "missing doc"),
    ],
)
def test_a_row_the_code_cannot_honour_is_refused_when_the_table_is_read(row, why):
    with pytest.raises(TableError, match=re.escape(why)):
        parse_row(row)


@pytest.fixture
def dummy_key(monkeypatch):
    """The table with one more row, as a change to table.json would make it."""
    rows = (*setting_rows(), parse_row(DUMMY))
    monkeypatch.setattr(table, "load_table", lambda: rows)
    for name in ("CI", "GITHUB_ACTIONS", "GITLAB_CI"):
        monkeypatch.delenv(name, raising=False)
    return rows[-1]


def _matrix_settings(capsys, *argv: str) -> str:
    from xcompat.commands import matrix_settings

    parser = argparse.ArgumentParser()
    matrix_settings.configure_parser(parser)
    assert matrix_settings.execute(parser.parse_args(list(argv))) == 0
    return capsys.readouterr().out


def test_a_key_added_to_the_table_reaches_every_form(dummy_key, capsys):
    schema = render.settings_schema()["properties"]["settings"]
    assert schema["properties"]["tests.dummy-window"] == {"description": "a key only this test adds",
                                                          "type": "number", "minimum": 0}
    assert "tests.dummy-window" in schema["required"]
    assert "| `tests.dummy-window` | seconds | `30` | a key only this test adds |" in render.docs_table()
    # the plan's settings and the matrix file's tests section, in the files the generator writes
    files = render.generated_files(ROOT)
    plan_schema = json.loads(files[ROOT / "schemas" / "plan.schema.json"])["$defs"]["settings"]["properties"]
    assert plan_schema["tests"]["properties"]["dummy_window"] == {"type": "number", "minimum": 0}
    assert "dummy_window" in plan_schema["tests"]["required"]
    matrix_schema = json.loads(files[ROOT / "schemas" / "matrix.schema.json"])["properties"]
    assert matrix_schema["tests"]["properties"]["dummy-window"] == {
        "description": "a key only this test adds", "type": "number", "exclusiveMinimum": 0, "default": 30}
    assert "| `tests.dummy-window` | seconds | `30` | a key only this test adds |" in files[ROOT / "docs" / "matrix.md"]

    m = load_matrix(sample_matrix_path())
    plan = json.loads(json.dumps(plan_document(m, expand(m))))
    assert plan["settings"]["tests"]["dummy_window"] == 30.0
    sample = str(sample_matrix_path())
    env = _matrix_settings(capsys, "--matrix", sample, "--format", "env").splitlines()
    assert "XCOMPAT_TESTS_DUMMY_WINDOW=30.0" in env
    document = json.loads(_matrix_settings(capsys, "--matrix", sample, "--format", "json"))
    assert document["settings"]["tests.dummy-window"] == 30.0
    argv = _matrix_settings(capsys, "--matrix", sample, "--format", "test-argv").splitlines()
    assert argv == ["tests", "--isolate", "test", "--timeout", "120", "--dummy-window", "30"]

    # and back: the plan and settings.json readers take it, and name its place when it is wrong
    assert settings_from_plan(plan).value("tests.dummy-window") == 30.0
    assert settings_from_document(document) == resolve_settings(m)
    plan["settings"]["tests"]["dummy_window"] = "soon"
    with pytest.raises(InputError, match=re.escape("$.settings.tests.dummy_window: expected seconds, got 'soon'")):
        settings_from_plan(plan, source="plan.json")
    assert resolve_settings(m, {"tests.dummy-window": 5}, env={}).value("tests.dummy-window") == 5.0
    with pytest.raises(UsageError, match="only from the verified matrix"):
        resolve_settings(m, {"tests.dummy-window": 5}, env={"CI": "true"})

