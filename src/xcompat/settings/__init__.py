"""The resolved settings of a run: one frozen, typed object every stage reads.

Precedence, lowest to highest (docs/run.md, "Settings"):

1. the defaults table, ``settings/defaults.json`` (the only place a default is written);
2. the signed matrix (``tests``, ``abi``, ``coverage``, ``gate``), or the plan made from it
   (``xcompat matrix plan`` copies them into ``settings`` with the matrix's ``matrix_sha256``);
3. command-line overrides (``xcompat run --timeout 60``), **outside CI only**. In CI
   (``CI=true``) an override is refused: the settings come from the verified matrix alone,
   so a pull request cannot add ``--deselect`` to ``tests.pytest-args``.

Command-line options default to "unset" (``None``), so an option the user did not give
never wins over the matrix. ``Settings.value(key)`` answers by the matrix's own dotted key
names (``tests.pytest-args``), ``to_env()`` gives ``XCOMPAT_TESTS_PYTEST_ARGS=["-x"]``
lines (lists and mappings JSON-encoded; a value that spans lines is refused) for CI jobs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from xcompat.ci import is_ci
from xcompat.errors import InputError, UsageError
from xcompat.matrix.config import AbiPolicy, CoverageThresholds, GateSettings, Matrix, TestSettings

SETTINGS_VERSION = 1
Origin = Literal["defaults", "matrix", "plan"]
ISOLATIONS = ("none", "file", "test")
BUMPS = ("none", "patch", "minor", "major")
BASELINES = ("last-release-tag", "base-branch")


@cache
def defaults() -> Mapping[str, Any]:
    """The defaults table (``defaults.json``), keyed by the matrix's dotted key names."""
    raw = json.loads((Path(__file__).parent / "defaults.json").read_text(encoding="utf-8"))
    return MappingProxyType({k: v for k, v in raw.items() if not k.startswith("_")})


def setting_keys() -> tuple[str, ...]:
    return tuple(defaults())


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Resolved settings. Build with ``resolve_settings`` or ``settings_from_plan``."""

    tests: TestSettings
    abi: AbiPolicy
    coverage: CoverageThresholds
    gate: GateSettings
    matrix_sha256: str | None = None
    origin: Origin = "defaults"
    overridden: tuple[str, ...] = ()  # keys set on the command line
    signed: bool | None = None  # None: not known here (the plan says the matrix was verified)

    def value(self, key: str) -> Any:
        """A setting by its matrix key, as JSON data (``tests.kernels: none`` reads ``"none"``)."""
        t, a, c, g = self.tests, self.abi, self.coverage, self.gate
        table: dict[str, Any] = {
            "tests.kernels": t.kernels if t.kernels == "all" else ("none" if not t.kernels else list(t.kernels)),
            "tests.pytest": list(t.pytest_paths),
            "tests.pytest-args": list(t.pytest_args),
            "tests.isolation": t.isolation,
            "tests.timeout": t.timeout,
            "abi.baseline": a.baseline,
            "abi.baseline-required": a.baseline_required,
            "abi.gate": None if a.gating is None else list(a.gating),
            "abi.bumps": dict(a.bumps),
            "abi.extension-exports": None if a.extension_exports is None else list(a.extension_exports),
            "coverage.overall": c.overall,
            "coverage.diff": c.diff,
            "gate.tag-pattern": g.tag_pattern,
            "gate.required-backends": list(g.required_backends),
        }
        if key not in table:
            raise UsageError(f"unknown setting {key!r}", hint=_did_you_mean(key))
        return table[key]

    @property
    def kernels_requested(self) -> bool:
        return self.tests.kernels == "all" or bool(self.tests.kernels)

    def abi_policy_document(self) -> dict[str, Any]:
        """The ``abi:`` section in the shape ``xcompat abi diff --policy`` reads."""
        doc: dict[str, Any] = {"bumps": dict(self.abi.bumps), "baseline": self.abi.baseline}
        if self.abi.gating is not None:
            doc["gate"] = list(self.abi.gating)
        if self.abi.extension_exports is not None:
            doc["extension_exports"] = list(self.abi.extension_exports)
        return doc

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": SETTINGS_VERSION,
            "kind": "settings",
            "origin": self.origin,
            "matrix_sha256": self.matrix_sha256,
            "signed": self.signed,
            "overridden": list(self.overridden),
            "settings": {key: self.value(key) for key in setting_keys()},
        }

    def env_vars(self) -> list[tuple[str, str, str]]:
        """``(NAME, value, setting key)`` of each setting as a CI variable: ``XCOMPAT_TESTS_TIMEOUT``,
        ``120``, ``tests.timeout`` (lists and mappings JSON-encoded, so on one line)."""
        out = []
        for key in setting_keys():
            value = self.value(key)
            name = "XCOMPAT_" + key.upper().replace(".", "_").replace("-", "_")
            text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            out.append((name, text, key))
        out.append(("XCOMPAT_MATRIX_SHA256", self.matrix_sha256 or "", "matrix_sha256"))
        return out

    def to_env(self, *, source: str | Path | None = None) -> list[str]:
        """``NAME=value`` lines for ``$GITHUB_ENV`` or a GitLab dotenv report (``xcompat.envfile``).

        A value that spans lines (a ``gate.tag-pattern`` from a hand-made plan) is an
        ``InputError`` naming ``source`` and the key: written raw, its second line would be
        a variable of its own for every later step of the job."""
        from xcompat.envfile import assignment

        return [assignment(name, text, "dotenv", source=source, what=key).rstrip("\n")
                for name, text, key in self.env_vars()]


def _did_you_mean(key: str) -> str:
    import difflib

    near = difflib.get_close_matches(key, setting_keys(), n=1)
    return f"did you mean {near[0]!r}?" if near else "settings: " + ", ".join(setting_keys())


def _from_matrix(matrix: Matrix) -> Settings:
    return Settings(tests=matrix.tests, abi=matrix.abi, coverage=matrix.coverage, gate=matrix.gate,
                    matrix_sha256=matrix.sha256 or None, origin="matrix")


def _check_override(key: str, value: Any) -> Any:
    where = f"--{key}"
    if key == "tests.isolation":
        if value not in ISOLATIONS:
            raise UsageError(f"{where}: expected one of {', '.join(ISOLATIONS)}, got {value!r}")
        return value
    if key == "tests.timeout":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise UsageError(f"{where}: expected seconds (0 or more), got {value!r}")
        return float(value)
    if key in ("tests.pytest", "tests.pytest-args"):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: expected a list of strings")
        return tuple(value)
    if key == "tests.kernels":
        if value in ("all", "none"):
            return "all" if value == "all" else ()
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: expected all, none or a list of kernel names")
        return tuple(value)
    raise UsageError(f"{key} cannot be set on the command line", hint="set it in the matrix and sign it")


_FIELD = {
    "tests.kernels": ("tests", "kernels"),
    "tests.pytest": ("tests", "pytest_paths"),
    "tests.pytest-args": ("tests", "pytest_args"),
    "tests.isolation": ("tests", "isolation"),
    "tests.timeout": ("tests", "timeout"),
}


def apply_overrides(settings: Settings, overrides: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Command-line values over the matrix's; ``None`` means "not given". Refused in CI."""
    given = {k: v for k, v in overrides.items() if v is not None}
    for key in given:
        if key not in defaults():
            raise UsageError(f"unknown setting {key!r}", hint=_did_you_mean(key))
    if not given:
        return settings
    if is_ci(env):
        names = ", ".join(sorted(given))
        raise UsageError(
            f"in CI the settings come only from the verified matrix; refusing the command-line override of {names}",
            hint="change the matrix (tests: ...), sign it, and let the plan carry it",
        )
    sections: dict[str, dict[str, Any]] = {}
    for key, value in given.items():
        if key not in _FIELD:
            raise UsageError(f"{key} cannot be set on the command line", hint="set it in the matrix and sign it")
        section, attr = _FIELD[key]
        sections.setdefault(section, {})[attr] = _check_override(key, value)
    tests = replace(settings.tests, **sections.get("tests", {}))
    return replace(settings, tests=tests, overridden=tuple(sorted(given)))


def resolve_settings(
    matrix: Matrix, overrides: Mapping[str, Any] | None = None, *, env: Mapping[str, str] | None = None,
    signed: bool | None = None,
) -> Settings:
    """Defaults, then the matrix, then command-line overrides (refused in CI)."""
    settings = replace(_from_matrix(matrix), signed=signed)
    return apply_overrides(settings, overrides or {}, env or {})


def defaults_settings(*, required_backends: tuple[str, ...] = ()) -> Settings:
    """The defaults table alone (what a plan without ``settings`` means), with these required backends."""
    d = defaults()
    return Settings(
        tests=TestSettings(kernels="all" if d["tests.kernels"] == "all" else tuple(d["tests.kernels"]),
                           pytest_paths=tuple(d["tests.pytest"]), pytest_args=tuple(d["tests.pytest-args"]),
                           isolation=d["tests.isolation"], timeout=float(d["tests.timeout"])),
        abi=AbiPolicy(baseline=d["abi.baseline"], gating=d["abi.gate"], bumps=MappingProxyType(dict(d["abi.bumps"])),
                      extension_exports=_optional_tuple(d["abi.extension-exports"]),
                      baseline_required=d["abi.baseline-required"]),
        coverage=CoverageThresholds(overall=d["coverage.overall"], diff=d["coverage.diff"]),
        gate=GateSettings(tag_pattern=d["gate.tag-pattern"], required_backends=tuple(required_backends)),
        origin="defaults",
    )


# -- from a plan ---------------------------------------------------------------------


def _expect(cond: bool, path: str, what: str, value: Any, source: str) -> None:
    if not cond:
        raise InputError(f"{path}: expected {what}, got {value!r}", file=source,
                         hint="write the plan with: xcompat matrix plan MATRIX --format json")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _optional_tuple(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_line_glob(value: Any) -> bool:
    # The tag pattern is also the CI variable XCOMPAT_GATE_TAG_PATTERN: a line break would start another.
    return isinstance(value, str) and not any(c in value for c in "\n\r\0")


def settings_from_plan(document: Any, *, source: str = "<plan>") -> Settings:
    """The settings a plan carries (``xcompat matrix plan --format json``), checked field by field."""
    _expect(isinstance(document, dict), "$", "a plan object", type(document).__name__, source)
    raw = document.get("settings")
    _expect(isinstance(raw, dict), "$.settings", "an object (tests, abi, coverage, gate)", raw, source)
    d = defaults()
    t = raw.get("tests", {})
    a = raw.get("abi", {})
    c = raw.get("coverage", {})
    g = raw.get("gate", {})
    for name, part in (("tests", t), ("abi", a), ("coverage", c), ("gate", g)):
        _expect(isinstance(part, dict), f"$.settings.{name}", "an object", part, source)
    kernels = t.get("kernels", d["tests.kernels"])
    _expect(kernels in ("all", "none") or _strings(kernels), "$.settings.tests.kernels", "all, none or names",
            kernels, source)
    pytest_paths = t.get("pytest", d["tests.pytest"])
    _expect(_strings(pytest_paths), "$.settings.tests.pytest", "a list of paths", pytest_paths, source)
    pytest_args = t.get("pytest_args", d["tests.pytest-args"])
    _expect(_strings(pytest_args), "$.settings.tests.pytest_args", "a list of strings", pytest_args, source)
    isolation = t.get("isolation", d["tests.isolation"])
    _expect(isolation in ISOLATIONS, "$.settings.tests.isolation", "none, file or test", isolation, source)
    timeout = t.get("timeout", d["tests.timeout"])
    _expect(_number(timeout) and timeout >= 0, "$.settings.tests.timeout", "seconds", timeout, source)
    baseline = a.get("baseline", d["abi.baseline"])
    _expect(baseline in BASELINES, "$.settings.abi.baseline", " or ".join(BASELINES), baseline, source)
    baseline_required = a.get("baseline_required", d["abi.baseline-required"])
    _expect(isinstance(baseline_required, bool), "$.settings.abi.baseline_required", "true or false",
            baseline_required, source)
    gating = a.get("gate", d["abi.gate"])
    _expect(gating is None or _strings(gating), "$.settings.abi.gate", "null or finding kinds", gating, source)
    bumps = a.get("bumps", d["abi.bumps"])
    _expect(isinstance(bumps, dict) and all(isinstance(k, str) and v in BUMPS for k, v in bumps.items()),
            "$.settings.abi.bumps", "a mapping of finding kind to bump", bumps, source)
    extension_exports = a.get("extension_exports", d["abi.extension-exports"])
    _expect(extension_exports is None or _strings(extension_exports), "$.settings.abi.extension_exports",
            "null or glob patterns", extension_exports, source)
    for name in ("overall", "diff"):
        value = c.get(name)
        _expect(value is None or (_number(value) and 0 <= value <= 100), f"$.settings.coverage.{name}",
                "a percentage or null", value, source)
    pattern = g.get("tag_pattern", d["gate.tag-pattern"])
    _expect(_one_line_glob(pattern), "$.settings.gate.tag_pattern", "a one-line glob", pattern, source)
    required_backends = g.get("required_backends", [])
    _expect(_strings(required_backends), "$.settings.gate.required_backends", "a list of backends",
            required_backends, source)
    sha = document.get("matrix_sha256")
    _expect(sha is None or isinstance(sha, str), "$.matrix_sha256", "a hex string", sha, source)
    return Settings(
        tests=TestSettings(
            kernels="all" if kernels == "all" else () if kernels == "none" else tuple(kernels),
            pytest_paths=tuple(pytest_paths),
            pytest_args=tuple(pytest_args),
            isolation=isolation,
            timeout=float(timeout),
        ),
        abi=AbiPolicy(baseline=baseline, gating=None if gating is None else tuple(gating),
                      bumps=MappingProxyType(dict(bumps)), extension_exports=_optional_tuple(extension_exports),
                      baseline_required=baseline_required),
        coverage=CoverageThresholds(overall=None if c.get("overall") is None else float(c["overall"]),
                                    diff=None if c.get("diff") is None else float(c["diff"])),
        gate=GateSettings(tag_pattern=pattern, required_backends=tuple(required_backends)),
        matrix_sha256=sha or None,
        origin="plan",
    )


_ADDED_KEYS = ("abi.extension-exports", "abi.baseline-required")

_DOCUMENT_CHECKS: dict[str, tuple[Any, str]] = {
    "tests.kernels": (lambda v: v in ("all", "none") or _strings(v), "all, none or kernel names"),
    "tests.pytest": (_strings, "a list of paths"),
    "tests.pytest-args": (_strings, "a list of strings"),
    "tests.isolation": (lambda v: v in ISOLATIONS, "none, file or test"),
    "tests.timeout": (lambda v: _number(v) and v >= 0, "seconds"),
    "abi.baseline": (lambda v: v in BASELINES, " or ".join(BASELINES)),
    "abi.baseline-required": (lambda v: isinstance(v, bool), "true or false"),
    "abi.gate": (lambda v: v is None or _strings(v), "null or finding kinds"),
    "abi.bumps": (lambda v: isinstance(v, dict) and all(isinstance(k, str) and b in BUMPS for k, b in v.items()),
                  "a mapping of finding kind to bump"),
    "abi.extension-exports": (lambda v: v is None or _strings(v), "null or glob patterns"),
    "coverage.overall": (lambda v: v is None or (_number(v) and 0 <= v <= 100), "a percentage or null"),
    "coverage.diff": (lambda v: v is None or (_number(v) and 0 <= v <= 100), "a percentage or null"),
    "gate.tag-pattern": (_one_line_glob, "a one-line glob"),
    "gate.required-backends": (_strings, "a list of backends"),
}


def settings_from_document(document: Any, *, source: str = "<settings>") -> Settings:
    """Read back ``Settings.to_dict()`` (a run's ``settings.json``), key by key."""
    _expect(isinstance(document, dict) and document.get("kind") == "settings", "$.kind", "a settings document",
            document if not isinstance(document, dict) else document.get("kind"), source)
    _expect(document.get("version") == SETTINGS_VERSION, "$.version", f"{SETTINGS_VERSION}",
            document.get("version"), source)
    values = document.get("settings")
    _expect(isinstance(values, dict), "$.settings", "an object", values, source)
    unknown = sorted(set(values) - set(defaults()))
    _expect(not unknown, "$.settings", "known keys only", unknown, source)
    # keys added after version 1 was written read their default when absent
    values = {**{k: defaults()[k] for k in _ADDED_KEYS}, **values}
    missing = sorted(set(defaults()) - set(values))
    _expect(not missing, "$.settings", "every settings key", f"missing {', '.join(missing)}", source)
    for key, (check, what) in _DOCUMENT_CHECKS.items():
        _expect(bool(check(values[key])), f"$.settings.{key}", what, values[key], source)
    origin = document.get("origin")
    signed = document.get("signed")
    overridden = document.get("overridden") or []
    sha = document.get("matrix_sha256")
    _expect(origin in ("defaults", "matrix", "plan"), "$.origin", "defaults, matrix or plan", origin, source)
    _expect(signed is None or isinstance(signed, bool), "$.signed", "true, false or null", signed, source)
    _expect(_strings(overridden), "$.overridden", "a list of keys", overridden, source)
    _expect(sha is None or isinstance(sha, str), "$.matrix_sha256", "a hex string or null", sha, source)
    v = values
    kernels = v["tests.kernels"]
    return Settings(
        tests=TestSettings(
            kernels="all" if kernels == "all" else () if kernels == "none" else tuple(kernels),
            pytest_paths=tuple(v["tests.pytest"]), pytest_args=tuple(v["tests.pytest-args"]),
            isolation=v["tests.isolation"], timeout=float(v["tests.timeout"]),
        ),
        abi=AbiPolicy(baseline=v["abi.baseline"], gating=None if v["abi.gate"] is None else tuple(v["abi.gate"]),
                      bumps=MappingProxyType(dict(v["abi.bumps"])),
                      extension_exports=_optional_tuple(v["abi.extension-exports"]),
                      baseline_required=v["abi.baseline-required"]),
        coverage=CoverageThresholds(
            overall=None if v["coverage.overall"] is None else float(v["coverage.overall"]),
            diff=None if v["coverage.diff"] is None else float(v["coverage.diff"]),
        ),
        gate=GateSettings(tag_pattern=v["gate.tag-pattern"], required_backends=tuple(v["gate.required-backends"])),
        matrix_sha256=sha or None, origin=origin, signed=signed, overridden=tuple(overridden),
    )


@dataclass(frozen=True, kw_only=True)
class ProjectFacts:
    """What the verdict needs to know about the project under test."""

    name: str | None = None
    uses_torch: bool | None = None  # None: not known (a CI report without the project)
    torch_evidence: str = ""
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "uses_torch": self.uses_torch, "torch_evidence": self.torch_evidence}

    @classmethod
    def from_dict(cls, data: Any) -> ProjectFacts:
        if not isinstance(data, dict):
            return cls()
        name, uses = data.get("name"), data.get("uses_torch")
        return cls(name=name if isinstance(name, str) else None,
                   uses_torch=uses if isinstance(uses, bool) else None,
                   torch_evidence=str(data.get("torch_evidence") or ""))


__all__ = [
    "ProjectFacts",
    "Settings",
    "apply_overrides",
    "defaults",
    "defaults_settings",
    "is_ci",
    "resolve_settings",
    "setting_keys",
    "settings_from_document",
    "settings_from_plan",
]
