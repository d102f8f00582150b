"""Run the conformance kernels on the backend the fallback chain picks, and report.

Every case runs twice, with the outputs poisoned first with NaN and then with a finite
sentinel, so an element a kernel forgets to write fails in at least one of the runs. On
the CPU backend the cases run on every SIMD path the CPU supports (and the scalar path),
or only on the path forced with ``XCOMPAT_KERNELS_ISA``.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from xcompat.devices import FallbackChain, Resolution, parse_order
from xcompat.errors import UnavailableError, UsageError
from xcompat.kernels import cases as casegen
from xcompat.kernels.execute import (  # noqa: F401 - re-exported: the runner's public helpers
    ATOMIC_THREADS,
    POISON_MODES,
    call_kernel,
    reference_for,
    run_case,
    to_host,
)
from xcompat.kernels.execute import first_line as _first_line
from xcompat.kernels.tolerances import ToleranceTable, load_tolerances

OPCHECK_OPS = ("add", "fma", "exp", "softmax", "sum", "scatter_add")


def _kernel_status(case_results: list[dict[str, Any]]) -> str:
    statuses = {c["status"] for c in case_results}
    if "failed" in statuses:
        return "failed"
    if statuses == {"skipped"} or not statuses:
        return "skipped"
    return "passed"


def run_opcheck(ops: Any, device: str) -> dict[str, Any]:
    """``torch.library.opcheck`` on each registered op with a small non-contiguous sample.

    opcheck checks registration, schema, fake-tensor and AOT-dispatch consistency; it
    does not check values (see the value cases for that)."""
    import torch

    a = torch.randn(6, 5, device=device).t()
    b = torch.randn(6, 5, device=device).t()
    c = torch.randn(5, 6, device=device)
    samples = {
        "add": (a, b),
        "fma": (a, b, c),
        "exp": (a,),
        "softmax": (a,),
        "sum": (torch.randn(37, device=device), True, 2),
        "scatter_add": (torch.randint(0, 4, (50,), device=device), torch.randn(50, device=device), 4, 2),
    }
    out: dict[str, Any] = {}
    for name in OPCHECK_OPS:
        op = getattr(ops, name).default
        try:
            report = torch.library.opcheck(op, samples[name], raise_exception=False)
        except Exception as exc:  # noqa: BLE001
            out[name] = {"status": "failed", "tests": {}, "detail": _first_line(exc)}
            continue
        tests = {k: ("passed" if v == "SUCCESS" else f"failed: {_first_line(v) if isinstance(v, BaseException) else v}")
                 for k, v in report.items()}
        failed = [k for k, v in tests.items() if v != "passed"]
        out[name] = {"status": "failed" if failed else "passed", "tests": tests,
                     "detail": f"failed: {', '.join(failed)}" if failed else None}
    return out


def _check(name: str, fn: Any) -> dict[str, Any]:
    start = time.perf_counter()
    try:
        detail = fn()
        status = "passed"
    except _Skip as exc:
        status, detail = "skipped", str(exc)
    except Exception as exc:  # noqa: BLE001
        status, detail = "failed", _first_line(exc)
    return {"name": name, "status": status, "detail": detail, "seconds": round(time.perf_counter() - start, 4)}


class _Skip(Exception):
    pass


def device_checks(ops: Any, backend: str, device: str) -> list[dict[str, Any]]:
    from xcompat.kernels import device_checks as dc

    checks = [
        _check("wrong_device_input", lambda: dc.wrong_device_input(ops, device)),
        _check("device_move_bit_exact", lambda: dc.device_move_bit_exact(device, _Skip)),
    ]
    if backend in ("cuda", "rocm"):
        label = "hip_graph_capture_replay" if backend == "rocm" else "cuda_graph_capture_replay"
        checks.append(_check(label, lambda: dc.graph_capture_replay(ops)))
        checks.append(_check("graph_capture_reductions", lambda: dc.graph_capture_reductions(ops)))
        checks.append(_check("two_stream_event_ordering", lambda: dc.two_stream_ordering(ops)))
    else:
        reason = f"needs a CUDA or ROCm device (backend is {backend})"
        for name in ("cuda_graph_capture_replay", "graph_capture_reductions", "two_stream_event_ordering"):
            checks.append({"name": name, "status": "skipped", "detail": reason, "seconds": 0.0})
    if backend == "mps":
        checks.append(_check("metal_command_buffer_completion", lambda: dc.metal_command_buffer(ops)))
    else:
        checks.append({"name": "metal_command_buffer_completion", "status": "skipped",
                       "detail": f"needs an Apple MPS device (backend is {backend})", "seconds": 0.0})
    return checks


def _environment() -> dict[str, Any]:
    import numpy
    import torch

    return {
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "torch_hip": getattr(torch.version, "hip", None),
        "numpy": numpy.__version__,
    }


def select_kernels(kernels: Iterable[str] | None) -> tuple[str, ...]:
    if kernels is None:
        return casegen.KERNELS
    chosen = tuple(dict.fromkeys(kernels))
    known = (*casegen.KERNELS, *casegen.SELF_TEST_KERNELS)
    for k in chosen:
        if k not in known:
            raise UsageError(f"unknown kernel {k!r}", hint=f"choose from {', '.join(casegen.KERNELS)}")
    if not chosen:
        raise UsageError("no kernels selected")
    return chosen


def run_kernels(
    *,
    backend: str = "auto",
    order: Sequence[str] | str | None = None,
    required: Iterable[str] | None = None,
    kernels: Iterable[str] | None = None,
    env: Mapping[str, str] | None = None,
    cell_id: str | None = None,
    opcheck: bool = True,
    tolerances: ToleranceTable | None = None,
    isa_paths: Sequence[str] | None = None,
    gpu_archs: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Resolve the backend, build/load the kernels, run every case; return the result document.

    Raises ``UnavailableError`` (exit 5) when an explicitly requested backend is absent, the
    device kernels cannot be built here (no toolkit, no architecture), or a forced CPU path
    is not supported by this CPU. The error then carries ``result``: the document of the
    lane that could not run (status ``failed``, ``unavailable`` naming why), so a caller
    can still write it for the report.
    """
    env = os.environ if env is None else env
    started = time.perf_counter()
    chosen = select_kernels(kernels)
    table = tolerances or load_tolerances()
    required_t = tuple(required or ())
    if backend != "auto" and backend not in required_t:
        # an explicitly requested backend is a requirement of the lane
        required_t = (*required_t, backend)
    chain = FallbackChain(parse_order(order), env=env)
    resolution: Resolution | None = None
    try:
        resolution = chain.resolve(backend, required=required_t)
        return _run_resolved(resolution, chain, chosen=chosen, table=table, env=env, cell_id=cell_id,
                             opcheck=opcheck, isa_paths=isa_paths, gpu_archs=gpu_archs, started=started)
    except UnavailableError as exc:
        exc.result = unavailable_result(  # type: ignore[attr-defined]
            exc, chain=chain, resolution=resolution, requested=backend, required=required_t, cell_id=cell_id,
            seconds=time.perf_counter() - started,
        )
        raise


def unavailable_result(
    exc: UnavailableError,
    *,
    chain: FallbackChain,
    resolution: Resolution | None,
    requested: str,
    required: Sequence[str],
    cell_id: str | None,
    seconds: float,
) -> dict[str, Any]:
    """The result document of a lane that could not run: failed, with the reason."""
    if resolution is not None:
        steps = [s.to_dict() for s in resolution.steps]
        used = resolution.used
    else:
        names = [requested] if requested != "auto" else list(chain.order)
        steps = []
        for name in names:
            probe = chain.probe(name)  # type: ignore[arg-type]
            steps.append({"backend": name, "taken": False, "available": probe.available,
                          "reason": probe.reason, "probe_seconds": round(probe.seconds, 6)})
        used = None
    try:
        environment = _environment()
    except ImportError as err:  # torch or numpy missing is itself a reason a lane cannot run
        environment = {"python": platform.python_version(), "platform": f"{sys.platform}-{platform.machine()}",
                       "torch": None, "numpy": None, "error": str(err)}
    return {
        "version": 1,
        "kind": "kernels",
        "cell_id": cell_id,
        "status": "failed",
        "summary": f"{requested if requested != 'auto' else 'the'} lane could not run: {exc.message}",
        "backend_requested": requested,
        "backend_used": used,
        "unavailable": {"exit_code": 5, "message": exc.message, "hint": exc.hint},
        "required": list(dict.fromkeys(required)),
        "fallback": {"order": list(chain.order), "missing_required": [b for b in required if b != used],
                     "steps": steps},
        "build": None,
        "isa": None,
        "environment": environment,
        "kernels": [],
        "opcheck": {},
        "checks": [],
        "counts": {"cases": 0, "failed_cases": 0, "checks_failed": 0, "checks_skipped": 0},
        "duration_seconds": round(seconds, 3),
    }


def _run_resolved(
    resolution: Resolution,
    chain: FallbackChain,
    *,
    chosen: tuple[str, ...],
    table: ToleranceTable,
    env: Mapping[str, str],
    cell_id: str | None,
    opcheck: bool,
    isa_paths: Sequence[str] | None,
    gpu_archs: Sequence[str] | None,
    started: float,
) -> dict[str, Any]:
    used = resolution.used
    from xcompat.devices import get_backend

    device = get_backend(used).torch_device
    ops, build_info, isa = _load_ops(used, env, gpu_archs)
    paths: list[str | None] = _cpu_paths(isa, isa_paths) if isa is not None else [None]
    kernel_results = [_run_kernel(name, ops, device, table, used, paths, isa) for name in chosen]
    opcheck_results = run_opcheck(ops, device) if opcheck and used != "mps" else {}
    checks = device_checks(ops, used, device)
    failed_cases = sum(k["counts"]["failed"] for k in kernel_results)
    total_cases = sum(len(k["cases"]) for k in kernel_results)
    failed_checks = [c["name"] for c in checks if c["status"] == "failed"]
    failed_opcheck = [n for n, r in opcheck_results.items() if r["status"] == "failed"]
    skipped_checks = [c["name"] for c in checks if c["status"] == "skipped"]
    if failed_cases or failed_checks or failed_opcheck:
        status = "failed"
    elif resolution.missing_required:
        status = "fallback"
    else:
        status = "passed"
    parts = [f"{total_cases - failed_cases}/{total_cases} cases passed on {used}"]
    if used == "cpu":
        parts.append(f"CPU paths {', '.join(p for p in paths if p)}")
    if failed_checks:
        parts.append(f"failed checks: {', '.join(failed_checks)}")
    if failed_opcheck:
        parts.append(f"opcheck failed: {', '.join(failed_opcheck)}")
    if resolution.missing_required:
        parts.append(f"required {', '.join(resolution.missing_required)} lane ran on {used} (fallback)")
    if skipped_checks:
        parts.append(f"{len(skipped_checks)} device check(s) skipped")
    return {
        "version": 1,
        "kind": "kernels",
        "cell_id": cell_id,
        "status": status,
        "summary": "; ".join(parts),
        "backend_requested": resolution.requested,
        "backend_used": used,
        "required": list(resolution.required),
        "fallback": {"order": list(chain.order), "missing_required": list(resolution.missing_required),
                     "steps": [s.to_dict() for s in resolution.steps]},
        "build": build_info,
        "isa": isa,
        "environment": _environment(),
        "kernels": kernel_results,
        "opcheck": opcheck_results,
        "checks": checks,
        "counts": {
            "cases": total_cases,
            "failed_cases": failed_cases,
            "checks_failed": len(failed_checks),
            "checks_skipped": len(skipped_checks),
        },
        "duration_seconds": round(time.perf_counter() - started, 3),
    }


def _load_ops(
    used: str, env: Mapping[str, str], gpu_archs: Sequence[str] | None
) -> tuple[Any, dict[str, Any], dict[str, Any] | None]:
    """(the kernels' ops for backend ``used``, how they were built, the CPU paths on the CPU
    backend). Raises ``UnavailableError`` when the forced CPU path is not supported here."""
    if used == "mps":
        # Metal is one more ops backend: the shader set, with the same call surface
        from xcompat.kernels.metal import MetalKernels

        metal = MetalKernels()
        return metal, metal.build_info(), None
    from xcompat.kernels.build import isa_info, kernel_ops, load_kernels

    loaded = load_kernels(with_device=used in ("cuda", "rocm"), env=env, gpu_archs=gpu_archs)
    build_info = loaded.to_dict()
    ops = kernel_ops()
    if used != "cpu":
        return ops, build_info, None
    isa = isa_info()
    if isa["error"]:
        raise UnavailableError(isa["error"], hint="unset XCOMPAT_KERNELS_ISA or pick a path this CPU supports")
    return ops, build_info, isa


def _cpu_paths(isa: dict[str, Any], isa_paths: Sequence[str] | None) -> list[str | None]:
    """The SIMD paths every case runs on: those asked for, the one forced with
    ``XCOMPAT_KERNELS_ISA``, or every path this CPU supports."""
    if isa_paths is not None:
        return list(isa_paths)
    if isa["source"] == "env":
        return [isa["selected"]]
    return list(isa["supported"])


def _run_kernel(
    name: str, ops: Any, device: str, table: ToleranceTable, used: str, paths: list[str | None],
    isa: dict[str, Any] | None,
) -> dict[str, Any]:
    """Every case of kernel ``name`` on each of ``paths`` (None: the backend's one path)."""
    case_results: list[dict[str, Any]] = []
    table_name = "add" if name == "_broken_add_stride" else name
    for case in casegen.generate_cases(name):
        tol = table.get(table_name, case.dtype, used)
        for path in paths:
            if path is not None:
                ops.set_isa(path)
            res = run_case(ops, case, device, tol, poison=ops.set_poison)
            if path is not None:
                res["isa"] = path
            case_results.append(res)
    if used == "cpu" and isa is not None:
        ops.set_isa("auto" if isa["source"] != "env" else isa["selected"])
    return {
        "name": name,
        "status": _kernel_status(case_results),
        "cases": case_results,
        "counts": {s: sum(1 for c in case_results if c["status"] == s) for s in ("passed", "failed", "skipped")},
    }
