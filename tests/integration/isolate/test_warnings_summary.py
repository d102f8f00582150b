"""Warnings raised in isolated tests reach the parent's warnings summary, as in plain pytest.

A warning is recorded by pytest in the process that ran the test; the test process forwards
it (``warning`` messages) and the parent replays it into its own ``pytest_warning_recorded``,
so the summary and the counts read as plain pytest prints them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.testing import LEAN_PYTEST, run_xcompat_test, xcompat_env

SUITE = '''
import warnings

import pytest


class ProjectWarning(UserWarning):
    pass


def test_warns():
    warnings.warn("careful now", UserWarning)


def test_project_warning():
    warnings.warn("a class of the project's own", ProjectWarning)


def test_deprecated():
    warnings.warn("old api", DeprecationWarning)


def test_quiet():
    assert True


@pytest.fixture
def noisy_fixture():
    warnings.warn("from a fixture's set-up", UserWarning)
    yield


def test_with_noisy_fixture(noisy_fixture):
    assert True
'''


def _summary(stdout: str) -> list[str]:
    """The warnings summary section, and the final counts without their time."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "warnings summary" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("-- Docs:"))
    counts = next(line for line in reversed(lines) if " passed" in line and " in " in line and "isolation" not in line)
    return [*lines[start:end], counts.strip("= ").rsplit(" in ", 1)[0]]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "test_warnings.py").write_text(SUITE)
    return folder


def _plain(suite: Path) -> str:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", *LEAN_PYTEST, "."], cwd=suite, env=xcompat_env({}),
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    return proc.stdout


@pytest.mark.parametrize(("isolation", "extra"), [("test", []), ("file", []), ("test", ["--start-method", "spawn"])],
                         ids=["test", "file", "spawned"])
def test_the_warnings_summary_reads_as_in_plain_pytest(suite: Path, tmp_path: Path, isolation: str,
                                                       extra: list[str]) -> None:
    plain = _summary(_plain(suite))
    assert plain[-1] == "5 passed, 4 warnings"
    proc, doc = run_xcompat_test(suite, [".", "--isolate", isolation, *extra, "--", "-q", *LEAN_PYTEST],
                                 json_out=tmp_path / "result.json", timeout=120)
    assert doc is not None and proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _summary(proc.stdout) == plain
    assert "ProjectWarning: a class of the project's own" in proc.stdout


def test_warnings_turned_into_errors_still_fail_their_test(suite: Path, tmp_path: Path) -> None:
    proc, doc = run_xcompat_test(suite, [".", "--isolate", "test", "--", "-q", "-W", "error::DeprecationWarning",
                                         *LEAN_PYTEST], json_out=tmp_path / "result.json", timeout=120)
    assert doc is not None and proc.returncode == 1
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in doc["tests"]}
    assert outcomes["test_deprecated"] == "failed"
    assert outcomes["test_warns"] == "passed"
