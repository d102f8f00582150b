"""Typed, frozen objects shared by every stage: the cell of a test matrix.

A *cell* is one job of the expanded matrix: a Python version on a platform/arch, with a
device backend and framework versions. Every stage's result JSON names the cell it ran
in by ``cell_id``; the report and the release gate join results to the plan by that id.
"""

from __future__ import annotations

import re
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Backend = Literal["cpu", "cuda", "rocm", "mps"]
BACKENDS: tuple[Backend, ...] = ("cpu", "cuda", "rocm", "mps")
Platform = Literal["linux", "macos", "windows"]


@dataclass(frozen=True, kw_only=True)
class Cell:
    id: str
    python: str  # "3.12", "3.13t" (free-threaded)
    platform: Platform
    arch: str  # x86_64, aarch64, arm64, AMD64
    backend: Backend
    required: bool = True
    toolkit: str | None = None  # CUDA "12.8", ROCm "6.2"
    gpu_archs: tuple[str, ...] = ()  # sm_80, gfx90a
    frameworks: tuple[tuple[str, str], ...] = ()  # (("torch", "2.5"), ("numpy", "2.1"))
    runs_on: tuple[str, ...] = ()
    policy: str | None = None  # manylinux_2_28, musllinux_1_2, or a macOS deployment target "11.0"
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def free_threaded(self) -> bool:
        return self.python.endswith("t")

    def framework(self, name: str) -> str | None:
        return dict(self.frameworks).get(name)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["gpu_archs"] = list(self.gpu_archs)
        data["frameworks"] = dict(self.frameworks)
        data["runs_on"] = list(self.runs_on)
        data["extra"] = dict(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        return cls(
            id=data["id"],
            python=str(data["python"]),
            platform=data["platform"],
            arch=data["arch"],
            backend=data["backend"],
            required=bool(data.get("required", True)),
            toolkit=data.get("toolkit"),
            gpu_archs=tuple(data.get("gpu_archs", ())),
            frameworks=tuple(sorted((str(k), str(v)) for k, v in dict(data.get("frameworks", {})).items())),
            runs_on=tuple(data.get("runs_on", ())),
            policy=data.get("policy"),
            extra=tuple(sorted((str(k), str(v)) for k, v in dict(data.get("extra", {})).items())),
        )


# The documented character set of a cell id (docs/matrix.md): what ``cell_id`` makes, and all
# that a plan or a result may carry. Ids become job names, artifact and file names, and are
# printed in logs and reports, so nothing else is accepted where a plan or result is read.
CELL_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")


def cell_id_problem(value: object) -> str | None:
    """Why ``value`` is not a valid cell id, or None."""
    if not isinstance(value, str) or not value:
        return "a cell id must be a non-empty string"
    if not CELL_ID_PATTERN.fullmatch(value):
        shown = value if len(value) <= 60 else value[:60] + "…"
        return (f"cell id {shown!r} has characters outside A-Z a-z 0-9 . _ - (or is longer than 255)")
    return None


def cell_id(
    python: str,
    platform: str,
    arch: str,
    backend: str,
    toolkit: str | None = None,
    frameworks: tuple[tuple[str, str], ...] = (),
) -> str:
    """Stable, filename- and job-name-safe id: ``py3.12-linux-x86_64-cuda12.8-torch2.5``."""
    parts = [f"py{python}", platform, arch, backend + (toolkit or "")]
    parts += [f"{name}{version}" for name, version in sorted(frameworks)]
    return re.sub(r"[^A-Za-z0-9._-]", "_", "-".join(parts))


def runner_platform() -> Platform:
    """This machine's platform in the matrix's words: ``linux``, ``macos`` or ``windows``."""
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    return "windows"


def runner_arch() -> str:
    """This machine's arch in the matrix's (and cibuildwheel's) words.

    Linux: ``x86_64``/``aarch64``; macOS: ``arm64``/``x86_64``; Windows: ``AMD64``/``ARM64``/``x86``.
    """
    import platform  # not at module level: it costs ~20 ms of start-up for every command

    machine = platform.machine()
    if sys.platform == "win32":
        return {"amd64": "AMD64", "arm64": "ARM64", "x86": "x86"}.get(machine.lower(), machine)
    if sys.platform == "darwin":
        return "arm64" if machine in ("arm64", "aarch64") else machine
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)
