"""``--deep valgrind`` on a real native leak (no torch: valgrind on ``import torch`` takes ~90 s),
and ``--deep compute-sanitizer`` where the tool exists."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.helpers.testing import LEAN_PYTEST, by_name, run_xcompat_test

from xcompat.isolate.compute_sanitizer import find_compute_sanitizer
from xcompat.jsonio import validate

NATIVE_SUITE = """
import ctypes

_LIBC = ctypes.CDLL(None)
_LIBC.malloc.restype = ctypes.c_void_p
_LIBC.malloc.argtypes = [ctypes.c_size_t]
_LIBC.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
# Leaked at import time: part of the baseline, must not be blamed on a test.
_IMPORT_LEAK = _LIBC.malloc(777)
_IMPORT_LEAK = None


def test_leaks_4096_bytes():
    pointer = _LIBC.malloc(4096)
    _LIBC.memset(pointer, 0, 4096)


def test_clean():
    buffer = ctypes.create_string_buffer(100)
    assert len(buffer) == 100
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_valgrind_reports_only_what_a_test_adds(tmp_path: Path) -> None:
    (tmp_path / "test_native.py").write_text(NATIVE_SUITE)
    proc, doc = run_xcompat_test(
        tmp_path,
        ["test_native.py", "--no-warm-torch", "--isolate", "none", "--deep", "valgrind", "--", *LEAN_PYTEST],
        json_out=tmp_path / "r.json",
        env={"XDG_CACHE_HOME": os.environ.get("XCOMPAT_TEST_CACHE", str(Path.home() / ".cache"))},
        timeout=600,
    )
    assert doc is not None, proc.stderr[-3000:]
    validate("test-result", doc)
    tests = by_name(doc)
    assert tests["test_clean"]["outcome"] == "passed" and tests["test_clean"]["findings"] == []
    leak = tests["test_leaks_4096_bytes"]
    assert leak["outcome"] == "leaked" and proc.returncode == 1
    (finding,) = leak["findings"]
    assert finding["tool"] == "valgrind" and finding["category"] == "leak"
    assert finding["kind"] == "Leak_DefinitelyLost" and finding["bytes"] == 4096
    assert finding["frames"][0].startswith("malloc")
    # The 777-byte import-time leak is baseline: reported nowhere.
    assert [f["bytes"] for f in doc["findings"]] == [4096]


def test_compute_sanitizer_live_run(tmp_path: Path) -> None:
    if find_compute_sanitizer(os.environ) is None:
        pytest.skip(
            "compute-sanitizer is not installed here (pip install nvidia-cuda-sanitizer-api on a GPU runner)"
        )
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("compute-sanitizer needs a CUDA device; none is visible")
    (tmp_path / "test_gpu.py").write_text(
        "import torch\n\ndef test_gpu_add():\n    x = torch.ones(8, device='cuda')\n    assert (x + x).sum().item() == 16\n"
    )
    proc, doc = run_xcompat_test(
        tmp_path,
        ["test_gpu.py", "--deep", "compute-sanitizer", "--", *LEAN_PYTEST],
        json_out=tmp_path / "r.json",
    )
    assert doc is not None, proc.stderr[-3000:]
    assert by_name(doc)["test_gpu_add"]["outcome"] == "passed", doc
