"""The unit tier starts no ``xcompat run``: the guard of tests/unit/conftest.py refuses it
wherever it is started from, and no unit test file spells the command out (which also finds a
test skipped on this machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import unit_tier
from tests.helpers.unit_tier import StartsXcompatRun, starts_xcompat_run

UNIT = Path(__file__).resolve().parent


@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "xcompat", "run", "proj"],
    [sys.executable, "-m", "xcompat", "-v", "run"],
    [sys.executable, "-mxcompat", "run"],
    [sys.executable, "-m", "xcompat.cli", "run", "--out", "o"],
    ["/venv/bin/xcompat", "run"],
    "xcompat run --out o",
    ["bash", "-c", "cd proj && xcompat run"],
    [sys.executable, "-c", "from xcompat import cli; cli.main(['run', 'proj'])"],
    [sys.executable, "-c", "import sys\nfrom xcompat.cli import run\nsys.argv = ['xcompat', 'run']\nrun()"],
])
def test_every_way_of_starting_xcompat_run_is_recognised(command) -> None:
    assert starts_xcompat_run(command)


@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "xcompat", "report", "run"],  # a folder named run
    [sys.executable, "-m", "xcompat", "test", "--", "-k", "run"],
    [sys.executable, "-m", "pytest", "-k", "run"],
    ["git", "run"],
    ["/opt/xcompat-run", "run"],
    [sys.executable, "-c", "from xcompat import cli; cli.main(['matrix', 'plan', 'run.yml'])"],
    "npm run build",
])
def test_other_commands_are_left_alone(command) -> None:
    assert not starts_xcompat_run(command)


def test_a_unit_test_that_starts_xcompat_run_is_refused_before_it_starts() -> None:
    with pytest.raises(StartsXcompatRun, match="belongs in tests/integration"):
        subprocess.run([sys.executable, "-m", "xcompat", "run", "--help"], capture_output=True, check=False)
    with pytest.raises(StartsXcompatRun):
        os.system("xcompat run --help >/dev/null 2>&1")
    started = unit_tier._state["started"]
    assert len(started) == 2 and "xcompat run --help" in started[0]
    started.clear()  # seen and expected: this test passes


def test_no_unit_test_file_spells_out_an_xcompat_run_command() -> None:
    argv = re.compile(r"""['"]xcompat['"]\s*,\s*['"]run['"]""")
    found = sorted(str(path.relative_to(UNIT)) for path in UNIT.rglob("*.py")
                   if path != Path(__file__).resolve() and argv.search(path.read_text(encoding="utf-8")))
    assert not found, f"unit test files that start `xcompat run` (move those tests to tests/integration): {found}"
