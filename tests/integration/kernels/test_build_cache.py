"""The JIT build cache: keyed by toolchain, flags, torch and sources; warm loads skip the compiler."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.kernels import KERNELS, kernel_cache, subprocess_env

from xcompat.kernels import build


def test_build_lives_in_the_xcompat_cache_with_a_manifest(kernels_lib: Any) -> None:
    import torch

    assert kernels_lib.build_dir.parent == kernel_cache() / "kernels"
    assert kernels_lib.build_dir.name == kernels_lib.key.digest()
    manifest = json.loads((kernels_lib.build_dir / "manifest.json").read_text())
    assert manifest["library"] == kernels_lib.library.name
    assert manifest["key"]["torch"] == torch.__version__
    # nothing (no precompiled header) is written into torch's own folders
    torch_dir = Path(torch.__file__).parent
    assert not list((torch_dir / "include" / "torch").glob("*.gch"))
    assert torch_dir not in kernels_lib.library.parents


def test_warm_load_in_a_new_process_skips_the_compiler(kernels_lib: Any) -> None:
    objects = sorted(kernels_lib.build_dir.glob("*.o"))
    before = {p: p.stat().st_mtime_ns for p in objects}
    code = ("import json, time, torch; from xcompat.kernels.build import load_kernels, kernel_ops;"
            "r = load_kernels(); print(json.dumps({'cached': r.cached, 'seconds': r.seconds,"
            "'lib': str(r.library), 'isa': kernel_ops().isa_info()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(),
                         check=True, timeout=120)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["cached"] is True and info["lib"] == str(kernels_lib.library)
    assert {p: p.stat().st_mtime_ns for p in objects} == before
    print(f"warm load in a new process: {info['seconds'] * 1000:.1f} ms")


def test_key_changes_with_compiler_flags_and_sources(kernels_lib: Any, tmp_path: Path, monkeypatch: Any) -> None:
    base = build.build_key()
    assert base.digest() == kernels_lib.key.digest()
    assert build.build_key(env={"CXX": "g++"}).compiler != base.compiler or shutil.which("g++") is None
    monkeypatch.setattr(build, "CFLAGS", ("-O2",))
    assert build.build_key().digest() != base.digest()
    copy = tmp_path / "kernels"
    shutil.copytree(KERNELS, copy)
    assert build.sources_digest(copy) == build.sources_digest(KERNELS)
    (copy / "cpu" / "xk_cpu_scalar.cpp").write_text("// changed\n", encoding="utf-8")
    assert build.sources_digest(copy) != build.sources_digest(KERNELS)


def test_missing_compiler_is_reported(kernels_lib: Any) -> None:
    from xcompat.errors import UnavailableError

    try:
        build.build_key(env={"CXX": "/nonexistent/c++"})
    except UnavailableError as exc:
        assert "no C++ compiler" in exc.message and exc.exit_code == 5
    else:
        raise AssertionError("a missing compiler must raise")


def test_a_failing_build_raises_tool_error_with_the_log(tmp_path: Path, monkeypatch: Any) -> None:
    """A broken source gives exit 4 and the compiler's message, in a cache folder of its own."""
    from xcompat.errors import ToolError

    broken = tmp_path / "kernels"
    shutil.copytree(KERNELS, broken)
    (broken / "torch" / "xk_ops.cpp").write_text("#error deliberately broken\n", encoding="utf-8")
    monkeypatch.setattr(build, "data_dir", lambda name: broken)
    monkeypatch.setattr(build, "CPU_SOURCES", ("torch/xk_ops.cpp",))  # fail fast: one file
    key = build.build_key(with_device=False)
    try:
        build._build(key, tmp_path / "cache" / key.digest(), verbose=False, env={})
    except ToolError as exc:
        assert exc.exit_code == 4 and any("deliberately broken" in d or "Error" in d for d in exc.details)
    else:
        raise AssertionError("a broken source must fail the build")
