"""Edge cases derived from each declared sample, each with a short human name.

A case is one dtype (each floating dtype, the declared one first), one layout (contiguous,
non-contiguous, transposed, channels-last) and one content (as declared, empty batch,
zero-size inner dim, 0-dim, NaN/Inf/-0.0, values near the dtype's range), applied to every
tensor argument at once so that arguments that must agree in shape still do. A combination
that changes no argument is not a case. Its name reads like "non-contiguous, float16, empty
batch"; the contiguous layout and the declared content are left out of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
# From the coarsest to the finest: a comparison uses the coarser dtype's tolerance.
PRECISION_ORDER: tuple[torch.dtype, ...] = (torch.bfloat16, torch.float16, torch.float32, torch.float64)

Transform = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[Any, ...]
    sample: int  # 1-based index of the declared sample it comes from
    dtype: torch.dtype | None  # the floating dtype of this case; None when no argument is floating
    declared_dtypes: tuple[torch.dtype | None, ...]  # per argument, the dtype as declared
    finite: bool  # every floating input is finite
    plain: bool = False  # contiguous, as declared: the first case of its dtype


def dtype_name(dtype: torch.dtype | None) -> str:
    return str(dtype).removeprefix("torch.") if dtype is not None else "non-floating"


def _non_contiguous(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0 or t.numel() < 2 or t.shape[-1] < 2:
        return t
    wide = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2]


def _transposed(t: torch.Tensor) -> torch.Tensor:
    if t.dim() < 2 or t.shape[-1] < 2 or t.shape[-2] < 2:
        return t
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


def _channels_last(t: torch.Tensor) -> torch.Tensor:
    if t.dim() != 4:
        return t
    return t.contiguous(memory_format=torch.channels_last)


LAYOUTS: tuple[tuple[str, Transform | None], ...] = (
    ("contiguous", None),
    ("non-contiguous", _non_contiguous),
    ("transposed", _transposed),
    ("channels-last", _channels_last),
)


def _empty_batch(t: torch.Tensor) -> torch.Tensor:
    return t[:0] if t.dim() >= 1 else t


def _zero_inner(t: torch.Tensor) -> torch.Tensor:
    return t[..., :0] if t.dim() >= 2 else t


def _zero_dim(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1)[0].clone() if t.dim() >= 1 and t.numel() >= 1 else t


def _special_values(t: torch.Tensor) -> torch.Tensor:
    if not t.is_floating_point() or t.numel() == 0:
        return t
    out = t.clone().reshape(-1)
    specials = (float("nan"), float("inf"), float("-inf"), -0.0)
    for i in range(min(len(specials), out.numel())):
        out[i] = specials[i]
    return out.reshape(t.shape)


def _near_range(t: torch.Tensor) -> torch.Tensor:
    if not t.is_floating_point() or t.numel() == 0:
        return t
    info = torch.finfo(t.dtype)
    out = torch.full_like(t, info.max / 4).reshape(-1)
    out[1::2] = -info.max / 4
    out[0] = info.tiny  # the smallest normal number: flushed to zero by a kernel that should not
    return out.reshape(t.shape)


CONTENTS: tuple[tuple[str, Transform | None], ...] = (
    ("as declared", None),
    ("empty batch", _empty_batch),
    ("zero-size inner dim", _zero_inner),
    ("0-dim", _zero_dim),
    ("NaN, Inf and -0.0", _special_values),
    ("values near the {dtype} range", _near_range),
)


def _floating(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _apply(args: tuple[Any, ...], fn: Transform | None, *, floating_only: bool = False) -> tuple[Any, ...] | None:
    """``args`` with ``fn`` applied to each tensor; None when nothing changed."""
    if fn is None:
        return args
    changed = False
    out: list[Any] = []
    for value in args:
        if isinstance(value, torch.Tensor) and (_floating(value) or not floating_only):
            new = fn(value)
            changed = changed or new is not value
            out.append(new)
        else:
            out.append(value)
    return tuple(out) if changed else None


def _cast(args: tuple[Any, ...], dtype: torch.dtype) -> tuple[Any, ...]:
    return tuple(v.to(dtype) if _floating(v) else v for v in args)


def _finite(args: tuple[Any, ...]) -> bool:
    return all(bool(torch.isfinite(v).all()) for v in args if _floating(v))


def sample_dtype(args: tuple[Any, ...]) -> torch.dtype | None:
    return next((v.dtype for v in args if _floating(v)), None)


def derive(sample: tuple[Any, ...], index: int, *, several: bool = False) -> Iterator[Case]:
    """Every edge case of one declared sample, the sample itself (contiguous, as declared) first."""
    declared = sample_dtype(sample)
    dtypes: list[torch.dtype | None] = [declared]
    if declared is not None:
        dtypes += [d for d in FLOAT_DTYPES if d != declared]
    declared_dtypes = tuple(v.dtype if isinstance(v, torch.Tensor) else None for v in sample)
    suffix = f" (sample {index})" if several else ""
    for dtype in dtypes:
        typed = _cast(sample, dtype) if dtype is not None else sample
        for content_name, content in CONTENTS:
            filled = _apply(typed, content, floating_only=content in (_special_values, _near_range))
            if filled is None:
                continue
            for layout_name, layout in LAYOUTS:
                laid = _apply(filled, layout)
                if laid is None or (layout is not None and _same_layout(filled, laid)):
                    continue
                parts = [p for p in (layout_name, dtype_name(dtype), content_name)
                         if p not in ("contiguous", "as declared")]
                name = ", ".join(parts).replace("{dtype}", dtype_name(dtype)) + suffix
                plain = layout is None and content is None
                yield Case(name, laid, index, dtype, declared_dtypes, _finite(laid), plain)


def _same_layout(before: tuple[Any, ...], after: tuple[Any, ...]) -> bool:
    """A layout that left every tensor's strides as they were (a size-1 or empty tensor)."""
    return all(
        not isinstance(a, torch.Tensor) or (a.stride() == b.stride() and a.is_contiguous() == b.is_contiguous())
        for a, b in zip(after, before, strict=True)
    )
