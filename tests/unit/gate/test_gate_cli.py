"""``xcompat gate`` end to end: real git tags, real result files, the real CLI through `cli.main`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.action import Repo, checks_by_name, envelope, gate_in_process, plan_document, write

CELLS = ("py3.12-linux-x86_64-cpu", "py3.12-linux-x86_64-cuda12.8", "py3.13-macos-arm64-mps")


@pytest.fixture
def release(repo: Repo) -> Repo:
    """v1.0.0 released, one commit later v1.1.0 being released; a plan with two required and one optional cell."""
    repo.commit()
    repo.tag("v1.0.0")
    repo.commit()
    repo.tag("v1.1.0")
    write(repo.path / "plan.json", plan_document((CELLS[0], True), (CELLS[1], True), (CELLS[2], False)))
    for cid in CELLS[:2]:
        write(repo.path / "results" / cid / "build.json", envelope("build", cid, "passed"))
        write(repo.path / "results" / cid / "test.json", envelope("test", cid, "passed", "12 passed"))
    write(repo.path / "abi.json", {"version": 1, "kind": "abi", "cell_id": None, "status": "passed",
                                   "summary": "2 symbols added", "required_bump": "minor",
                                   "findings": [{"kind": "symbol_added", "required_bump": "minor"}] * 2})
    write(repo.path / "coverage.json", envelope("coverage", None, "passed", "overall 84.0% >= 80%",
                                                thresholds={"overall": 80.0}))
    return repo


# These plans are hand-written, not made from a verified matrix: judging them needs the
# documented insecure flag (without it the gate refuses with exit 3, see test_gate_matrix.py).
INSECURE = "--insecure-no-verify"
FULL = ("--plan", "plan.json", "--results", "results", "--abi", "abi.json", "--coverage", "coverage.json",
        "--tag", "v1.1.0", INSECURE)


def test_allowed_when_everything_holds(release: Repo) -> None:
    rc, out, doc = gate_in_process(release.path, *FULL)
    assert rc == 0, out
    assert doc is not None and doc["allowed"] is True and doc["status"] == "passed"
    checks = checks_by_name(doc)
    assert set(checks) == {f"cell:{CELLS[0]}", f"cell:{CELLS[1]}", "version-bump", "coverage"}
    assert checks["version-bump"]["reason"].startswith("got a minor bump (v1.0.0 -> v1.1.0), expected at least minor")
    assert doc["release"] == {"tag": "v1.1.0", "version": "1.1.0", "previous_tag": "v1.0.0",
                              "previous_version": "1.0.0", "bump": "minor",
                              "found_by": "git tag --merged refs/tags/v1.1.0"}
    optional = next(c for c in doc["cells"] if c["id"] == CELLS[2])
    assert optional == {"id": CELLS[2], "required": False, "status": "missing", "kinds": []}
    assert "release allowed" in out


def test_missing_required_cell_is_refused(release: Repo) -> None:
    for path in (release.path / "results" / CELLS[1]).iterdir():
        path.unlink()
    rc, out, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    check = checks_by_name(doc)[f"cell:{CELLS[1]}"]
    assert check["passed"] is False
    assert check["reason"].startswith("got no result, expected a passing result")
    assert doc["allowed"] is False and doc["status"] == "failed"
    assert f"cell:{CELLS[1]}" in out


@pytest.mark.parametrize("status", ["fallback", "skipped", "failed", "crashed"])
def test_non_passing_result_is_refused(release: Repo, status: str) -> None:
    write(release.path / "results" / CELLS[1] / "kernels.json",
          envelope("kernels", CELLS[1], status, "cuda unavailable, ran on cpu"))
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    reason = checks_by_name(doc)[f"cell:{CELLS[1]}"]["reason"]
    assert reason == f"got kernels {status}: cuda unavailable, ran on cpu, expected passed"
    assert next(c for c in doc["cells"] if c["id"] == CELLS[1])["status"] == status


def test_abi_break_needs_a_major_bump(release: Repo) -> None:
    write(release.path / "abi.json", {"version": 1, "required_bump": "major",
                                      "findings": [{"kind": "symbol_removed", "required_bump": "major"}]})
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    reason = checks_by_name(doc)["version-bump"]["reason"]
    assert reason.startswith("got a minor bump (v1.0.0 -> v1.1.0), expected at least major")
    assert "1 finding(s) at that level" in reason


def test_abi_largest_of_several_diffs_counts(release: Repo) -> None:
    write(release.path / "abi-2.json", {"version": 1, "required_bump": "major", "findings": []})
    rc, _, doc = gate_in_process(release.path, *FULL, "--abi", "abi-2.json")
    assert rc == 1
    assert checks_by_name(doc)["version-bump"]["details"]["required_bump"] == "major"


def test_zero_major_minor_step_counts_as_major(repo: Repo) -> None:
    repo.commit()
    repo.tag("v0.3.0")
    repo.commit()
    repo.tag("v0.4.0")
    write(repo.path / "abi.json", {"version": 1, "required_bump": "major", "findings": []})
    rc, out, doc = gate_in_process(repo.path, "--abi", "abi.json", "--tag", "v0.4.0", INSECURE)
    assert rc == 0, out
    assert doc["release"]["bump"] == "major"


def test_tag_comes_from_github_and_gitlab_env(release: Repo) -> None:
    args = [a for a in FULL if a not in ("--tag", "v1.1.0")]
    rc, out, doc = gate_in_process(release.path, *args, env={"GITHUB_REF_TYPE": "tag", "GITHUB_REF_NAME": "v1.1.0"})
    assert rc == 0, out
    assert doc["tag"] == "v1.1.0"
    rc, out, doc = gate_in_process(release.path, *args, env={"CI_COMMIT_TAG": "v1.1.0"})
    assert rc == 0, out
    assert doc["tag"] == "v1.1.0"


def test_abi_without_tag_is_refused(release: Repo) -> None:
    rc, _, doc = gate_in_process(release.path, "--abi", "abi.json", INSECURE)
    assert rc == 1
    assert checks_by_name(doc)["version-bump"]["reason"].startswith("got no release tag")


def test_version_going_down_is_refused(release: Repo) -> None:
    rc, _, doc = gate_in_process(release.path, "--abi", "abi.json", "--tag", "v0.9.0", "--previous-tag", "v1.0.0", INSECURE)
    assert rc == 1
    assert "expected a version greater than the last release" in checks_by_name(doc)["version-bump"]["reason"]


def test_coverage_below_threshold_is_refused(release: Repo) -> None:
    write(release.path / "coverage.json", envelope("coverage", None, "failed", "diff 61.0% < 80%"))
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    assert checks_by_name(doc)["coverage"]["reason"] == "got failed (diff 61.0% < 80%), expected passed"


def test_required_kind_missing_is_refused(release: Repo) -> None:
    rc, _, doc = gate_in_process(release.path, *FULL, "--require-kind", "kernels")
    assert rc == 1
    reason = checks_by_name(doc)[f"cell:{CELLS[0]}"]["reason"]
    assert reason == "got results for build, test, expected also kernels"


def test_result_for_unplanned_cell_warns(release: Repo) -> None:
    write(release.path / "results" / "stray" / "test.json", envelope("test", "py3.9-linux-x86_64-cpu", "failed"))
    rc, out, doc = gate_in_process(release.path, *FULL)
    assert rc == 0, out
    assert any("which the plan does not list" in w for w in doc["warnings"])


def test_no_checks_is_refused_not_valid(tmp_path: Path) -> None:
    rc, out, doc = gate_in_process(tmp_path, INSECURE)
    assert rc == 1
    assert doc["allowed"] is False and doc["checks"] == []
    assert "no checks were requested" in out


def test_plan_without_required_cells_is_refused(release: Repo) -> None:
    write(release.path / "plan.json", plan_document((CELLS[2], False)))
    rc, _, doc = gate_in_process(release.path, "--plan", "plan.json", "--results", "results", INSECURE)
    assert rc == 1
    assert checks_by_name(doc)["plan"]["reason"].startswith("got 1 cell(s), none required")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: (p / "results" / CELLS[0] / "test.json").write_text('{"version": 1, "kind": "te'),
         "test.json:1:"),
        (lambda p: write(p / "results" / CELLS[0] / "test.json", envelope("test", CELLS[0], "green")),
         "$.status: 'green' is not one of"),
        (lambda p: write(p / "results" / CELLS[0] / "test.json", {**envelope("test", CELLS[0], "passed"),
                                                                  "version": 2}),
         "unsupported result version 2"),
    ],
)
def test_a_malformed_result_is_refused_red_and_the_rest_is_judged(release: Repo, mutate, message: str) -> None:
    """A result in the results folder that does not parse or check stops nothing: its cell is red
    with the refusal, the other cells and checks are judged, gate.json is written."""
    mutate(release.path)
    rc, out, doc = gate_in_process(release.path, *FULL)
    assert rc == 1 and "Traceback" not in out, out
    checks = checks_by_name(doc)
    assert checks["results"]["passed"] is False and message in checks["results"]["reason"]
    cell = checks[f"cell:{CELLS[0]}"]
    assert cell["passed"] is False and "result refused: " in cell["reason"] and message in cell["reason"]
    assert checks[f"cell:{CELLS[1]}"]["passed"] is True and checks["version-bump"]["passed"] is True


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda p: write(p / "abi.json", {"version": 1, "required_bump": "breaking"}),
         "$.required_bump: got 'breaking'"),
        (lambda p: write(p / "plan.json", {"version": 1, "cells": [{"required": True}]}),
         '$.cells[0]: each cell needs a string "id"'),
        (lambda p: write(p / "plan.json", {"version": 1, "cells": [{"id": "a"}, {"id": "a"}]}),
         "cell id 'a' appears twice"),
        (lambda p: write(p / "plan.json", {"version": 1, "jobs": []}), 'a plan must be an object with a "cells" list'),
        (lambda p: write(p / "coverage.json", {"version": 1}), "needs the envelope field 'status'"),
    ],
)
def test_malformed_input_is_a_usage_error_and_writes_nothing(release: Repo, mutate, message: str) -> None:
    mutate(release.path)
    rc, out, doc = gate_in_process(release.path, *FULL)
    assert rc == 2, out
    assert message in out
    assert "Traceback" not in out
    assert doc is None  # nothing half-written


def test_results_without_plan_is_usage_error(release: Repo) -> None:
    rc, out, _ = gate_in_process(release.path, "--results", "results")
    assert rc == 2
    assert "--results needs --plan" in out


def test_summary_and_outputs_in_github_actions(release: Repo, tmp_path: Path) -> None:
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    summary.touch()
    output.touch()
    write(release.path / "coverage.json", envelope("coverage", None, "failed", "diff 61.0% < 80%"))
    rc, out, _ = gate_in_process(release.path, *FULL, env={
        "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)})
    assert rc == 1
    text = summary.read_text()
    assert "xcompat release gate" in text
    # failures first in the table
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `coverage` | **failed**")
    assert "allowed<<" in output.read_text() and "\nfalse\n" in output.read_text()
    assert "::error::release refused" in out


def test_matrix_gate_settings_apply(release: Repo) -> None:
    plan = plan_document((CELLS[0], True), (CELLS[1], True), (CELLS[2], False))
    plan["cells"][2]["backend"] = "mps"
    plan["settings"] = {"gate": {"tag_pattern": "v*", "required_backends": ["cpu", "mps"]}}
    write(release.path / "plan.json", plan)
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    checks = checks_by_name(doc)
    assert checks["tag-pattern"] == {"name": "tag-pattern", "passed": True,
                                     "reason": "got tag 'v1.1.0', expected one matching 'v*' (matrix gate.tag-pattern)"}
    # the optional mps cell becomes required through gate.required-backends, and it has no result
    assert checks[f"cell:{CELLS[2]}"]["passed"] is False
    assert next(c for c in doc["cells"] if c["id"] == CELLS[2])["required"] is True


def test_tag_outside_pattern_is_refused(release: Repo) -> None:
    plan = json.loads((release.path / "plan.json").read_text())
    plan["settings"] = {"gate": {"tag_pattern": "release-*", "required_backends": []}}
    write(release.path / "plan.json", plan)
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    assert checks_by_name(doc)["tag-pattern"]["passed"] is False


def test_required_backend_without_cells_is_refused(release: Repo) -> None:
    plan = json.loads((release.path / "plan.json").read_text())
    plan["settings"] = {"gate": {"tag_pattern": "v*", "required_backends": ["rocm"]}}
    write(release.path / "plan.json", plan)
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    assert checks_by_name(doc)["plan"]["reason"].startswith("got no cell for required backend rocm")


def _wheel(path: Path, payload: bytes) -> dict[str, Any]:
    import hashlib

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)
    return {"file": path.name, "sha256": hashlib.sha256(payload).hexdigest()}


@pytest.fixture
def built(release: Repo) -> Repo:
    """One build result covering both required cells (the shape `xcompat build` writes), and the wheels."""
    dist = release.path / "dist"
    w1 = _wheel(dist / "sample_ext-1.1.0-cp312-cp312-manylinux_2_28_x86_64.whl", b"wheel one")
    w2 = _wheel(dist / "sample_ext-1.1.0-cp312-abi3-manylinux_2_28_x86_64.whl", b"wheel two")
    for cid in CELLS[:2]:
        (release.path / "results" / cid / "build.json").unlink()
    write(release.path / "results" / "build" / "build.json", {
        **envelope("build", None, "passed", "2 wheels"),
        "wheels": [{**w1, "cell_id": CELLS[0]}, {**w2, "cell_id": CELLS[1]}],
        "cells": [{"id": CELLS[0], "status": "passed", "wheels": [w1["file"]]},
                  {"id": CELLS[1], "status": "passed", "wheels": [w2["file"]]}],
    })
    return release


def test_exact_wheel_set_is_allowed(built: Repo) -> None:
    rc, out, doc = gate_in_process(built.path, *FULL, "--require-kind", "build", "--dist", "dist")
    assert rc == 0, out
    assert checks_by_name(doc)["wheels"]["reason"].startswith("got 2 wheel(s) matching the sha256")


def test_rebuilt_or_extra_or_missing_wheel_is_refused(built: Repo) -> None:
    dist = built.path / "dist"
    name = "sample_ext-1.1.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    (dist / name).write_bytes(b"rebuilt after the tests")
    rc, _, doc = gate_in_process(built.path, *FULL, "--dist", "dist")
    assert rc == 1
    assert "no passing build recorded with these bytes" in checks_by_name(doc)["wheels"]["reason"]
    (dist / name).unlink()
    rc, _, doc = gate_in_process(built.path, *FULL, "--dist", "dist")
    assert rc == 1
    assert f"1 recorded wheel(s) absent ({name})" in checks_by_name(doc)["wheels"]["reason"]


@pytest.mark.parametrize("extra", ["sample_ext-1.1.0.tar.gz", "sample_ext-1.1.0.zip", "notes.txt"])
def test_any_other_file_the_upload_would_publish_is_refused(built: Repo, extra: str) -> None:
    # `twine upload dist/*` publishes every file there, not only the gated wheels.
    dist = built.path / "dist"
    (dist / extra).write_bytes(b"not built by any cell")
    (dist / ".gitkeep").write_bytes(b"")  # not matched by the upload's glob
    (dist / "logs").mkdir()  # folders are not uploaded
    rc, out, doc = gate_in_process(built.path, *FULL, "--dist", "dist")
    assert rc == 1, out
    wheels = checks_by_name(doc)["wheels"]
    assert wheels["passed"] is False and f"would be uploaded too ({extra})" in wheels["reason"], wheels
    (dist / extra).unlink()
    rc, out, doc = gate_in_process(built.path, *FULL, "--dist", "dist")
    assert rc == 0, out


def test_build_result_covering_cells_counts_per_cell(built: Repo) -> None:
    path = built.path / "results" / "build" / "build.json"
    document = json.loads(path.read_text())
    document["cells"][1]["status"] = "failed"
    document["cells"][1]["reason"] = "nvcc: unsupported gpu architecture"
    write(path, document)
    rc, _, doc = gate_in_process(built.path, *FULL)
    assert rc == 1
    checks = checks_by_name(doc)
    assert checks[f"cell:{CELLS[0]}"]["passed"] is True
    assert checks[f"cell:{CELLS[1]}"]["reason"] == "got build failed: nvcc: unsupported gpu architecture, expected passed"


def test_dist_without_results_is_usage_error(built: Repo) -> None:
    rc, out, _ = gate_in_process(built.path, "--dist", "dist")
    assert rc == 2 and "--dist needs --plan and --results" in out


def test_coverage_threshold_checks_name_the_number(release: Repo) -> None:
    write(release.path / "coverage.json", {
        **envelope("coverage", None, "failed", "coverage below threshold"),
        "gate": [
            {"name": "overall", "threshold": 80.0, "actual": 84.25, "passed": True, "reason": "ok"},
            {"name": "diff", "threshold": 70.0, "actual": 61.0, "passed": False, "reason": "61.0% < 70.0%"},
        ],
    })
    rc, _, doc = gate_in_process(release.path, *FULL)
    assert rc == 1
    assert checks_by_name(doc)["coverage"]["reason"] == "got failed (diff 61.0% (threshold 70.0%)), expected passed"
    write(release.path / "coverage.json", {
        **envelope("coverage", None, "passed", "ok"),
        "gate": [{"name": "overall", "threshold": 80.0, "actual": 84.25, "passed": True, "reason": "ok"}],
    })
    rc, out, doc = gate_in_process(release.path, *FULL)
    assert rc == 0, out
    assert checks_by_name(doc)["coverage"]["reason"] == "got passed (overall 84.2% (threshold 80.0%)), expected passed"
