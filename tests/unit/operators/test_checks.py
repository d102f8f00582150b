"""The checks of one operator, run on Python functions with planted bugs (opcheck off: no dispatcher op)."""

from __future__ import annotations

import torch

from xcompat.operators.checks import check_operator
from xcompat.testing.reference import DEFAULT_TOLERANCES


def _run(fn, samples, reference=None):
    return check_operator(fn, samples, "cpu", reference, DEFAULT_TOLERANCES, opcheck=False)


def _ignores_strides(x: torch.Tensor, s: float) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise RuntimeError("expected float32")
    flat = x.as_strided((x.numel(),), (1,))  # reads the storage in memory order
    return (flat * s).reshape(x.shape)


def test_a_kernel_that_ignores_strides_is_named_with_its_case_and_largest_error() -> None:
    run = _run(_ignores_strides, [(torch.randn(5, 4), 2.0)], reference=lambda x, s: x * s)
    status, detail = run.checks["result"]
    assert status == "failed"
    assert detail.startswith("non-contiguous, float32: largest error ")
    failed = {c.name for c in run.cases if c.status == "failed"}
    assert {"non-contiguous, float32", "transposed, float32"} <= failed
    assert "float32" not in failed
    refused = {c.name for c in run.cases if c.status == "refused"}
    assert refused == {"float16", "bfloat16", "float64"}  # one refusal per dtype it does not take
    assert run.accepted == {"float32"}


def test_without_a_reference_the_contiguous_cpu_result_finds_the_same_bug() -> None:
    run = _run(_ignores_strides, [(torch.randn(5, 4), 2.0)])
    assert run.checks["result"][0] == "failed" and "non-contiguous, float32" in run.checks["result"][1]


def test_a_correct_operator_passes_every_check_it_can_run() -> None:
    run = _run(lambda x, y: x + y, [(torch.randn(3, 4), torch.randn(3, 4))], reference=lambda x, y: x + y)
    statuses = {name: status for name, (status, _) in run.checks.items()}
    assert statuses == {"result": "passed", "determinism": "passed", "nan_from_finite": "passed",
                        "mixed_device": "not_run", "opcheck": "not_run"}
    assert run.accepted == {"float16", "bfloat16", "float32", "float64"}
    assert not [c for c in run.cases if c.status != "passed"]


def test_nondeterminism_and_nan_from_finite_inputs_are_their_own_checks() -> None:
    calls = [0]

    def flaky(x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return x + calls[0] * 1e-3

    assert _run(flaky, [(torch.ones(4),)]).checks["determinism"][0] == "failed"

    def makes_nan(x: torch.Tensor) -> torch.Tensor:
        return torch.log(x - 10) if x.numel() else x

    nan = _run(makes_nan, [(torch.ones(4),)], reference=lambda x: x)
    assert nan.checks["nan_from_finite"][0] == "failed"


def test_the_declared_sample_itself_must_run() -> None:
    def refuses(x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("not implemented")

    run = _run(refuses, [(torch.ones(4),)])
    assert run.checks["result"] == ("failed", "float32: RuntimeError: not implemented")


def test_mixed_devices_pair_the_device_with_the_cpu_and_the_cpu_with_an_accelerator(monkeypatch) -> None:
    from xcompat.operators import checks

    assert checks.second_device("cuda:1") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert checks.second_device("cpu") == "cuda"


def test_an_operator_that_accepts_inputs_on_two_devices_fails_the_mixed_device_check(monkeypatch) -> None:
    from xcompat.operators import checks

    monkeypatch.setattr(checks, "second_device", lambda device: "meta")
    run = checks.OpRun()
    checks.check_mixed_device(lambda x, y: x, (torch.ones(2), torch.ones(2)), "cpu", run)
    assert run.checks["mixed_device"] == ("failed", "input 1 on meta, the others on cpu: accepted, not refused")
    refused = checks.OpRun()
    checks.check_mixed_device(lambda x, y: x + y, (torch.ones(2), torch.ones(2)), "cpu", refused)
    assert refused.checks["mixed_device"] == ("passed", "")


def test_samples_that_require_grad_are_checked_like_the_others() -> None:
    run = _run(lambda x: x * 2, [(torch.randn(3, 4, requires_grad=True),)], reference=lambda x: x * 2)
    assert run.checks["result"][0] == "passed"
    assert not [c for c in run.cases if c.status != "passed"]


def test_on_a_torch_without_opcheck_the_check_is_not_run_and_says_why(monkeypatch) -> None:
    from xcompat.operators import checks

    monkeypatch.delattr(torch.library, "opcheck")
    run = checks.OpRun()
    checks.run_opcheck(None, (torch.ones(2),), run)
    status, detail = run.checks["opcheck"]
    assert status == "not_run" and "has no torch.library.opcheck (added in 2.4)" in detail
