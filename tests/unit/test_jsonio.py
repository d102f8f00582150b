"""``dump_json``: the same JSON value as ``json.dumps``, laid out for people (objects indented,
one list item per line) and written by json's C encoder."""

from __future__ import annotations

import json
import math

import pytest

from xcompat.jsonio import dump_json

DOCUMENTS = [
    {},
    [],
    {"version": 1, "findings": [], "notes": {}},
    {"a": [{"x": [1, 2, {"deep": [None, True, False]}]}, 2, "é\u2028\n\"quoted\""], "b": {"c": {"d": [1]}}},
    {1: "int key", 2.5: "float key", True: "bool key", None: "null key"},
    {"tuple": (1, (2, 3)), "big": 10**30, "neg": -0.0, "emoji": "\U0001F600"},
    [[], [[]], {}, [{}], "", 0],
    "a bare string",
    42,
]


@pytest.mark.parametrize("document", DOCUMENTS, ids=range(len(DOCUMENTS)))
def test_same_value_as_json_dumps(document):
    text = dump_json(document)
    assert text.endswith("\n")
    assert json.loads(text) == json.loads(json.dumps(document))


def test_layout_objects_indented_one_item_per_line():
    text = dump_json({"kind": "abi", "findings": [{"kind": "symbol_removed", "symbol": "f"}, {"kind": "x"}],
                      "counts": {"symbol_removed": 1}})
    assert text == (
        '{\n'
        '  "kind": "abi",\n'
        '  "findings": [\n'
        '    {"kind": "symbol_removed", "symbol": "f"},\n'
        '    {"kind": "x"}\n'
        '  ],\n'
        '  "counts": {\n'
        '    "symbol_removed": 1\n'
        '  }\n'
        '}\n'
    )


def test_what_json_refuses_is_refused_the_same_way():
    with pytest.raises(TypeError):
        dump_json({"path": object()})
    with pytest.raises(TypeError):
        dump_json({(1, 2): "tuple key"})
    assert json.loads(dump_json({"nan": [math.inf]}).replace("Infinity", "1e999")) == {"nan": [math.inf]}
