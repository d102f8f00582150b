"""A shared library that carries its own C++ runtime is found from its ELF file, and a
compiler that produces such libraries is refused before a build starts (real g++ builds)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from xcompat.cxxruntime import carried_runtime, check_compiler
from xcompat.errors import ToolError

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared libraries: Linux only")

SOURCE = "#include <sstream>\n#include <string>\nstd::string f(long v) { std::ostringstream o; o << v; return o.str(); }\n"


def _gxx() -> str:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    return gxx


def _library(tmp_path: Path, *flags: str) -> Path:
    source = tmp_path / "lib.cpp"
    source.write_text(SOURCE)
    out = tmp_path / f"lib{len(list(tmp_path.glob('*.so')))}.so"
    proc = subprocess.run([_gxx(), "-shared", "-fPIC", *flags, "-o", str(out), str(source)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0 and "-static-libstdc++" in flags:
        pytest.skip(f"g++ cannot link libstdc++ statically here (no libstdc++.a): {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    return out


def test_a_library_linked_against_the_shared_runtime_passes(tmp_path):
    assert carried_runtime(_library(tmp_path)) is None


def test_a_statically_linked_runtime_is_found_by_its_symbols(tmp_path):
    finding = carried_runtime(_library(tmp_path, "-static-libstdc++"))
    assert finding is not None and "__cxa_throw" in finding and "statically" in finding


def test_a_stripped_static_runtime_is_found_by_what_the_library_does_not_need(tmp_path):
    library = _library(tmp_path, "-static-libstdc++", "-Wl,--exclude-libs,ALL", "-s")
    finding = carried_runtime(library)
    assert finding is not None
    assert "defines" in finding or "needs no shared C++ runtime" in finding


@pytest.mark.parametrize("content", [b"", b"\x7fELF", b"not an ELF file at all" * 10, b"\x7fELF\x02\x01\x01" + b"\xff" * 60])
def test_a_file_that_is_not_elf_is_reported_not_raised(tmp_path, content):
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(content)
    finding = carried_runtime(bogus)
    assert finding is not None and "cannot read bogus.so as ELF" in finding


def test_a_compiler_that_links_the_runtime_in_is_refused_with_its_name(tmp_path):
    gxx = _gxx()
    _library(tmp_path, "-static-libstdc++")  # skips where libstdc++.a is missing
    wrapper = tmp_path / "static-g++"
    wrapper.write_text(f'#!/bin/sh\nexec {gxx} -static-libstdc++ "$@"\n')
    wrapper.chmod(0o755)
    with pytest.raises(ToolError) as caught:
        check_compiler(str(wrapper), tmp_path / "probe", {"PATH": "/usr/bin:/bin"})
    assert "links the C++ runtime into shared libraries" in str(caught.value)
    assert str(wrapper) in caught.value.hint and "CXX" in caught.value.hint
    assert caught.value.exit_code == 4


def test_the_usual_compiler_passes_and_a_broken_one_is_left_to_the_build(tmp_path):
    check_compiler(_gxx(), tmp_path / "probe", {"PATH": "/usr/bin:/bin"})  # no exception
    check_compiler(str(tmp_path / "no-such-compiler"), tmp_path / "probe2", {})  # the build reports it
    check_compiler("false", tmp_path / "probe3", {"PATH": "/usr/bin:/bin"})
