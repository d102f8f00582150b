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
