"""What a native build starts from, decided without compiling: the copy of the sources, the
isolation of a setup.py that imports torch, the toolchain a device backend shows the build,
and the cause a failed tool's output names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xcompat.builder.native import choose_isolation, setup_py_frameworks
from xcompat.builder.sources import copy_sources
from xcompat.builder.tools import failure_cause


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts}


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


SOURCES = {"pyproject.toml": "", "setup.py": "", "pkg/__init__.py": "", "pkg/core.c": "", "pkg/build/helpers.py": ""}
LEFTOVERS = {
    "build/lib.linux-x86_64-cpython-311/pkg/core.cpython-311-x86_64-linux-gnu.so": "",
    "build/temp.linux-x86_64-cpython-311/pkg/core.o": "", "dist/pkg-1.0.tar.gz": "", "pkg.egg-info/SOURCES.txt": "",
    "pkg/core.cpython-311-x86_64-linux-gnu.so": "", "pkg/core.gcda": "", "pkg/__pycache__/x.cpython-311.pyc": "",
    ".xcompat-out/report.md": "", "..xcompat-out.partial-7/logs/build.log": "", ".venv/pyvenv.cfg": "",
    ".venv/lib/site.py": "", ".tox/py/x": "", "my-out/.gitignore": "# an output folder\n*\n", "my-out/a.whl": "",
}


def test_a_plain_folder_is_copied_without_build_output(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _write(project, {**SOURCES, **LEFTOVERS})
    copy = copy_sources(project, tmp_path / "copy")
    # pkg/build is a source package: only the top-level build/ is setuptools' build base.
    assert _tree(copy) == set(SOURCES)


def test_a_git_checkout_copies_what_git_knows_with_its_history(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _write(project, {**SOURCES, **LEFTOVERS, ".gitignore": "*.log\n", "notes.log": "", "new_untracked.py": ""})
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}

    def git(*args: str, cwd: Path = project) -> str:
        return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    git("add", "pyproject.toml", "setup.py", "pkg/__init__.py", "pkg/core.c", "pkg/build/helpers.py", ".gitignore")
    git("commit", "-q", "-m", "one")
    git("tag", "v1.2.3")
    (project / "pkg" / "core.c").write_text("changed")
    copy = copy_sources(project, tmp_path / "copy", exclude=[project / ".venv"])
    # Tracked and untracked-not-ignored files, without the leftovers a build or a venv made.
    assert _tree(copy) == {*SOURCES, ".gitignore", "new_untracked.py"}
    assert (copy / "pkg" / "core.c").read_text() == "changed"
    # Its own repository: the checkout's history, and the checkout's change shows as one.
    assert git("describe", "--tags", cwd=copy).strip() == "v1.2.3"
    assert git("status", "--porcelain", "--untracked-files=no", cwd=copy).strip() == "M pkg/core.c"
    assert git("rev-parse", "--git-dir", cwd=copy).strip() == ".git"


def test_setup_py_imports_decide_the_frameworks(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("import os\nfrom torch.utils.cpp_extension import BuildExtension\n"
                                       "def f():\n    import paddle\n")
    assert setup_py_frameworks(tmp_path) == ("paddlepaddle", "torch")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(")  # broken: no frameworks
    assert setup_py_frameworks(tmp_path) == ()


def test_a_setup_py_only_torch_extension_builds_without_isolation(tmp_path: Path) -> None:
    from importlib.metadata import version

    pytest.importorskip("torch")
    (tmp_path / "setup.py").write_text("import torch\nfrom setuptools import setup\nsetup()\n")
    choice = choose_isolation(tmp_path, "auto", sys.executable)
    assert choice.isolated is False
    assert f"torch=={version('torch')}" in choice.reason and "setup.py imports torch" in choice.reason
    assert choose_isolation(tmp_path, "on", sys.executable).isolated is True


def test_an_imported_framework_that_is_not_installed_leaves_the_build_isolated(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("try:\n    import mlx\nexcept ImportError:\n    mlx = None\n")
    try:
        from importlib.metadata import version

        version("mlx")
        pytest.skip("mlx is installed here")
    except Exception:
        pass
    assert choose_isolation(tmp_path, "auto", sys.executable).isolated is True


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("Traceback (most recent call last):\n  File \"setup.py\", line 4, in <module>\n"
         "ModuleNotFoundError: No module named 'torch'\n\nERROR Backend subprocess exited when trying to invoke "
         "get_requires_for_build_wheel\n", "ModuleNotFoundError: No module named 'torch'"),
        ("tiny.c:1:12: error: expected ';' before '}' token\n    1 | int x( {\n"
         "error: command '/usr/bin/x86_64-linux-gnu-gcc' failed with exit code 1\n"
         "ERROR Backend subprocess exited when trying to invoke build_wheel\n",
         "tiny.c:1:12: error: expected ';' before '}' token"),
        ("csrc/op.cu:3:10: fatal error: cuda_fp8.h: No such file or directory\nninja: build stopped: subcommand failed.\n"
         "RuntimeError: Error compiling objects for extension\n",
         "csrc/op.cu:3:10: fatal error: cuda_fp8.h: No such file or directory"),
        ("\x1b[31mOSError: CUDA_HOME environment variable is not set.\x1b[0m\n",
         "OSError: CUDA_HOME environment variable is not set."),
        ("* Building wheel...\nERROR Backend subprocess exited when trying to invoke build_wheel\n", None),
    ],
)
def test_failure_cause_is_the_last_error_line_not_a_wrapper(text: str, cause: str | None) -> None:
    assert failure_cause(text) == cause


def _real_toolkit() -> Path:
    from tests.helpers.checkout import find_nvcc

    from xcompat.builder.toolchain import is_toolkit

    nvcc = find_nvcc()
    root = Path(nvcc).resolve().parent.parent if nvcc else None
    if root is None or not is_toolkit(root):
        pytest.skip("no CUDA toolkit here (nvcc not on PATH nor in /usr/local/cuda*/bin)")
    return root


def test_a_cpu_build_sees_no_nvcc_and_a_cuda_build_one_toolkit(tmp_path: Path) -> None:
    import shutil

    from xcompat.builder.toolchain import toolchain_for

    root = _real_toolkit()
    # A shared folder (as /usr/local/bin or /usr/bin) with the toolkit's nvcc linked in, beside other tools.
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "nvcc").symlink_to(root / "bin" / "nvcc")
    (shared / "other-tool").symlink_to(shutil.which("true") or "/bin/true")
    path = os.pathsep.join([str(root / "bin"), str(shared), os.defpath])
    cpu = toolchain_for("cpu", {"PATH": path, "CUDA_HOME": str(root), "CUDACXX": str(root / "bin" / "nvcc")},
                        tmp_path / "scratch")
    assert cpu is not None
    assert shutil.which("nvcc", path=cpu.env["PATH"]) is None
    assert shutil.which("other-tool", path=cpu.env["PATH"]) is not None
    assert "CUDA_HOME" not in cpu.env and "CUDACXX" not in cpu.env
    assert str(root / "bin") not in cpu.env["PATH"].split(os.pathsep)

    cuda = toolchain_for("cuda", {"PATH": os.pathsep.join([str(shared), os.defpath])}, tmp_path / "scratch")
    assert cuda is not None
    assert cuda.env["CUDA_HOME"] == cuda.env["CUDA_PATH"] == str(root)
    assert Path(shutil.which("nvcc", path=cuda.env["PATH"]) or "").resolve() == (root / "bin" / "nvcc").resolve()
    assert toolchain_for("rocm", {"PATH": path}, tmp_path) is None


def test_torch_backend_reads_the_installed_torch() -> None:
    from xcompat.builder.toolchain import torch_backend

    torch = pytest.importorskip("torch")
    expected = "rocm" if torch.version.hip else "cuda" if torch.version.cuda else "cpu"
    assert torch_backend(sys.executable) == expected
