"""Which suites get torch and numba warmed in the parent: a text scan of their files, nothing imported."""

from __future__ import annotations

import sys

import pytest

from xcompat.isolate.warmup import SCAN_MAX_FILES, scan_roots, suite_imports, suite_imports_torch


@pytest.mark.parametrize(("source", "uses"), [
    ("import torch\n", True),
    ("from torch.testing import assert_close\n", True),
    ("def test_lazy():\n    import torch.nn as nn\n", True),
    ("torch = pytest.importorskip('torch')\n", True),
    ("import torchvision_like_name\n", False),
    ("# import torch is only a comment here\nimport ujson\n", False),
    ("x = 'from torch import nothing'\n", False),
])
def test_a_suite_uses_torch_when_a_file_imports_it(tmp_path, source, uses):
    (tmp_path / "test_a.py").write_text(source)
    (tmp_path / "test_b.py").write_text("def test_b():\n    assert True\n")
    assert suite_imports_torch([tmp_path]) is uses


def test_helpers_and_conftests_count_and_skipped_folders_do_not(tmp_path):
    tests = tmp_path / "tests"
    (tests / "helpers").mkdir(parents=True)
    (tests / "test_a.py").write_text("from .helpers import tensors\n")
    (tests / "helpers" / "tensors.py").write_text("import torch\n")
    assert suite_imports_torch([tests])
    (tests / "helpers" / "tensors.py").write_text("import array\n")
    (tests / "__pycache__").mkdir()
    (tests / "__pycache__" / "cached.py").write_text("import torch\n")
    assert not suite_imports_torch([tests])
    (tmp_path / "conftest.py").write_text("import torch\n")
    roots = scan_roots([str(tests / "test_a.py") + "::test_x"], tmp_path)
    assert roots[0] == tests / "test_a.py" and tmp_path / "conftest.py" in roots
    assert suite_imports_torch(roots)


def test_an_importable_name_maps_to_its_package_folder_without_importing_it(tmp_path, monkeypatch):
    package = tmp_path / "site" / "widgetpkg_for_scan"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported by the scan')\n")
    (package / "tests" / "test_w.py").write_text("import torch\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    roots = scan_roots(["widgetpkg_for_scan.tests"], tmp_path)
    assert package in roots and "widgetpkg_for_scan" not in sys.modules
    assert suite_imports_torch(roots)


def test_a_suite_past_the_scan_bound_counts_as_using_torch(tmp_path, monkeypatch):
    monkeypatch.setattr("xcompat.isolate.warmup.SCAN_MAX_FILES", 3)
    for i in range(4):
        (tmp_path / f"test_{i}.py").write_text("def test():\n    pass\n")
    assert suite_imports_torch([tmp_path])
    assert SCAN_MAX_FILES >= 1000


def _torch_built_for(*, cuda=False, hip=None, mps=False, xpu=None):
    from types import SimpleNamespace

    fake = SimpleNamespace(
        backends=SimpleNamespace(cuda=SimpleNamespace(is_built=lambda: cuda), mps=SimpleNamespace(is_built=lambda: mps)),
        version=SimpleNamespace(hip=hip, cuda="13.0" if cuda else None),
    )
    if xpu is not None:
        fake.xpu = SimpleNamespace(_is_compiled=lambda: xpu)
    return fake


@pytest.mark.parametrize(("build", "safe"), [
    ({}, True),  # CPU-only: the engine finds no device to count
    ({"xpu": False}, True),
    ({"cuda": True}, False),  # cudaGetDeviceCount would initialise the driver before the fork
    ({"cuda": True, "hip": "6.4"}, False),  # ROCm builds report as CUDA builds too
    ({"hip": "6.4"}, False),
    ({"mps": True}, False),
    ({"xpu": True}, False),
])
def test_the_parent_warms_autograd_only_on_a_torch_without_accelerators(build, safe):
    from xcompat.isolate.warmup import autograd_warm_up_is_fork_safe

    assert autograd_warm_up_is_fork_safe(_torch_built_for(**build)) is safe


@pytest.mark.parametrize(("cuda_built", "expected_calls"), [(False, 1), (True, 0)])
def test_warm_parent_calls_backward_only_on_a_torch_without_accelerators(cuda_built, expected_calls):
    """The real warm-up, in a fresh interpreter, with torch's build flag set as a CUDA build's."""
    pytest.importorskip("torch")
    import subprocess
    import textwrap

    code = textwrap.dedent(f"""
        import torch
        calls = []
        original = torch.Tensor.backward
        torch.Tensor.backward = lambda self, *a, **k: (calls.append(1), original(self, *a, **k))[1]
        torch.backends.cuda.is_built = lambda: {cuda_built}
        from xcompat.isolate.warmup import warm_parent
        state = warm_parent()
        print(len(calls), state.autograd)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    calls, autograd = out.stdout.split()
    assert int(calls) == expected_calls and autograd == str(bool(expected_calls))


@pytest.mark.parametrize(("files", "found"), [
    ({"test_a.py": "import numba\n", "test_b.py": "import torch\n"}, {"numba", "torch"}),
    ({"test_a.py": "from numba import njit\n"}, {"numba"}),
    ({"test_a.py": "def test_lazy():\n    numba = pytest.importorskip('numba')\n"}, {"numba"}),
    ({"test_a.py": "import numba_like_name\nimport torchy\n"}, set()),
])
def test_the_scan_finds_numba_beside_torch(tmp_path, files, found):
    for name, source in files.items():
        (tmp_path / name).write_text(source)
    assert suite_imports([tmp_path]) == found
    assert suite_imports([tmp_path], ("numba",)) == found & {"numba"}
