"""The checks of one operator on one device, over every case derived from its samples.

Per case: the result against the expected one (``compare``), determinism (the same inputs
twice give bit-identical outputs) and no NaN from finite inputs. Per declared sample:
``torch.library.opcheck`` (schema, fake/Meta kernel, autograd registration) and, when the
device is not the CPU, the refusal of inputs split between the device and the CPU. A case
whose inputs the operator refuses with an error (a dtype it does not take, an empty tensor)
is "refused", not failed: wrong numbers are the bug, a clear refusal is not. The declared
sample itself must run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from xcompat.operators.cases import Case, derive, dtype_name
from xcompat.operators.compare import cpu_oracle, decide, flatten, to_float64_cpu
from xcompat.testing.reference import Tolerance

CHECKS = ("opcheck", "result", "determinism", "nan_from_finite", "mixed_device")
MAX_DETAIL = 300


@dataclass
class CaseResult:
    name: str
    status: str  # passed | failed | refused | skipped
    check: str | None = None  # the failed check
    detail: str = ""
    max_error: float | None = None


@dataclass
class OpRun:
    cases: list[CaseResult] = field(default_factory=list)
    checks: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (status, detail)
    accepted: set[str] = field(default_factory=set)  # the floating dtypes the operator ran on

    def fail(self, check: str, detail: str) -> None:
        if self.checks.get(check, ("", ""))[0] != "failed":  # the first failure names the check
            self.checks[check] = ("failed", short(detail))

    def note(self, check: str, status: str, detail: str = "") -> None:
        if check not in self.checks:
            self.checks[check] = (status, short(detail))


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def _error(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _bitwise_equal(a: Any, b: Any) -> bool:
    for x, y in zip(flatten(a), flatten(b), strict=False):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            same = (x == y) | (torch.isnan(x) & torch.isnan(y)) if x.is_floating_point() else x == y
            if not bool(same.all()):
                return False
        elif x != y:
            return False
    return True


def run_case(
    op: Callable[..., Any], case: Case, first: bool,
    reference: Callable[..., Any] | None, tolerances: Mapping[str, Tolerance],
) -> CaseResult:
    try:
        actual = op(*case.args)
    except Exception as exc:  # noqa: BLE001 - the project's kernel may raise anything: a refusal
        # the declared sample itself must run; a derived case may be refused
        return CaseResult(case.name, "failed" if first else "refused", "result" if first else None, short(_error(exc)))
    again = op(*case.args)
    if not _bitwise_equal(actual, again):
        return CaseResult(case.name, "failed", "determinism", "the same inputs twice gave different outputs")
    try:
        expected = (to_float64_cpu(reference(*to_float64_cpu(case.args))) if reference is not None
                    else cpu_oracle(op, case))
    except Exception as exc:  # noqa: BLE001 - the project's reference or CPU kernel
        source = "the reference" if reference is not None else "the CPU kernel"
        return CaseResult(case.name, "skipped", None, short(f"{source} raised {_error(exc)}; not compared"))
    verdict = decide(case, actual, expected, tolerances)
    status = "passed" if verdict.ok else "failed"
    return CaseResult(case.name, status, None if verdict.ok else verdict.check, short(verdict.detail), verdict.max_error)


def _to_device(sample: tuple[Any, ...], device: str) -> tuple[Any, ...]:
    return tuple(v.to(device) if isinstance(v, torch.Tensor) else v for v in sample)


_OPCHECK_HINTS = {
    "UnsupportedOperatorException": " (no fake/Meta kernel: add one with torch.library.register_fake or "
    "TORCH_LIBRARY_IMPL(ns, Meta, m), or torch.compile cannot trace the operator)",
}


def run_opcheck(overload: Any, sample: tuple[Any, ...], run: OpRun) -> None:
    opcheck = getattr(getattr(torch, "library", None), "opcheck", None)
    if opcheck is None:
        run.note("opcheck", "not_run", f"torch {torch.__version__} has no torch.library.opcheck (added in 2.4)")
        return
    try:
        results = opcheck(overload, sample, raise_exception=False)
    except Exception as exc:  # noqa: BLE001 - opcheck runs the project's kernels
        run.fail("opcheck", _error(exc))
        return
    for test, outcome in dict(results).items():
        if isinstance(outcome, BaseException):
            hint = _OPCHECK_HINTS.get(type(outcome).__name__, "")
            run.fail("opcheck", f"{test}: {_error(outcome)}{hint}")
        elif outcome != "SUCCESS":
            run.fail("opcheck", f"{test}: {outcome}")
    run.note("opcheck", "passed")


def second_device(device: str) -> str | None:
    """The device the mixed-device check pairs with ``device``: the CPU, or for the CPU an accelerator."""
    if torch.device(device).type != "cpu":
        return "cpu"
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    return "mps" if mps is not None and mps.is_available() else None


def check_mixed_device(op: Callable[..., Any], sample: tuple[Any, ...], device: str, run: OpRun) -> None:
    """Each tensor input moved in turn to a second device, the others on ``device``: every call must raise."""
    positions = [i for i, v in enumerate(sample) if isinstance(v, torch.Tensor)]
    other = second_device(device)
    if other is None or len(positions) < 2:
        run.note("mixed_device", "not_run", "needs a second device" if other is None else "needs two tensor inputs")
        return
    for moved in positions:
        args = [v.to(other if i == moved else device) if isinstance(v, torch.Tensor) else v
                for i, v in enumerate(sample)]
        try:
            op(*args)
        except Exception:  # noqa: BLE001, S112 - refused: what the check wants
            continue
        run.fail("mixed_device", f"input {moved + 1} on {other}, the others on {device}: accepted, not refused")
    run.note("mixed_device", "passed")


def check_operator(
    overload: Any, samples: list[tuple[Any, ...]], device: str,
    reference: Callable[..., Any] | None, tolerances: Mapping[str, Tolerance], *, opcheck: bool = True,
    progress: Callable[[str], None] = lambda step: None,
) -> OpRun:
    """Run every check of one operator on ``device``; failures name the case and the largest error.

    ``progress`` hears each step before it runs, so a kernel that crashes the process is named."""
    run = OpRun()
    several = len(samples) > 1
    for index, raw in enumerate(samples, start=1):
        sample = _to_device(raw, device)
        if opcheck:
            progress(f"opcheck of sample {index}")
            run_opcheck(overload, sample, run)
        progress(f"mixed devices, sample {index}")
        check_mixed_device(overload, sample, device, run)
        refused: set[torch.dtype | None] = set()
        for position, case in enumerate(derive(sample, index, several=several)):
            if case.dtype in refused:
                continue  # one refusal per dtype the operator does not take is enough
            progress(case.name)
            result = run_case(overload, case, position == 0, reference, tolerances)
            run.cases.append(result)
            if case.plain and result.status == "refused":
                refused.add(case.dtype)
            elif case.plain and case.dtype is not None:
                run.accepted.add(dtype_name(case.dtype))
            if result.status == "failed" and result.check is not None:
                where = f"{case.name}: " + (f"largest error {result.max_error:g}; " if result.max_error is not None else "")
                run.fail(result.check, where + result.detail)
    exercised = any(c.status in ("passed", "failed") for c in run.cases)
    for check in ("result", "determinism", "nan_from_finite"):
        run.note(check, "passed" if exercised else "not_run", "" if exercised else "no case ran")
    if not opcheck:
        run.note("opcheck", "not_run", "turned off")
    return run
