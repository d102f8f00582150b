"""Run one conformance case on an ops backend and compare it with its float64 reference.

A leaf module: it imports only the case generator, the references and the tolerances, so
every ops backend (the torch library ``torch.ops.xcompat_kernels``, the Metal shader set)
and the runner can use it without importing each other.

An *ops backend* is any object with the operators ``add``, ``fma``, ``exp``, ``softmax``,
``sum`` and ``scatter_add`` (same arguments as the torch library) and ``set_poison(mode)``.
It may also have ``unsupported(case) -> str | None`` naming why it cannot run a case.
"""

from __future__ import annotations

from typing import Any

from xcompat.kernels import cases as casegen
from xcompat.kernels import reference as refs
from xcompat.kernels.tolerances import Tolerance

POISON_MODES = (1, 2)  # NaN, then the finite sentinel
ATOMIC_THREADS = 8


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def call_kernel(ops: Any, case: casegen.Case, inputs: list[Any]) -> Any:
    k = case.kernel
    if k == "add":
        return ops.add(*inputs)
    if k == "_broken_add_stride":
        return ops._broken_add_stride(*inputs)
    if k == "fma":
        return ops.fma(*inputs)
    if k == "exp":
        return ops.exp(*inputs)
    if k == "softmax":
        return ops.softmax(*inputs)
    if k == "sum_deterministic":
        return ops.sum(inputs[0], True, ATOMIC_THREADS)
    if k == "sum_atomic":
        return ops.sum(inputs[0], False, ATOMIC_THREADS)
    if k == "scatter_add":
        return ops.scatter_add(inputs[0], inputs[1], case.bins, ATOMIC_THREADS)
    raise KeyError(k)


def reference_for(case: casegen.Case, host_inputs: list[Any]) -> tuple[Any, Any]:
    """(reference, scale) in float64; scale is None for elementwise comparisons."""
    import numpy as np
    import torch

    k = case.kernel
    if k in ("add", "_broken_add_stride"):
        ref = refs.ref_add(*host_inputs)
    elif k == "fma":
        ref = refs.ref_fma(*host_inputs)
    elif k == "exp":
        ref = refs.ref_exp(*host_inputs)
    elif k == "softmax":
        ref = refs.ref_softmax(*host_inputs)
    elif k in casegen.REDUCTIONS:
        return refs.ref_sum(host_inputs[0]), refs.abs_scale_sum(host_inputs[0])
    elif k == "scatter_add":
        idx, w = host_inputs
        return refs.ref_scatter_add(idx, w, case.bins), refs.abs_scale_scatter(idx, w, case.bins)
    else:
        raise KeyError(k)
    # round once to the output dtype (overflow to inf included), as the kernels must
    rounded = torch.from_numpy(np.array(ref, dtype=np.float64)).to(getattr(torch, case.dtype))
    return rounded.double().numpy(), None


def to_host(t: Any) -> Any:
    import torch

    t = t.detach().to("cpu")
    if t.dtype in (torch.int64, torch.int32):
        return t.numpy()
    return t.double().numpy()


def skipped_case(case: casegen.Case, reason: str) -> dict[str, Any]:
    return {**case.to_dict(), "status": "skipped", "mismatches": 0, "max_abs_err": None, "max_rel_err": None,
            "detail": reason}


def run_case(ops: Any, case: casegen.Case, device: str, tol: Tolerance, *, poison: Any = None) -> dict[str, Any]:
    """Run one case (under each poison mode) and compare it with its reference."""
    unsupported = getattr(ops, "unsupported", None)
    reason = unsupported(case) if callable(unsupported) else None
    if reason:
        return skipped_case(case, reason)
    if case.exact:
        tol = Tolerance.exact(tol.scale)
    inputs = casegen.make_inputs(case, device)
    host = [to_host(t) for t in inputs]
    ref, scale = reference_for(case, host)
    result: dict[str, Any] = {**case.to_dict(), "status": "passed", "mismatches": 0, "max_abs_err": 0.0,
                              "max_rel_err": 0.0, "detail": None}
    outputs = []
    for mode in POISON_MODES if poison is not None else (0,):
        if poison is not None:
            poison(mode)
        try:
            out = call_kernel(ops, case, inputs)
            host_out = to_host(out)
        except Exception as exc:  # noqa: BLE001 - any kernel error is a failed case
            result.update(status="failed", detail=f"raised {first_line(exc)}")
            return result
        finally:
            if poison is not None:
                poison(0)
        outputs.append(host_out)
        cmp = refs.compare(host_out, ref, tol, scale=scale)
        result["mismatches"] = max(result["mismatches"], cmp.mismatches)
        for key in ("max_abs_err", "max_rel_err"):
            value = getattr(cmp, key)
            if value is None or result[key] is None:
                result[key] = None
            else:
                result[key] = max(result[key], value)
        if not cmp.ok:
            result.update(status="failed", detail=f"poison mode {mode}: {cmp.detail}")
            return result
    if case.kernel == "sum_deterministic" and len(outputs) == 2:
        import numpy as np

        if outputs[0].tobytes() != outputs[1].tobytes() and not np.isnan(outputs).all():
            result.update(status="failed", detail=f"not reproducible: {outputs[0]!r} then {outputs[1]!r}")
    return result


