"""Tolerance decisions: the reference tables, the largest error, NaN from finite inputs."""

from __future__ import annotations

import torch

from xcompat.operators.cases import derive
from xcompat.operators.compare import decide, largest_error, oracle_dtype
from xcompat.testing.reference import DEFAULT_TOLERANCES


def _case(x: torch.Tensor):
    return next(derive((x,), 1))


def test_a_float16_result_within_its_tolerance_passes_and_one_beyond_fails_with_its_largest_error() -> None:
    x = torch.full((4,), 1000.0, dtype=torch.float16)
    case = _case(x)
    exact = torch.full((4,), 1000.0, dtype=torch.float64)
    assert decide(case, x, exact + 0.4, DEFAULT_TOLERANCES).ok  # rounds to the same float16
    off = x.clone()
    off[2] = 1002.0
    verdict = decide(case, off, exact, DEFAULT_TOLERANCES)
    assert not verdict.ok and verdict.check == "result" and verdict.max_error == 2.0
    assert "1 of 4 elements differ" in verdict.detail


def test_a_custom_table_loosens_the_decision() -> None:
    x = torch.ones(3)
    table = dict(DEFAULT_TOLERANCES, float32=DEFAULT_TOLERANCES["float16"].__class__(0.1, 0.0))
    assert decide(_case(x), x * 1.05, x.double(), table).ok
    assert not decide(_case(x), x * 1.05, x.double(), DEFAULT_TOLERANCES).ok


def test_nan_from_finite_inputs_fails_unless_the_reference_has_it_too() -> None:
    x = torch.ones(3)
    out = torch.tensor([1.0, float("nan"), 1.0])
    verdict = decide(_case(x), out, torch.ones(3, dtype=torch.float64), DEFAULT_TOLERANCES)
    assert not verdict.ok and verdict.check == "nan_from_finite" and verdict.max_error == float("inf")
    expected = torch.tensor([1.0, float("nan"), 1.0], dtype=torch.float64)
    assert decide(_case(x), out, expected, DEFAULT_TOLERANCES).ok


def test_overflow_to_inf_in_the_kernel_dtype_matches_the_rounded_reference() -> None:
    x = torch.full((2,), 60000.0, dtype=torch.float16)
    assert decide(_case(x), torch.full((2,), float("inf"), dtype=torch.float16),
                  torch.full((2,), 120000.0, dtype=torch.float64), DEFAULT_TOLERANCES).ok


def test_largest_error_ignores_matching_nans_and_infinities() -> None:
    got = [torch.tensor([float("nan"), float("inf"), 1.0])]
    want = [torch.tensor([float("nan"), float("inf"), 1.5], dtype=torch.float64)]
    assert largest_error(got, want) == 0.5


def test_the_cpu_result_is_computed_in_the_finer_dtype() -> None:
    assert oracle_dtype(torch.float16, torch.float32) == torch.float32
    assert oracle_dtype(torch.float64, torch.float32) == torch.float64
    assert oracle_dtype(torch.bfloat16, torch.float16) == torch.float16
    assert oracle_dtype(None, None) is None
