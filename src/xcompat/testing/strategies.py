"""Hypothesis strategies for the inputs native tensor code gets wrong.

``make_tensor``-style random inputs are contiguous, finite and mid-sized; kernels break on
everything else. These strategies generate, by default:

* shapes: empty (a zero-length dim), 0-d, size-1 dims, odd sizes;
* layouts: contiguous, transposed, strided (every other element), broadcast (stride 0),
  channels_last (4-d);
* dtypes: float16, bfloat16, float32, float64 and integers;
* values: NaN, +/-Inf, subnormals, the dtype's extremes and zeros of both signs.

Examples::

    from hypothesis import given
    from xcompat.testing.strategies import tensors, same_shape_tensors

    @given(tensors(dtypes=("float32",)))
    def test_relu_never_negative(x):
        assert not (my_ext.relu(x) < 0).any()

    @given(same_shape_tensors(2, dtypes=("float32",)))
    def test_add_matches_reference(pair):
        a, b = pair
        assert_matches_reference(my_ext.add, torch.add, a, b)

NumPy has no bfloat16: bfloat16 tensors are generated as float32 and rounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOAT_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES: tuple[str, ...] = ("int8", "uint8", "int32", "int64")
ALL_DTYPES: tuple[str, ...] = FLOAT_DTYPES + INT_DTYPES + ("bool",)
LAYOUTS: tuple[str, ...] = ("contiguous", "transposed", "strided", "broadcast", "channels_last")


def shapes(
    *, min_dims: int = 0, max_dims: int = 4, min_side: int = 0, max_side: int = 7
) -> st.SearchStrategy:
    """Array shapes including 0-d and empty ones; sides favour 0, 1 and odd sizes."""
    nd = hnp.array_shapes(
        min_dims=max(min_dims, 1), max_dims=max(max_dims, 1), min_side=min_side, max_side=max_side
    )
    if min_dims == 0:
        # hypothesis rarely draws 0-d on its own; scalars are a classic kernel bug.
        return st.one_of(st.just(()), nd)
    return nd


def dtypes(names: Sequence[str] = FLOAT_DTYPES) -> st.SearchStrategy:
    bad = [n for n in names if n not in ALL_DTYPES]
    if bad:
        raise ValueError(f"unknown dtype name(s) {bad}; choose from {', '.join(ALL_DTYPES)}")
    return st.sampled_from(tuple(names))


def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype("float32" if name == "bfloat16" else name)


def special_values(name: str) -> list[Any]:
    """The values each dtype's kernels most often mishandle."""
    if name == "bool":
        return [False, True]
    if name in INT_DTYPES:
        info = np.iinfo(name)
        return [0, 1, info.max, info.min] + ([-1] if info.min < 0 else [])
    if name == "bfloat16":
        # bfloat16 shares float32's exponent range: extremes of float32 overflow to inf
        # after rounding, so use values that survive it.
        return [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-40, 3.0e38, -3.0e38, 1.0]
    finfo = np.finfo(name)
    return [
        0.0,
        -0.0,
        float("nan"),
        float("inf"),
        -float("inf"),
        float(finfo.smallest_subnormal),
        float(finfo.tiny),
        float(finfo.max),
        float(finfo.min),
        float(finfo.eps),
    ]


def elements(
    name: str,
    *,
    allow_nan: bool = True,
    allow_infinity: bool = True,
    allow_subnormal: bool = True,
    min_value: float | None = None,
    max_value: float | None = None,
) -> st.SearchStrategy:
    """Scalar values of dtype ``name``: ordinary numbers mixed with its special values."""
    if name == "bool":
        return st.booleans()
    if name in INT_DTYPES:
        info = np.iinfo(name)
        lo = int(info.min if min_value is None else max(min_value, info.min))
        hi = int(info.max if max_value is None else min(max_value, info.max))
        specials = [v for v in special_values(name) if lo <= v <= hi]
        return st.one_of(st.integers(lo, hi), st.sampled_from(specials)) if specials else st.integers(lo, hi)
    width: Literal[16, 32, 64] = 32 if name == "bfloat16" else {2: 16, 4: 32, 8: 64}[np.dtype(name).itemsize]  # type: ignore[assignment]
    plain = st.floats(
        width=width,
        allow_nan=allow_nan,
        allow_infinity=allow_infinity and min_value is None and max_value is None,
        allow_subnormal=allow_subnormal,
        min_value=min_value,
        max_value=max_value,
    )
    specials = []
    for value in special_values(name):
        if math.isnan(value) and not allow_nan:
            continue
        if value in (float("inf"), -float("inf")) and not allow_infinity:
            continue
        if not allow_subnormal and value != 0 and abs(value) < float(np.finfo(_numpy_dtype(name)).tiny):
            continue
        if not math.isnan(value) and min_value is not None and value < min_value:
            continue
        if not math.isnan(value) and max_value is not None and value > max_value:
            continue
        specials.append(value)
    return st.one_of(plain, st.sampled_from(specials)) if specials else plain


def arrays(
    dtype: str | st.SearchStrategy = "float32",
    shape: tuple[int, ...] | st.SearchStrategy | None = None,
    **element_options: Any,
) -> st.SearchStrategy:
    """NumPy arrays (bfloat16 comes out as float32: convert with ``to_tensor``)."""
    dtype_st = dtype if isinstance(dtype, st.SearchStrategy) else st.just(dtype)
    shape_st = (
        shape if isinstance(shape, st.SearchStrategy) else (st.just(shape) if shape is not None else shapes())
    )

    @st.composite
    def build(draw: st.DrawFn) -> np.ndarray:
        name = draw(dtype_st)
        dims = draw(shape_st)
        return draw(hnp.arrays(_numpy_dtype(name), dims, elements=elements(name, **element_options)))

    return build()


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def to_tensor(array: np.ndarray, dtype: str, device: str = "cpu") -> Any:
    import torch

    tensor = torch.from_numpy(array.copy(order="C"))  # ascontiguousarray would make 0-d arrays 1-d
    return tensor.to(device=device, dtype=_torch_dtype(dtype))


def apply_layout(tensor: Any, layout: str) -> Any:
    """A tensor with the same values and shape as ``tensor`` but the given memory layout."""
    import torch

    if layout == "contiguous" or tensor.dim() == 0:
        return tensor.contiguous()
    if layout == "transposed":
        dims = list(range(tensor.dim()))[::-1]
        return tensor.permute(*dims).contiguous().permute(*dims)
    if layout == "strided":
        # Every other element of a buffer twice as wide along the last dim.
        wide = torch.zeros(*tensor.shape[:-1], tensor.shape[-1] * 2, dtype=tensor.dtype, device=tensor.device)
        wide[..., ::2] = tensor
        return wide[..., ::2]
    if layout == "broadcast":
        # Stride 0 along the first dim longer than 1: one row seen many times (values repeat).
        long_dims = [i for i, n in enumerate(tensor.shape) if n > 1]
        if not long_dims:
            return tensor
        dim = long_dims[0]
        return tensor.select(dim, 0).unsqueeze(dim).expand(*tensor.shape)
    if layout == "channels_last":
        if tensor.dim() != 4:
            return tensor
        return tensor.contiguous(memory_format=torch.channels_last)
    raise ValueError(f"unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")


def tensors(
    *,
    dtypes: Sequence[str] = FLOAT_DTYPES,
    shape: tuple[int, ...] | st.SearchStrategy | None = None,
    layouts: Sequence[str] = LAYOUTS,
    device: str = "cpu",
    **element_options: Any,
) -> st.SearchStrategy:
    """torch tensors covering the edge cases above; pass ``allow_nan=False`` etc. to narrow."""
    from xcompat.testing.strategies import dtypes as dtype_strategy

    dtype_st = dtype_strategy(dtypes)
    shape_st = (
        shape if isinstance(shape, st.SearchStrategy) else (st.just(shape) if shape is not None else shapes())
    )
    layout_st = st.sampled_from(tuple(layouts))

    @st.composite
    def build(draw: Any) -> Any:
        name = draw(dtype_st)
        dims = draw(shape_st)
        array = draw(hnp.arrays(_numpy_dtype(name), dims, elements=elements(name, **element_options)))
        return apply_layout(to_tensor(array, name, device), draw(layout_st))

    return build()


def same_shape_tensors(
    count: int,
    *,
    dtypes: Sequence[str] = FLOAT_DTYPES,
    shape: tuple[int, ...] | st.SearchStrategy | None = None,
    layouts: Sequence[str] = LAYOUTS,
    device: str = "cpu",
    **element_options: Any,
) -> st.SearchStrategy:
    """``count`` tensors of one shape and dtype (each with its own layout): binary/ternary ops."""
    from xcompat.testing.strategies import dtypes as dtype_strategy

    shape_st = (
        shape if isinstance(shape, st.SearchStrategy) else (st.just(shape) if shape is not None else shapes())
    )

    @st.composite
    def build(draw: Any) -> tuple[Any, ...]:
        name = draw(dtype_strategy(dtypes))
        dims = draw(shape_st)
        out = []
        for _ in range(count):
            array = draw(hnp.arrays(_numpy_dtype(name), dims, elements=elements(name, **element_options)))
            out.append(apply_layout(to_tensor(array, name, device), draw(st.sampled_from(tuple(layouts)))))
        return tuple(out)

    return build()
