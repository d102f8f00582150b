"""Build a ``Matrix`` from a schema-valid document, refusing cross-field errors.

The schema (``schemas/matrix.schema.json``) has checked each value on its own; what is
checked here needs two places of the file at once (runner labels for an arch that is not
configured, an exclude rule naming an unknown framework, a gate requiring an unconfigured
backend). Each error names the file, line and column of the place to fix. The settings
sections (``tests``, ``abi``, ``coverage``, ``gate``) are read by the settings table
(``xcompat.settings.formats.sections_from_matrix``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from types import MappingProxyType
from typing import Any

from xcompat.errors import InputError
from xcompat.matrix import defaults as D
from xcompat.matrix.config import BackendSpec, CellRule, IncludeCell, Matrix, PlatformSpec
from xcompat.matrix.schema_check import did_you_mean, json_path
from xcompat.matrix.yamlload import LoadedYaml


def _labels(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _one_or_many(value: Any) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return frozenset(str(v) for v in value)
    return frozenset({str(value)})


def _python_tuple(version: str) -> tuple[int, int]:
    major, minor = version.rstrip("t").split(".")
    return int(major), int(minor)


class _Checker:
    def __init__(self, loaded: LoadedYaml):
        self.loaded = loaded

    def fail(
        self, path: tuple[Any, ...], message: str, hint: str | None = None, *, key: bool = False
    ) -> InputError:
        mark = self.loaded.mark_for(path, key=key)
        return InputError(
            f"{json_path(path)}: {message}",
            file=self.loaded.source,
            line=mark.line if mark else None,
            column=mark.column if mark else None,
            hint=hint,
        )


def build_matrix(loaded: LoadedYaml, raw: bytes) -> Matrix:
    """Turn a schema-valid document into a ``Matrix``; raise ``InputError`` on cross-field errors."""
    doc: dict[str, Any] = loaded.data
    chk = _Checker(loaded)
    pythons = _pythons(doc, chk)
    platforms = _platforms(doc, chk)
    backends = _backends(doc, chk, platforms)
    frameworks = _frameworks(doc, chk)
    exclude = _exclude(doc, chk, pythons, platforms, backends, frameworks)
    include = _include(doc, chk, backends)
    sections = _settings(doc, chk, backends)
    expires = _dt.date.fromisoformat(doc["expires"]) if "expires" in doc else None
    return Matrix(
        format=doc["xcompat"],
        repo=doc["repo"],
        serial=doc["serial"],
        expires=expires,
        pythons=pythons,
        platforms=platforms,
        backends=backends,
        frameworks=MappingProxyType(frameworks),
        exclude=exclude,
        include=include,
        **sections,
        sha256=hashlib.sha256(raw).hexdigest(),
        source=loaded.source,
    )


def _pythons(doc: dict[str, Any], chk: _Checker) -> tuple[str, ...]:
    pythons = tuple(doc["python"])
    for i, py in enumerate(pythons):
        if py.endswith("t") and _python_tuple(py) < D.FREE_THREADED_SINCE:
            raise chk.fail(
                ("python", i), f"free-threaded builds start at 3.13, not {py}", "remove the trailing t"
            )
    return pythons


def _platforms(doc: dict[str, Any], chk: _Checker) -> tuple[PlatformSpec, ...]:
    platforms: list[PlatformSpec] = []
    for name, spec in doc["platforms"].items():
        archs = tuple(spec["archs"])
        arch_labels: dict[str, tuple[str, ...]] = {}
        for arch, labels in spec.get("runs-on", {}).items():
            if arch not in archs:
                raise chk.fail(
                    ("platforms", name, "runs-on", arch),
                    f"runner labels for {arch!r}, which is not in this platform's archs",
                    did_you_mean(arch, archs) or f"archs here: {', '.join(archs)}",
                    key=True,
                )
            arch_labels[arch] = _labels(labels)
        platforms.append(
            PlatformSpec(
                name=name,
                archs=archs,
                policy=spec.get("policy", D.DEFAULT_LINUX_POLICY) if name == "linux" else None,
                deployment_target=(
                    spec.get("deployment-target", D.DEFAULT_MACOS_DEPLOYMENT_TARGET)
                    if name == "macos"
                    else None
                ),
                runs_on=MappingProxyType(arch_labels),
            )
        )
    return tuple(platforms)


def _backends(doc: dict[str, Any], chk: _Checker, platforms: tuple[PlatformSpec, ...]) -> tuple[BackendSpec, ...]:
    configured = {(p.name, a) for p in platforms for a in p.archs}
    platform_names = [p.name for p in platforms]
    backends: list[BackendSpec] = []
    for name, spec in doc["backends"].items():
        spec = spec or {}
        for i, plat in enumerate(spec.get("platforms", [])):
            if plat not in platform_names:
                raise chk.fail(
                    ("backends", name, "platforms", i),
                    f"platform {plat!r} is not configured under platforms:",
                    f"configured: {', '.join(platform_names)}",
                )
        all_archs = sorted({a for _, a in configured})
        for i, arch in enumerate(spec.get("archs", [])):
            if arch not in all_archs:
                raise chk.fail(
                    ("backends", name, "archs", i),
                    f"arch {arch!r} is not configured under platforms:",
                    did_you_mean(arch, all_archs) or f"configured: {', '.join(all_archs)}",
                )
        backend = BackendSpec(
            name=name,
            required=bool(spec.get("required", True)),
            runs_on=MappingProxyType(_backend_runs_on(chk, name, spec.get("runs-on"), configured)),
            platforms=tuple(spec["platforms"]) if "platforms" in spec else None,
            archs=tuple(spec["archs"]) if "archs" in spec else None,
            toolkits=tuple(spec.get("toolkits", ())),
            gpu_archs=tuple(spec.get("gpu-archs", ())),
        )
        if not any(backend.supports(p, a) for p, a in configured):
            where = sorted(D.BACKEND_SUPPORT[name])
            raise chk.fail(
                ("backends", name),
                f"backend {name!r} has no configured platform/arch to run on",
                f"{name} runs on: "
                + ", ".join(
                    f"{p} ({', '.join(sorted(D.BACKEND_SUPPORT[name][p] or ['any arch']))})" for p in where
                ),
                key=True,
            )
        backends.append(backend)
    return tuple(backends)


def _backend_runs_on(
    chk: _Checker, name: str, runs_on_raw: Any, configured: set[tuple[str, str]]
) -> dict[str, tuple[str, ...]]:
    runs_on: dict[str, tuple[str, ...]] = {}
    if isinstance(runs_on_raw, list):
        runs_on["*"] = _labels(runs_on_raw)
    elif isinstance(runs_on_raw, dict):
        keys = sorted(f"{p}-{a}" for p, a in configured)
        for key, labels in runs_on_raw.items():
            if key not in keys:
                raise chk.fail(
                    ("backends", name, "runs-on", key),
                    f"runner labels for {key!r}, which is not a configured platform-arch",
                    did_you_mean(key, keys) or f"configured: {', '.join(keys)}",
                    key=True,
                )
            runs_on[key] = _labels(labels)
    return runs_on


def _frameworks(doc: dict[str, Any], chk: _Checker) -> dict[str, tuple[str, ...]]:
    frameworks: dict[str, tuple[str, ...]] = {}
    for fw, versions in doc.get("frameworks", {}).items():
        if fw in D.RESERVED_FRAMEWORK_NAMES:
            raise chk.fail(("frameworks", fw), f"{fw!r} cannot be a framework name", key=True)
        frameworks[fw] = tuple(versions)
    return frameworks


def _exclude(
    doc: dict[str, Any], chk: _Checker, pythons: tuple[str, ...], platforms: tuple[PlatformSpec, ...],
    backends: tuple[BackendSpec, ...], frameworks: dict[str, tuple[str, ...]],
) -> tuple[CellRule, ...]:
    backend_names = [b.name for b in backends]
    platform_names = [p.name for p in platforms]
    exclude: list[CellRule] = []
    for i, rule in enumerate(doc.get("exclude", [])):
        fws = rule.get("frameworks", {})
        for fw in fws:
            if fw not in frameworks:
                raise chk.fail(
                    ("exclude", i, "frameworks", fw),
                    f"framework {fw!r} is not listed under frameworks:",
                    did_you_mean(fw, list(frameworks)),
                    key=True,
                )
        for field_name, known in (
            ("backend", backend_names),
            ("platform", platform_names),
            ("python", pythons),
        ):
            for value in sorted(_one_or_many(rule.get(field_name)) or ()):
                if value not in known:
                    raise chk.fail(
                        ("exclude", i, field_name),
                        f"{field_name} {value!r} is not in the matrix, so this rule never matches",
                        did_you_mean(value, list(known)) or f"known: {', '.join(known)}",
                    )
        exclude.append(
            CellRule(
                python=_one_or_many(rule.get("python")),
                platform=_one_or_many(rule.get("platform")),
                arch=_one_or_many(rule.get("arch")),
                backend=_one_or_many(rule.get("backend")),
                toolkit=_one_or_many(rule.get("toolkit")),
                frameworks=MappingProxyType({k: _one_or_many(v) or frozenset() for k, v in fws.items()}),
            )
        )
    return tuple(exclude)


def _include(doc: dict[str, Any], chk: _Checker, backends: tuple[BackendSpec, ...]) -> tuple[IncludeCell, ...]:
    backend_names = [b.name for b in backends]
    include: list[IncludeCell] = []
    for i, cell in enumerate(doc.get("include", [])):
        if cell["backend"] not in backend_names:
            raise chk.fail(
                ("include", i, "backend"),
                f"backend {cell['backend']!r} is not configured under backends:",
                f"configured: {', '.join(backend_names)}",
            )
        if (cell["platform"], cell["arch"]) not in D.DEFAULT_RUNNERS:
            known = sorted(a for p, a in D.DEFAULT_RUNNERS if p == cell["platform"])
            raise chk.fail(
                ("include", i, "arch"),
                f"{cell['arch']!r} is not an arch of {cell['platform']}",
                did_you_mean(cell["arch"], known) or f"known: {', '.join(known)}",
            )
        if "toolkit" in cell and cell["backend"] not in D.GPU_BACKENDS:
            raise chk.fail(
                ("include", i, "toolkit"),
                f"backend {cell['backend']!r} has no toolkit",
                "toolkits belong to cuda and rocm cells",
                key=True,
            )
        include.append(
            IncludeCell(
                python=cell["python"],
                platform=cell["platform"],
                arch=cell["arch"],
                backend=cell["backend"],
                toolkit=cell.get("toolkit"),
                frameworks=tuple(sorted((str(k), str(v)) for k, v in cell.get("frameworks", {}).items())),
                required=cell.get("required"),
                runs_on=_labels(cell["runs-on"]) if "runs-on" in cell else None,
            )
        )
    return tuple(include)


def _settings(doc: dict[str, Any], chk: _Checker, backends: tuple[BackendSpec, ...]) -> dict[str, Any]:
    """The settings sections, after the checks that need the rest of the file."""
    from xcompat.settings.formats import sections_from_matrix
    from xcompat.settings.pytest_options import not_running_option

    refused = not_running_option(doc.get("tests", {}).get("pytest-args", ()))
    if refused is not None:
        index, option, instead = refused
        raise chk.fail(("tests", "pytest-args", index), f"{option} makes pytest {instead}",
                       "remove it: xcompat test runs the tests itself")
    backend_names = [b.name for b in backends]
    for i, name in enumerate(doc.get("gate", {}).get("required-backends", [])):
        if name not in backend_names:
            raise chk.fail(
                ("gate", "required-backends", i),
                f"backend {name!r} is not configured under backends:",
                f"configured: {', '.join(backend_names)}",
            )
    # Unset, the backends whose lanes are required.
    derived = {"gate.required-backends": [b.name for b in backends if b.required]}
    return sections_from_matrix(doc, derived)
