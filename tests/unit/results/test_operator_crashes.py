"""An operator that crashes the check: named from the error, set aside, the device checked again
without it; what the section then says (xcompat.results.kernel_operators)."""

from __future__ import annotations

from typing import Any

from xcompat.results.kernel_operators import (
    MAX_CRASHES,
    DeviceRun,
    build_section,
    check_device,
    crashed_operator,
    output_detail,
)


def _crash(op: str, case: str) -> DeviceRun:
    return DeviceRun(device="cpu", status="error", check="crashed", detail=(
        f"exit 4: the process checking the operators ended with signal 11 while checking {op} on cpu, {case} "
        "and no result; a kernel may have crashed"))


def _document(*ops: tuple[str, str]) -> dict[str, Any]:
    return {"operators": [{"name": name, "status": status, "samples": "declared", "checks": [], "cases": []}
                          for name, status in ops]}


def test_the_crash_line_is_the_detail_even_with_details_after_it() -> None:
    output = ("12:00:01 error: xcompat kernels operators: the process checking the operators ended with signal 11 "
              "while checking ns::op on cpu, float32, 0-dim (sample 1) and no result; a kernel may have crashed\n"
              "12:00:01   terminate called after throwing an instance of 'c10::Error'\n")
    detail = output_detail(4, output)
    assert detail.startswith("exit 4: xcompat kernels operators: the process checking")
    assert crashed_operator(DeviceRun(device="cpu", status="error", check="crashed", detail=detail)) == (
        "ns::op", "float32, 0-dim (sample 1)")
    assert output_detail(5, "error: device cuda is not available\n") == "exit 5: device cuda is not available"
    assert output_detail(None, "") == "exit None"


def test_only_a_crash_that_names_its_operator_is_set_aside() -> None:
    assert crashed_operator(DeviceRun(device="cpu", status="error", check="crashed", detail="timed out")) is None
    assert crashed_operator(DeviceRun(device="cpu", status="error", check="samples",
                                      detail="while checking ns::op on cpu, x and no result")) is None
    assert crashed_operator(DeviceRun(device="cpu", status="ran", document={})) is None


def test_each_crashing_operator_is_set_aside_and_the_rest_checked() -> None:
    asked: list[list[str]] = []
    results = [_crash("ns::a", "float32, 0-dim"), _crash("ns::b", "non-contiguous, float16"),
               DeviceRun(device="cpu", status="ran", document=_document(
                   ("ns::a", "not_exercised"), ("ns::b", "not_exercised"), ("ns::c", "passed")))]

    def attempt(skip: list[str], tries: int) -> DeviceRun:
        asked.append(list(skip))
        assert tries == len(skip)
        return results[tries]

    run = check_device("cpu", attempt)
    assert asked == [[], ["ns::a"], ["ns::a", "ns::b"]]
    assert run.status == "ran" and [c[:2] for c in run.crashes] == [
        ("ns::a", "float32, 0-dim"), ("ns::b", "non-contiguous, float16")]
    section = build_section([run], "gate", ".xcompat/operators.py")
    assert section["status"] == "failed"
    assert section["summary"] == ("project operators 3: 1 passed, 2 failed: ns::a on cpu, crashed, float32, 0-dim; "
                                  "ns::b on cpu, crashed, non-contiguous, float16")
    assert section["counts"]["not_exercised"] == 0 and section["counts"]["gating_findings"] == 2
    report = build_section([run], "report", None)
    assert report["status"] == "reported" and report["counts"]["gating_findings"] == 0


def test_it_gives_up_on_a_repeated_crash_and_after_the_most_crashes() -> None:
    # the same operator again (skipping it did not help): the device's own crash is the result
    run = check_device("cpu", lambda skip, tries: _crash("ns::a", "0-dim"))
    assert run.status == "error" and [c[0] for c in run.crashes] == ["ns::a"]
    section = build_section([run], "gate", None)
    assert [f["operator"] for f in section["findings"]] == ["ns::a", None]
    assert section["status"] == "failed"
    many = check_device("cpu", lambda skip, tries: _crash(f"ns::op{tries}", "0-dim"))
    assert len(many.crashes) == MAX_CRASHES and many.status == "error"
    # out of time: no new check starts
    late = check_device("cpu", lambda skip, tries: _crash(f"ns::op{tries}", "0-dim"), budget_s=-1)
    assert len(late.crashes) == 0 and late.status == "error"
