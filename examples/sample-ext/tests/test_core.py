"""Tests of the C extension (full API and abi3 builds) against the installed package."""

from __future__ import annotations

import zlib

import pytest
import sample_ext
from sample_ext import _core, _core_abi3


def test_version_and_abi() -> None:
    assert sample_ext.__version__ == "1.0.0"
    assert sample_ext.ABI_VERSION == 1
    assert _core.ABI_VERSION == _core_abi3.ABI_VERSION == 1


def test_limited_api_flags() -> None:
    assert _core.LIMITED_API == 0
    assert _core_abi3.LIMITED_API == 1
    assert _core_abi3.__file__.endswith(".abi3.so")
    assert not _core.__file__.endswith(".abi3.so")


@pytest.mark.parametrize("impl", [sample_ext.scale, sample_ext.scale_abi3])
def test_scale(impl) -> None:
    assert impl([1.0, -2.5, 0.0], 3.0) == [3.0, -7.5, 0.0]
    assert impl((1, 2), 0.5) == [0.5, 1.0]
    assert impl([], 4.0) == []
    assert impl([1.5]) == [3.0]  # default factor


@pytest.mark.parametrize("impl", [sample_ext.scale, sample_ext.scale_abi3])
def test_scale_rejects_bad_input(impl) -> None:
    with pytest.raises(TypeError):
        impl([1.0, "x"], 2.0)
    with pytest.raises(TypeError):
        impl(42, 2.0)


@pytest.mark.parametrize("data", [b"", b"a", b"Wikipedia", bytes(range(256)) * 40])
def test_checksum_matches_zlib(data: bytes) -> None:
    assert sample_ext.checksum(data) == zlib.adler32(data)
    assert _core_abi3.checksum(bytearray(data)) == zlib.adler32(data)
    assert _core.checksum(memoryview(data)) == zlib.adler32(data)


def test_checksum_rejects_non_buffer() -> None:
    with pytest.raises(TypeError):
        sample_ext.checksum("text")  # type: ignore[arg-type]


def test_removed_in_v2_only() -> None:
    assert not hasattr(_core, "checksum64")
