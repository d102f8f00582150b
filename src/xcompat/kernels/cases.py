"""Boundary cases for every kernel, generated deterministically.

A case names a kernel, a dtype, a shape, a memory layout and a value family. Inputs are
drawn as float64 with NumPy, rounded to the dtype by torch, laid out as asked (contiguous,
transposed, strided slice, storage offset) and moved to the device; the reference is
computed from exactly those rounded values.

Shapes cover empty tensors, 0-d, size 1 and odd sizes that divide neither the SIMD width
(4, 8, 16 lanes) nor the CUDA block (256 threads); value families cover normal data,
very large values (overflow to inf), subnormals, NaN/inf/signed zeros and integer-valued
data (for which accumulation must be exact).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

ELEMENTWISE = ("add", "fma", "exp")
REDUCTIONS = ("sum_deterministic", "sum_atomic")
KERNELS = (*ELEMENTWISE, "softmax", *REDUCTIONS, "scatter_add")
SELF_TEST_KERNELS = ("_broken_add_stride",)
ARITY = {"add": 2, "fma": 3, "exp": 1, "softmax": 1, "_broken_add_stride": 2}
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
LAYOUTS = ("contiguous", "transposed", "sliced", "offset")

# (name, shape): odd sizes straddle 8/16-lane vectors and 256-thread blocks
ELEMENTWISE_SHAPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("empty", (0,)),
    ("empty-2d", (0, 5)),
    ("scalar-0d", ()),
    ("one", (1,)),
    ("odd-7", (7,)),
    ("odd-17", (17,)),
    ("block-257", (257,)),
    ("odd-1031", (1031,)),
    ("matrix-33x65", (33, 65)),
)
SOFTMAX_SHAPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("scalar-0d", ()),
    ("empty-rows", (0, 5)),
    ("empty-cols", (5, 0)),
    ("one", (1, 1)),
    ("rows-7x33", (7, 33)),
    ("rows-4x1031", (4, 1031)),
    ("batched-2x3x17", (2, 3, 17)),
)
REDUCTION_SHAPES: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("empty", (0,)),
    ("scalar-0d", ()),
    ("one", (1,)),
    ("odd-1031", (1031,)),
    ("large-100003", (100003,)),
)


@dataclass(frozen=True, kw_only=True)
class Case:
    kernel: str
    name: str
    dtype: str
    shape: tuple[int, ...]
    layout: str = "contiguous"
    values: str = "normal"
    exact: bool = False
    seed: int = 0
    bins: int = 0  # scatter_add only

    @property
    def id(self) -> str:
        return f"{self.kernel}/{self.dtype}/{self.name}/{self.layout}/{self.values}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "layout": self.layout,
            "values": self.values,
            "exact": self.exact,
        }


def _layouts_for(shape: tuple[int, ...]) -> tuple[str, ...]:
    if len(shape) == 0:
        return ("contiguous",)
    out = ["contiguous", "sliced", "offset"]
    if len(shape) >= 2:
        out.insert(1, "transposed")
    return tuple(out)


def _elementwise_cases(kernel: str) -> Iterator[Case]:
    seed = 0
    for dtype in FLOAT_DTYPES:
        for name, shape in ELEMENTWISE_SHAPES:
            for layout in _layouts_for(shape):
                seed += 1
                yield Case(kernel=kernel, name=name, dtype=dtype, shape=shape, layout=layout, seed=seed)
        families = ["large", "denormal", "special", "integer"]
        if kernel == "exp":
            families.append("exp-range")
        for values in families:
            seed += 1
            yield Case(
                kernel=kernel, name="odd-1031", dtype=dtype, shape=(1031,), values=values, seed=seed,
                exact=(values == "integer" and kernel != "exp"),
            )
        seed += 1
        yield Case(kernel=kernel, name="matrix-33x65", dtype=dtype, shape=(33, 65), layout="transposed",
                   values="special", seed=seed)


def _softmax_cases() -> Iterator[Case]:
    seed = 1000
    for dtype in FLOAT_DTYPES:
        for name, shape in SOFTMAX_SHAPES:
            for layout in _layouts_for(shape):
                seed += 1
                yield Case(kernel="softmax", name=name, dtype=dtype, shape=shape, layout=layout, seed=seed)
        for values in ("large", "softmax-rows"):
            for name, shape in (("rows-8x33", (8, 33)), ("rows-8x1031", (8, 1031))):
                seed += 1
                yield Case(kernel="softmax", name=name, dtype=dtype, shape=shape, values=values, seed=seed)


def _reduction_cases(kernel: str) -> Iterator[Case]:
    seed = 2000 if kernel == "sum_deterministic" else 3000
    for name, shape in REDUCTION_SHAPES:
        for values in ("normal", "integer"):
            seed += 1
            yield Case(kernel=kernel, name=name, dtype="float32", shape=shape, values=values, seed=seed,
                       exact=values == "integer")
    for values in ("large", "special"):
        seed += 1
        yield Case(kernel=kernel, name="odd-1031", dtype="float32", shape=(1031,), values=values, seed=seed)
    seed += 1
    yield Case(kernel=kernel, name="odd-1031", dtype="float32", shape=(1031,), layout="sliced", seed=seed)
    # half-precision inputs: accumulated in float32, rounded once to the input dtype
    for dtype in ("float16", "bfloat16"):
        for name, shape in (("empty", (0,)), ("odd-1031", (1031,)), ("large-100003", (100003,))):
            for values in ("normal", "integer"):
                seed += 1
                yield Case(kernel=kernel, name=name, dtype=dtype, shape=shape, values=values, seed=seed)


def _scatter_cases() -> Iterator[Case]:
    seed = 4000
    # heavy contention: 200k updates into 1 or 4 bins; integer weights must sum exactly
    for name, shape, bins in (
        ("empty", (0,), 3),
        ("scalar-0d", (), 2),
        ("one", (1,), 3),
        ("one-bin-200000", (200000,), 1),
        ("four-bins-200000", (200000,), 4),
        ("spread-1031-bins", (50000,), 1031),
    ):
        for values in ("integer", "normal"):
            seed += 1
            yield Case(kernel="scatter_add", name=name, dtype="float32", shape=shape, values=values, seed=seed,
                       exact=values == "integer", bins=bins)


def generate_cases(kernel: str) -> list[Case]:
    if kernel in ELEMENTWISE or kernel == "_broken_add_stride":
        return list(_elementwise_cases(kernel))
    if kernel == "softmax":
        return list(_softmax_cases())
    if kernel in REDUCTIONS:
        return list(_reduction_cases(kernel))
    if kernel == "scatter_add":
        return list(_scatter_cases())
    raise KeyError(f"unknown kernel {kernel!r}")


# --- input construction ---------------------------------------------------------------

_LARGE = {"float32": 1e37, "float16": 3e4, "bfloat16": 1e37}
_SUBNORMAL = {"float32": 1e-39, "float16": 5e-6, "bfloat16": 1e-39}


def draw_values(case: Case, shape: tuple[int, ...], rng: Any) -> Any:
    """float64 values of the case's family for ``shape``."""
    import numpy as np

    n = int(np.prod(shape)) if shape else 1
    v = case.values
    if v == "normal":
        x = rng.standard_normal(n) * 3.0
    elif v == "integer":
        x = rng.integers(-8, 9, n).astype(np.float64)
    elif v == "large":
        # reductions: large but with a sum that fits float32 (intermediate overflow is
        # order-dependent, so it is not a property to test)
        big = 1e34 if case.kernel in REDUCTIONS else _LARGE[case.dtype]
        x = rng.uniform(1.0, 9.0, n) * big * rng.choice([-1.0, 1.0], n)
    elif v == "denormal":
        x = rng.uniform(-1.0, 1.0, n) * _SUBNORMAL[case.dtype]
    elif v == "exp-range":
        lo = {"float32": -105.0, "float16": -18.0, "bfloat16": -105.0}[case.dtype]
        hi = {"float32": 89.0, "float16": 11.5, "bfloat16": 89.0}[case.dtype]
        x = rng.uniform(lo, hi, n)
    elif v == "special":
        x = rng.standard_normal(n) * 3.0
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0])
        x[:: 7] = specials[np.arange(len(x[::7])) % len(specials)]
    elif v == "softmax-rows":
        x = rng.standard_normal(n) * 3.0
        rows = x.reshape(shape)
        cols = shape[-1]
        rows[0, :] = -np.inf  # all -inf: NaN row (as the float64 reference computes it)
        rows[1, cols // 2] = np.nan  # a NaN poisons its row
        rows[2, ::3] = -np.inf  # masked positions: exact zeros
        rows[3, 0] = 1e30  # one huge logit: a one-hot row
        rows[4, :] = 1e30  # all equal and huge: uniform row, needs the max subtraction
        rows[5, 1] = np.inf  # +inf: NaN row
        x = rows.reshape(-1)
    else:
        raise KeyError(f"unknown value family {v!r}")
    return x.reshape(shape) if shape else x.reshape(())


def base_shape(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    if layout == "contiguous":
        return shape
    if layout == "transposed":
        return (*shape[:-2], shape[-1], shape[-2])
    if layout == "sliced":
        return (*shape[:-1], shape[-1] * 2)
    if layout == "offset":
        return (shape[0] + 1, *shape[1:])
    raise KeyError(f"unknown layout {layout!r}")


def apply_layout(t: Any, layout: str) -> Any:
    if layout == "contiguous":
        return t
    if layout == "transposed":
        return t.transpose(-1, -2)
    if layout == "sliced":
        return t[..., ::2]
    if layout == "offset":
        return t[1:]
    raise KeyError(f"unknown layout {layout!r}")


def make_inputs(case: Case, device: str) -> list[Any]:
    """The case's input tensors on ``device`` (views with the case's layout)."""
    import numpy as np
    import torch

    rng = np.random.default_rng(case.seed)
    dtype = getattr(torch, case.dtype)
    if case.kernel == "scatter_add":
        n = int(np.prod(case.shape)) if case.shape else 1
        idx = rng.integers(0, case.bins, n).reshape(case.shape)
        w = draw_values(case, case.shape, rng)
        return [torch.from_numpy(idx.astype(np.int64)).to(device), torch.from_numpy(w).to(torch.float32).to(device)]
    arity = ARITY.get(case.kernel, 1)
    tensors = []
    bshape = base_shape(case.shape, case.layout)
    for _ in range(arity):
        raw = draw_values(case, bshape, rng)
        t = torch.from_numpy(np.asarray(raw, dtype=np.float64)).to(dtype).to(device)
        tensors.append(apply_layout(t, case.layout))
    return tensors
