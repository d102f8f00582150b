"""The report of ``xcompat run`` holds once the run is over: its rerun commands work as printed
in the project's folder, no path in it names the staging folder the run was made in, a file
pytest could not collect says how many collected tests never ran, and the matrix's cells this
machine cannot run are listed as not run here rather than left out of "all required cells
passed"."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.checkout import c_extension, git, xcompat

pytestmark = pytest.mark.slow

FAILING = "import tinyc\n\n\ndef test_bad():\n    assert tinyc.add(2, 2) == 5\n\n\ndef test_ok():\n    assert tinyc.add(1, 1) == 2\n"


def _commit(project: Path, message: str) -> None:
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", message)


def _rerun_commands(report_md: str) -> list[str]:
    """Every command the report tells the reader to run to rerun a test, as a reader copies it."""
    found = re.findall(r"rerun it alone with (?:`([^`]+)`|<code>(.*?)</code>)", report_md)
    return [html.unescape(a or b) for a, b in found]


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # `xcompat` as the reader has it: the console script of the environment xcompat is installed in.
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def _files_naming_staging(out: Path) -> list[str]:
    """Results and reports that name the staging folder. Logs record what ran where, and pip's
    own install record (.site/*.dist-info/direct_url.json) the file it installed: not results."""
    named = []
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".md", ".html", ".xml") and not {"logs", ".site"} & set(
                path.relative_to(out).parts):
            if ".partial-" in path.read_text(errors="replace"):
                named.append(str(path.relative_to(out)))
    return named


def test_rerun_command_works_as_printed_and_no_path_names_the_staging_folder(tmp_path: Path) -> None:
    project = c_extension(tmp_path / "tinyc")
    git(project, "tag", "v1.0.0")
    (project / "tests" / "test_more.py").write_text(FAILING)
    _commit(project, "a failing test")

    run = xcompat("run", ".", "--no-coverage", cwd=project)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    out = project / ".xcompat-out"
    report_md = (out / "report.md").read_text()
    commands = _rerun_commands(report_md)
    assert commands == ["PYTHONPATH=.xcompat-out/.site xcompat test --isolate test tests/test_more.py::test_bad"], \
        report_md[:3000]
    # The traceback's file is the project's own path, as pytest shows it when run there.
    assert "(`tests/test_more.py:5`)" in report_md, report_md[:3000]

    rerun = _shell(commands[0], project)
    assert rerun.returncode == 1, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert "FAILED tests/test_more.py::test_bad" in rerun.stdout and "1 failed" in rerun.stdout, rerun.stdout[-2000:]

    # The ABI diff against v1.0.0 ran; neither it nor any other result names the staging folder.
    assert json.loads((out / "abi.json").read_text())["status"] in ("passed", "failed")
    assert _files_naming_staging(out) == []
    report = json.loads((out / "report.json").read_text())
    assert all(not r["source"].startswith("/") for r in report["other"]), report["other"]
    assert "not a stage result" not in report_md


def test_in_package_tests_rerun_from_the_installed_copy(tmp_path: Path) -> None:
    project = c_extension(tmp_path / "tinyc")
    tests = project / "tinyc" / "tests"
    tests.mkdir()
    (tests / "__init__.py").write_text("")
    (tests / "test_in.py").write_text(FAILING)
    (project / "setup.py").write_text(
        'from setuptools import Extension, setup\n'
        'setup(packages=["tinyc", "tinyc.tests"], ext_modules=[Extension("tinyc._core", ["tinyc/_core.c"])])\n')
    matrix = project / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace('pytest: ["tests"]', 'pytest: ["tinyc.tests"]\n  pytest-args: ["--pyargs"]'))
    _commit(project, "tests inside the package")

    run = xcompat("run", ".", "--no-coverage", cwd=project)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    out = project / ".xcompat-out"
    test = json.loads((out / "test.json").read_text())
    failed = [t["nodeid"] for t in test["tests"] if t["outcome"] == "failed"]
    assert failed == ["tinyc/tests/test_in.py::test_bad"]
    commands = _rerun_commands((out / "report.md").read_text())
    assert commands == ["cd .xcompat-out/.site && PYTHONPATH=. xcompat test --isolate test "
                        "tinyc/tests/test_in.py::test_bad"], commands
    rerun = _shell(commands[0], project)
    assert rerun.returncode == 1 and "FAILED tinyc/tests/test_in.py::test_bad" in rerun.stdout, \
        rerun.stdout[-2000:] + rerun.stderr[-2000:]
    assert _files_naming_staging(out) == []


def test_a_file_that_cannot_be_collected_says_how_many_tests_did_not_run(tmp_path: Path) -> None:
    project = c_extension(tmp_path / "tinyc")
    (project / "tests" / "test_more.py").write_text(FAILING.replace("== 5", "== 4"))
    (project / "tests" / "test_broken.py").write_text("import not_a_module_anywhere\n\n\ndef test_x():\n    pass\n")
    _commit(project, "a test file that cannot be imported")

    run = xcompat("run", ".", "--no-coverage", cwd=project)
    assert run.returncode == 1
    out = project / ".xcompat-out"
    test = json.loads((out / "test.json").read_text())
    assert test["not_run"] == 3  # test_add, test_bad, test_ok were collected; pytest ran none
    assert test["summary"].startswith("3 collected tests did not run: 1 file could not be collected")
    report = json.loads((out / "report.json").read_text())
    assert report["cells"][0]["tests"]["not_run"] == 3
    report_md = (out / "report.md").read_text()
    assert "3 not run (collection failed)" in report_md.split("\n", 2)[1], report_md[:500]
    assert "3 collected tests did not run" in report_md


def test_required_cells_this_machine_cannot_run_are_listed_as_not_run_here(tmp_path: Path) -> None:
    project = c_extension(tmp_path / "tinyc")
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    others = [f"3.{sys.version_info.minor - 1}", f"3.{sys.version_info.minor + 1}"]
    matrix = project / ".xcompat" / "matrix.yml"
    matrix.write_text(matrix.read_text().replace(f'python: ["{here}"]',
                                                 "python: [" + ", ".join(f'"{v}"' for v in [others[0], here, others[1]]) + "]"))
    _commit(project, "three Pythons")

    run = xcompat("run", ".", "--no-coverage", cwd=project)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    out = project / ".xcompat-out"
    report = json.loads((out / "report.json").read_text())
    assert report["conclusion"] == "success"
    elsewhere = {c["id"]: c for c in report["not_run_here"]}
    assert len(elsewhere) == 2 and all(c["required"] for c in elsewhere.values())
    assert sorted(c["why"] for c in elsewhere.values()) == [f"Python {v} (this is {here})" for v in others]
    assert [c["id"] for c in report["cells"]] == [json.loads((out / "plan.json").read_text())["cells"][0]["id"]]
    first = (out / "report.md").read_text().splitlines()[0]
    assert "all 1 required cells passed here; 2 more required cells not run here" in first, first
