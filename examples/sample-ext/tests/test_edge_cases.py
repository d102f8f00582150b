"""Edge cases of sample_ext::scaled_add: generated inputs, a float64 reference, every backend.

Uses xcompat's testing tools: hypothesis strategies that produce empty and 0-d shapes,
non-contiguous layouts, NaN/Inf/subnormal values; ``assert_matches_reference`` for the
numbers; the ``device`` fixture to run on each available backend.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xcompat.testing.reference import assert_matches_reference, assert_mixed_device_raises
from xcompat.testing.strategies import same_shape_tensors

try:
    import sample_ext
except ImportError as exc:  # the package is not built/installed in this environment
    pytest.skip(f"sample_ext is not installed ({exc})", allow_module_level=True)


def _op():
    try:
        sample_ext.scaled_add(torch.zeros(1), torch.zeros(1), 1.0)  # loads the op library
        return torch.ops.sample_ext.scaled_add
    except (AttributeError, RuntimeError, OSError, ImportError) as exc:
        pytest.skip(f"the torch op sample_ext::scaled_add is not available: {exc}")


def reference(a, b, alpha):
    # The op computes in float32 and rounds alpha * b to float32 before the add (it is built
    # without FMA contraction). Modelling that rounding keeps the edge cases honest: for
    # a = inf, b = 3.4e38, alpha = -2.5 the float32 product overflows to -inf and the op
    # returns NaN, which a pure float64 reference (inf) would call wrong.
    return a + (alpha * b).to(torch.float32).to(torch.float64)


ALPHAS = st.sampled_from([0.0, 1.0, -2.5, 1e-3])
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(pair=same_shape_tensors(2, dtypes=("float32",)), alpha=ALPHAS)
def test_op_matches_float64_reference_on_edge_inputs(pair, alpha):
    op = _op()
    a, b = pair
    assert_matches_reference(lambda x, y: op(x, y, alpha), lambda x, y: reference(x, y, alpha), a, b)


@SETTINGS
@given(pair=same_shape_tensors(2, dtypes=("float32",), allow_nan=False, allow_infinity=False), alpha=ALPHAS)
def test_python_api_matches_float64_reference(pair, alpha):
    _op()
    a, b = pair
    assert_matches_reference(
        lambda x, y: sample_ext.scaled_add(x, y, alpha), lambda x, y: reference(x, y, alpha), a, b
    )


def test_op_on_each_backend(device):
    op = _op()
    if device != "cpu" and not sample_ext.cuda_kernel_built():
        pytest.skip(f"wheel built without a {device} kernel")
    a = torch.linspace(-3, 3, 101, device=device)
    b = torch.linspace(5, -5, 101, device=device)
    assert_matches_reference(lambda x, y: op(x, y, 0.5), lambda x, y: reference(x, y, 0.5), a, b)


def test_op_refuses_mixed_devices():
    op = _op()
    assert_mixed_device_raises(lambda x, y: op(x, y, 1.0), torch.ones(8), torch.ones(8))


def test_op_refuses_other_dtypes():
    op = _op()
    with pytest.raises(RuntimeError, match="float32"):
        op(torch.zeros(2, dtype=torch.float16), torch.zeros(2, dtype=torch.float16), 1.0)
