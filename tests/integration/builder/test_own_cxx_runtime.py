"""A wheel whose torch extension carries its own C++ runtime fails its build cell (real g++
builds against the installed torch, a real wheel, the build record's schema)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from tests.helpers import abi as h

from xcompat.builder.audit import own_cxx_runtime
from xcompat.builder.record import build_document
from xcompat.jsonio import validate

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("g++") is None,
                                reason="needs Linux and g++")
SOURCE = h.TORCH_EXT + "\n#include <string>\nstd::string xk_count(long v) { return std::to_string(v); }\n"


def _extension(tmp_path: Path, name: str, *flags: str) -> Path:
    lib = Path(torch.__file__).parent / "lib"
    source = tmp_path / f"{name}.cpp"
    source.write_text(SOURCE)
    out = tmp_path / f"{name}.cpython-311-x86_64-linux-gnu.so"
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                           *flags, "-o", str(out), str(source), f"-L{lib}", "-Wl,--no-as-needed", "-ltorch_cpu",
                           "-lc10"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 and "-static-libstdc++" in flags:
        pytest.skip(f"g++ cannot link libstdc++ statically here: {proc.stderr.strip()[-200:]}")
    assert proc.returncode == 0, proc.stderr
    return out


def _wheel(tmp_path: Path, version: str, ext: Path) -> Path:
    return h.make_wheel(tmp_path / version, name="demo", version=version, tag="cp311-cp311-linux_x86_64",
                        files={f"demo/{ext.name}": ext, "demo/__init__.py": ""}, requires_dist=("torch>=2.1",))


def _entry(wheel: Path, cell: str) -> dict:
    return {"file": wheel.name, "sha256": "0" * 64, "size": wheel.stat().st_size, "name": "demo", "version": "1",
            "tags": ["cp311-cp311-linux_x86_64"], "pure": False, "cell_id": cell, "backend": "native",
            "repair": "none", "platform_policy": None, "external_libs": [], "excluded_libs": [], "abi3": None,
            "gpu_code": {}, "absolute_search_paths": {}, "own_cxx_runtime": own_cxx_runtime(wheel),
            "build_seconds": 1.0, "repair_seconds": 0.0, "audit_seconds": 0.1, "log": "build.log"}


def test_the_cell_of_a_wheel_with_its_own_cxx_runtime_fails_and_says_why(tmp_path):
    good = _wheel(tmp_path, "1.0.0", _extension(tmp_path, "_good"))
    bad = _wheel(tmp_path, "1.0.1", _extension(tmp_path, "_bad", "-static-libstdc++"))
    assert own_cxx_runtime(good) == {}
    (member, finding), = own_cxx_runtime(bad).items()
    assert member.endswith("_bad.cpython-311-x86_64-linux-gnu.so") and "__cxa_throw" in finding
    cells = [{"id": "cp311-linux-cpu", "status": "passed", "reason": "", "wheels": [good.name]},
             {"id": "cp311-linux-cuda", "status": "passed", "reason": "", "wheels": [bad.name]}]
    doc = build_document(project=Path("p"), backend="native", wheels=[_entry(good, cells[0]["id"]),
                                                                      _entry(bad, cells[1]["id"])],
                         cells=cells, seconds=1.0)
    validate("build", doc)
    assert doc["status"] == "failed"
    ok, broken = doc["cells"]
    assert ok["status"] == "passed"
    assert broken["status"] == "failed" and "own C++ runtime" in broken["reason"] and bad.name in broken["reason"]
    assert f"own C++ runtime beside torch's in {bad.name}" in doc["summary"]
