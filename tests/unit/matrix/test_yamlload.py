from __future__ import annotations

import pytest

from xcompat.errors import InputError
from xcompat.matrix.yamlload import Mark, load_yaml


def test_marks_point_at_values_and_keys():
    doc = load_yaml("a: 1\nb:\n  - x\n  - {c: d}\n", source="f.yml")
    assert doc.data == {"a": 1, "b": ["x", {"c": "d"}]}
    assert doc.marks[("a",)] == Mark(1, 4)
    assert doc.marks[("b", 1, "c")] == Mark(4, 9)
    assert doc.key_marks[("b",)] == Mark(2, 1)
    # Unknown paths fall back to the nearest parent.
    assert doc.mark_for(("b", 1, "zzz")) == Mark(4, 5)


@pytest.mark.parametrize(
    "text, message, line",
    [
        ("a: 1\na: 2\n", "duplicate key 'a' (first defined at line 1)", 2),
        ("x:\n  y: 1\n  z: 2\n  y: 3\n", "duplicate key 'y'", 4),
        ("- {k: 1, k: 2}\n", "duplicate key 'k'", 1),
        ("a: &x 1\nb: *x\n", "anchors and aliases", 1),
        ("base: &b {k: 1}\nc:\n  <<: *b\n", "merge keys", 3),
        ("1: a\n", "mapping key '1' is not a string", 1),
        ("yes: a\n", "mapping key 'yes' is not a string", 1),
        ("? [a]\n: 1\n", "is not a string", 1),
        ("a: !!binary aGVsbG8=\n", "YAML tag", 1),
        ("a: !!set {x}\n", "YAML tag", 1),
        ("a: !!python/name:os.system ''\n", "YAML tag", 1),
        ("a: !custom 1\n", "YAML tag", 1),
        ("a: 1\n---\nb: 2\n", "more than one YAML document", 2),
        ("a: [1, 2\n", "YAML syntax error", 2),
        ("a: 'unterminated\n", "YAML syntax error", 2),
        ("\ta: 1\n", "YAML syntax error", 1),
        ("a: 2027-13-01\n", "is not a valid value: month must be in 1..12", 1),
        ("a: 1.2.3.4\n", None, None),
    ],
)
def test_strict_refusals(text, message, line):
    if message is None:  # a plain scalar that is no number stays a string
        assert load_yaml(text).data == {"a": "1.2.3.4"}
        return
    with pytest.raises(InputError) as info:
        load_yaml(text, source="t.yml")
    assert message in info.value.message
    assert info.value.file == "t.yml"
    assert info.value.line == line


def test_dates_become_iso_strings_and_bom_is_ignored():
    assert load_yaml("\ufeffd: 2027-06-30\nt: 2027-06-30T10:00:00Z\n").data == {
        "d": "2027-06-30",
        "t": "2027-06-30T10:00:00+00:00",
    }


def test_bytes_must_be_utf8():
    with pytest.raises(InputError, match="not UTF-8"):
        load_yaml(b"a: \xff\n", source="b.yml")


def test_control_characters_are_refused():
    with pytest.raises(InputError) as info:
        load_yaml("a: \x07\n", source="c.yml")
    assert info.value.file == "c.yml"


def test_empty_document_is_none():
    assert load_yaml("# only a comment\n").data is None


def test_billion_laughs_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    with pytest.raises(InputError, match="aliases"):
        load_yaml("\n".join(lines) + "\n")
