"""The sample inputs a project declares for its operators, read from ``.xcompat/operators.py``.

The file is a plain Python module with two dictionaries keyed by operator name::

    SAMPLES = {"sample_ext::scaled_add": scaled_add_samples}      # required
    REFERENCES = {"sample_ext::scaled_add": scaled_add_reference}  # optional

A samples function takes no argument and returns (or yields) argument tuples, one per
call of the operator, like the ``sample_inputs`` of PyTorch's OpInfo. A reference function
takes the same arguments, floating tensors as float64 CPU copies, and returns the exact
result. Every mistake in the file is one ``SamplesError`` naming the file, the operator and
what to do.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_SAMPLES = 64  # per operator: each sample is expanded into dozens of derived cases


class SamplesError(Exception):
    """The samples file cannot be used; ``str()`` is one line naming the file and the fix."""


@dataclass(frozen=True)
class Declared:
    """What the file declares for one operator."""

    samples: Callable[[], Any]
    reference: Callable[..., Any] | None = None


@dataclass
class SamplesFile:
    path: str | None
    operators: dict[str, Declared] = field(default_factory=dict)


def check_syntax(path: Path) -> None:
    """Refuse a file that is not Python before any interpreter runs it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SamplesError(f"{path}: cannot read the samples file ({exc}); give a readable UTF-8 file") from None
    try:
        ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise SamplesError(
            f"{path}:{exc.lineno}: syntax error: {exc.msg}; fix the file (it is a Python module)"
        ) from None


def _table(module: Any, name: str, path: Path, required: bool) -> Mapping[str, Any]:
    table = getattr(module, name, None)
    if table is None:
        if required:
            raise SamplesError(
                f'{path}: no SAMPLES dictionary; define SAMPLES = {{"namespace::op": function, ...}}'
            )
        return {}
    if not isinstance(table, Mapping):
        raise SamplesError(f'{path}: {name} is a {type(table).__name__}, not a dictionary of "namespace::op" -> function')
    for key, value in table.items():
        if not isinstance(key, str) or "::" not in key:
            raise SamplesError(f'{path}: {name} key {key!r} is not an operator name like "namespace::op"')
        if not callable(value):
            raise SamplesError(f"{path}: {name}[{key!r}] is a {type(value).__name__}, not a function")
    return table


def load_samples(path: str | Path | None) -> SamplesFile:
    """Import the samples file (in the process that runs the checks); None: nothing declared."""
    if path is None:
        return SamplesFile(None)
    path = Path(path)
    check_syntax(path)
    spec = importlib.util.spec_from_file_location("xcompat_operator_samples", path)
    if spec is None or spec.loader is None:
        raise SamplesError(f"{path}: cannot be imported as a Python module; name it operators.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the project's module may raise anything
        raise SamplesError(
            f"{path}: importing the samples file raised {type(exc).__name__}: {_one_line(exc)}; "
            "fix the module's top level"
        ) from None
    samples = _table(module, "SAMPLES", path, True)
    references = _table(module, "REFERENCES", path, False)
    for op in references.keys() - samples.keys():
        raise SamplesError(f"{path}: REFERENCES names {op!r}, which has no entry in SAMPLES; add its samples")
    declared = {op: Declared(fn, references.get(op)) for op, fn in samples.items()}
    return SamplesFile(str(path), declared)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:200] + ("..." if len(text) > 200 else "")


def call_samples(op: str, declared: Declared, where: str) -> list[tuple[Any, ...]]:
    """The argument tuples of one operator; a raising function or a wrong type is a SamplesError."""
    produced: Any = None
    try:
        produced = declared.samples()
        if not isinstance(produced, Iterable) or isinstance(produced, (str, bytes, Mapping)):
            raise SamplesError(
                f"{where}: the samples function of {op} returned {type(produced).__name__}; "
                "return a list of argument tuples, e.g. [(torch.randn(4), 2.0)]"
            )
        items = list(produced)  # a generator runs here
    except SamplesError:
        raise
    except Exception as exc:  # noqa: BLE001 - the project's function may raise anything
        raise SamplesError(
            f"{where}: the samples function of {op} raised {type(exc).__name__}: {_one_line(exc)}; "
            "make it return a list of argument tuples"
        ) from None
    if not items:
        raise SamplesError(f"{where}: the samples function of {op} returned no samples; return at least one")
    for index, item in enumerate(items):
        if not isinstance(item, tuple):
            raise SamplesError(
                f"{where}: sample {index + 1} of {op} is a {type(item).__name__}, not a tuple of arguments; "
                "wrap it: (tensor,)"
            )
    return items[:MAX_SAMPLES]
