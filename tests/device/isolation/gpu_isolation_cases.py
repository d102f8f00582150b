"""Small GPU tests for the isolated runner, run by ``make device-check`` (not collected by
pytest on its own: the file name does not start with ``test_``). Two of them misbehave on
purpose; the device check asserts how the runner reports each one:

* ``test_pinned_to_one_gpu``: passes, in a worker pinned to one GPU;
* ``test_leaks_device_memory``: keeps 64 MiB of device memory per call: ``leaked``;
* ``test_device_side_assert``: an out-of-bounds index trips a device-side assert, which
  poisons the CUDA context of its process: ``crashed`` or ``failed``, contained;
* ``test_gpu_works_after_the_assert``: passes, the assert did not leak into it;
* ``test_backward_on_the_gpu``: passes: nothing the warm parent did before the fork (its
  torch warm-up included) initialised CUDA or autograd's device threads.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

_KEPT: list = []


def test_pinned_to_one_gpu() -> None:
    assert os.environ.get("CUDA_VISIBLE_DEVICES", "") != ""
    assert torch.cuda.device_count() == 1
    assert float(torch.ones(1024, device="cuda").sum()) == 1024.0


def test_leaks_device_memory() -> None:
    _KEPT.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))


def test_device_side_assert() -> None:
    x = torch.zeros(2, device="cuda")
    x[torch.tensor([5], device="cuda")] = 1.0
    torch.cuda.synchronize()


def test_gpu_works_after_the_assert() -> None:
    assert float(torch.arange(10, device="cuda").sum()) == 45.0


def test_backward_on_the_gpu() -> None:
    x = torch.ones(8, device="cuda", requires_grad=True)
    (x * 3).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [3.0] * 8
