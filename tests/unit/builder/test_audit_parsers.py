"""Parsers of the audit step: auditwheel's text report, Requires-Python floors, fat binaries."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xcompat.builder.audit import fatbin_archs, lowest_python, parse_auditwheel_text, wheel_tags

# Text printed by ``auditwheel show`` (6.x) for a wheel whose C++ op links libtorch.
AUDITWHEEL_TEXT = """
sample_ext-1.1.0-cp311-cp311-manylinux_2_36_x86_64.whl is consistent
with the following platform tag: "linux_x86_64".

The wheel references external versioned symbols in these
system-provided shared libraries: libc.so.6 with versions
{'GLIBC_2.14', 'GLIBC_2.32', 'GLIBC_2.34', 'GLIBC_2.3', 'GLIBC_2.17',
'GLIBC_2.3.3', 'GLIBC_2.36', 'GLIBC_2.3.2', 'GLIBC_2.2.5'},
libgcc_s.so.1 with versions {'GCC_3.0'}, libstdc++.so.6 with versions
{'CXXABI_1.3', 'GLIBCXX_3.4.21', 'GLIBCXX_3.4.9', 'CXXABI_1.3.9',
'GLIBCXX_3.4'}

This constrains the platform tag to "manylinux_2_36_x86_64". In order
to achieve a more compatible tag, you would need to recompile a new
wheel from source on a system with earlier versions of these
libraries, such as a recent manylinux image.

The following external shared libraries are required by the wheel:
{
    "libc10.so": null,
    "libtorch_cpu.so": null
}
"""


def test_parse_auditwheel_text() -> None:
    shown = parse_auditwheel_text(AUDITWHEEL_TEXT)
    assert shown["source"] == "auditwheel-text"
    assert shown["overall_tag"] == "linux_x86_64"
    assert shown["sym_tag"] == "manylinux_2_36_x86_64"
    assert "GLIBC_2.36" in shown["versioned_symbols"]["libc.so.6"]
    assert shown["versioned_symbols"]["libgcc_s.so.1"] == ["GCC_3.0"]
    assert "GLIBCXX_3.4.21" in shown["versioned_symbols"]["libstdc++.so.6"]
    assert shown["external_libs"] == ["libc10.so", "libtorch_cpu.so"]


def test_parse_auditwheel_text_without_symbol_constraint() -> None:
    text = 'pkg-1.0-py3-none-any.whl is consistent with the following platform tag: "manylinux_2_5_x86_64".\n'
    shown = parse_auditwheel_text(text)
    assert shown["sym_tag"] == shown["overall_tag"] == "manylinux_2_5_x86_64"
    assert shown["versioned_symbols"] == {} and shown["external_libs"] == []


@pytest.mark.parametrize("text", ["", "usage: auditwheel ...", "{not json either"])
def test_parse_auditwheel_text_malformed(text: str) -> None:
    with pytest.raises(ValueError, match="unrecognised auditwheel show output"):
        parse_auditwheel_text(text)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [(">=3.10", "3.10"), (">=3.11", "3.11"), (">3.9", "3.9"), (">=3.9.1", "3.9"), ("~=3.12", "3.12"), ("==3.13.*", "3.13"),
     (">=3.8,!=3.9.*", "3.8"), (None, None), ("", None), ("not a spec", None), ("<3", None)],
)
def test_lowest_python(spec: str | None, expected: str | None) -> None:
    assert lowest_python(spec) == expected


def test_fatbin_archs_of_non_cuda_inputs() -> None:
    assert fatbin_archs(b"") == []
    assert fatbin_archs(b"\x7fELF garbage that is not an ELF file") == []
    # A real ELF file without device code.
    assert fatbin_archs(Path(sys.executable).resolve().read_bytes()[: 1 << 22]) == []


@pytest.mark.parametrize(
    ("name", "abi3", "pure"),
    [("x-1.0-cp310-abi3-manylinux_2_28_x86_64.whl", True, False), ("x-1.0-py3-none-any.whl", False, True),
     ("x-1.0-cp312-cp312-win_amd64.whl", False, False)],
)
def test_wheel_tags(name: str, abi3: bool, pure: bool) -> None:
    info = wheel_tags(Path(name))
    assert info["abi3"] is abi3 and info["pure"] is pure and info["version"] == "1.0"


def test_wheel_tags_rejects_bad_file_names() -> None:
    from packaging.utils import InvalidWheelFilename

    with pytest.raises(InvalidWheelFilename):
        wheel_tags(Path("not-a-wheel.zip"))
