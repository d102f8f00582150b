from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.kernels import FakeBackend, fake_registry

from xcompat.devices import FallbackChain, parse_order
from xcompat.devices import driver as drv
from xcompat.devices.torchinfo import parse_version_file
from xcompat.errors import UnavailableError, UsageError


def test_auto_takes_first_available_and_records_every_step() -> None:
    reg = fake_registry(cuda=False, rocm=True)
    res = FallbackChain(env={}, registry=reg).resolve("auto")
    assert res.used == "rocm"
    steps = [(s.backend, s.taken, s.available) for s in res.steps]
    assert steps == [("cuda", False, False), ("rocm", True, True), ("mps", False, False), ("cpu", False, False)]
    assert "not probed" in res.steps[2].reason
    assert reg["mps"].calls == 0 and reg["cpu"].calls == 0  # nothing probed after the choice
    assert not res.is_fallback


def test_required_cuda_lane_on_cpu_is_a_fallback() -> None:
    res = FallbackChain(env={}, registry=fake_registry()).resolve("auto", required=["cuda"])
    assert res.used == "cpu"
    assert res.missing_required == ("cuda",) and res.is_fallback
    doc = res.to_dict()
    assert doc["backend_used"] == "cpu" and doc["missing_required"] == ["cuda"]
    assert all(s["reason"] for s in doc["steps"])


def test_required_backend_satisfied() -> None:
    res = FallbackChain(env={}, registry=fake_registry(cuda=True)).resolve("auto", required=["cuda"])
    assert res.used == "cuda" and not res.is_fallback


def test_explicit_unavailable_backend_is_exit_5_with_reason() -> None:
    reg = fake_registry()
    reg["cuda"] = FakeBackend("cuda", False, "no CUDA driver: libcuda.so.1 not found")
    with pytest.raises(UnavailableError) as info:
        FallbackChain(env={}, registry=reg).resolve("cuda")
    assert info.value.exit_code == 5
    assert "libcuda.so.1" in info.value.message and "cuda" in info.value.message


def test_explicit_available_backend() -> None:
    res = FallbackChain(env={}, registry=fake_registry(mps=True)).resolve("mps")
    assert res.used == "mps" and len(res.steps) == 1 and res.steps[0].taken


def test_custom_order() -> None:
    res = FallbackChain(["mps", "cpu"], env={}, registry=fake_registry(cuda=True)).resolve("auto")
    assert res.used == "cpu" and [s.backend for s in res.steps] == ["mps", "cpu"]


def test_nothing_available_in_order() -> None:
    with pytest.raises(UnavailableError, match="no backend"):
        FallbackChain(["cuda"], env={}, registry=fake_registry()).resolve("auto")


@pytest.mark.parametrize("order", ["", "cuda,tpu", "cpu,cpu", " , "])
def test_bad_orders(order: str) -> None:
    with pytest.raises(UsageError):
        parse_order(order)


def test_bad_requested_and_required() -> None:
    chain = FallbackChain(env={}, registry=fake_registry())
    with pytest.raises(UsageError):
        chain.resolve("gpu")
    with pytest.raises(UsageError):
        chain.resolve("auto", required=["tpu"])


def test_visible_device_filter() -> None:
    assert drv.visible_device_filter({}, "CUDA_VISIBLE_DEVICES") is None
    assert drv.visible_device_filter({"CUDA_VISIBLE_DEVICES": ""}, "CUDA_VISIBLE_DEVICES") == 0
    assert drv.visible_device_filter({"CUDA_VISIBLE_DEVICES": "0,1"}, "CUDA_VISIBLE_DEVICES") == 2
    assert drv.visible_device_filter({"CUDA_VISIBLE_DEVICES": "1,-1,0"}, "CUDA_VISIBLE_DEVICES") == 1


def test_format_cuda_version() -> None:
    assert drv.format_cuda_version(12080) == "12.8"
    assert drv.format_cuda_version(13000) == "13.0"
    assert drv.format_cuda_version(11040) == "11.4"


def test_cuda_driver_absent_here_is_reported_not_raised() -> None:
    version, reason = drv.cuda_driver_version()
    if version is None:
        assert "libcuda" in reason or "cuDriverGetVersion" in reason
    else:  # a machine with a driver
        assert version.count(".") == 1


def test_parse_torch_version_file() -> None:
    text = "from typing import Optional\n__version__ = '2.5.1+cu124'\ncuda: Optional[str] = '12.4'\nhip = None\n"
    values = parse_version_file(text)
    assert values["__version__"] == "2.5.1+cu124" and values["cuda"] == "12.4" and values["hip"] is None


def test_parse_torch_version_file_malformed() -> None:
    with pytest.raises(SyntaxError):
        parse_version_file("cuda = (")
    assert parse_version_file("x = 1\ncuda = some_call()\n") == {}


def test_kfd_topology(tmp_path: Path) -> None:
    root = tmp_path / "nodes"
    for i, (target, name) in enumerate([(0, ""), (90010, "gfx90a"), (110000, "gfx1100"), (90402, "gfx942")]):
        node = root / str(i)
        node.mkdir(parents=True)
        (node / "properties").write_text(f"cpu_cores_count 0\ngfx_target_version {target}\n")
        (node / "name").write_text(name + "\n")
    (root / "9").mkdir()  # a node without properties is ignored
    gpus = drv.kfd_gpus(root)
    assert [g["arch"] for g in gpus] == ["gfx90a", "gfx1100", "gfx942"]
    assert drv.kfd_gpus(tmp_path / "absent") == []
