"""A report bundle uploaded by a fork's run is data for the privileged `workflow_run` job: whatever it
holds, `report --from-artifact` neither leaks the job's environment into what it writes nor crashes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.action import envelope, plan_document

CELL = "py3.12-linux-x86_64-cpu"
SECRET = "ghs_SECRET_do_not_leak"


def _report(bundle: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "GITLAB", "XCOMPAT_"))}
    env["XCOMPAT_TEST_SECRET"] = SECRET
    return subprocess.run([sys.executable, "-m", "xcompat", "report", "--from-artifact", str(bundle), "--format", "json",
                           "--out", str(out / "report.json"), "--gitlab", "--no-comment", "--bundle-dir", str(out / "b")],
                          capture_output=True, text=True, env=env, timeout=120, check=False, cwd=out)


def _bundle(root: Path) -> Path:
    bundle = root / "bundle"
    (bundle / "results" / CELL).mkdir(parents=True)
    (bundle / "plan.json").write_text(json.dumps(plan_document((CELL, True))))
    (bundle / "results" / CELL / "test.json").write_text(json.dumps(envelope("test", CELL, "passed", "1 passed")))
    return bundle


def _leaks(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and SECRET.encode() in p.read_bytes()]


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="no /proc here")
def test_a_result_linked_to_the_process_environment_leaks_nothing(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    os.symlink("/proc/self/environ", bundle / "results" / CELL / "coverage.json")
    proc = _report(bundle, tmp_path)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1, 2), proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert _leaks(tmp_path) == []  # neither the new bundle nor the report carries it


def test_a_coverage_result_naming_an_outside_file_leaks_nothing(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    (tmp_path / "secret.xml").write_text(SECRET)
    coverage = {"version": 1, "kind": "coverage", "cell_id": None, "status": "passed", "summary": "x",
                "cobertura": {"path": str(tmp_path / "secret.xml")}}
    (bundle / "results" / "coverage.json").write_text(json.dumps(coverage))
    proc = _report(bundle, tmp_path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert _leaks(tmp_path / "b") == [] and (tmp_path / "b").is_dir()


def test_many_small_results_are_read_without_a_crash(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    for i in range(300):
        (bundle / "results" / CELL / f"junk-{i}.json").write_text('{"version": 1, "kind": "bogus"}')
    proc = _report(bundle, tmp_path)
    assert "Traceback" not in proc.stderr and proc.returncode in (0, 1), proc.stderr
