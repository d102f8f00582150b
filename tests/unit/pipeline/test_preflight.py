"""What ``xcompat run`` checks before its first build: the kind of ``--baseline``, the
matrix against this machine, and ``abi.baseline-required`` from matrix to plan to settings."""

from __future__ import annotations

import gzip
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from tests.helpers.matrix import matrix_text

from xcompat.errors import InputError, UsageError
from xcompat.matrix import load_matrix
from xcompat.matrix.plan import expand, plan_document
from xcompat.pipeline.baseline_ref import extract_sdist
from xcompat.pipeline.preflight import baseline_kind, check_local_cells
from xcompat.settings import resolve_settings, settings_from_document, settings_from_plan


def _sdist(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_each_kind_of_baseline(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    assert baseline_kind(project) == "project"
    sdist = _sdist(tmp_path / "p-1.0.tar.gz", {"p-1.0/pyproject.toml": b"[project]\n", "p-1.0/p.c": b""})
    assert baseline_kind(sdist) == "sdist"
    wheels = tmp_path / "dist"
    wheels.mkdir()
    zipfile.ZipFile(wheels / "p-1.0-py3-none-any.whl", "w").close()
    assert baseline_kind(wheels) == "wheels"
    assert baseline_kind(wheels / "p-1.0-py3-none-any.whl") == "wheel"


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing", None, "no such file or folder"),
    ("notes.tar.gz", {"notes/README": b"x"}, "no pyproject.toml or setup.py in its top folder"),
    ("evil.tar.gz", {"p-1.0/pyproject.toml": b"", "../escape": b"x"}, "refusing member '../escape'"),
    ("fake.tar.gz", b"not a tar", "not a readable sdist"),
    ("fake.whl", b"not a zip", "not a wheel"),
    ("snap.json.gz", gzip.compress(b"{oops"), "not an ABI snapshot"),
    ("p-1.0.zip", b"PK\x05\x06" + bytes(18), "sdists are .tar.gz"),
    ("README.md", b"# hello", "not a project folder, sdist, wheel or ABI snapshot"),
])
def test_a_baseline_that_cannot_work_is_an_input_error(tmp_path: Path, name: str, content, message: str) -> None:
    path = tmp_path / name
    if isinstance(content, dict):
        _sdist(path, content)
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=message) as info:
        baseline_kind(path)
    assert info.value.exit_code == 2 and str(path) in str(info.value)


def test_an_sdist_extracts_to_its_project_folder(tmp_path: Path) -> None:
    sdist = _sdist(tmp_path / "p-1.0.tar.gz", {"p-1.0/setup.py": b"from setuptools import setup\n",
                                               "p-1.0/src/p.c": b"int x;\n"})
    project = extract_sdist(sdist, tmp_path / "out")
    assert project == tmp_path / "out" / "p-1.0"
    assert (project / "setup.py").is_file() and (project / "src" / "p.c").read_text() == "int x;\n"


def test_a_matrix_without_the_running_python_is_refused(tmp_path: Path) -> None:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    other = "3.10" if running != "3.10" else "3.12"
    matrix = load_matrix(matrix_text().replace('["3.11", "3.12"]', f'["{other}"]').encode())
    with pytest.raises(UsageError, match=rf"no cell for the running Python {running} \(its Pythons: {other}\)") as info:
        check_local_cells(matrix, tmp_path / "matrix.yml")
    assert info.value.exit_code == 2


def test_baseline_required_goes_from_the_matrix_to_every_settings_reader() -> None:
    plain = load_matrix(matrix_text().encode())
    assert resolve_settings(plain).abi.baseline_required is False
    required = load_matrix(matrix_text(extra="abi:\n  baseline-required: true\n").encode())
    settings = resolve_settings(required)
    assert settings.abi.baseline_required is True and settings.value("abi.baseline-required") is True
    plan = json.loads(json.dumps(plan_document(required, expand(required))))
    assert settings_from_plan(plan).abi.baseline_required is True
    assert settings_from_document(settings.to_dict()).abi.baseline_required is True
    older = settings.to_dict()
    del older["settings"]["abi.baseline-required"]  # a settings.json written before the key
    assert settings_from_document(older).abi.baseline_required is False
    with pytest.raises(InputError, match=r"\$\.abi\.baseline-required"):
        load_matrix(matrix_text(extra="abi:\n  baseline-required: yes please\n").encode())
