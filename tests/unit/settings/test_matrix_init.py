"""``xcompat matrix init``: a starter matrix from the project's metadata, validated before it is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from xcompat.matrix import load_matrix
from xcompat.resources import data_dir
from xcompat.settings import resolve_settings


def _init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run([sys.executable, "-m", "xcompat", "matrix", "init", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _project(tmp_path: Path, pyproject: str) -> Path:
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(pyproject)
    return project


def test_tests_folder_pythons_and_torch_are_detected(tmp_path: Path):
    project = _project(tmp_path, '[project]\nname = "ops"\nrequires-python = ">=3.12"\ndependencies = ["torch>=2.4"]\n')
    (project / "tests").mkdir()
    proc = _init(str(project), "--repo", "acme/ops", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    m = load_matrix(project / ".xcompat" / "matrix.yml")
    assert m.repo == "acme/ops" and m.pythons == ("3.12", "3.13", "3.14")
    s = resolve_settings(m)
    assert s.tests.pytest_paths == ("tests",) and s.tests.pytest_args == () and s.tests.kernels == "all"


def test_in_package_tests_get_pyargs_and_no_torch_gets_kernels_none(tmp_path: Path):
    project = _project(tmp_path, '[project]\nname = "fast-json"\n')
    (project / "src" / "fast_json" / "tests").mkdir(parents=True)
    (project / "src" / "fast_json" / "__init__.py").touch()
    assert _init(str(project), "--repo", "acme/fast-json", cwd=tmp_path).returncode == 0
    s = resolve_settings(load_matrix(project / ".xcompat" / "matrix.yml"))
    assert s.tests.pytest_paths == ("fast_json.tests",) and s.tests.pytest_args == ("--pyargs",)
    assert s.tests.kernels == ()


def test_the_sample_gets_a_matrix_that_validates(tmp_path: Path):
    out = tmp_path / "m.yml"
    proc = _init(str(data_dir("examples") / "sample-ext"), "--repo", "acme/sample", "--output", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert resolve_settings(load_matrix(out)).tests.kernels == "all"


def test_existing_matrix_is_kept_without_force(tmp_path: Path):
    project = _project(tmp_path, '[project]\nname = "p"\n')
    (project / ".xcompat").mkdir()
    (project / ".xcompat" / "matrix.yml").write_text("mine")
    proc = _init(str(project), cwd=tmp_path)
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert (project / ".xcompat" / "matrix.yml").read_text() == "mine"
    assert _init(str(project), "--force", "--repo", "a/p", cwd=tmp_path).returncode == 0


def test_bad_input_is_one_line_exit_2(tmp_path: Path):
    proc = _init(str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and "not a Python project" in proc.stderr
    project = _project(tmp_path, '[project\nname = "p"\n')
    proc = _init(str(project), cwd=tmp_path)
    assert proc.returncode == 2 and "pyproject.toml" in proc.stderr and "invalid TOML" in proc.stderr
    assert "Traceback" not in proc.stderr and not (project / ".xcompat").exists()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nrequires-python = ">=three"\n')
    proc = _init(str(project), cwd=tmp_path)
    assert proc.returncode == 2 and "requires-python" in proc.stderr and "Traceback" not in proc.stderr


def test_test_command_options_are_unset_by_default():
    import argparse

    from xcompat.commands import test

    parser = argparse.ArgumentParser()
    test.configure_parser(parser)
    args = parser.parse_args([])
    assert args.timeout is None and args.isolate is None
