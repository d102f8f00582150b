"""What a project builds against: its build requirements, the runner frameworks (torch, jax,
...) it needs installed (named in ``[build-system] requires`` or imported by ``setup.py``),
their installed versions, and so whether ``python -m build`` runs isolated."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xcompat.builder import defaults as D
from xcompat.builder.tools import run_tool
from xcompat.errors import InputError, UnavailableError

Isolation = Literal["auto", "on", "off"]


@dataclass(frozen=True, kw_only=True)
class IsolationChoice:
    isolated: bool
    reason: str
    constraints: tuple[str, ...] = ()  # pins written to PIP_CONSTRAINT when isolated


def check_project(project: Path) -> Path:
    project = Path(project)
    if not project.is_dir():
        raise InputError("project folder not found", file=project, hint="pass the folder holding pyproject.toml")
    if not (project / "pyproject.toml").is_file() and not (project / "setup.py").is_file():
        raise InputError("not a Python project: no pyproject.toml or setup.py", file=project)
    return project


def build_requirements(project: Path) -> list[str]:
    """``[build-system] requires`` of a project (setuptools' legacy default when absent)."""
    pyproject = project / "pyproject.toml"
    if not pyproject.is_file():
        return ["setuptools>=40.8.0"]
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", file=pyproject) from None
    requires = (data.get("build-system") or {}).get("requires", ["setuptools>=40.8.0"])
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise InputError("[build-system] requires must be a list of strings", file=pyproject)
    return requires


def runner_frameworks(requirements: Sequence[str], *, source: Path | None = None) -> tuple[str, ...]:
    """The build requirements that are frameworks the runner provides (torch, jax, ...)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names = set()
    for text in requirements:
        try:
            names.add(canonicalize_name(Requirement(text).name))
        except InvalidRequirement:
            raise InputError(f"invalid build requirement {text!r}", file=source) from None
    return tuple(sorted(names & D.RUNNER_FRAMEWORKS))


def setup_py_frameworks(project: Path) -> tuple[str, ...]:
    """The runner frameworks ``setup.py`` imports (``import torch``, ``from torch.utils...``),
    read with ``ast``, never run. A setup.py that imports torch builds against an installed
    torch whatever its build requirements say: its maintainers build it without isolation."""
    import ast

    path = project / "setup.py"
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return ()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return tuple(sorted({D.FRAMEWORK_MODULES[m] for m in modules if m in D.FRAMEWORK_MODULES}))


@dataclass(frozen=True, kw_only=True)
class BuildFrameworks:
    """The runner frameworks a project builds against, and what says so."""

    required: tuple[str, ...]  # named in [build-system] requires
    imported: tuple[str, ...]  # imported by setup.py and not required

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(sorted({*self.required, *self.imported}))


def build_frameworks(project: Path) -> BuildFrameworks:
    required = runner_frameworks(build_requirements(project), source=project / "pyproject.toml")
    imported = tuple(n for n in setup_py_frameworks(project) if n not in required)
    return BuildFrameworks(required=required, imported=imported)


def installed_version(python: str, name: str) -> str | None:
    """Version of distribution ``name`` in the environment of interpreter ``python``."""
    if Path(python).resolve() == Path(sys.executable).resolve():
        from importlib import metadata

        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None
    code = (
        "import importlib.metadata as m, sys\n"
        "try: print(m.version(sys.argv[1]))\n"
        "except m.PackageNotFoundError: pass\n"
    )
    run = run_tool([python, "-c", code, name], what=f"{python} (version of {name})", check=False)
    return run.stdout.strip() or None


def choose_isolation(project: Path, mode: Isolation, python: str) -> IsolationChoice:
    """Decide whether ``python -m build`` runs isolated.

    ``auto``: when the project builds against a framework the runner provides (torch, jax,
    ...; named in its build requirements, or imported by its setup.py), build without
    isolation against the installed one: an isolated build would download the newest
    framework release, not the one under test, or (a setup.py importing torch with no
    torch in its build requirements) fail without it. ``on`` with such a framework
    installed pins it to the installed version through PIP_CONSTRAINT.
    """
    found = build_frameworks(project)
    if mode == "off":
        return IsolationChoice(isolated=False, reason="isolation switched off")
    installed = {name: version for name in found.names if (version := installed_version(python, name)) is not None}
    pins = tuple(f"{name}=={version}" for name, version in installed.items())
    if mode == "on":
        reason = "isolated" + (f"; {', '.join(pins)} pinned to the runner's version" if pins else "")
        return IsolationChoice(isolated=True, reason=reason, constraints=pins)
    missing = [n for n in found.required if n not in installed]
    if missing:
        raise UnavailableError(
            f"build requires {', '.join(missing)}, which is not installed for {python}",
            hint="install the framework version under test first, or pass --isolation on",
        )
    if installed:
        imported = [n for n in found.imported if n in installed]
        why = f" (setup.py imports {', '.join(imported)})" if imported else ""
        return IsolationChoice(isolated=False,
                               reason=f"not isolated: builds against the runner's {', '.join(pins)}{why}")
    # A setup.py that imports a framework this runner lacks: maybe only to add an optional
    # extension; an isolated build says what is missing.
    return IsolationChoice(isolated=True, reason="isolated")
