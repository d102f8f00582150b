"""The allowed_signers pattern matcher: OpenSSH's `*`/`?` semantics, without backtracking blow-up."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xcompat.errors import InputError
from xcompat.signing.allowed_signers import match_pattern, match_pattern_list, parse_allowed_signers


def reference(text: str, pattern: str) -> bool:
    regex = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, text, flags=re.DOTALL) is not None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab*?.-", max_size=8), st.text(alphabet="ab.-", max_size=10))
def test_same_answers_as_the_glob_definition(pattern: str, text: str) -> None:
    assert match_pattern(text, pattern) == reference(text, pattern)


@pytest.mark.parametrize(("text", "pattern", "expected"), [
    ("xcompat-matrix-v1", "xcompat-*", True),
    ("xcompat-matrix-v1", "*-v?", True),
    ("xcompat-matrix-v1", "file", False),
    ("", "*", True),
    ("", "?", False),
    ("a*b", "a\\*b", False),  # no escapes in OpenSSH patterns: '\\' is a literal
])
def test_examples(text: str, pattern: str, expected: bool) -> None:
    assert match_pattern(text, pattern) is expected


def test_negation_vetoes() -> None:
    assert match_pattern_list("xcompat-matrix-v1", "xcompat-*,!*-v1") is False
    assert match_pattern_list("xcompat-matrix-v1", "file,xcompat-*") is True


@pytest.mark.timeout(60)
def test_a_pathological_pattern_does_not_hang() -> None:
    """`*a*a*...*b` against `aaaa...` took exponential time with the regex translation."""
    assert match_pattern_list("a" * 2000, ",".join(["*a" * 40 + "*b"] * 5)) is False


def test_overlong_pattern_lists_are_refused_when_parsed() -> None:
    line = 'p namespaces="' + "*x" * 600 + '" ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEl'
    with pytest.raises(InputError, match="longer than"):
        parse_allowed_signers(line + "\n")
