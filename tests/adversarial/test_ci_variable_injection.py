"""`xcompat matrix settings --format env` is appended to `$GITHUB_ENV` (or kept as a GitLab dotenv
report), and its values come from files a pull request can edit: a matrix's `gate.tag-pattern`,
a plan's settings and cell ids. A value with a line break must never become a second variable
(`LD_PRELOAD=...`, `BASH_ENV=...`) for the job's later steps: the matrix and the plan refuse it,
and the writer refuses it again if it gets that far. The output is read back the way the runner
reads it (tests/helpers/runner_files.py)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.matrix import matrix_text
from tests.helpers.runner_files import github_file_variables, gitlab_dotenv_variables

from xcompat.settings import setting_keys

CELL = "py3.11-linux-x86_64-cpu-torch2.13"
HOSTILE = {
    "lf": "v*\nLD_PRELOAD=/tmp/evil.so",
    "crlf": "v*\r\nBASH_ENV=/tmp/evil.sh",
    "cr": "v*\rBASH_ENV=/tmp/evil.sh",
}
SMUGGLED = {"LD_PRELOAD", "BASH_ENV"}


def _cli(*args: str, cwd: Path, ci: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def _expected_names() -> set[str]:
    names = {"XCOMPAT_" + key.upper().replace(".", "_").replace("-", "_") for key in setting_keys()}
    return names | {"XCOMPAT_MATRIX_SHA256", "XCOMPAT_CELL", "XCOMPAT_CELL_REQUIRED", "XCOMPAT_REQUIRED_STAGES"}


def _matrix(folder: Path, tag_pattern: str) -> tuple[Path, str]:
    path = folder / "matrix.yml"
    path.write_text(matrix_text(extra=f"gate:\n  tag-pattern: {json.dumps(tag_pattern)}\n"), encoding="utf-8",
                    newline="")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(proc: subprocess.CompletedProcess[str], *where: str) -> None:
    """Exit 2, one error line naming each of ``where``, no traceback, and nothing a runner would read."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error: " in lines[0], proc.stderr  # under CI the line has a timestamp first
    for part in where:
        assert part in lines[0], (part, lines[0])
    assert github_file_variables(proc.stdout) == []


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_tag_pattern_with_a_line_break_never_becomes_a_variable(tmp_path: Path, hostile: str) -> None:
    # The verified matrix's own output, read as $GITHUB_ENV and as a GitLab dotenv report: exactly
    # the documented variables, one each.
    matrix, sha = _matrix(tmp_path, "v*")
    good = _cli("matrix", "settings", "--matrix", str(matrix), "--expect-sha256", sha, "--cell", CELL,
                "--format", "env", cwd=tmp_path, ci=True)
    assert good.returncode == 0, good.stderr
    variables = github_file_variables(good.stdout)
    assert sorted(n for n, _ in variables) == sorted(_expected_names())
    assert gitlab_dotenv_variables(good.stdout) == variables
    assert dict(variables)["XCOMPAT_GATE_TAG_PATTERN"] == "v*" and dict(variables)["XCOMPAT_CELL"] == CELL

    # The same matrix with a line break in gate.tag-pattern is refused where it is validated,
    # naming the file and the key, in CI (the sha256 is the edited file's) and out of it.
    matrix, sha = _matrix(tmp_path, HOSTILE[hostile])
    _refused(_cli("matrix", "validate", str(matrix), cwd=tmp_path), str(matrix), "$.gate.tag-pattern")
    _refused(_cli("matrix", "settings", "--matrix", str(matrix), "--expect-sha256", sha, "--cell", CELL,
                  "--format", "env", cwd=tmp_path, ci=True), str(matrix), "$.gate.tag-pattern")
    _refused(_cli("matrix", "settings", "--matrix", str(matrix), "--format", "env", cwd=tmp_path),
             str(matrix), "$.gate.tag-pattern")


def _plan(tmp_path: Path) -> dict:
    matrix, _ = _matrix(tmp_path, "v*")
    made = _cli("matrix", "plan", str(matrix), "--format", "json", "-o", str(tmp_path / "plan.json"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    return json.loads((tmp_path / "plan.json").read_text())


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_plan_with_a_multi_line_tag_pattern_is_refused(tmp_path: Path, hostile: str) -> None:
    plan = _plan(tmp_path)
    plan["settings"]["gate"]["tag_pattern"] = HOSTILE[hostile]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    for fmt in ("env", "json"):
        _refused(_cli("matrix", "settings", "--plan", "plan.json", "--cell", CELL, "--format", fmt, cwd=tmp_path),
                 "plan.json", "$.settings.gate.tag_pattern")


def test_a_plan_cell_id_with_a_line_break_never_becomes_a_variable(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    forged = CELL + "\nBASH_ENV=/tmp/evil.sh"
    plan["cells"][0]["id"] = forged
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    _refused(_cli("matrix", "settings", "--plan", "plan.json", "--cell", forged, "--format", "env", cwd=tmp_path),
             "plan.json", "cell id")
