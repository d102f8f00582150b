"""The CPU kernels on every SIMD path this CPU supports and on the scalar path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from xcompat.kernels import cases as casegen
from xcompat.kernels.build import isa_info
from xcompat.kernels.runner import run_case, run_kernels
from xcompat.kernels.tolerances import load_tolerances
from xcompat.probe.cpu import detect_cpu

TABLE = load_tolerances()


def _paths() -> list[str]:
    return detect_cpu().isa_paths()


def test_library_reports_the_paths_the_os_reports(ops: Any) -> None:
    info = isa_info()
    assert "scalar" in info["supported"]
    # the library's own detection (__builtin_cpu_supports) agrees with /proc/cpuinfo
    assert info["supported"] == _paths()
    assert info["selected"] == info["best"] == _paths()[-1]


@pytest.mark.parametrize("path", _paths())
@pytest.mark.parametrize("kernel", casegen.KERNELS)
def test_all_cases_pass_on_each_path(auto_isa: Any, path: str, kernel: str) -> None:
    ops = auto_isa
    ops.set_isa(path)
    failed = []
    for case in casegen.generate_cases(kernel):
        res = run_case(ops, case, "cpu", TABLE.get(kernel, case.dtype), poison=ops.set_poison)
        if res["status"] != "passed":
            failed.append(f"{case.id}: {res['detail']}")
    assert not failed, "\n".join(failed[:10])


def test_simd_and_scalar_paths_agree_closely(auto_isa: Any) -> None:
    ops = auto_isa
    x = torch.linspace(-100, 80, 4099)
    results = {}
    for path in _paths():
        ops.set_isa(path)
        results[path] = ops.exp(x)
    scalar = results["scalar"]
    for path, out in results.items():
        assert torch.allclose(out, scalar, rtol=5e-7, atol=1e-38), path


def test_forced_unsupported_path_is_refused_not_sigill(auto_isa: Any) -> None:
    ops = auto_isa
    other = "neon" if detect_cpu().arch == "x86_64" else "avx2"
    with pytest.raises(RuntimeError, match="not built for this architecture"):
        ops.set_isa(other)
    with pytest.raises(RuntimeError, match="unknown CPU path"):
        ops.set_isa("avx9")
    assert isa_info()["selected"] in _paths()  # unchanged


def test_poison_modes_fill_outputs(auto_isa: Any) -> None:
    ops = auto_isa
    # the stride-bug kernel leaves elements of a sliced output unwritten: poison shows it
    base = torch.arange(20, dtype=torch.float32)
    a = base[::2]
    for mode, check in ((1, torch.isnan), (2, lambda t: t == -7680.0)):
        ops.set_poison(mode)
        out = ops._broken_add_stride(a, a)
        ops.set_poison(0)
        assert check(out).any(), mode


def test_deterministic_sum_is_bitwise_reproducible_and_atomic_is_exact_on_integers(ops: Any) -> None:
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal(100003).astype(np.float32))
    first = ops.sum(x, True, 8)
    assert all(torch.equal(first, ops.sum(x, True, 8)) for _ in range(5))
    ints = torch.from_numpy(rng.integers(-8, 9, 100003).astype(np.float32))
    expected = float(ints.double().sum())
    assert all(float(ops.sum(ints, False, 8)) == expected for _ in range(5))


def test_scatter_add_contention_is_exact_and_checks_indices(ops: Any) -> None:
    idx = torch.zeros(200000, dtype=torch.int64)
    w = torch.ones(200000)
    assert ops.scatter_add(idx, w, 1, 8).tolist() == [200000.0]
    with pytest.raises(RuntimeError, match="outside"):
        ops.scatter_add(torch.tensor([0, 5]), torch.ones(2), 3, 2)
    with pytest.raises(RuntimeError, match="int64"):
        ops.scatter_add(torch.tensor([0.0]), torch.ones(1), 3, 2)


def test_bad_arguments_raise_clear_errors(ops: Any) -> None:
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        ops.add(torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        ops.add(torch.ones(3), torch.ones(4))
    with pytest.raises(RuntimeError, match="dtype mismatch"):
        ops.add(torch.ones(3), torch.ones(3, dtype=torch.float16))


def test_wrong_device_input_gives_the_expected_error(ops: Any) -> None:
    with pytest.raises(RuntimeError, match="same device"):
        ops.add(torch.ones(4), torch.ones(4, device="meta"))
    with pytest.raises(RuntimeError, match="same device"):
        ops.fma(torch.ones(4, device="meta"), torch.ones(4, device="meta"), torch.ones(4))


@pytest.mark.parametrize("layout", casegen.LAYOUTS)
def test_make_inputs_layouts(layout: str) -> None:
    case = casegen.Case(kernel="add", name="m", dtype="float16", shape=(5, 7), layout=layout, seed=1)
    a, _b = casegen.make_inputs(case, "cpu")
    assert tuple(a.shape) == (5, 7) and a.dtype == torch.float16
    assert a.is_contiguous() == (layout in ("contiguous", "offset"))
    if layout == "offset":
        assert a.storage_offset() > 0


def test_run_kernels_document_on_cpu(kernels_lib: Any) -> None:
    from xcompat.jsonio import validate

    doc = run_kernels(backend="cpu", kernels=["add", "softmax"], opcheck=False)
    validate("kernels", doc)
    assert doc["status"] == "passed" and doc["backend_used"] == "cpu" and doc["required"] == ["cpu"]
    assert {c["isa"] for k in doc["kernels"] for c in k["cases"]} == set(_paths())
    skipped = {c["name"] for c in doc["checks"] if c["status"] == "skipped"}
    assert {"cuda_graph_capture_replay", "two_stream_event_ordering", "metal_command_buffer_completion"} <= skipped
    assert all(c["detail"] for c in doc["checks"] if c["status"] == "skipped")


@pytest.mark.parametrize("path", _paths())
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_conversions_are_bit_exact_on_every_bit_pattern(auto_isa: Any, path: str, dtype: torch.dtype) -> None:
    """Every 16-bit pattern as input; the fp32 sum rounded to nearest-even must match torch bit for bit
    (the SIMD paths round bfloat16 with integer arithmetic of their own)."""
    ops = auto_isa
    ops.set_isa(path)
    gen = torch.Generator().manual_seed(7)
    a = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    a = torch.cat([a, a[:7]]).view(dtype)  # 65543 elements: a tail after the last full vector
    b = a[torch.randperm(a.numel(), generator=gen)]
    got = ops.add(a, b)
    want = (a.float() + b.float()).to(dtype)
    nan_got, nan_want = torch.isnan(got), torch.isnan(want)
    assert torch.equal(nan_got, nan_want)
    same = got.view(torch.int16) == want.view(torch.int16)
    assert bool((same | nan_want).all()), f"{int((~same & ~nan_want).sum())} elements differ on {path}"
