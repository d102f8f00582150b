"""A coverage result given to the gate is checked (kind, version, schema, finite numbers) and judged
again against the signed thresholds: its own "status": "passed" is a claim, not evidence."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from tests.helpers.report import coverage_result

from xcompat.coverage.result_check import check_coverage_document, matrix_thresholds, recheck_coverage
from xcompat.coverage.thresholds import Thresholds
from xcompat.errors import InputError
from xcompat.matrix.config import CoverageThresholds


def good(percent: float = 90.0) -> dict:
    return coverage_result(percent)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.update(kind="test"), "$.kind"),
    (lambda d: d.pop("kind"), "$.kind"),
    (lambda d: d.update(version="1"), "$.version"),
    (lambda d: d.update(version=True), "$.version"),
    (lambda d: d.update(version=2), "$.version"),
    (lambda d: d["totals"].update(percent=float("nan")), "$.totals.percent"),
    (lambda d: d["totals"].update(percent=float("inf")), "$.totals.percent"),
    (lambda d: d["totals"].update(percent=140), "schema"),
    (lambda d: d.update(status="passed", totals="all good"), "schema"),
], ids=["kind", "no-kind", "version-string", "version-bool", "version-2", "nan", "inf", "over-100", "totals-type"])
def test_a_document_that_is_not_a_merged_coverage_result_is_refused(mutate, message) -> None:
    document = copy.deepcopy(good())
    mutate(document)
    with pytest.raises(InputError) as info:
        check_coverage_document(document, source="coverage.json")
    assert message in str(info.value) and info.value.exit_code == 2


def test_status_only_json_is_refused() -> None:
    with pytest.raises(InputError, match=r"\$\.kind"):
        check_coverage_document({"status": "passed"}, source="c.json")


def test_the_signed_thresholds_are_applied_again_whatever_the_file_says() -> None:
    document = good(42.0)
    document["status"] = "passed"
    document["gate"] = []  # the file claims no threshold was set
    checks = recheck_coverage(document, source="c.json", thresholds=matrix_thresholds(CoverageThresholds(overall=80.0)))
    assert [(c.name, c.passed) for c in checks] == [("overall", False)]
    assert "42.00% < threshold 80%" in checks[0].reason


def test_a_passing_result_passes() -> None:
    checks = recheck_coverage(good(91.0), source="c.json", thresholds=Thresholds(overall=80.0, source="matrix"))
    assert all(c.passed for c in checks) and checks


def test_no_thresholds_in_the_matrix_means_no_checks() -> None:
    assert matrix_thresholds(CoverageThresholds()).source == "none"
    assert recheck_coverage(good(), source="c.json", thresholds=matrix_thresholds(CoverageThresholds())) == []


def test_an_envelope_without_measurements_fails_a_signed_threshold() -> None:
    document = {"version": 1, "kind": "coverage", "cell_id": None, "status": "passed", "summary": "trust me"}
    checks = recheck_coverage(document, source="c.json", thresholds=Thresholds(overall=80.0, source="matrix"))
    assert [(c.name, c.passed) for c in checks] == [("overall", False)]


def test_a_measured_percentage_of_the_wrong_type_is_refused() -> None:
    document = {**good(), "totals": {"percent": "100"}}
    with pytest.raises(InputError, match=r"\$\.totals\.percent"):
        recheck_coverage(document, source="c.json", thresholds=Thresholds(overall=80.0, source="matrix"))


# -- through the gate, with the sample's signed matrix (coverage: overall 60, diff 70) ----------

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample-ext" / ".xcompat"


@pytest.mark.skipif(not (SAMPLE / "matrix.yml.sig").is_file(), reason="the sample's signed matrix is absent")
@pytest.mark.parametrize(("document", "expect"), [
    ({**coverage_result(12.0), "status": "passed", "gate": []}, "overall 12.0% (threshold 60"),
    ({"status": "passed", "kind": "test", "version": 1}, "$.kind"),
    ({**coverage_result(90.0), "version": "1"}, "$.version"),
], ids=["claims-passed-at-12-percent", "wrong-kind", "string-version"])
def test_the_gate_judges_coverage_by_the_signed_thresholds(tmp_path: Path, document: dict, expect: str) -> None:
    import shutil

    import yaml
    from tests.helpers.action import checks_by_name, run_gate, write

    folder = tmp_path / ".xcompat"
    folder.mkdir()
    for name in ("matrix.yml", "matrix.yml.sig", "allowed_signers"):
        shutil.copy(SAMPLE / name, folder / name)
    repo = yaml.safe_load((folder / "matrix.yml").read_text())["repo"]
    write(tmp_path / "coverage.json", document)
    code, output, gate = run_gate(tmp_path, "--matrix", ".xcompat/matrix.yml", "--allowed-signers",
                                  ".xcompat/allowed_signers", "--coverage", "coverage.json", "--out", "gate.json",
                                  env={"GITHUB_REPOSITORY": repo})
    assert "Traceback" not in output
    if expect.startswith("$."):
        assert code == 2 and expect in output, output
    else:
        assert code == 1 and gate is not None, output
        coverage = checks_by_name(gate)["coverage"]
        assert coverage["passed"] is False and expect in coverage["reason"], coverage
