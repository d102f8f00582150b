"""float64 NumPy references and the comparison against them.

The references compute in float64 from the inputs as the kernel saw them (already
rounded to the dtype). Elementwise results are then rounded once to the output dtype, so
overflow to inf in float16 is expected of the kernel too. Reductions are compared with a
tolerance scaled by the sum of |inputs|, which bounds any summation order's error.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

from xcompat.kernels.tolerances import Tolerance


def _np() -> ModuleType:  # numpy, imported on first use
    import numpy as np

    return np


def ref_add(a: Any, b: Any) -> Any:
    with _np().errstate(over="ignore", invalid="ignore"):
        return a + b


def ref_fma(a: Any, b: Any, c: Any) -> Any:
    with _np().errstate(over="ignore", invalid="ignore"):
        return a * b + c


def ref_exp(a: Any) -> Any:
    np = _np()
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.exp(a)


def ref_softmax(x: Any) -> Any:
    """Max-subtracted softmax over the last axis, NaN-propagating like the kernels:
    a row holding NaN or +inf, or only -inf, is all NaN."""
    np = _np()
    if x.ndim == 0:
        x = x.reshape(1)
        return ref_softmax(x).reshape(())
    if x.size == 0:
        return x.copy()
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        m = np.max(x, axis=-1, keepdims=True)  # NaN-propagating max
        e = np.exp(x - m)
        return e / np.sum(e, axis=-1, keepdims=True)


def ref_sum(x: Any) -> Any:
    np = _np()
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(np.sum(x, dtype=np.float64))


def ref_scatter_add(idx: Any, w: Any, bins: int) -> Any:
    np = _np()
    out = np.zeros(bins, dtype=np.float64)
    np.add.at(out, idx, w)
    return out


def abs_scale_sum(x: Any) -> Any:
    np = _np()
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(np.nansum(np.abs(np.where(np.isinf(x), 0.0, x)), dtype=np.float64))


def abs_scale_scatter(idx: Any, w: Any, bins: int) -> Any:
    np = _np()
    out = np.zeros(bins, dtype=np.float64)
    np.add.at(out, idx, np.abs(w))
    return out


# the finite value the C++ glue fills outputs with in poison mode 2 (exact in fp16/bf16)
POISON_SENTINEL = -7680.0


@dataclass(frozen=True, kw_only=True)
class Comparison:
    ok: bool
    mismatches: int
    max_abs_err: float | None
    max_rel_err: float | None
    detail: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "mismatches": self.mismatches,
            "max_abs_err": self.max_abs_err,
            "max_rel_err": self.max_rel_err,
            "detail": self.detail,
        }


def _fmt_index(flat: int, shape: tuple[int, ...]) -> str:
    np = _np()
    if not shape:
        return "()"
    return str(tuple(int(i) for i in np.unravel_index(flat, shape)))


def compare(out: Any, ref: Any, tol: Tolerance, *, scale: Any = None) -> Comparison:
    """Compare a float64 array ``out`` to ``ref`` (same shape)."""
    np = _np()
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return Comparison(ok=False, mismatches=max(out.size, ref.size), max_abs_err=None, max_rel_err=None,
                          detail=f"shape {out.shape} != expected {ref.shape}")
    if out.size == 0:
        return Comparison(ok=True, mismatches=0, max_abs_err=0.0, max_rel_err=0.0, detail=None)
    o, r = out.reshape(-1), ref.reshape(-1)
    nan_o, nan_r = np.isnan(o), np.isnan(r)
    inf_o, inf_r = np.isinf(o), np.isinf(r)
    bad = nan_o != nan_r
    bad |= (inf_o | inf_r) & ~(nan_o | nan_r) & ~((inf_o & inf_r) & (np.sign(o) == np.sign(r)))
    finite = ~(nan_o | nan_r | inf_o | inf_r)
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.where(finite, np.abs(o - r), 0.0)
        s = np.abs(r) if scale is None else np.broadcast_to(np.asarray(scale, dtype=np.float64), ref.shape).reshape(-1)
        limit = tol.atol + tol.rtol * s
        bad |= finite & (err > limit)
        rel = np.where(finite & (s > 0), err / np.where(s > 0, s, 1.0), np.where(err > 0, np.inf, 0.0))
    count = int(bad.sum())
    max_abs = float(err.max()) if finite.any() else 0.0
    max_rel = float(rel.max()) if finite.any() else 0.0
    detail = None
    if count:
        i = int(np.flatnonzero(bad)[0])
        detail = (
            f"{count} of {o.size} element(s) differ; first at {_fmt_index(i, ref.shape)}: "
            f"got {o[i]!r}, expected {r[i]!r} (rtol={tol.rtol:g}, atol={tol.atol:g})"
        )
        poisoned = int((bad & ((o == POISON_SENTINEL) | (nan_o & ~nan_r))).sum())
        if poisoned:
            detail += f"; {poisoned} still hold the poison value: the kernel did not write them"
    return Comparison(ok=count == 0, mismatches=count, max_abs_err=max_abs, max_rel_err=max_rel, detail=detail)
