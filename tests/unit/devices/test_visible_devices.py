"""One parser for *_VISIBLE_DEVICES, and NVML's order against CUDA's, with fake device lists
(the multi-GPU cases cannot be run on a machine with one GPU or none)."""

from __future__ import annotations

import pytest

from xcompat.devices import driver
from xcompat.devices.visible import parse_visible_list, visible_count, visible_nvml_devices
from xcompat.isolate import devices as slots


def _gpu(index: int, bus: str, name: str = "NVIDIA H100", cc: str = "9.0") -> dict:
    return {"index": index, "pci_bus_id": bus, "uuid": f"GPU-{index:08x}-aaaa", "name": name, "compute_capability": cc}


@pytest.mark.parametrize(("value", "expected"), [
    ("0,foo,1", ["0"]),
    ("", []),
    ("-1", []),
    ("2, 3", ["2", "3"]),
    ("GPU-0000abcd-aaaa,1", ["GPU-0000abcd-aaaa", "1"]),
    ("MIG-GPU-0000abcd/1/0", ["MIG-GPU-0000abcd/1/0"]),
])
def test_one_parser_stops_at_the_first_invalid_entry(value: str, expected: list[str]) -> None:
    assert parse_visible_list(value) == expected
    # the probes and the test runner's slots read the variable through the same parser
    assert driver.visible_device_filter({"CUDA_VISIBLE_DEVICES": value}, "CUDA_VISIBLE_DEVICES") == len(expected)
    assert slots.parse_visible_list is parse_visible_list


def test_unset_variable_is_no_limit_and_ordinals_past_the_end_stop_the_list() -> None:
    assert visible_count({}, "CUDA_VISIBLE_DEVICES") is None
    assert visible_count({"HIP_VISIBLE_DEVICES": "0,5,1"}, "HIP_VISIBLE_DEVICES", total=2) == 1
    assert visible_count({"HIP_VISIBLE_DEVICES": "1,1"}, "HIP_VISIBLE_DEVICES", total=2) == 1


def test_pci_bus_id_order_maps_cuda_indices_to_nvml_devices() -> None:
    gpus = [_gpu(0, "00000000:17:00.0", "NVIDIA A100", "8.0"), _gpu(1, "00000000:65:00.0")]
    shown = visible_nvml_devices(gpus, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1"})
    assert shown.certain and [d["index"] for d in shown.devices] == [1]


def test_fastest_first_with_mixed_models_is_flagged_uncertain() -> None:
    gpus = [_gpu(0, "00000000:17:00.0", "NVIDIA A100", "8.0"), _gpu(1, "00000000:65:00.0")]
    shown = visible_nvml_devices(gpus, {"CUDA_VISIBLE_DEVICES": "0"})
    assert not shown.certain and shown.order == "FASTEST_FIRST"
    assert shown.devices[0]["index"] == 1  # the likely CUDA device 0: the newer GPU
    assert any("CUDA_DEVICE_ORDER=PCI_BUS_ID" in n for n in shown.notes)


def test_identical_gpus_keep_pci_order_without_the_variable() -> None:
    gpus = [_gpu(1, "00000000:65:00.0"), _gpu(0, "00000000:17:00.0")]
    shown = visible_nvml_devices(gpus, {"CUDA_VISIBLE_DEVICES": "1,0"})
    assert shown.certain and [d["index"] for d in shown.devices] == [1, 0]


def test_uuid_entries_name_gpus_whatever_the_order() -> None:
    gpus = [_gpu(0, "00000000:17:00.0", "NVIDIA A100", "8.0"), _gpu(1, "00000000:65:00.0")]
    shown = visible_nvml_devices(gpus, {"CUDA_VISIBLE_DEVICES": "GPU-00000000"})
    assert shown.certain and [d["index"] for d in shown.devices] == [0] and not shown.notes
    # an ambiguous prefix stops the list, as CUDA does
    assert visible_nvml_devices(gpus, {"CUDA_VISIBLE_DEVICES": "GPU-0000000"}).devices == ()


def test_hidden_devices_and_repeats() -> None:
    gpus = [_gpu(0, "00000000:17:00.0"), _gpu(1, "00000000:65:00.0")]
    assert visible_nvml_devices(gpus, {"CUDA_VISIBLE_DEVICES": "-1"}).devices == ()
    assert len(visible_nvml_devices(gpus, {"CUDA_VISIBLE_DEVICES": "0,0,1"}).devices) == 1
    assert len(visible_nvml_devices(gpus, {}).devices) == 2


def test_runner_slots_pin_pci_order_only_for_their_own_indices() -> None:
    own = slots.plan_slots("cuda", 2, {})
    assert [dict(s.env) for s in own] == [{"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
                                          {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}]
    # indices from the outer job keep the order they were written in
    outer = slots.plan_slots("cuda", 2, {"CUDA_VISIBLE_DEVICES": "3,1"})
    assert [dict(s.env) for s in outer] == [{"CUDA_VISIBLE_DEVICES": "3"}, {"CUDA_VISIBLE_DEVICES": "1"}]
    chosen = slots.plan_slots("cuda", 2, {"CUDA_DEVICE_ORDER": "FASTEST_FIRST"})
    assert all("CUDA_DEVICE_ORDER" not in dict(s.env) for s in chosen)
