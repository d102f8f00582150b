"""The sample project's edge-case tests (strategies + float64 reference on its torch op),
run through ``xcompat test`` against the built sample wheel."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.testing import REPO, by_name, run_xcompat_test

pytest.importorskip("torch")


@pytest.mark.slow
def test_sample_edge_cases_pass_isolated(tmp_path: Path) -> None:
    from tests.helpers.sample import install_sample

    site = install_sample("v1")
    tests = REPO / "examples" / "sample-ext" / "tests" / "test_edge_cases.py"
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(tests), "--cell-id", "sample", "--", "-p", "no:cacheprovider"],
        json_out=tmp_path / "r.json",
        env={"PYTHONPATH": f"{site}:{REPO / 'src'}"},
    )
    assert doc is not None, proc.stderr[-3000:]
    outcomes = {name: t["outcome"] for name, t in by_name(doc).items()}
    assert outcomes == {
        "test_op_matches_float64_reference_on_edge_inputs": "passed",
        "test_python_api_matches_float64_reference": "passed",
        "test_op_on_each_backend[cpu]": "passed",
        "test_op_refuses_mixed_devices": "skipped",  # one device here
        "test_op_refuses_other_dtypes": "passed",
    }, proc.stdout[-3000:]
    assert proc.returncode == 0
