"""Device slots honour the outer *_VISIBLE_DEVICES; the leak verdict is a rule on numbers."""

from __future__ import annotations

import pytest

from xcompat.errors import UsageError
from xcompat.isolate.devices import cpu_slots, parse_visible_list, plan_slots
from xcompat.isolate.leaks import LeakPolicy, classify_growth, from_marker, measure_leaks
from xcompat.isolate.session import choose_start_method, resolve_slots


def _envs(slots):
    return [dict(s.env) for s in slots]


def test_cuda_slots_follow_the_outer_list() -> None:
    slots = plan_slots("cuda", 2, {"CUDA_VISIBLE_DEVICES": "2,3"})
    assert [s.label for s in slots] == ["cuda:2", "cuda:3"]
    assert _envs(slots) == [{"CUDA_VISIBLE_DEVICES": "2"}, {"CUDA_VISIBLE_DEVICES": "3"}]


def test_cuda_slots_without_outer_list_and_with_uuids() -> None:
    assert [s.label for s in plan_slots("cuda", 3, {})] == ["cuda:0", "cuda:1", "cuda:2"]
    uuid = "GPU-5f2c1a7e-0b7d-4c1e-9d7f-2a3b4c5d6e7f"
    slots = plan_slots("cuda", 1, {"CUDA_VISIBLE_DEVICES": f"{uuid},1"})
    assert _envs(slots) == [{"CUDA_VISIBLE_DEVICES": uuid}]


def test_cuda_visible_list_stops_at_first_invalid_entry() -> None:
    assert parse_visible_list("1,-1,2") == ["1"]
    assert parse_visible_list("") == []
    assert parse_visible_list(" 0 , 3 ") == ["0", "3"]
    # All hidden: one CPU slot, never a device the job was not given.
    assert [s.label for s in plan_slots("cuda", 0, {"CUDA_VISIBLE_DEVICES": "-1"})] == ["cpu"]


def test_rocm_slots_index_into_the_rocr_list() -> None:
    slots = plan_slots("rocm", 2, {"ROCR_VISIBLE_DEVICES": "4,6"})
    assert _envs(slots) == [{"HIP_VISIBLE_DEVICES": "0"}, {"HIP_VISIBLE_DEVICES": "1"}]
    assert [s.label for s in slots] == ["rocm:4", "rocm:6"]
    # An outer HIP list is narrowed entry by entry, ROCR stays as the job set it.
    slots = plan_slots("rocm", 2, {"ROCR_VISIBLE_DEVICES": "4,5,6", "HIP_VISIBLE_DEVICES": "0,2"})
    assert _envs(slots) == [{"HIP_VISIBLE_DEVICES": "0"}, {"HIP_VISIBLE_DEVICES": "2"}]
    assert [s.label for s in slots] == ["rocm:4", "rocm:6"]
    # HIP also honours CUDA_VISIBLE_DEVICES; then that is the variable to narrow.
    assert _envs(plan_slots("rocm", 1, {"CUDA_VISIBLE_DEVICES": "3"})) == [{"CUDA_VISIBLE_DEVICES": "3"}]


def test_slot_limit_cpu_and_bad_backend() -> None:
    assert len(plan_slots("cuda", 4, {}, limit=2)) == 2
    assert [s.label for s in plan_slots("mps", 1, {})] == ["mps"]
    assert [s.label for s in cpu_slots(3)] == ["cpu", "cpu", "cpu"]
    with pytest.raises(UsageError):
        plan_slots("tpu", 1, {})


def test_devices_option() -> None:
    assert [s.label for s in resolve_slots("2", {})] == ["cpu", "cpu"]
    assert [s.label for s in resolve_slots("auto", {})] == ["cpu"]
    for bad in ("0", "two"):
        with pytest.raises(UsageError):
            resolve_slots(bad, {})


def test_start_method_choice() -> None:
    assert choose_start_method("auto", "linux") == "fork"
    assert choose_start_method("auto", "darwin") == "spawn"
    assert choose_start_method("spawn", "linux") == "spawn"


@pytest.mark.parametrize(
    ("samples", "leaked"),
    [
        ([100, 200, 300, 400, 500], True),  # grows every call
        ([100, 100, 100, 100, 100], False),
        ([100, 500, 500, 500, 500], False),  # one-off cache fill after warm-up
        ([100, 300, 300, 500, 500], False),  # half the calls: allocator noise
        ([100, 120, 140, 160, 180], False),  # grows, but under the threshold
        ([500, 400, 300, 200, 100], False),
    ],
)
def test_growth_classification(samples: list[int], leaked: bool) -> None:
    growth, verdict = classify_growth(samples, threshold=300, min_growing_fraction=0.75)
    assert verdict is leaked
    assert growth == samples[-1] - samples[0]


def test_measure_leaks_sees_python_heap_growth() -> None:
    kept: list[bytes] = []
    policy = LeakPolicy(repeats=4, warmups=1, host_threshold_bytes=1 << 20)
    (report,) = measure_leaks(lambda: kept.append(b"x" * (512 * 1024)), ["host"], policy)
    assert report.leaked and report.where == "python" and report.python_bytes >= 4 * 500 * 1024
    assert len(kept) == 5
    (clean,) = measure_leaks(lambda: bytes(512 * 1024), ["host"], policy)
    assert not clean.leaked


def test_device_leak_check_never_initialises_a_device() -> None:
    torch = pytest.importorskip("torch")
    policy = LeakPolicy(repeats=2, warmups=1)
    # The call uses CPU tensors only: there is no device figure to report, and asking for
    # one must not initialise CUDA (that would break every later fork).
    assert measure_leaks(lambda: torch.ones(4) + 1, ["device"], policy) == []
    assert not torch.cuda.is_initialized()


def test_check_leaks_marker_arguments() -> None:
    base = LeakPolicy()
    assert from_marker(pytest.mark.check_leaks.mark, (), base) == (("host",), base)
    kinds, policy = from_marker(
        pytest.mark.check_leaks("host,device", repeats=9, threshold=4096).mark, ("host",), base
    )
    assert kinds == ("host", "device") and policy.repeats == 9 and policy.host_threshold_bytes == 4096
    for bad in (pytest.mark.check_leaks("disk").mark, pytest.mark.check_leaks(repeat=3).mark):
        with pytest.raises(ValueError, match="check_leaks: expected kinds"):
            from_marker(bad, (), base)
