"""``tests.operators``: gate (the default) or report, read from the matrix into the settings the
kernels stage uses, carried by the plan, and anything else refused with its place in the file."""

from __future__ import annotations

import pytest
from tests.helpers.matrix import matrix_text

from xcompat.errors import InputError
from xcompat.matrix import load_matrix
from xcompat.settings import resolve_settings, settings_from_document


def test_gate_is_the_default_and_report_is_read_from_the_matrix() -> None:
    assert resolve_settings(load_matrix(matrix_text().encode())).tests.operators == "gate"
    settings = resolve_settings(load_matrix(matrix_text(extra="tests:\n  operators: report\n").encode()))
    assert settings.tests.operators == "report" and settings.value("tests.operators") == "report"
    assert settings.to_dict()["settings"]["tests.operators"] == "report"


def test_settings_written_before_the_key_existed_read_the_default() -> None:
    document = resolve_settings(load_matrix(matrix_text().encode())).to_dict()
    del document["settings"]["tests.operators"]
    assert settings_from_document(document, source="settings.json").tests.operators == "gate"


def test_any_other_value_is_refused_with_its_place() -> None:
    with pytest.raises(InputError, match=r"\$\.tests\.operators: \"always\" is not allowed here \(expected one of: \"gate\", \"report\"\)"):
        load_matrix(matrix_text(extra="tests:\n  operators: always\n").encode())
