"""The result document's status and summary: failures named, nothing passed by omission."""

from __future__ import annotations

from xcompat.operators.document import summarise


def _op(name: str, status: str, failing_case: str | None = None) -> dict:
    cases = [{"name": failing_case, "status": "failed"}] if failing_case else []
    return {"name": name, "status": status, "cases": cases, "checks": []}


def test_a_failure_is_named_with_its_device_and_case() -> None:
    ops = [_op("ns::a", "passed"), _op("ns::b", "passed"),
           _op("ns::scale", "failed", "non-contiguous, float16")]
    assert summarise(ops, "cpu") == (
        "failed", "project operators 3: 2 passed, 1 failed: ns::scale on cpu, non-contiguous, float16")


def test_operators_without_samples_are_not_passed_by_omission() -> None:
    status, text = summarise([_op("ns::a", "not_exercised")], "cuda")
    assert status == "not_run" and text == "project operators 1: 0 passed, 1 not exercised: no samples for ns::a"
    status, text = summarise([_op("ns::a", "passed"), _op("ns::b", "not_exercised")], "cpu")
    assert status == "passed" and text.endswith("1 passed, 1 not exercised")


def test_no_operators_is_not_run() -> None:
    assert summarise([], "cpu")[0] == "not_run"


def test_a_failed_check_without_a_failed_case_names_the_check() -> None:
    op = {"name": "ns::a", "status": "failed", "cases": [],
          "checks": [{"name": "opcheck", "status": "failed", "detail": "test_faketensor"}]}
    assert summarise([op], "cpu")[1].endswith("ns::a on cpu, opcheck")


def test_a_pass_on_inputs_guessed_from_the_schema_says_so() -> None:
    ops = [dict(_op("ns::a", "passed"), samples="schema"), dict(_op("ns::b", "passed"), samples="declared")]
    assert summarise(ops, "cpu") == ("passed", "project operators 2: 2 passed (1 on inputs from its schema only)")
