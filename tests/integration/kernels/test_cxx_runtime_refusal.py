"""load_kernels refuses a compiler, or a cached library, that would put a second C++ runtime
into the process (it would load, then die with SIGSEGV on its first formatted error)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.helpers.kernels import subprocess_env

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("g++") is None,
                                reason="needs Linux and g++")


def _static_gxx(tmp_path: Path) -> Path:
    gxx = shutil.which("g++")
    probe = subprocess.run([gxx, "-static-libstdc++", "-shared", "-fPIC", "-x", "c++", "-o", str(tmp_path / "p.so"),
                            "-"], input="int f() { return 1; }\n", capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"g++ cannot link libstdc++ statically here (no libstdc++.a): {probe.stderr.strip()[-200:]}")
    wrapper = tmp_path / "static-g++"
    wrapper.write_text(f'#!/bin/sh\nexec {gxx} -static-libstdc++ "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def _load(cache: Path, cxx: str, before: str = "") -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""
        import json, pathlib, sys
        from xcompat.errors import XcompatError
        from xcompat.kernels import build
        {before}
        try:
            build.load_kernels(cache_dir=pathlib.Path({str(cache)!r}), with_device=False)
        except XcompatError as exc:
            print(json.dumps({{"exit": exc.exit_code, "message": str(exc), "hint": exc.hint}}))
            sys.exit(exc.exit_code)
        print(json.dumps({{"loaded": True}}))
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env=subprocess_env(CXX=cxx), check=False)


def test_a_compiler_linking_the_runtime_in_is_refused_before_the_build(tmp_path):
    wrapper = _static_gxx(tmp_path)
    cache = tmp_path / "cache"
    proc = _load(cache, str(wrapper))
    assert proc.returncode == 4, proc.stderr[-2000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "links the C++ runtime into shared libraries" in doc["message"]
    assert str(wrapper) in doc["hint"]
    # refused before torch's build ran: no objects, no library, no manifest
    assert not list(cache.rglob("*.o")) and not list(cache.rglob("manifest.json"))


def _legacy_entry(cache: Path, compiler: str) -> str:
    """Code for _load's ``before``: a cache entry as an older xcompat left it, a manifest valid
    for this machine's key (without the C++-runtime record) naming a small library that
    ``compiler`` built."""
    return textwrap.dedent(f"""
        import json, os, subprocess
        from dataclasses import asdict
        key = build.build_key(with_device=False)
        folder = os.path.join({str(cache)!r}, key.digest())
        os.makedirs(folder)
        library = os.path.join(folder, "xcompat_kernels_old.so")
        subprocess.run([{compiler!r}, "-shared", "-fPIC", "-x", "c++", "-o", library, "-"],
                       input="#include <string>\\nstd::string g() {{ return std::to_string(7); }}\\n",
                       text=True, check=True)
        with open(os.path.join(folder, "manifest.json"), "w") as fh:
            json.dump({{"version": 1, "library": "xcompat_kernels_old.so", "key": asdict(key)}}, fh)
    """).replace("\n", "\n        ")


def test_a_cached_library_carrying_its_own_runtime_is_never_loaded(tmp_path):
    wrapper = _static_gxx(tmp_path)
    cache = tmp_path / "cache"
    proc = _load(cache, "g++", before=_legacy_entry(cache, str(wrapper)))  # libstdc++ linked in
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "cached kernel library" in doc["message"] and "xcompat_kernels_old.so" in doc["message"]


def test_a_legacy_cache_entry_is_read_once_then_trusted(tmp_path):
    cache = tmp_path / "cache"
    proc = _load(cache, "g++", before=_legacy_entry(cache, "g++"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (manifest,) = cache.rglob("manifest.json")
    doc = json.loads(manifest.read_text())
    assert doc["cxx_runtime"] == "shared" and doc["library"] == "xcompat_kernels_old.so"
