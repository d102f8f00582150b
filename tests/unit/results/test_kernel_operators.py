"""The kernels result's operators section: findings, what gates under tests.operators, the summary,
and how the verdict reads it back. Each operators document here is checked against its schema first."""

from __future__ import annotations

import pytest
from tests.helpers.kernel_results import CLEAN, FLAKY, STRIDES, UNSAMPLED, check, kernels_doc, op, ran

from xcompat.errors import InputError
from xcompat.results.envelope import parse_envelope
from xcompat.results.kernel_operators import (
    DeviceRun,
    build_section,
    kernels_tested_text,
    not_run_section,
    read_section,
)


def test_a_wrong_result_on_a_derived_case_gates_and_is_named_with_its_case() -> None:
    section = build_section([ran("cpu", CLEAN, STRIDES, UNSAMPLED)], "gate", ".xcompat/operators.py")
    assert section["status"] == "failed"
    assert section["summary"] == ("project operators 3: 1 passed, 1 failed, 1 not exercised (ns::unsampled): "
                                  "ns::scale on cpu, non-contiguous, float16")
    (finding,) = section["findings"]
    assert finding["gating"] and finding["check"] == "result" and finding["max_error"] == 3.5
    assert section["counts"]["gating_findings"] == 1 and section["counts"]["not_exercised"] == 1


def test_clean_operators_pass_and_unexercised_ones_are_never_counted_as_passed() -> None:
    section = build_section([ran("cpu", CLEAN)], "gate", None)
    assert section["status"] == "passed" and section["summary"] == "project operators 1: 1 passed"
    assert section["findings"] == []
    only_unsampled = build_section([ran("cpu", UNSAMPLED)], "gate", None)
    assert only_unsampled["status"] == "not_run" and only_unsampled["counts"]["passed"] == 0
    assert "0 passed, 1 not exercised (ns::unsampled)" in only_unsampled["summary"]


def test_determinism_is_reported_not_gating_under_gate() -> None:
    section = build_section([ran("cpu", CLEAN, FLAKY)], "gate", None)
    assert section["status"] == "reported" and not section["findings"][0]["gating"]
    assert section["summary"] == ("project operators 2: 1 passed, 1 with findings that do not gate; "
                                  "reported, not gating: ns::noisy on cpu, determinism, float32")


def test_report_gates_nothing_but_still_shows_the_finding() -> None:
    section = build_section([ran("cpu", STRIDES)], "report", None)
    assert section["status"] == "reported" and not any(f["gating"] for f in section["findings"])
    assert "ns::scale on cpu, non-contiguous, float16" in section["summary"]
    assert section["counts"]["passed"] == 0 and section["counts"]["reported"] == 1


def test_each_device_is_named_and_a_device_that_cannot_run_is_said() -> None:
    bad_on_cuda = op("ns::scale", "failed", checks=[check("mixed_device", "failed", "input 2 on cpu: accepted")])
    section = build_section([ran("cpu", CLEAN), ran("cuda", bad_on_cuda),
                             DeviceRun(device="mps", status="not_run", detail="exit 5: no mps")], "gate", None)
    assert section["status"] == "failed"
    assert "ns::scale on cuda, mixed devices" in section["summary"]
    assert section["summary"].endswith("not run on mps (exit 5: no mps)")
    assert [d["device"] for d in section["devices"]] == ["cpu", "cuda", "mps"]


def test_a_crash_or_a_broken_samples_file_gates_under_gate_only() -> None:
    runs = [DeviceRun(device="cpu", status="error", check="crashed",
                      detail="exit 4: the process ended with signal 11 while checking ns::scale on cpu, transposed")]
    section = build_section(runs, "gate", None)
    assert section["status"] == "failed" and section["findings"][0]["gating"]
    assert section["summary"].startswith("project operators not checked: on cpu: crashed: exit 4")
    assert build_section(runs, "report", None)["status"] == "reported"
    samples = build_section([DeviceRun(device="cpu", status="error", check="samples", detail="exit 2: bad")],
                            "gate", None)
    assert samples["findings"][0]["check"] == "samples" and samples["status"] == "failed"


def test_not_run_when_the_build_failed_is_a_gating_finding_not_a_pass() -> None:
    section = not_run_section("no wheel to check (the project's build failed)", "gate", counts_against=True)
    assert section["status"] == "not_run" and section["findings"][0]["gating"]
    assert section["summary"] == "project operators not run: no wheel to check (the project's build failed)"
    reported = not_run_section("no wheel", "report", counts_against=True)
    assert not reported["findings"][0]["gating"]
    unrelated = not_run_section("the build stage did not run", "gate", counts_against=False)
    assert unrelated["findings"] == []


def test_a_result_claiming_passed_with_a_gating_finding_is_read_as_failed() -> None:
    gating = build_section([ran("cpu", STRIDES)], "gate", None)
    result = parse_envelope(kernels_doc("passed", gating), "kernels.json")
    assert result.status == "failed" and "its kernels say failed" in result.summary
    reported = build_section([ran("cpu", STRIDES)], "report", None)
    assert parse_envelope(kernels_doc("passed", reported), "kernels.json").status == "passed"


def test_what_the_stage_tested_keeps_the_runner_and_the_project_apart() -> None:
    section = build_section([ran("cpu", CLEAN, STRIDES)], "gate", None)
    result = parse_envelope(kernels_doc("failed", section), "kernels.json")
    assert kernels_tested_text(result) == ("runner kernels 5/5; project operators 2: 1 passed, 1 failed: "
                                   "ns::scale on cpu, non-contiguous, float16")
    old = parse_envelope(kernels_doc("passed", None), "kernels.json")
    assert kernels_tested_text(old) == "runner kernels 5/5; project operators not checked"
    skipped = {"version": 1, "kind": "kernels", "cell_id": "c1", "status": "skipped", "summary": "not required"}
    assert kernels_tested_text(parse_envelope(skipped, "stages/kernels.json")) == ""
    read = read_section(result)
    assert read is not None and [f.operator for f in read.gating] == ["ns::scale"]


def test_a_finding_of_the_wrong_type_is_refused_with_its_path() -> None:
    section = build_section([ran("cpu", STRIDES)], "gate", None)
    doc = kernels_doc("failed", section)
    doc["operators"]["findings"][0]["gating"] = "yes"
    with pytest.raises(InputError, match=r"\$\.operators\.findings\[0\]\.gating: expected true or false"):
        parse_envelope(doc, "kernels.json")
