"""A hostile samples file: every mistake is one line naming the file and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.errors import InputError
from xcompat.operators.runner import run_operators
from xcompat.operators.samples import SamplesError, call_samples, load_samples


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "operators.py"
    path.write_text(text)
    return path


def _one_line_error(path: Path, *, call: str | None = None) -> str:
    with pytest.raises(SamplesError) as exc:
        loaded = load_samples(path)
        if call is not None:
            call_samples(call, loaded.operators[call], str(path))
    text = str(exc.value)
    assert "\n" not in text and text.startswith(str(path))
    return text


def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "import torch\nSAMPLES = {\n")
    assert "operators.py:2: syntax error" in _one_line_error(path)


def test_a_syntax_error_is_an_input_error_before_any_process_starts(tmp_path: Path) -> None:
    path = _write(tmp_path, "def f(:\n")
    with pytest.raises(InputError, match=r"operators\.py:1: syntax error: .*fix the file"):
        run_operators(tmp_path, samples=path)


@pytest.mark.parametrize(("text", "expected"), [
    ("raise ValueError('no data')\n", "importing the samples file raised ValueError: no data; fix the module"),
    ("X = 1\n", "no SAMPLES dictionary; define SAMPLES"),
    ("SAMPLES = [1]\n", "SAMPLES is a list, not a dictionary"),
    ("SAMPLES = {'scaled_add': lambda: []}\n", "key 'scaled_add' is not an operator name"),
    ("SAMPLES = {'ns::op': 3}\n", "SAMPLES['ns::op'] is a int, not a function"),
    ("SAMPLES = {'ns::a': lambda: []}\nREFERENCES = {'ns::b': abs}\n", "REFERENCES names 'ns::b'"),
])
def test_a_malformed_module_is_one_line(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in _one_line_error(_write(tmp_path, text))


@pytest.mark.parametrize(("body", "expected"), [
    ("raise KeyError('shape')", "the samples function of ns::op raised KeyError: 'shape'; make it return"),
    ("return None", "returned NoneType; return a list of argument tuples"),
    ("return {'x': 1}", "returned dict; return a list of argument tuples"),
    ("return 'abc'", "returned str"),
    ("return 5", "returned int; return a list"),
    ("yield (1,)\n    raise OSError('disk')", "raised OSError: disk"),
    ("return []", "returned no samples; return at least one"),
    ("return [1.0]", "sample 1 of ns::op is a float, not a tuple of arguments; wrap it"),
])
def test_a_bad_samples_function_is_one_line(tmp_path: Path, body: str, expected: str) -> None:
    path = _write(tmp_path, f"def f():\n    {body}\nSAMPLES = {{'ns::op': f}}\n")
    assert expected in _one_line_error(path, call="ns::op")


def test_a_generator_of_tuples_is_read(tmp_path: Path) -> None:
    path = _write(tmp_path, "def f():\n    yield (1,)\n    yield (2, 3)\nSAMPLES = {'ns::op': f}\n"
                            "REFERENCES = {'ns::op': lambda *a: a}\n")
    loaded = load_samples(path)
    assert call_samples("ns::op", loaded.operators["ns::op"], str(path)) == [(1,), (2, 3)]
    assert loaded.operators["ns::op"].reference is not None


def test_a_missing_samples_file_or_site_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such samples file"):
        run_operators(tmp_path, samples=tmp_path / "absent.py")
    with pytest.raises(InputError, match="not a folder"):
        run_operators(tmp_path / "absent")
