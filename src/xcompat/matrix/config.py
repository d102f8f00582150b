"""Typed, frozen view of a validated matrix file.

``load_matrix`` (in ``xcompat.matrix``) produces a ``Matrix``; every stage reads its
settings from it, never from the raw YAML. Defaults live in ``xcompat.matrix.defaults``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from xcompat.errors import InputError
from xcompat.matrix import defaults as D
from xcompat.matrix.schema_check import did_you_mean, json_path
from xcompat.matrix.yamlload import LoadedYaml
from xcompat.results.status import Bump

Isolation = Literal["none", "file", "test"]
Baseline = Literal["last-release-tag", "base-branch"]


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class PlatformSpec:
    """One operating system of the matrix and its architectures."""

    name: str  # linux | macos | windows
    archs: tuple[str, ...]
    policy: str | None = None  # linux: manylinux_2_28 / musllinux_1_2
    deployment_target: str | None = None  # macos: MACOSX_DEPLOYMENT_TARGET
    runs_on: Mapping[str, tuple[str, ...]] = field(
        default_factory=_empty
    )  # arch -> runner labels (defaults filled in)

    def labels(self, arch: str) -> tuple[str, ...]:
        return self.runs_on.get(arch) or D.DEFAULT_RUNNERS.get((self.name, arch), ())

    @property
    def wheel_policy(self) -> str | None:
        """What the plan's cells carry as ``policy``: the Linux policy or the macOS deployment target."""
        return self.policy if self.name == "linux" else self.deployment_target


@dataclass(frozen=True, kw_only=True)
class BackendSpec:
    """One device lane: cpu, cuda, rocm or mps."""

    name: str
    required: bool = True
    runs_on: Mapping[str, tuple[str, ...]] = field(default_factory=_empty)  # "*" or "platform-arch" -> labels
    platforms: tuple[str, ...] | None = None  # restriction; None = every supported platform
    archs: tuple[str, ...] | None = None
    toolkits: tuple[str, ...] = ()  # CUDA / ROCm versions; empty for cpu and mps
    gpu_archs: tuple[str, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.name in D.GPU_BACKENDS

    def supports(self, platform: str, arch: str) -> bool:
        support = D.BACKEND_SUPPORT[self.name]
        if platform not in support:
            return False
        archs = support[platform]
        if archs is not None and arch not in archs:
            return False
        if self.platforms is not None and platform not in self.platforms:
            return False
        return self.archs is None or arch in self.archs

    def labels(self, platform: str, arch: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
        return self.runs_on.get(f"{platform}-{arch}") or self.runs_on.get("*") or fallback


@dataclass(frozen=True, kw_only=True)
class CellRule:
    """An ``exclude`` rule: matches a cell when every field it names matches (None = any)."""

    python: frozenset[str] | None = None
    platform: frozenset[str] | None = None
    arch: frozenset[str] | None = None
    backend: frozenset[str] | None = None
    toolkit: frozenset[str] | None = None
    frameworks: Mapping[str, frozenset[str]] = field(default_factory=_empty)

    def matches(self, cell: Any) -> bool:
        for name in ("python", "platform", "arch", "backend", "toolkit"):
            allowed = getattr(self, name)
            if allowed is not None and (getattr(cell, name) or "") not in allowed:
                return False
        versions = dict(cell.frameworks)
        return all(versions.get(fw) in allowed for fw, allowed in self.frameworks.items())


@dataclass(frozen=True, kw_only=True)
class IncludeCell:
    """An ``include`` entry: one extra cell, added after exclusion."""

    python: str
    platform: str
    arch: str
    backend: str
    toolkit: str | None = None
    frameworks: tuple[tuple[str, str], ...] = ()
    required: bool | None = None  # None: the backend's setting
    runs_on: tuple[str, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class TestSettings:
    """``tests:``: what a test cell runs."""

    __test__ = False  # not a pytest test class

    kernels: Literal["all"] | tuple[str, ...] = "all"  # "none" in the file becomes ()
    pytest_paths: tuple[str, ...] = D.DEFAULT_PYTEST_PATHS
    pytest_args: tuple[str, ...] = ()
    isolation: Isolation = "test"
    timeout: float = D.DEFAULT_TEST_TIMEOUT  # seconds per test


@dataclass(frozen=True, kw_only=True)
class AbiPolicy:
    """``abi:``: baseline, which finding kinds gate, per-kind bump overrides."""

    baseline: Baseline = "last-release-tag"
    gating: tuple[str, ...] | None = None  # None: the ABI rules' defaults (kinds that need a major bump)
    bumps: Mapping[str, Bump] = field(default_factory=_empty)  # finding kind -> required bump override
    # extension modules' interface besides PyInit_* (globs); None: the package-prefix convention
    extension_exports: tuple[str, ...] | None = None
    # True: a run whose baseline cannot be found or built is red (the ABI was not compared)
    baseline_required: bool = False


@dataclass(frozen=True, kw_only=True)
class CoverageThresholds:
    """``coverage:``: percentages (0-100) or None when not gated."""

    overall: float | None = None
    diff: float | None = None


@dataclass(frozen=True, kw_only=True)
class GateSettings:
    """``gate:``: which tags the release gate applies to and which lanes must pass."""

    tag_pattern: str = D.DEFAULT_TAG_PATTERN
    required_backends: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Matrix:
    """A validated matrix file. Built only by ``xcompat.matrix.load_matrix``."""

    format: int
    repo: str
    serial: int
    expires: _dt.date | None
    pythons: tuple[str, ...]
    platforms: tuple[PlatformSpec, ...]
    backends: tuple[BackendSpec, ...]
    frameworks: Mapping[str, tuple[str, ...]]
    exclude: tuple[CellRule, ...] = ()
    include: tuple[IncludeCell, ...] = ()
    tests: TestSettings = TestSettings()
    abi: AbiPolicy = AbiPolicy()
    coverage: CoverageThresholds = CoverageThresholds()
    gate: GateSettings = GateSettings()
    sha256: str = ""  # of the exact bytes parsed
    source: str | None = None

    def backend(self, name: str) -> BackendSpec | None:
        return next((b for b in self.backends if b.name == name), None)

    def platform(self, name: str) -> PlatformSpec | None:
        return next((p for p in self.platforms if p.name == name), None)

    @property
    def backend_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.backends)

    @property
    def required_backends(self) -> tuple[str, ...]:
        """Backends whose lanes are marked ``required: true``."""
        return tuple(b.name for b in self.backends if b.required)

    def expired(self, today: _dt.date) -> bool:
        return self.expires is not None and today > self.expires


# -- building ------------------------------------------------------------------------


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

    pythons = tuple(doc["python"])
    for i, py in enumerate(pythons):
        if py.endswith("t") and _python_tuple(py) < D.FREE_THREADED_SINCE:
            raise chk.fail(
                ("python", i), f"free-threaded builds start at 3.13, not {py}", "remove the trailing t"
            )

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
        runs_on_raw = spec.get("runs-on")
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
        backend = BackendSpec(
            name=name,
            required=bool(spec.get("required", True)),
            runs_on=MappingProxyType(runs_on),
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
    backend_names = [b.name for b in backends]

    frameworks: dict[str, tuple[str, ...]] = {}
    for fw, versions in doc.get("frameworks", {}).items():
        if fw in D.RESERVED_FRAMEWORK_NAMES:
            raise chk.fail(("frameworks", fw), f"{fw!r} cannot be a framework name", key=True)
        frameworks[fw] = tuple(versions)

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

    t = doc.get("tests", {})
    kernels = t.get("kernels", D.DEFAULT_KERNELS)
    from xcompat.settings.pytest_options import not_running_option

    refused = not_running_option(t.get("pytest-args", ()))
    if refused is not None:
        index, option, instead = refused
        raise chk.fail(("tests", "pytest-args", index), f"{option} makes pytest {instead}",
                       "remove it: xcompat test runs the tests itself")
    tests = TestSettings(
        kernels="all" if kernels == "all" else () if kernels == "none" else tuple(kernels),
        pytest_paths=tuple(t.get("pytest", D.DEFAULT_PYTEST_PATHS)),
        pytest_args=tuple(t.get("pytest-args", D.DEFAULT_PYTEST_ARGS)),
        isolation=t.get("isolation", D.DEFAULT_ISOLATION),
        timeout=float(t.get("timeout", D.DEFAULT_TEST_TIMEOUT)),
    )
    a = doc.get("abi", {})
    abi = AbiPolicy(
        baseline=a.get("baseline", D.DEFAULT_ABI_BASELINE),
        gating=tuple(a["gate"]) if "gate" in a else None,
        bumps=MappingProxyType(dict(a.get("bumps", {}))),
        extension_exports=tuple(a["extension-exports"]) if "extension-exports" in a else None,
        baseline_required=bool(a.get("baseline-required", D.DEFAULT_ABI_BASELINE_REQUIRED)),
    )
    c = doc.get("coverage", {})
    coverage = CoverageThresholds(
        overall=float(c["overall"]) if "overall" in c else None,
        diff=float(c["diff"]) if "diff" in c else None,
    )
    g = doc.get("gate", {})
    for i, name in enumerate(g.get("required-backends", [])):
        if name not in backend_names:
            raise chk.fail(
                ("gate", "required-backends", i),
                f"backend {name!r} is not configured under backends:",
                f"configured: {', '.join(backend_names)}",
            )
    gate = GateSettings(
        tag_pattern=g.get("tag-pattern", D.DEFAULT_TAG_PATTERN),
        required_backends=tuple(g.get("required-backends", [b.name for b in backends if b.required])),
    )
    expires = _dt.date.fromisoformat(doc["expires"]) if "expires" in doc else None
    return Matrix(
        format=doc["xcompat"],
        repo=doc["repo"],
        serial=doc["serial"],
        expires=expires,
        pythons=pythons,
        platforms=tuple(platforms),
        backends=tuple(backends),
        frameworks=MappingProxyType(frameworks),
        exclude=tuple(exclude),
        include=tuple(include),
        tests=tests,
        abi=abi,
        coverage=coverage,
        gate=gate,
        sha256=hashlib.sha256(raw).hexdigest(),
        source=loaded.source,
    )
