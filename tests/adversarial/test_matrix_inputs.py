"""Hostile matrix inputs: a cross product too large to run, a FIFO or a device where a file belongs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.matrix import matrix_text

from xcompat.cli import main


def _big_matrix(path: Path, versions: int) -> Path:
    listed = ", ".join(f'"1.{i}"' for i in range(versions))
    path.write_text(matrix_text().replace('torch: ["2.13"]', f"torch: [{listed}]\n  numpy: [{listed}]"))
    return path


@pytest.mark.parametrize("command", [["matrix", "validate"], ["matrix", "plan", "--format", "github"]])
def test_a_matrix_expanding_to_too_many_cells_is_refused(tmp_path: Path, capsys, command: list[str]) -> None:
    matrix = _big_matrix(tmp_path / "matrix.yml", 200)  # 2 Pythons x 200 x 200
    code = main([*command, str(matrix)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "80000 cells before exclude rules, over the limit" in err and str(matrix) in err


def test_a_matrix_within_the_limit_still_expands(tmp_path: Path, capsys) -> None:
    assert main(["matrix", "validate", str(_big_matrix(tmp_path / "matrix.yml", 5))]) == 0


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "xcompat", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60, check=False)


def test_a_fifo_as_the_matrix_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "matrix.yml")
    for args in (["matrix", "validate", "matrix.yml"], ["matrix", "plan", "matrix.yml"]):
        proc = _run(*args, cwd=tmp_path)
        assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_a_signature_linked_to_dev_zero_is_refused(tmp_path: Path) -> None:
    (tmp_path / "matrix.yml").write_text(matrix_text())
    (tmp_path / "allowed_signers").write_text("")
    os.symlink("/dev/zero", tmp_path / "matrix.yml.sig")
    proc = _run("matrix", "verify", "matrix.yml", "--allowed-signers", "allowed_signers", cwd=tmp_path)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr


def test_a_huge_signature_file_is_refused_by_size(tmp_path: Path) -> None:
    (tmp_path / "matrix.yml").write_text(matrix_text())
    (tmp_path / "allowed_signers").write_text("")
    with open(tmp_path / "matrix.yml.sig", "wb") as fh:
        fh.truncate(10 * 1024 * 1024)  # sparse: 10 MiB of zeros, no disk used
    proc = _run("matrix", "verify", "matrix.yml", "--allowed-signers", "allowed_signers", cwd=tmp_path)
    assert proc.returncode == 2 and "over the limit" in proc.stderr, proc.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_allowed_signers_as_a_fifo_is_refused(tmp_path: Path) -> None:
    (tmp_path / "matrix.yml").write_text(matrix_text())
    (tmp_path / "matrix.yml.sig").write_text("-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n")
    os.mkfifo(tmp_path / "allowed_signers")
    proc = _run("matrix", "verify", "matrix.yml", "--allowed-signers", "allowed_signers", cwd=tmp_path)
    assert proc.returncode == 2 and "not a regular file" in proc.stderr, proc.stderr
