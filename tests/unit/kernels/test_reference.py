from __future__ import annotations

import numpy as np
import pytest

from xcompat.kernels import reference as refs
from xcompat.kernels.tolerances import Tolerance

TOL = Tolerance(rtol=1e-6, atol=0.0)


def test_equal_arrays_pass() -> None:
    x = np.array([1.0, np.nan, np.inf, -np.inf, -0.0])
    assert refs.compare(x.copy(), x, TOL).ok


def test_nan_where_finite_expected_fails() -> None:
    cmp = refs.compare(np.array([1.0, np.nan]), np.array([1.0, 2.0]), TOL)
    assert not cmp.ok and cmp.mismatches == 1 and "(1,)" in cmp.detail
    assert "1 still hold the poison value" in cmp.detail


def test_missing_nan_fails() -> None:
    assert not refs.compare(np.array([1.0, 2.0]), np.array([1.0, np.nan]), TOL).ok


def test_infinity_sign_must_match() -> None:
    assert not refs.compare(np.array([np.inf]), np.array([-np.inf]), TOL).ok
    assert not refs.compare(np.array([3e38]), np.array([np.inf]), TOL).ok
    assert refs.compare(np.array([-np.inf]), np.array([-np.inf]), TOL).ok


def test_sentinel_poison_is_named() -> None:
    cmp = refs.compare(np.array([[1.0, -7680.0]]), np.array([[1.0, 5.0]]), TOL)
    assert not cmp.ok and "(0, 1)" in cmp.detail and "did not write" in cmp.detail


def test_relative_tolerance_boundary() -> None:
    ref = np.array([1000.0])
    assert refs.compare(ref * (1 + 0.9e-6), ref, TOL).ok
    assert not refs.compare(ref * (1 + 1.1e-6), ref, TOL).ok


def test_exact_tolerance_rejects_one_ulp() -> None:
    ref = np.array([3.0], dtype=np.float64)
    out = np.nextafter(ref, 4.0)
    assert not refs.compare(out, ref, Tolerance.exact()).ok


def test_scaled_tolerance_uses_scale() -> None:
    # a reduction whose true value cancels to ~0: the error is judged against sum(|x|)
    tol = Tolerance(rtol=1e-6, atol=0.0, scale="abs_sum")
    assert refs.compare(np.array(1e-3), np.array(0.0), tol, scale=np.array(2e4)).ok
    assert not refs.compare(np.array(1e-1), np.array(0.0), tol, scale=np.array(2e4)).ok


def test_shape_mismatch() -> None:
    cmp = refs.compare(np.zeros(3), np.zeros((3, 1)), TOL)
    assert not cmp.ok and "shape" in cmp.detail


def test_empty_arrays_pass() -> None:
    assert refs.compare(np.zeros((0, 5)), np.zeros((0, 5)), TOL).ok


def test_softmax_reference_special_rows() -> None:
    x = np.array([[1.0, 2.0, 3.0], [-np.inf] * 3, [0.0, np.nan, 1.0], [1e30, 1e30, 1e30], [0.0, -np.inf, 0.0],
                  [np.inf, 0.0, 1.0]])
    out = refs.ref_softmax(x)
    assert np.allclose(out[0].sum(), 1.0)
    assert np.isnan(out[1]).all() and np.isnan(out[2]).all() and np.isnan(out[5]).all()
    assert np.allclose(out[3], 1 / 3)
    assert out[4].tolist() == [0.5, 0.0, 0.5]


def test_softmax_reference_0d_and_empty() -> None:
    assert refs.ref_softmax(np.array(5.0)).shape == ()
    assert float(refs.ref_softmax(np.array(5.0))) == 1.0
    assert refs.ref_softmax(np.zeros((0, 4))).shape == (0, 4)


def test_scatter_reference_and_scale() -> None:
    idx = np.array([0, 0, 2, 2, 2])
    w = np.array([1.0, -1.0, 2.0, 2.0, -3.0])
    assert refs.ref_scatter_add(idx, w, 3).tolist() == [0.0, 0.0, 1.0]
    assert refs.abs_scale_scatter(idx, w, 3).tolist() == [2.0, 0.0, 7.0]


@pytest.mark.parametrize("x", [np.array([1.0, np.inf]), np.array([np.nan, 1.0])])
def test_sum_reference_propagates_specials(x: np.ndarray) -> None:
    assert not np.isfinite(refs.ref_sum(x))
    assert np.isfinite(refs.abs_scale_sum(x))
