"""A deliberately wrong kernel (a stride bug) must fail the value checks, though opcheck passes it."""

from __future__ import annotations

from typing import Any

import torch

from xcompat.kernels.runner import run_kernels, run_opcheck


def test_stride_bug_is_caught_by_value_checks(kernels_lib: Any) -> None:
    doc = run_kernels(backend="cpu", kernels=["_broken_add_stride"], opcheck=False, isa_paths=["scalar"])
    assert doc["status"] == "failed"
    cases = doc["kernels"][0]["cases"]
    failed = [c for c in cases if c["status"] == "failed"]
    passed = [c for c in cases if c["status"] == "passed"]
    assert failed and passed
    # exactly the non-contiguous inputs with more than one element are caught
    def numel(c: dict) -> int:
        n = 1
        for d in c["shape"]:
            n *= d
        return n

    expected = {c["id"] for c in cases if c["layout"] in ("transposed", "sliced") and numel(c) > 1}
    assert {c["id"] for c in failed} == expected
    assert any("did not write" in (c["detail"] or "") for c in failed if c["layout"] == "sliced")
    assert "transposed" in {c["layout"] for c in failed}


def test_opcheck_passes_the_buggy_op(ops: Any) -> None:
    a = torch.randn(6, 5).t()
    report = torch.library.opcheck(ops._broken_add_stride.default, (a, a), raise_exception=False)
    assert report and all(v == "SUCCESS" for v in report.values()), report
    # ...while its values are wrong
    assert not torch.equal(ops._broken_add_stride(a, a), a + a)


def test_opcheck_on_the_registered_ops(ops: Any) -> None:
    results = run_opcheck(ops, "cpu")
    assert set(results) == {"add", "fma", "exp", "softmax", "sum", "scatter_add"}
    bad = {k: v for k, v in results.items() if v["status"] != "passed"}
    assert not bad, bad
    assert all("test_faketensor" in v["tests"] for v in results.values())
