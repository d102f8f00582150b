"""Tests of sample-ext 1.1 (the changed interface) against the installed package."""

from __future__ import annotations

import inspect
import zlib

import pytest
import sample_ext
from sample_ext import _core, _core_abi3


def fnv1a64(data: bytes) -> int:
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def test_version_and_abi() -> None:
    assert sample_ext.__version__ == "1.1.0"
    assert _core.ABI_VERSION == _core_abi3.ABI_VERSION == 2


def test_scale_signature_changed() -> None:
    params = inspect.signature(sample_ext.scale).parameters
    assert params["factor"].default is inspect.Parameter.empty
    assert params["offset"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sample_ext.scale([1.0, 2.0], 2.0, offset=1.0) == [3.0, 5.0]
    assert sample_ext.scale_abi3([1.0], 3.0) == [3.0]
    with pytest.raises(TypeError):
        sample_ext.scale([1.0])  # type: ignore[call-arg]


@pytest.mark.parametrize("data", [b"", b"abc", bytes(range(256))])
def test_checksums(data: bytes) -> None:
    assert sample_ext.checksum(data) == zlib.adler32(data)
    assert _core_abi3.checksum(memoryview(data)) == zlib.adler32(data)
    assert sample_ext.checksum64(data) == fnv1a64(data)
    assert _core_abi3.checksum64(bytearray(data)) == fnv1a64(data)


def test_scaled_add_clamp_against_float64() -> None:
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(7)
    a = torch.randn(64, generator=gen)
    b = torch.randn(64, generator=gen)
    expected = (a.double() + 0.5 * b.double()).clamp(-1.0, 1.0).float()
    torch.testing.assert_close(sample_ext.scaled_add(a, b, 0.5, clamp=True), expected, rtol=1e-6, atol=1e-6)
    unclamped = (a.double() + 0.5 * b.double()).float()
    torch.testing.assert_close(sample_ext.scaled_add(a, b, 0.5), unclamped, rtol=1e-6, atol=1e-6)
    schema = str(torch.ops.sample_ext.scaled_add.default._schema)
    assert schema == "sample_ext::scaled_add(Tensor a, Tensor b, float alpha, *, bool clamp=False) -> Tensor"
