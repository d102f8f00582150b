"""The warm parent imports torch only for a suite that uses it."""

from __future__ import annotations

import os

import pytest
from tests.helpers.testing import LEAN_PYTEST, REPO, run_xcompat_test


def _suite(root, body: str):
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_s.py").write_text(body)
    return tests


def test_a_suite_without_torch_gets_a_parent_without_torch(tmp_path):
    tests = _suite(tmp_path, "import json\n\ndef test_s():\n    assert json.loads('[1]') == [1]\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--", *LEAN_PYTEST], json_out=tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert doc is not None and doc["warmup"]["torch"] is None and "torch" not in doc["warmup"]["preloaded"]


def test_a_suite_importing_torch_inside_a_test_gets_torch_warmed(tmp_path):
    pytest.importorskip("torch")
    tests = _suite(tmp_path, "def test_s():\n    import torch\n    assert torch.ones(2).sum().item() == 2\n"
                             "\n\ndef test_backward():\n    import torch\n"
                             "    x = torch.ones(3, requires_grad=True)\n    (x * 4).sum().backward()\n"
                             "    assert x.grad.tolist() == [4.0, 4.0, 4.0]\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--", *LEAN_PYTEST], json_out=tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert doc is not None and doc["warmup"]["torch"] and "torch" in doc["warmup"]["preloaded"]
    assert doc["counts"]["passed"] == 2
    # autograd is warmed in the parent only where torch has no accelerator to count (the
    # count would initialise CUDA before the fork): tests/device covers the CUDA side
    import torch

    assert doc["warmup"]["autograd"] is (not torch.backends.cuda.is_built() and not torch.version.hip)


def test_torch_imported_by_collection_is_warmed_before_the_first_fork(tmp_path):
    pytest.importorskip("torch")
    # the test file never names torch; the package it imports does
    (tmp_path / "uses_torch_inside.py").write_text("import torch\n\ndef total():\n    return torch.ones(3).sum().item()\n")
    tests = _suite(tmp_path, "import uses_torch_inside\n\ndef test_s():\n    assert uses_torch_inside.total() == 3\n")
    path = os.pathsep.join([str(REPO / "src"), str(tmp_path)])
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", env={"PYTHONPATH": path})
    assert proc.returncode == 0, proc.stderr
    assert doc is not None and doc["warmup"]["torch"] and doc["tests"][0]["outcome"] == "passed"
