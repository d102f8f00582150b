"""Every file in examples/matrices/{positive,negative} is a test case, picked up automatically.

Negative files start with ``# expect: TEXT`` (a substring of the one-line message) and
optionally ``# at: LINE:COLUMN`` (where the message must point).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from tests.helpers.matrix import example_files, sample_matrix_path

from xcompat.errors import InputError
from xcompat.matrix import load_matrix
from xcompat.matrix.yamlload import load_yaml
from xcompat.resources import schema_path

POSITIVE = example_files("positive") + [sample_matrix_path()]
NEGATIVE = example_files("negative")


def test_example_folders_are_populated():
    assert len(example_files("positive")) >= 3
    assert len(NEGATIVE) >= 20


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_positive_examples_load_and_match_the_schema_directly(path: Path):
    matrix = load_matrix(path)
    assert matrix.serial >= 1 and "/" in matrix.repo
    # Independently of xcompat's own checker: the raw document satisfies the published schema.
    schema = json.loads(schema_path("matrix").read_text())
    data = load_yaml(path.read_bytes()).data
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(data)


def _expectations(path: Path) -> tuple[str, tuple[int, int] | None]:
    head = path.read_bytes().decode("latin-1").splitlines()
    expect = next(line.split(":", 1)[1].strip() for line in head if line.startswith("# expect:"))
    at = next((line.split(":", 1)[1].strip() for line in head if line.startswith("# at:")), None)
    if at is None:
        return expect, None
    line, col = at.split(":")
    return expect, (int(line), int(col))


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.name)
def test_negative_examples_fail_with_their_message_and_place(path: Path):
    expect, at = _expectations(path)
    with pytest.raises(InputError) as info:
        load_matrix(path)
    err = info.value
    text = str(err)
    assert expect in text, text
    assert err.file == str(path)
    assert "\n" not in text
    assert err.exit_code == 2
    if at is not None:
        assert (err.line, err.column) == at, text


def test_load_from_bytes_uses_source_name_in_messages():
    with pytest.raises(InputError, match=r"^m\.yml:3:1: duplicate key 'a'"):
        load_matrix(b"a: 1\nb: 2\na: 3\n", source="m.yml")


def test_schema_file_is_valid_2020_12():
    schema = json.loads(schema_path("matrix").read_text())
    assert schema["$schema"].endswith("2020-12/schema")
    jsonschema.Draft202012Validator.check_schema(schema)


def test_negative_examples_would_fool_plain_pyyaml():
    """The duplicate-key example parses silently with yaml.safe_load, keeping the last value."""
    import yaml

    path = next(p for p in NEGATIVE if p.name == "duplicate-key.yml")
    assert yaml.safe_load(path.read_text())["serial"] == 2
    assert re.search(r"serial: 1", path.read_text())
