"""What the runner refuses before it starts a process, and how it reads the child's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from xcompat.errors import UsageError
from xcompat.operators.runner import _last_json, run_operators


def test_a_device_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--device 'gpu0' is not a device"):
        run_operators(tmp_path, device="gpu0")


def test_the_result_is_the_last_json_line_after_whatever_the_project_printed() -> None:
    assert _last_json('loading kernels...\n{"x": 1}\n{"operators": []}\n') == {"operators": []}
    assert _last_json("no result\n") is None
    assert _last_json('{"cut": \n') is None


def test_a_malformed_tolerance_table_exits_2_before_anything_runs(tmp_path: Path, capsys) -> None:
    from xcompat import cli

    table = tmp_path / "tol.json"
    table.write_text('{"float17": {"rtol": 1}}')
    assert cli.main(["kernels", "operators", "--site", str(tmp_path), "--tolerances", str(table)]) == 2
    assert "unknown dtype 'float17'" in capsys.readouterr().err


def test_the_text_output_names_each_failed_check() -> None:
    from xcompat.commands.kernels_operators import render_text

    doc = {"status": "failed", "summary": "project operators 1: 0 passed, 1 failed: ns::a on cpu, float16",
           "operators": [{"name": "ns::a", "status": "failed", "dispatch_keys": ["CPU", "Meta"], "reason": "",
                          "checks": [{"name": "result", "status": "failed", "detail": "float16: largest error 2"},
                                     {"name": "determinism", "status": "passed", "detail": ""}]}]}
    text = render_text(doc)
    assert "kernels: CPU, Meta" in text and "FAILED result: float16: largest error 2" in text
    assert "determinism" not in text and text.endswith("status: failed - project operators 1: 0 passed, "
                                                       "1 failed: ns::a on cpu, float16\n")
