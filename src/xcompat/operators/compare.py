"""Tolerance decisions for one derived case: the device result against the expected one.

The expected result is the declared float64 reference or, without one, the operator's own
result on contiguous CPU copies in the finer of the case's and the declared dtype (so a
float16 case is held to float32 arithmetic rounded to float16, and a layout bug shows as a
difference from the contiguous result). The decision itself is
``xcompat.testing.reference.assert_matches_reference`` under its tolerance tables; this
module adds the largest error, for the report, and the NaN-from-finite-input rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from xcompat.operators.cases import PRECISION_ORDER, Case
from xcompat.testing.reference import ReferenceMismatch, Tolerance, assert_matches_reference


@dataclass(frozen=True)
class Verdict:
    ok: bool
    check: str  # "result" or "nan_from_finite"
    detail: str
    max_error: float | None


def flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


def to_float64_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        return value.to(torch.float64) if value.is_floating_point() else value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(to_float64_cpu(v) for v in value)
    return value


def oracle_dtype(case_dtype: torch.dtype | None, declared: torch.dtype | None) -> torch.dtype | None:
    """The finer of the two floating dtypes: the operator's own CPU result is computed in it."""
    known = [d for d in (case_dtype, declared) if d in PRECISION_ORDER]
    return max(known, key=PRECISION_ORDER.index) if known else None


def cpu_oracle(op: Callable[..., Any], case: Case) -> Any:
    """The operator on contiguous CPU copies of the case's inputs, as float64 outputs."""
    dtype = oracle_dtype(case.dtype, next((d for d in case.declared_dtypes if d is not None and d.is_floating_point), None))
    args = []
    for value in case.args:
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().contiguous()
            if value.is_floating_point() and dtype is not None:
                value = value.to(dtype)
        args.append(value)
    return to_float64_cpu(op(*args))


def largest_error(actual: Sequence[Any], expected: Sequence[Any]) -> float | None:
    """The largest absolute difference over every output (inf where one side is NaN and not the other)."""
    worst: float | None = None
    for got, want in zip(actual, expected, strict=False):
        if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor) or got.numel() == 0:
            continue
        if tuple(got.shape) != tuple(want.shape):
            return float("inf")
        g = got.detach().cpu().to(torch.float64)
        w = want.detach().cpu().to(got.dtype).to(torch.float64)
        same = (g == w) | (torch.isnan(g) & torch.isnan(w))
        diff = torch.where(same, torch.zeros_like(g), (g - w).abs())
        diff = torch.nan_to_num(diff, nan=float("inf"), posinf=float("inf"))
        value = float(diff.max())
        worst = value if worst is None else max(worst, value)
    return worst


def _nan_from_finite(case: Case, actual: Sequence[Any], expected: Sequence[Any]) -> str | None:
    if not case.finite:
        return None
    for index, (got, want) in enumerate(zip(actual, expected, strict=False)):
        if not isinstance(got, torch.Tensor) or not got.is_floating_point() or got.numel() == 0:
            continue
        made = torch.isnan(got.detach().cpu())
        if isinstance(want, torch.Tensor) and tuple(want.shape) == tuple(got.shape):
            made = made & ~torch.isnan(want.detach().cpu())
        if bool(made.any()):
            return f"output {index}: {int(made.sum())} NaN from finite inputs where the expected result has none"
    return None


def decide(case: Case, actual: Any, expected: Any, tolerances: Mapping[str, Tolerance]) -> Verdict:
    """Compare ``actual`` (the device output) with ``expected`` (float64 CPU)."""
    got, want = flatten(actual), flatten(expected)
    nan = _nan_from_finite(case, got, want)
    if nan is not None:
        return Verdict(False, "nan_from_finite", nan, largest_error(got, want))
    try:
        assert_matches_reference(lambda *_: actual, lambda *_: expected, *case.args, tolerances=tolerances)
    except ReferenceMismatch as exc:
        first = str(exc).splitlines()[0]
        return Verdict(False, "result", first, largest_error(got, want))
    return Verdict(True, "result", "", largest_error(got, want))
