"""Finding interpreters for a matrix's Pythons, and whether a wheel fits one."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from xcompat.errors import InputError
from xcompat.interpreters.discover import Interpreter, candidates, cpython_tags, find_interpreter, probe
from xcompat.interpreters.fit import check_fit, fits

HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


def _fake(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_candidates_prefer_the_newest_pyenv_patch_then_uv_then_path(tmp_path: Path) -> None:
    for name in ("3.12.1", "3.12.10", "3.12.9", "3.13.0", "3.12.4t"):
        (tmp_path / "pyenv" / "versions" / name).mkdir(parents=True)
    (tmp_path / "uv" / "cpython-3.12.3-linux-x86_64-gnu").mkdir(parents=True)
    (tmp_path / "uv" / "cpython-3.12.5+freethreaded-linux-x86_64-gnu").mkdir(parents=True)
    env = {"PYENV_ROOT": str(tmp_path / "pyenv"), "UV_PYTHON_INSTALL_DIR": str(tmp_path / "uv"), "PATH": ""}
    found = [str(p.relative_to(tmp_path)) for p in candidates("3.12", env)]
    assert found == ["pyenv/versions/3.12.10/bin/python3.12", "pyenv/versions/3.12.9/bin/python3.12",
                     "pyenv/versions/3.12.1/bin/python3.12", "uv/cpython-3.12.3-linux-x86_64-gnu/bin/python3.12"]
    free = [str(p.relative_to(tmp_path)) for p in candidates("3.12t", env)]
    assert free == ["pyenv/versions/3.12.4t/bin/python3.12t",
                    "uv/cpython-3.12.5+freethreaded-linux-x86_64-gnu/bin/python3.12t"]


def test_the_running_interpreter_is_found_and_judged_by_what_it_runs(tmp_path: Path) -> None:
    link = tmp_path / "bin" / f"python{HERE}"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    found = find_interpreter(HERE, {"PYENV_ROOT": str(tmp_path / "none"), "PATH": str(link.parent)})
    assert found is not None and found.matrix_python == HERE and found.path == str(link)
    assert found.tags[0].startswith(f"cp{sys.version_info.major}{sys.version_info.minor}-")
    # a shim named for one version that runs another is not taken for it
    liar = tmp_path / "liar" / "python3.99"
    liar.parent.mkdir()
    liar.symlink_to(sys.executable)
    assert find_interpreter("3.99", {"PYENV_ROOT": str(tmp_path / "none"), "PATH": str(liar.parent)}) is None


@pytest.mark.parametrize("body", [
    "echo not json\n",
    "echo '{\"version\": 3}'\n",
    "exit 3\n",
    "head -c 6000000 /dev/zero | tr '\\0' x\n",
    "echo '{\"version\": \"3.12.0\", \"implementation\": \"pypy\", \"free_threaded\": false}'\n",
])
def test_a_candidate_that_does_not_answer_properly_is_passed_over(tmp_path: Path, body: str) -> None:
    assert probe(_fake(tmp_path / "python3.12", body)) is None


def test_tags_are_computed_for_free_threaded_builds_without_the_gil_stable_abi() -> None:
    tags = cpython_tags("3.13.1", True)
    assert tags and not any("-abi3-" in t for t in tags) and any(t.startswith("cp313-cp313t-") for t in tags)
    assert any("-abi3-" in t for t in cpython_tags("3.13.1", False))


def test_a_wheel_for_another_python_is_an_error_naming_both() -> None:
    interp = Interpreter(path="/opt/py/bin/python3.12", version="3.12.1", free_threaded=False,
                         tags=cpython_tags("3.12.1", False))
    plat = interp.tags[0].split("-")[-1]
    good = Path(f"pkg-1.0-cp312-cp312-{plat}.whl")
    abi3 = Path(f"pkg-1.0-cp310-abi3-{plat}.whl")
    bad = Path(f"pkg-1.0-cp311-cp311-{plat}.whl")
    assert fits(good, interp) and fits(abi3, interp) and not fits(bad, interp)
    check_fit(good, interp)
    with pytest.raises(InputError) as err:
        check_fit(bad, interp, cell="py3.12-linux-x86_64-cpu")
    text = str(err.value)
    assert bad.name in text and "Python 3.12" in text and "/opt/py/bin/python3.12" in text and "py3.12-linux" in text
    with pytest.raises(InputError, match="not a wheel file name"):
        check_fit(Path("not-a-wheel.whl"), interp)
