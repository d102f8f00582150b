"""Coverage thresholds (``overall``, ``diff``) and the pass/fail verdict they give.

Thresholds come from command-line options, else from the matrix's ``coverage`` settings.
A threshold is a percentage in [0, 100]; a measured value passes when it is >= the
threshold. With no executable changed lines, or no base ref to diff against (a push or a
tag), the diff check passes and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xcompat.errors import InputError, UsageError

THRESHOLD_NAMES = ("overall", "diff")


@dataclass(frozen=True)
class Thresholds:
    overall: float | None = None
    diff: float | None = None
    source: str = "none"  # "options", "matrix", "options+matrix" or "none"


@dataclass(frozen=True)
class GateCheck:
    name: str
    threshold: float
    actual: float | None
    passed: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "threshold": self.threshold,
            "actual": self.actual,
            "passed": self.passed,
            "reason": self.reason,
        }


def check_percent(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise InputError(f"{where}: coverage threshold must be a number from 0 to 100, got {value!r}")
    return float(value)


def thresholds_from_matrix(path: Path) -> dict[str, float]:
    """The ``coverage: {overall, diff}`` settings of a matrix file (empty when it has none).

    Uses the matrix loader when it is available, so a signed matrix is read (and validated)
    the same way everywhere; otherwise reads the file's ``coverage`` mapping directly.
    """
    try:
        from xcompat.matrix import load_matrix
    except ImportError:
        return parse_coverage_settings(raw_coverage_settings(path), path)
    matrix = load_matrix(path)
    return parse_coverage_settings(getattr(matrix, "coverage", None), path)


def raw_coverage_settings(path: Path) -> Any:
    """The ``coverage`` mapping of a YAML/JSON matrix file, read without the matrix loader."""
    import yaml

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("matrix file not found", file=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(
            f"invalid YAML: {getattr(exc, 'problem', exc)}", file=path, line=mark.line + 1 if mark else None
        ) from None
    return raw.get("coverage") if isinstance(raw, dict) else None


def parse_coverage_settings(settings: Any, path: Path) -> dict[str, float]:
    """Thresholds from a mapping or an object with ``overall``/``diff`` attributes."""
    if settings is None:
        return {}
    out: dict[str, float] = {}
    for name in THRESHOLD_NAMES:
        value = settings.get(name) if isinstance(settings, dict) else getattr(settings, name, None)
        if value is not None:
            out[name] = check_percent(value, f"{path}: coverage.{name}")
    return out


def resolve_thresholds(overall: float | None, diff: float | None, matrix: Path | None) -> Thresholds:
    for name, value in (("--threshold-overall", overall), ("--threshold-diff", diff)):
        if value is not None and not 0 <= value <= 100:
            raise UsageError(f"{name} must be from 0 to 100, got {value}")
    from_matrix = thresholds_from_matrix(matrix) if matrix is not None else {}
    used_options = overall is not None or diff is not None
    final_overall = overall if overall is not None else from_matrix.get("overall")
    final_diff = diff if diff is not None else from_matrix.get("diff")
    used_matrix = (overall is None and "overall" in from_matrix) or (diff is None and "diff" in from_matrix)
    source = "+".join(s for s, used in (("options", used_options), ("matrix", used_matrix)) if used) or "none"
    return Thresholds(final_overall, final_diff, source)


def evaluate(
    thresholds: Thresholds, overall: float | None, diff: float | None, *, diff_known: bool
) -> list[GateCheck]:
    checks = []
    if thresholds.overall is not None:
        t = thresholds.overall
        if overall is None:
            checks.append(GateCheck("overall", t, None, False, "no executable lines were measured"))
        else:
            ok = overall >= t
            checks.append(
                GateCheck(
                    "overall",
                    t,
                    overall,
                    ok,
                    f"overall coverage {overall:.2f}% {'>=' if ok else '<'} threshold {t:g}%",
                )
            )
    if thresholds.diff is not None:
        t = thresholds.diff
        if not diff_known:
            # Pushes and tags have no change to measure; the check is reported, not failed.
            checks.append(GateCheck("diff", t, None, True, "not checked: no --base-ref, so no changed lines"))
        elif diff is None:
            checks.append(GateCheck("diff", t, None, True, "the change adds no executable lines"))
        else:
            ok = diff >= t
            checks.append(
                GateCheck(
                    "diff", t, diff, ok, f"diff coverage {diff:.2f}% {'>=' if ok else '<'} threshold {t:g}%"
                )
            )
    return checks
