"""Differential checks: compare a kernel's output with a float64 reference on the CPU.

``torch.library.opcheck`` checks registration, not numbers: a kernel with a stride bug
passes it. ``assert_matches_reference`` runs the kernel on its inputs (any device, any
layout), runs ``reference`` on float64 CPU copies, rounds the reference to the kernel's
output dtype (so a correct fp16 kernel that overflows to inf matches) and compares under
the tolerance for that dtype. Tolerances are data (``DEFAULT_TOLERANCES``), the same as
``torch.testing.assert_close``'s defaults, and can be overridden per call or loaded from a
JSON/TOML table with ``load_tolerances``.

``assert_mixed_device_raises`` checks that an op refuses inputs on different devices
instead of reading device memory from the host (or the reverse).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or value < 0
                or math.isnan(value)
            ):
                raise ValueError(f"{name} must be a number >= 0, not {value!r}")


# Matches torch.testing.assert_close's defaults (torch/testing/_comparison.py).
DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {
    "float16": Tolerance(1e-3, 1e-5),
    "bfloat16": Tolerance(1.6e-2, 1e-5),
    "float32": Tolerance(1.3e-6, 1e-5),
    "float64": Tolerance(1e-7, 1e-7),
    "complex32": Tolerance(1e-3, 1e-5),
    "complex64": Tolerance(1.3e-6, 1e-5),
    "complex128": Tolerance(1e-7, 1e-7),
    # Integers and bool compare exactly.
    "int8": Tolerance(0, 0),
    "uint8": Tolerance(0, 0),
    "int16": Tolerance(0, 0),
    "int32": Tolerance(0, 0),
    "int64": Tolerance(0, 0),
    "bool": Tolerance(0, 0),
}


def tolerances_from_mapping(data: Mapping[str, Any], *, source: str = "<tolerances>") -> dict[str, Tolerance]:
    """Validate ``{"float16": {"rtol": 1e-3, "atol": 1e-5}, ...}``; unknown dtypes are an error."""
    table = dict(DEFAULT_TOLERANCES)
    if not isinstance(data, Mapping):
        raise ValueError(  # noqa: TRY004 - one error type for every bad table, as documented
            f"{source}: expected a table of dtype -> {{rtol, atol}}, got {type(data).__name__}"
        )
    for dtype, entry in data.items():
        if dtype not in DEFAULT_TOLERANCES:
            raise ValueError(f"{source}: unknown dtype {dtype!r}; known: {', '.join(DEFAULT_TOLERANCES)}")
        if not isinstance(entry, Mapping) or set(entry) - {"rtol", "atol"}:
            raise ValueError(f"{source}: {dtype}: expected keys rtol and atol, got {entry!r}")
        base = DEFAULT_TOLERANCES[dtype]
        try:
            table[dtype] = Tolerance(float(entry.get("rtol", base.rtol)), float(entry.get("atol", base.atol)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: {dtype}: {exc}") from None
    return table


def load_tolerances(path: str | Path) -> dict[str, Tolerance]:
    """Read a tolerance table from ``.json`` or ``.toml`` (a ``[tolerances]`` table or the top level)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: invalid TOML: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if isinstance(data, Mapping) and "tolerances" in data:
        data = data["tolerances"]
    return tolerances_from_mapping(data, source=str(path))


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        layout = "contiguous" if value.is_contiguous() else f"strides={tuple(value.stride())}"
        return f"tensor(shape={tuple(value.shape)}, dtype={_dtype_name(value.dtype)}, device={value.device}, {layout})"
    return repr(value)


def _to_reference(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_floating_point():
            return value.to(torch.float64)
        if value.is_complex():
            return value.to(torch.complex128)
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_reference(v) for v in value)
    return value


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        out: list[Any] = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return [value]


class ReferenceMismatch(AssertionError):
    """The kernel's output differs from the reference beyond the dtype's tolerance."""


def _compare(
    index: int,
    actual: Any,
    expected: Any,
    tol: Mapping[str, Tolerance],
    rtol: float | None,
    atol: float | None,
    equal_nan: bool,
    check_dtype: bool,
    inputs_text: str,
) -> None:
    import torch

    where = f"output {index}" if index else "output"
    if not isinstance(actual, torch.Tensor):
        if actual != expected:
            raise ReferenceMismatch(f"{where}: {actual!r} != reference {expected!r}\ninputs: {inputs_text}")
        return
    if not isinstance(expected, torch.Tensor):
        expected = torch.as_tensor(expected)
    if tuple(actual.shape) != tuple(expected.shape):
        raise ReferenceMismatch(
            f"{where}: shape {tuple(actual.shape)} != reference shape {tuple(expected.shape)}\ninputs: {inputs_text}"
        )
    name = _dtype_name(actual.dtype)
    if name not in tol:
        raise ReferenceMismatch(f"{where}: no tolerance for dtype {name}; pass rtol/atol or extend the table")
    r = tol[name].rtol if rtol is None else rtol
    a = tol[name].atol if atol is None else atol
    got = actual.detach().cpu()
    # The ideal kernel returns the exact result rounded to its own dtype (overflow included).
    want = expected.to(got.dtype)
    if (
        check_dtype
        and expected.dtype not in (torch.float64, torch.complex128)
        and expected.dtype != got.dtype
    ):
        raise ReferenceMismatch(f"{where}: dtype {name} != reference dtype {_dtype_name(expected.dtype)}")
    if got.numel() == 0:
        return
    wide = torch.complex128 if got.is_complex() else torch.float64
    g, w = got.to(wide), want.to(wide)
    close = torch.isclose(g, w, rtol=r, atol=a, equal_nan=equal_nan)
    if bool(close.all()):
        return
    bad = (~close).nonzero()
    diff = (g - w).abs()
    diff = torch.where(
        torch.isnan(diff), torch.full_like(diff.real if diff.is_complex() else diff, float("inf")), diff
    )
    worst = tuple(int(i) for i in (diff == diff[~close].max()).nonzero()[0]) if diff.dim() else ()
    raise ReferenceMismatch(
        f"{where} does not match the float64 reference ({name}: rtol={r:g}, atol={a:g}): "
        f"{len(bad)} of {got.numel()} elements differ; worst at index {worst}: "
        f"got {g[worst].item()!r}, expected {w[worst].item()!r} (reference before rounding: "
        f"{expected.to(wide)[worst].item()!r})\ninputs: {inputs_text}"
    )


def assert_matches_reference(
    fn: Callable[..., Any],
    reference: Callable[..., Any],
    *inputs: Any,
    rtol: float | None = None,
    atol: float | None = None,
    tolerances: Mapping[str, Tolerance] | None = None,
    equal_nan: bool = True,
    check_dtype: bool = True,
    kwargs: Mapping[str, Any] | None = None,
) -> Any:
    """Run ``fn(*inputs)`` and ``reference`` on float64 CPU copies; raise ``ReferenceMismatch`` if they differ.

    ``reference`` receives floating inputs as float64 (complex as complex128) on the CPU
    and integer inputs unchanged; non-tensor arguments pass through. Outputs may be a
    tensor, a scalar or a (nested) tuple/list of them. Returns ``fn``'s output.
    """
    kwargs = dict(kwargs or {})
    table = dict(DEFAULT_TOLERANCES) if tolerances is None else dict(tolerances)
    inputs_text = ", ".join(_describe(v) for v in inputs)
    actual = fn(*inputs, **kwargs)
    expected = reference(*(_to_reference(v) for v in inputs), **kwargs)
    got, want = _flatten(actual), _flatten(expected)
    if len(got) != len(want):
        raise ReferenceMismatch(
            f"fn returned {len(got)} output(s), reference {len(want)}\ninputs: {inputs_text}"
        )
    for index, (a, e) in enumerate(zip(got, want, strict=True)):
        _compare(index, a, e, table, rtol, atol, equal_nan, check_dtype, inputs_text)
    return actual


DEFAULT_MIXED_DEVICE_MATCH = r"(?i)device"


@dataclass(frozen=True)
class MixedDeviceCase:
    devices: tuple[str, ...]  # the device of each tensor input in this call
    error: BaseException


def _tensor_positions(inputs: Sequence[Any]) -> list[int]:
    import torch

    return [i for i, v in enumerate(inputs) if isinstance(v, torch.Tensor)]


def assert_mixed_device_raises(
    fn: Callable[..., Any],
    *inputs: Any,
    devices: Iterable[str] | None = None,
    match: str = DEFAULT_MIXED_DEVICE_MATCH,
    exceptions: tuple[type[BaseException], ...] = (RuntimeError, ValueError, TypeError, NotImplementedError),
) -> list[MixedDeviceCase]:
    """Call ``fn`` with each tensor input moved, in turn, to a different device; each call must raise.

    ``devices`` defaults to the available ones (``cpu`` plus ``cuda``/``mps``). Needs at least
    two tensor inputs and two devices; otherwise the check cannot run and pytest skips it.
    Returns the cases checked, with the error each one raised.
    """
    import pytest

    positions = _tensor_positions(inputs)
    if len(positions) < 2:
        raise ValueError("assert_mixed_device_raises needs at least two tensor inputs")
    if devices is None:
        from xcompat.testing.backends import TORCH_DEVICE, detect

        available, _ = detect()
        devices = list(dict.fromkeys(TORCH_DEVICE[b] for b in available))
    devices = list(devices)
    if len(devices) < 2:
        pytest.skip(f"mixed-device check needs two devices; only {', '.join(devices) or 'none'} available")
    base = devices[0]
    cases: list[MixedDeviceCase] = []
    pattern = re.compile(match)
    for other in devices[1:]:
        for moved in positions:
            args = list(inputs)
            for p in positions:
                args[p] = inputs[p].to(other if p == moved else base)
            placed = tuple(str(args[p].device) for p in positions)
            try:
                fn(*args)
            except exceptions as exc:
                if not pattern.search(str(exc)):
                    raise AssertionError(
                        f"inputs on {placed} raised {type(exc).__name__} whose message does not match "
                        f"{match!r}: {exc}"
                    ) from exc
                cases.append(MixedDeviceCase(devices=placed, error=exc))
                continue
            raise AssertionError(f"inputs on mixed devices {placed} did not raise; the op must check devices")
    return cases
