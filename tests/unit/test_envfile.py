"""The one writer of CI variables (xcompat.envfile): whatever a value holds, the runner reads back
exactly the variable that was written, or nothing is written. Read back as the runner reads the
file (tests/helpers/runner_files.py)."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from tests.helpers.matrix import sample_matrix_path
from tests.helpers.runner_files import github_file_variables, gitlab_dotenv_variables

from xcompat.envfile import OUTPUT_NAME, assignment
from xcompat.errors import InputError
from xcompat.log import Logger
from xcompat.matrix import load_matrix
from xcompat.settings import resolve_settings

VALUES = [
    "",
    "v*",
    "a=b<<c",
    "two\nlines",
    "v*\nLD_PRELOAD=/tmp/evil.so",
    "v*\r\nBASH_ENV=/tmp/evil.sh",
    "carriage\rreturn",
    "ends with a newline\n",
    "\n\nEOF\nghadelimiter_0123456789abcdef0123456789abcdef\nx<<EOF\n",
    "ünïcode ✓",
]


@pytest.mark.parametrize("value", VALUES)
def test_a_github_file_reads_back_exactly_one_variable(value: str) -> None:
    text = assignment("XCOMPAT_GATE_TAG_PATTERN", value, "github")
    assert github_file_variables(text) == [("XCOMPAT_GATE_TAG_PATTERN", value)]


@pytest.mark.parametrize("value", VALUES)
def test_a_dotenv_line_is_one_variable_or_nothing(value: str) -> None:
    if "\n" in value or "\r" in value:
        with pytest.raises(InputError, match="gate.tag-pattern: the value .* spans lines"):
            assignment("XCOMPAT_GATE_TAG_PATTERN", value, "dotenv", what="gate.tag-pattern", source="plan.json")
        return
    text = assignment("XCOMPAT_GATE_TAG_PATTERN", value, "dotenv")
    assert github_file_variables(text) == gitlab_dotenv_variables(text) == [("XCOMPAT_GATE_TAG_PATTERN", value)]


@pytest.mark.parametrize("name", ["", "1ABC", "A B", "A=B", "A<<B", "A\nBASH_ENV", "A\x00", "LD-PRELOAD", "Ä"])
def test_a_name_that_is_not_a_name_is_refused(name: str) -> None:
    for form in ("github", "dotenv"):
        with pytest.raises(InputError, match="is not a name"):
            assignment(name, "x", form)  # type: ignore[arg-type]


@pytest.mark.parametrize("form", ["github", "dotenv"])
def test_a_nul_byte_is_refused(form: str) -> None:
    with pytest.raises(InputError, match="NUL"):
        assignment("X", "before\x00after", form)  # type: ignore[arg-type]


def test_settings_with_a_multi_line_value_are_refused_by_the_writer_too() -> None:
    """The matrix and the plan refuse such a tag pattern; settings made any other way still cannot
    write it as two variables."""
    settings = resolve_settings(load_matrix(sample_matrix_path()))
    hostile = replace(settings, gate=replace(settings.gate, tag_pattern="v*\nLD_PRELOAD=/tmp/evil.so"))
    with pytest.raises(InputError, match=r"gate\.tag-pattern: the value .* spans lines") as exc:
        hostile.to_env(source="plan.json")
    assert exc.value.file == "plan.json"
    names = [name for name, _ in github_file_variables("".join(line + "\n" for line in settings.to_env()))]
    assert len(names) == len(set(names)) and not {"LD_PRELOAD", "BASH_ENV"} & set(names)


def test_step_outputs_take_any_value_and_refuse_a_name_that_is_not_one(tmp_path: Path) -> None:
    out = tmp_path / "github_output"
    log = Logger({"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(out)}, io.StringIO())
    for value in VALUES:
        assert log.set_output("cells-passed", value)
    assert github_file_variables(out.read_bytes().decode("utf-8")) == [("cells-passed", v) for v in VALUES]
    for name in ("conclusion\nBASH_ENV", "a<<b", "x=y", ""):
        with pytest.raises(InputError, match="is not a name"):
            log.set_output(name, "x")
    with pytest.raises(InputError, match="NUL"):
        log.set_output("conclusion", "success\x00")
    assert github_file_variables(out.read_bytes().decode("utf-8")) == [("cells-passed", v) for v in VALUES]
    assert OUTPUT_NAME.fullmatch("cells-passed") and not OUTPUT_NAME.fullmatch("-x")
