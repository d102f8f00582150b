"""`report --gitlab` copies into the uploaded artifact only files that lie inside the results folder.

A coverage result comes from a merge request's pipeline; the path it names for its Cobertura file
is data. Before, an absolute path (``/proc/self/environ``: the job's environment and token) or a
``..`` path was copied into the downloadable report artifact.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.report import coverage_result

SECRET = "glpat-SECRET-do-not-leak"


def _run(tmp_path: Path, cobertura_path: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    results = tmp_path / "results" / "coverage"
    results.mkdir(parents=True, exist_ok=True)
    document = coverage_result(90.0)
    document["cobertura"]["path"] = cobertura_path
    (results / "coverage.json").write_text(json.dumps(document))
    bundle = tmp_path / "bundle"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "GITLAB", "XCOMPAT_"))}
    env["XCOMPAT_TEST_SECRET"] = SECRET
    proc = subprocess.run([sys.executable, "-m", "xcompat", "report", str(tmp_path / "results"), "--gitlab",
                           "--no-comment", "--bundle-dir", str(bundle)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    return proc, bundle


def _leaked(bundle: Path) -> list[Path]:
    return [p for p in bundle.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.xml"
    secret.write_text(f"<coverage>{SECRET}</coverage>")
    return secret


@pytest.mark.parametrize("kind", ["proc-environ", "absolute", "dotdot", "symlink-out"])
def test_paths_outside_the_results_folder_are_not_copied(tmp_path: Path, outside: Path, kind: str) -> None:
    if kind == "proc-environ":
        if not Path("/proc/self/environ").exists():
            pytest.skip("no /proc on this system")
        name = "/proc/self/environ"
    elif kind == "absolute":
        name = str(outside)
    elif kind == "dotdot":
        name = "../../secret.xml"
    else:
        (tmp_path / "results" / "coverage").mkdir(parents=True)
        (tmp_path / "results" / "coverage" / "cobertura.xml").symlink_to(outside)
        name = "cobertura.xml"
    proc, bundle = _run(tmp_path, name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (bundle / "cobertura.xml").exists()
    assert _leaked(bundle) == []
    assert "not copied" in proc.stderr


def test_a_fifo_named_as_the_report_is_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "results" / "coverage").mkdir(parents=True)
    os.mkfifo(tmp_path / "results" / "coverage" / "cobertura.xml")
    proc, bundle = _run(tmp_path, "cobertura.xml")
    assert proc.returncode == 0 and not (bundle / "cobertura.xml").exists(), proc.stderr


def test_a_report_inside_the_results_folder_is_copied(tmp_path: Path) -> None:
    (tmp_path / "results" / "coverage").mkdir(parents=True)
    (tmp_path / "results" / "coverage" / "cobertura.xml").write_text("<coverage line-rate='0.9'/>")
    proc, bundle = _run(tmp_path, "cobertura.xml")
    assert proc.returncode == 0, proc.stderr
    assert (bundle / "cobertura.xml").read_text() == "<coverage line-rate='0.9'/>"
