"""Facts about a project folder that decide which stages apply: its name, whether it uses
torch, which Pythons it supports and where its tests live.

Read from ``pyproject.toml`` (``[project]`` and ``[build-system]``), falling back to
``setup.cfg`` and a bounded look at ``setup.py`` for the requirement strings. Nothing is
imported or executed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from xcompat.errors import InputError
from xcompat.settings import ProjectFacts

_MAX_FILE = 1 << 20
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_TORCH_BUILD = re.compile(r"^\s*(?:from\s+torch\.utils(?:\.cpp_extension)?\s+import|import\s+torch\.utils\.cpp_extension)",
                          re.MULTILINE)
_SETUP_STR = re.compile(r"""["']([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:[<>=!~;\[][^"']*)?["']""")


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_FILE + 1)
    except OSError:
        return None
    if len(data) > _MAX_FILE:
        raise InputError(f"larger than {_MAX_FILE} bytes; not a project file", file=path)
    return data.decode("utf-8", errors="replace")


def read_pyproject(project: Path) -> dict[str, Any]:
    text = _read(project / "pyproject.toml")
    if text is None:
        return {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"invalid TOML: {exc}", file=project / "pyproject.toml") from None
    return data


def _names(requirements: Any) -> list[str]:
    out = []
    for req in requirements if isinstance(requirements, list) else []:
        if isinstance(req, str):
            m = _REQ_NAME.match(req)
            if m:
                out.append(m.group(1).lower().replace("_", "-"))
    return out


def project_name(project: Path) -> str | None:
    name = read_pyproject(project).get("project", {}).get("name")
    if isinstance(name, str):
        return name
    cfg = _read(project / "setup.cfg") or ""
    m = re.search(r"^\s*name\s*=\s*(\S+)", cfg, re.MULTILINE)
    return m.group(1) if m else None


def uses_torch(project: Path) -> tuple[bool, str]:
    """True when the project's ``Requires-Dist`` or build requirements name torch, and where."""
    doc = read_pyproject(project)
    proj = doc.get("project", {}) if isinstance(doc.get("project"), dict) else {}
    build = doc.get("build-system", {}) if isinstance(doc.get("build-system"), dict) else {}
    if "torch" in _names(proj.get("dependencies")):
        return True, "pyproject.toml [project] dependencies"
    if "torch" in _names(build.get("requires")):
        return True, "pyproject.toml [build-system] requires"
    for path in (project / "setup.cfg", project / "setup.py"):
        text = _read(path) or ""
        if path.name == "setup.cfg":
            block = re.search(r"(install_requires|setup_requires)\s*=\s*((?:\n[ \t]+.*)+|.*)", text)
            if block and re.search(r"(^|\s)torch\b", block.group(2)):
                return True, f"setup.cfg {block.group(1)}"
        else:
            for key in ("install_requires", "setup_requires"):
                m = re.search(key + r"\s*=\s*\[([^\]]*)\]", text)
                if m and "torch" in {n.lower() for n in _SETUP_STR.findall(m.group(1))}:
                    return True, f"setup.py {key}"
            # a torch extension that builds with torch's own build helpers, but names torch as
            # no requirement (it expects torch to be installed first, as many do)
            if _TORCH_BUILD.search(text):
                return True, "setup.py builds with torch.utils.cpp_extension"
    return False, "no torch in Requires-Dist or build requirements, and setup.py does not build with torch"


def project_facts(project: Path) -> ProjectFacts:
    torch, evidence = uses_torch(project)
    return ProjectFacts(name=project_name(project), uses_torch=torch, torch_evidence=evidence)


def import_name(project: Path) -> str | None:
    """The top-level package folder of the project (``src/`` layout or flat)."""
    name = project_name(project)
    candidates = []
    if name:
        candidates.append(re.sub(r"[-.]+", "_", name).lower())
    for base in (project / "src", project):
        for cand in candidates:
            if (base / cand / "__init__.py").is_file():
                return cand
    for base in (project / "src", project):
        if base.is_dir():
            pkgs = sorted(p.name for p in base.iterdir()
                          if p.is_dir() and (p / "__init__.py").is_file() and p.name not in ("tests", "test"))
            if len(pkgs) == 1:
                return pkgs[0]
    return None


def find_tests(project: Path) -> tuple[list[str], list[str]]:
    """Where the tests are: ``(pytest paths, pytest args)`` for the matrix's ``tests:``.

    ``tests/`` or ``test/`` at the top: that folder. Otherwise tests inside the package
    (``PKG/tests``): run against the installed wheel with ``--pyargs PKG``.
    """
    for folder in ("tests", "test"):
        if (project / folder).is_dir():
            return [folder], []
    pkg = import_name(project)
    if pkg:
        for base in (project / "src", project):
            for sub in ("tests", "test"):
                if (base / pkg / sub).is_dir():
                    return [f"{pkg}.{sub}"], ["--pyargs"]
        return [pkg], ["--pyargs"]
    return ["tests"], []


_PY_RANGE = re.compile(r"(>=|>|<=|<|==|~=|!=)\s*3\.(\d+)")


def supported_pythons(project: Path, known: tuple[str, ...]) -> list[str]:
    """The versions of ``known`` the project's ``requires-python`` allows (all when unset)."""
    spec = read_pyproject(project).get("project", {}).get("requires-python")
    if not isinstance(spec, str):
        return list(known)
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ModuleNotFoundError:  # pragma: no cover - packaging is a dependency
        return list(known)
    try:
        allowed = SpecifierSet(spec)
    except InvalidSpecifier:
        raise InputError(f"requires-python {spec!r} is not a version specifier",
                         file=project / "pyproject.toml") from None
    return [v for v in known if allowed.contains(v + ".0")]
