"""The child-process runner of the checks: output read within its bound, time limit kept."""

from __future__ import annotations

import sys

import pytest

from xcompat.contracts.bounded_run import run_tool
from xcompat.errors import ToolError


def test_output_is_cut_at_the_limit() -> None:
    run = run_tool([sys.executable, "-c", "import sys; sys.stdout.write('x' * 100000); sys.stderr.write('e' * 50000)"],
                   what="t", timeout=60, limit=1000)
    assert run.truncated and len(run.output) == 1000 and run.returncode == 0
    assert 0 < len(run.errors) <= 16384


def test_timeout_and_missing_tool_are_tool_errors() -> None:
    with pytest.raises(ToolError, match="ran past"):
        run_tool([sys.executable, "-c", "import time; time.sleep(30)"], what="t", timeout=0.5)
    with pytest.raises(ToolError, match="cannot start"):
        run_tool(["/nonexistent/tool"], what="t", timeout=5)
