"""Tests of the torch custom op sample_ext::scaled_add against a float64 reference."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import sample_ext


def reference(a, b, alpha: float):
    return (a.double() + alpha * b.double()).float()


@pytest.mark.parametrize("shape", [(0,), (1,), (7, 3), (4, 5, 6)])
@pytest.mark.parametrize("alpha", [0.0, 1.0, -2.5, 1e-3])
def test_scaled_add_cpu_matches_float64(shape, alpha: float) -> None:
    gen = torch.Generator().manual_seed(1234)
    a = torch.randn(shape, generator=gen)
    b = torch.randn(shape, generator=gen)
    out = sample_ext.scaled_add(a, b, alpha)
    assert out.dtype == torch.float32 and out.shape == a.shape
    torch.testing.assert_close(out, reference(a, b, alpha), rtol=1e-6, atol=1e-6)


def test_scaled_add_non_contiguous() -> None:
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    b = torch.ones(4, 3)
    torch.testing.assert_close(sample_ext.scaled_add(a, b, 2.0), reference(a, b, 2.0))


def test_registered_schema() -> None:
    sample_ext.scaled_add(torch.zeros(1), torch.zeros(1))
    schema = str(torch.ops.sample_ext.scaled_add.default._schema)
    assert schema == "sample_ext::scaled_add(Tensor a, Tensor b, float alpha) -> Tensor"


def test_scaled_add_rejects_bad_inputs() -> None:
    with pytest.raises(RuntimeError, match="shapes differ"):
        sample_ext.scaled_add(torch.zeros(2), torch.zeros(3))
    with pytest.raises(RuntimeError, match="float32"):
        sample_ext.scaled_add(torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64))


def test_cuda_kernel_shipped_when_built() -> None:
    # The CUDA launcher is part of the wheel whenever nvcc was present at build time.
    import shutil

    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on this machine: the wheel may have been built without CUDA")
    assert sample_ext.cuda_kernel_built()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_scaled_add_cuda_matches_float64() -> None:
    if not sample_ext.cuda_kernel_built():
        pytest.skip("wheel built without the CUDA kernel")
    a = torch.randn(1000, device="cuda")
    b = torch.randn(1000, device="cuda")
    out = sample_ext.scaled_add(a, b, 0.75)
    torch.testing.assert_close(out.cpu(), reference(a.cpu(), b.cpu(), 0.75), rtol=1e-6, atol=1e-6)
