"""Facts about the installed torch read from its files, without importing it.

``import torch`` costs about two seconds; a backend probe that only needs to know whether
torch was built with CUDA or HIP reads ``torch/version.py`` instead.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class TorchBuild:
    installed: bool
    version: str | None = None
    cuda: str | None = None
    hip: str | None = None
    location: str | None = None


def parse_version_file(text: str) -> dict[str, str | None]:
    """The string constants assigned at the top level of ``torch/version.py``."""
    values: dict[str, str | None] = {}
    for node in ast.parse(text).body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and (value.value is None or isinstance(value.value, str))
        ):
            values[target.id] = value.value
    return values


@cache
def torch_build() -> TorchBuild:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return TorchBuild(installed=False)
    location = Path(next(iter(spec.submodule_search_locations)))
    try:
        values = parse_version_file((location / "version.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return TorchBuild(installed=True, location=str(location))
    return TorchBuild(
        installed=True,
        version=values.get("__version__"),
        cuda=values.get("cuda"),
        hip=values.get("hip"),
        location=str(location),
    )
