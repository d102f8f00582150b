"""Malformed input never escapes as anything but InputError (YAML loader, allowed_signers, revoked list)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.helpers.matrix import sample_matrix_path

from xcompat.errors import InputError
from xcompat.matrix import load_matrix
from xcompat.signing.allowed_signers import parse_allowed_signers, parse_revoked

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAMPLE = sample_matrix_path().read_bytes()
SIGNERS = (sample_matrix_path().parent / "allowed_signers").read_text()


@FUZZ
@given(st.integers(0, len(SAMPLE) - 1), st.binary(min_size=0, max_size=6), st.integers(0, 8))
def test_mutated_matrix_loads_or_raises_input_error(pos, insert, cut):
    data = SAMPLE[:pos] + insert + SAMPLE[pos + cut :]
    try:
        load_matrix(data, source="m.yml")
    except InputError as exc:
        assert exc.file == "m.yml" and "\n" not in exc.message


@FUZZ
@given(st.text(max_size=300))
def test_random_text_matrix(text):
    try:
        load_matrix(text.encode("utf-8", "surrogatepass"), source="r.yml")
    except InputError:
        pass


@FUZZ
@given(st.integers(0, len(SIGNERS) - 1), st.text(max_size=5), st.integers(0, 6))
def test_mutated_allowed_signers(pos, insert, cut):
    text = SIGNERS[:pos] + insert + SIGNERS[pos + cut :]
    try:
        parse_allowed_signers(text, source="as")
    except InputError as exc:
        assert exc.file == "as" and exc.line is not None


@FUZZ
@given(st.binary(max_size=200))
def test_random_revoked_lists(data):
    try:
        parse_revoked(data, source="rv")
    except InputError as exc:
        assert exc.file == "rv"
