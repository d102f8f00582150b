"""The fast yes/no checker agrees with jsonschema: never accepts what jsonschema rejects."""

from __future__ import annotations

import contextlib
import copy
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.helpers.matrix import example_files, sample_matrix_path

from xcompat.errors import InputError
from xcompat.matrix.fastschema import FastChecker, Unsupported
from xcompat.matrix.yamlload import load_yaml
from xcompat.resources import schema_path

SCHEMA = json.loads(schema_path("matrix").read_text())
REFERENCE = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
FAST = FastChecker(SCHEMA)
DOCS = []
for path in [sample_matrix_path(), *example_files("positive"), *example_files("negative")]:
    with contextlib.suppress(InputError):  # files that are not even YAML have no document to compare
        DOCS.append(load_yaml(path.read_bytes()).data)


def agree(doc) -> None:
    expected = REFERENCE.is_valid(doc)
    assert FAST.valid(doc) == expected, json.dumps(doc)[:400]


@pytest.mark.parametrize("index", range(len(DOCS)))
def test_examples(index):
    agree(DOCS[index])


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 300)
    | st.floats(-1, 200, allow_nan=False)
    | st.sampled_from(
        [
            "3.12",
            "3.13t",
            "cpu",
            "cuda",
            "linux",
            "x86_64",
            "sm_80",
            "gfx90a",
            "12.8",
            "v*",
            "manylinux_2_28",
            "2030-02-30",
            "2030-01-01",
            "",
            "all",
            "none",
            "test",
            "major",
        ]
    ),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["archs", "required", "runs-on", "toolkits", "gpu-archs", "x", "linux-x86_64", "torch"]
            ),
            children,
            max_size=3,
        )
    ),
    max_leaves=6,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, len(DOCS) - 1),
    st.integers(0, 10_000),
    json_values,
    st.sampled_from(["replace", "drop", "add"]),
)
def test_mutated_documents(index, pick, value, op):
    doc = copy.deepcopy(DOCS[index])
    paths = list(_paths(doc))
    path = paths[pick % len(paths)]
    if path:
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        key = path[-1]
        if op == "replace":
            parent[key] = value
        elif op == "drop":
            del parent[key]
        elif isinstance(parent, dict):
            parent[f"{key}x" if isinstance(key, str) else "extra"] = value
        else:
            parent.append(value)
    else:
        doc = value
    agree(doc)


def test_unknown_keywords_are_reported_not_ignored():
    with pytest.raises(Unsupported):
        FastChecker({"type": "object", "dependentRequired": {}}).valid({})
