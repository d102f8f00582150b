from __future__ import annotations

import pytest

from xcompat.kernels import cases as casegen


@pytest.mark.parametrize("kernel", casegen.KERNELS)
def test_every_kernel_has_boundary_cases(kernel: str) -> None:
    cases = casegen.generate_cases(kernel)
    assert cases
    shapes = {c.shape for c in cases}
    assert any(0 in s for s in shapes), "an empty tensor"
    assert any(s == (1,) or s == (1, 1) for s in shapes), "size 1"
    assert any(s == () for s in shapes), "a 0-d tensor"
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "case ids are unique"


@pytest.mark.parametrize("kernel", ["add", "fma", "exp"])
def test_elementwise_cases_cover_layouts_dtypes_and_values(kernel: str) -> None:
    cases = casegen.generate_cases(kernel)
    assert {c.layout for c in cases} == set(casegen.LAYOUTS)
    assert {c.dtype for c in cases} == set(casegen.FLOAT_DTYPES)
    assert {"normal", "large", "denormal", "special", "integer"} <= {c.values for c in cases}
    # odd sizes that divide neither SIMD widths nor a 256-thread block
    assert any(c.shape == (1031,) for c in cases) and any(c.shape == (257,) for c in cases)


def test_softmax_cases_have_special_rows() -> None:
    values = {c.values for c in casegen.generate_cases("softmax")}
    assert {"large", "softmax-rows"} <= values


def test_scatter_cases_are_contended_and_exact() -> None:
    cases = casegen.generate_cases("scatter_add")
    heavy = [c for c in cases if c.bins == 1 and c.values == "integer"]
    assert heavy and heavy[0].shape[0] >= 100000 and heavy[0].exact


def test_unknown_kernel() -> None:
    with pytest.raises(KeyError):
        casegen.generate_cases("matmul")


def test_values_are_deterministic_and_of_the_family() -> None:
    import numpy as np

    case = casegen.Case(kernel="add", name="x", dtype="float32", shape=(50,), values="special", seed=3)
    a = casegen.draw_values(case, (50,), np.random.default_rng(3))
    b = casegen.draw_values(case, (50,), np.random.default_rng(3))
    assert np.array_equal(a, b, equal_nan=True)
    assert np.isnan(a).any() and np.isposinf(a).any() and np.isneginf(a).any()
    den = casegen.draw_values(casegen.Case(kernel="add", name="x", dtype="float32", shape=(50,), values="denormal"),
                              (50,), np.random.default_rng(0))
    assert (np.abs(den) < np.finfo(np.float32).tiny).all()


def test_unknown_layout_and_family() -> None:
    import numpy as np

    with pytest.raises(KeyError):
        casegen.base_shape((3,), "diagonal")
    with pytest.raises(KeyError):
        casegen.draw_values(casegen.Case(kernel="add", name="x", dtype="float32", shape=(2,), values="odd"), (2,),
                            np.random.default_rng(0))
