"""``xcompat matrix init`` measures the suite and writes the isolation mode that fits it.

The real CLI on generated projects (tests/helpers/jit_suite.py): a suite whose every test
process compiles numba functions gets ``file``, a suite with no per-process cost keeps
``test``. The decisions are far from the bound either way (the JIT suite's ``--isolate test``
compiles in every test process, which the compile log counts); nothing asserts on seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.jit_suite import LOG_ENV, cheap_project, jit_project, log_lines

from xcompat.matrix import load_matrix
from xcompat.settings import resolve_settings

REPO = Path(__file__).resolve().parents[3]


def _init(project: Path, *args: str, log: Path | None = None, timeout: float = 400) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CI", "GITHUB_", "GITLAB_", "PYTEST_"))}
    env["PYTHONPATH"] = str(REPO / "src")
    env["PYTEST_ADDOPTS"] = "-p no:hypothesispytest"  # ~1 s per pytest start, in every run
    if log is not None:
        env[LOG_ENV] = str(log)
    return subprocess.run([sys.executable, "-m", "xcompat", "matrix", "init", str(project), "--repo", "acme/p", *args],
                          cwd=project.parent, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _isolation(project: Path) -> tuple[str, str]:
    """The written mode, and the matrix's text."""
    path = project / ".xcompat" / "matrix.yml"
    return resolve_settings(load_matrix(path)).tests.isolation, path.read_text()


def _comment(text: str) -> str:
    """The comment lines above ``isolation:``, joined."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  isolation:"))
    above = []
    for line in reversed(lines[:at]):
        if not line.startswith("  #"):
            break
        above.insert(0, line.strip("# "))
    return " ".join(above)


def test_a_suite_that_compiles_in_every_test_process_gets_file(tmp_path):
    pytest.importorskip("numba")
    project = jit_project(tmp_path, tests=16)
    log = tmp_path / "jit.log"
    proc = _init(project, log=log)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    mode, text = _isolation(project)
    assert mode == "file", text
    comment = _comment(text)
    assert "measured by `xcompat matrix init` on 16 tests in 1 file" in comment
    assert re.search(r"plain pytest [\d.]+ s, --isolate test [\d.]+ s \([\d.]+x, \+\d+ ms a test\), "
                     r"--isolate file [\d.]+ s \([\d.]+x\)", comment), comment
    assert "test is over it, file is within it" in comment
    assert "isolation: file (plain pytest" in proc.stderr
    # why: every test process of the --isolate test run compiled the suite's functions again,
    # while each plain pytest run and --isolate file compiled them in one process
    compiled = [pid for _, pid, name in log_lines(log, "compile") if name == "norm2"]
    assert len(compiled) == 16 + 3 and len(set(compiled)) == len(compiled)
    # the runs left nothing in the project: no bytecode, no pytest cache, no JIT cache
    assert sorted(p.name for p in project.rglob("*") if p.name.startswith((".", "__")) or "cache" in p.name) == [
        ".xcompat"]


def test_a_suite_without_per_process_work_keeps_test(tmp_path):
    project = cheap_project(tmp_path, files=2, tests=5, sleep=0.2)
    log = tmp_path / "cheap.log"
    proc = _init(project, log=log)
    assert proc.returncode == 0, proc.stderr
    mode, text = _isolation(project)
    assert mode == "test", text
    comment = _comment(text)
    assert "on 10 tests in 2 files" in comment and "test is within it" in comment
    assert len(log_lines(log, "start")) == 4 * 10  # plain pytest, --isolate test, --isolate file, plain pytest


def test_no_measure_writes_the_default_and_runs_nothing(tmp_path):
    project = cheap_project(tmp_path)
    log = tmp_path / "cheap.log"
    proc = _init(project, "--no-measure", log=log)
    assert proc.returncode == 0, proc.stderr
    mode, text = _isolation(project)
    assert mode == "test" and "  isolation: test  # the default; not measured: --no-measure\n" in text
    assert not log.exists() and "measuring" not in proc.stderr


@pytest.mark.parametrize(
    ("case", "args", "why"),
    [
        ("collection fails", (), ("pytest could not collect tests/test_broken.py: ModuleNotFoundError: "
                                  "No module named 'not_installed_here'")),
        ("no tests", (), "no tests were collected from tests"),
        ("over the time limit", ("--measure-timeout", "10"), "plain pytest did not finish a test file within"),
    ],
)
def test_a_suite_that_cannot_be_measured_gets_the_default_and_one_line(tmp_path, case, args, why):
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    if case == "collection fails":
        (project / "tests" / "test_broken.py").write_text("import not_installed_here\n\ndef test_x():\n    pass\n")
    elif case == "no tests":
        (project / "tests" / "helpers.py").write_text("VALUE = 1\n")
    else:
        (project / "tests" / "test_slow.py").write_text("import time\n\ndef test_slow():\n    time.sleep(60)\n")
    proc = _init(project, *args, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "not measured" in line]
    assert len(notes) == 1 and why in notes[0] and notes[0].endswith("wrote the default, test"), proc.stderr
    mode, text = _isolation(project)
    assert mode == "test"
    line = next(line for line in text.splitlines() if line.startswith("  isolation:"))
    assert line.startswith("  isolation: test  # the default; not measured: ") and why in line


def test_a_long_suite_is_measured_on_the_files_plain_pytest_finished_in_its_share(tmp_path):
    # three files of one 3.5 s test; a 24 s budget gives plain pytest 3 s, so it stops after the first
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\n')
    for i in range(3):
        (project / "tests" / f"test_long{i}.py").write_text("import time\n\ndef test_long():\n    time.sleep(3.5)\n")
    proc = _init(project, "--measure-timeout", "24")
    assert proc.returncode == 0, proc.stderr
    mode, text = _isolation(project)
    comment = _comment(text)
    assert "on 1 of 3 test files (1 of 3 tests), scaled to the whole suite" in comment, text
    assert mode == "test"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--isolation-bound", "0.5"), "must be at least 1"),
        (("--isolation-bound", "fast"), "expected a ratio"),
        (("--measure-timeout", "0"), "must be between 1 and 86400 seconds"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(tmp_path, args, message):
    project = cheap_project(tmp_path)
    proc = _init(project, *args, timeout=60)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (project / ".xcompat").exists()
