"""Decisions of the native backend that need no compiler: isolation, ccache, repair
platform, tool failures, the record's envelope."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from xcompat.builder import defaults as D
from xcompat.builder.native import (
    ccache_env,
    cell_build_env,
    check_project,
    choose_isolation,
    repair_platform,
    runner_frameworks,
)
from xcompat.builder.record import build_document, excluded_libs
from xcompat.builder.tools import run_tool, tool_env
from xcompat.errors import InputError, ToolError, UnavailableError
from xcompat.model import Cell


def project(tmp_path: Path, requires: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(f"[build-system]\nrequires = {requires}\n", encoding="utf-8")
    return tmp_path


def test_torch_build_requirement_builds_against_the_installed_torch(tmp_path: Path) -> None:
    torch_version = pytest.importorskip("importlib.metadata").version("torch")
    choice = choose_isolation(project(tmp_path, '["setuptools", "torch>=2"]'), "auto", sys.executable)
    assert choice.isolated is False
    assert f"torch=={torch_version}" in choice.reason


def test_isolation_on_pins_the_installed_framework(tmp_path: Path) -> None:
    from importlib.metadata import version

    choice = choose_isolation(project(tmp_path, '["setuptools", "torch"]'), "on", sys.executable)
    assert choice.isolated is True
    assert choice.constraints == (f"torch=={version('torch')}",)


def test_projects_without_frameworks_build_isolated(tmp_path: Path) -> None:
    choice = choose_isolation(project(tmp_path, '["setuptools>=70", "cython"]'), "auto", sys.executable)
    assert choice.isolated is True and choice.constraints == ()
    assert choose_isolation(tmp_path, "off", sys.executable).isolated is False


def test_missing_framework_is_unavailable_not_downloaded(tmp_path: Path) -> None:
    with pytest.raises(UnavailableError, match="build requires jax, which is not installed"):
        choose_isolation(project(tmp_path, '["setuptools", "jax"]'), "auto", sys.executable)


@pytest.mark.parametrize(
    ("content", "message"),
    [("[build-system\nrequires = 1", "invalid TOML"), ("[build-system]\nrequires = 'torch'\n", "must be a list"),
     ('[build-system]\nrequires = ["torch >= = 2"]\n', "invalid build requirement")],
)
def test_malformed_pyproject(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        choose_isolation(tmp_path, "auto", sys.executable)
    assert err.value.file and err.value.file.endswith("pyproject.toml")


def test_runner_frameworks_normalises_names() -> None:
    assert runner_frameworks(["Torch>=2", "JAX[cuda]", "numpy"]) == ("jax", "torch")


def test_check_project(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="project folder not found"):
        check_project(tmp_path / "missing")
    with pytest.raises(InputError, match="no pyproject.toml or setup.py"):
        check_project(tmp_path)
    (tmp_path / "setup.py").write_text("")
    assert check_project(tmp_path) == tmp_path


def _fake_ccache(folder: Path) -> str:
    exe = folder / "ccache"
    exe.write_text("#!/bin/sh\nexec \"$@\"\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(folder)


def test_ccache_env(tmp_path: Path) -> None:
    path = _fake_ccache(tmp_path)
    extra = ccache_env({"PATH": path})
    assert extra["CC"].startswith("ccache ") and extra["CXX"].startswith("ccache ")
    assert extra["CMAKE_CUDA_COMPILER_LAUNCHER"] == "ccache"
    # The user's own settings win; switched off by flag or variable; absent when not installed.
    assert "CC" not in ccache_env({"PATH": path, "CC": "clang"})
    assert ccache_env({"PATH": path}, enabled=False) == {}
    assert ccache_env({"PATH": path, D.ENV_NO_CCACHE: "1"}) == {}
    assert ccache_env({"PATH": str(tmp_path / "empty")}) == {}


def test_repair_platform_and_cell_env() -> None:
    c = Cell(id="c", python="3.12", platform="linux", arch="x86_64", backend="cuda", policy="manylinux_2_28",
             gpu_archs=("sm_80", "sm_90"))
    assert repair_platform(c, "linux") == "manylinux_2_28_x86_64"
    assert repair_platform(c, "darwin") is None
    assert repair_platform(None, "linux") is None
    assert cell_build_env(c) == {"TORCH_CUDA_ARCH_LIST": "8.0;9.0+PTX"}
    r = Cell(id="r", python="3.12", platform="linux", arch="x86_64", backend="rocm", gpu_archs=("gfx90a",))
    assert cell_build_env(r) == {"PYTORCH_ROCM_ARCH": "gfx90a"}
    assert cell_build_env(None) == {}


def test_tool_failure_names_cell_and_shows_log_tail(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "c.log"
    script = "for i in $(seq 1 40); do echo line $i; done; echo 'error: boom' >&2; exit 3"
    with pytest.raises(ToolError) as err:
        run_tool(["sh", "-c", script], what="python -m build", cell_id="py3.12-linux", log=log)
    exc = err.value
    assert exc.exit_code == 4
    assert "python -m build failed for cell py3.12-linux (exit code 3)" in exc.message
    assert exc.details[-1] == "error: boom" and "line 1" not in exc.details
    assert str(log) in (exc.hint or "") and "line 40" in log.read_text()


def test_missing_tool_is_unavailable() -> None:
    with pytest.raises(UnavailableError):
        run_tool(["xcompat-no-such-tool-here"], what="x")


def test_tool_env_puts_this_interpreters_scripts_first() -> None:
    env = tool_env({"PATH": "/usr/bin"})
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)


def test_build_document_envelope() -> None:
    ok = build_document(project=Path("p"), backend="native", wheels=[], seconds=1.0,
                        cells=[{"id": "a", "status": "passed", "wheels": []}])
    assert (ok["version"], ok["kind"], ok["cell_id"], ok["status"]) == (1, "build", "a", "passed")
    bad = build_document(project=Path("p"), backend="native", wheels=[], seconds=1.0,
                         cells=[{"id": "a", "status": "passed", "wheels": []},
                                {"id": "b", "status": "failed", "wheels": []}],
                         errors=[{"cell_id": "b", "message": "m", "log_tail": []}])
    assert bad["status"] == "failed" and bad["cell_id"] is None and "failed: b" in bad["summary"]
    assert build_document(project=Path("p"), backend="native", wheels=[], cells=[], seconds=0)["status"] == "skipped"


def test_excluded_libs() -> None:
    assert excluded_libs(["libc10.so", "libfoo.so.1", "libcudart.so.12"], D.default_excludes()) == [
        "libc10.so", "libcudart.so.12"]


@pytest.mark.parametrize(
    ("installed", "wanted", "ok"),
    [("2.13.0+cpu", "2.13", True), ("2.13.0", "2.13.0", True), ("2.13.1", "2.13", True), ("2.5.1", "2.13", False),
     ("2.13.0", "2", True), ("2.1.0", "2.13", False), ("weird", "weird", True), ("weird", "2.1", False)],
)
def test_version_matches(installed: str, wanted: str, ok: bool) -> None:
    from xcompat.builder.driver import version_matches

    assert version_matches(installed, wanted) is ok


def test_framework_mismatch_uses_the_installed_torch() -> None:
    from importlib.metadata import version

    from xcompat.builder.driver import framework_mismatch

    installed = version("torch")
    major_minor = ".".join(installed.split(".")[:2])
    base = {"python": "3.11", "platform": "linux", "arch": "x86_64", "backend": "cpu"}
    same = Cell(id="a", frameworks=(("torch", major_minor),), **base)
    other = Cell(id="b", frameworks=(("torch", "1.0"),), **base)
    assert framework_mismatch(same, ("torch",), sys.executable) is None
    reason = framework_mismatch(other, ("torch",), sys.executable)
    assert reason and f"torch {installed}" in reason and "wants 1.0" in reason
    assert framework_mismatch(other, (), sys.executable) is None
