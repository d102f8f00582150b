"""``xcompat build --backend cibuildwheel`` for real: cibuildwheel starts the builder image,
builds, repairs and tests the wheel in it. On the bundled sample (C, abi3 and a torch op
built against the CPU torch of a mounted wheel folder) and on a third-party sdist.

Checked: wheels come out, build.json is right, the wheels install and import on this host,
and what xcompat derived (selectors, image, container options, before-build/test, repair
with the torch/CUDA excludes, test command) is what cibuildwheel resolved and ran, read
back from cibuildwheel's own log.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cibw_log import CibwLog, read_cibw_log

from xcompat import jsonio
from xcompat.builder import defaults as D

IDENT = f"cp{sys.version_info.major}{sys.version_info.minor}-manylinux_x86_64"
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
# The op through torch (the wheel's tests beyond test_core need xcompat and hypothesis).
SAMPLE_TEST = ('python -m pytest -p no:cacheprovider {package}/tests/test_core.py && python -c "import torch, '
               'sample_ext; r = sample_ext.scaled_add(torch.ones(3), torch.ones(3), 2.0); '
               'assert r.tolist() == [3.0] * 3, r"')


@dataclass(frozen=True)
class Built:
    proc: subprocess.CompletedProcess[str]
    out: Path
    record: dict[str, Any]
    log: CibwLog
    log_text: str

    @property
    def run_env(self) -> dict[str, str]:
        (run,) = self.record["settings"]["runs"]
        return run["env"]


def matrix(frameworks: str = "") -> str:
    return (f'xcompat: 1\nrepo: acme/containers\nserial: 1\npython: ["{PY}"]\n'
            "platforms:\n  linux:\n    archs: [x86_64]\nbackends:\n  cpu: {}\n" + frameworks)


def xcompat_build(root: Path, project: Path, *extra: str) -> Built:
    (root / "matrix.yml").write_text(matrix("frameworks:\n  torch: [\"2.13\"]\n" if "sample" in project.name else ""))
    proc = subprocess.run(
        [sys.executable, "-m", "xcompat", "build", str(project), "--backend", "cibuildwheel", "--matrix",
         "matrix.yml", "--out", "out", *extra],
        cwd=root, capture_output=True, text=True, timeout=900, env={**os.environ, "CI": ""}, check=False,
    )
    out = root / "out"
    assert proc.returncode == 0, proc.stderr[-4000:]
    record = jsonio.read_json(out / "build.json", schema="build")
    (log_file,) = (out / "logs").glob("cibuildwheel-*.log")
    text = log_file.read_text(encoding="utf-8", errors="replace")
    return Built(proc=proc, out=out, record=record, log=read_cibw_log(text), log_text=text)


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_project: Path) -> Built:
    root = tmp_path_factory.mktemp("sample")
    # A clean copy: no host build leftovers (build/, *.so) may reach the container.
    shutil.copytree(sample_project, root / "sample", symlinks=False,
                    ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "*.so", "__pycache__", ".xcompat"))
    return xcompat_build(root, Path("sample"), "--test-command", SAMPLE_TEST)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Built:
    root = tmp_path_factory.mktemp("sdist")
    archive = Path(os.environ["XCOMPAT_CONTAINER_SDIST"])
    with tarfile.open(archive) as tar:
        tar.extractall(root / "src", filter="data")
    (project,) = (root / "src").iterdir()
    return xcompat_build(root, project.relative_to(root))


def _wheel(built: Built) -> dict[str, Any]:
    (wheel,) = built.record["wheels"]
    return wheel


def check_record(built: Built, name: str) -> Path:
    record = built.record
    assert record["backend"] == "cibuildwheel" and record["status"] == "passed" and not record["errors"]
    (cell,) = record["cells"]
    wheel = _wheel(built)
    assert cell == {"id": cell["id"], "status": "passed", "identifier": IDENT, "wheels": [wheel["file"]]}
    assert wheel["cell_id"] == cell["id"] and wheel["identifier"] == IDENT and wheel["name"] == name
    path = built.out / wheel["file"]
    assert path.is_file() and not list(built.out.glob(".cibw-*"))
    assert hashlib.sha256(path.read_bytes()).hexdigest() == wheel["sha256"] and path.stat().st_size == wheel["size"]
    assert wheel["tags"] and all(t.startswith(f"{IDENT.split('-')[0]}-") for t in wheel["tags"])
    assert any("-manylinux_" in t for t in wheel["tags"])
    assert (built.out / wheel["log"]).is_file()
    return path


def check_ran_as_derived(built: Built) -> None:
    """cibuildwheel's resolved options are xcompat's derived CIBW_* values, and the commands
    it ran in the container are those values with its placeholders filled in."""
    env, log = built.run_env, built.log
    assert log.option("build_selector", "build_config") == env["CIBW_BUILD"] == IDENT
    assert log.option("build_selector", "skip_config") == env["CIBW_SKIP"] == "*-musllinux_*"
    assert log.option("architectures") == env["CIBW_ARCHS_LINUX"] == "x86_64"
    assert log.option("manylinux_images", "x86_64") == env["CIBW_MANYLINUX_X86_64_IMAGE"]
    assert env["CIBW_MANYLINUX_X86_64_IMAGE"] == os.environ["XCOMPAT_CPU_BUILDER_IMAGE"]
    assert log.option("container_engine", "name") == "docker"
    create_args = ast.literal_eval(log.option("container_engine", "create_args"))
    assert create_args == tuple(shlex.split(os.environ["XCOMPAT_CONTAINER_ARGS"]))
    assert env["CIBW_CONTAINER_ENGINE"] == "docker; create_args: " + os.environ["XCOMPAT_CONTAINER_ARGS"]
    assert log.option("repair_command") == env["CIBW_REPAIR_WHEEL_COMMAND_LINUX"]
    assert log.option("test_command") == env["CIBW_TEST_COMMAND"]
    assert log.option("test_requires") == env["CIBW_TEST_REQUIRES"] == "pytest"
    # CPU cells set no build environment (CUDA/ROCm cells do: configuration-tested only).
    assert log.option("environment") == env.get("CIBW_ENVIRONMENT_LINUX", "") == ""
    assert "Invalid skip selector" not in built.log_text
    # The repair that ran: auditwheel with every torch/CUDA/ROCm exclude, on the built wheel.
    (repair,) = [c for c in log.shell_commands() if c.startswith("auditwheel repair")]
    argv = shlex.split(repair)
    template = shlex.split(env["CIBW_REPAIR_WHEEL_COMMAND_LINUX"])
    assert len(argv) == len(template)
    filled = {"{dest_dir}": "/tmp/cibuildwheel/repaired_wheel"}
    for ran, derived in zip(argv, template):
        if derived == "{wheel}":
            assert ran.startswith("/tmp/cibuildwheel/built_wheel/") and ran.endswith(".whl")
        else:
            assert ran == filled.get(derived, derived)
    excluded = {argv[i + 1] for i, a in enumerate(argv) if a == "--exclude"}
    assert set(D.default_excludes()) == excluded
    assert {"libtorch.so*", "libc10.so*", "libcudart.so*", "libcublas.so*"} <= excluded
    # The test command that ran, with {package} the project inside the container.
    assert env["CIBW_TEST_COMMAND"].replace("{package}", "/project") in log.shell_commands()
    # cibuildwheel copied the project itself into /project (it copies its working directory):
    # not the folder xcompat was started from, with the project in a subfolder.
    (build,) = log.ran("python", "-m", "build")
    assert build[3] == "/project", build


def test_sample_wheel_and_record(sample: Built) -> None:
    path = check_record(sample, "sample-ext")
    wheel = _wheel(sample)
    # libtorch/libc10 are needed from outside and were left out, not grafted.
    assert {"libc10.so", "libtorch_cpu.so"} <= set(wheel["external_libs"])
    assert set(wheel["excluded_libs"]) == set(wheel["external_libs"])
    names = zipfile.ZipFile(path).namelist()
    assert any(n.startswith("sample_ext/_ops") for n in names)
    assert not [n for n in names if ".libs/" in n and ("torch" in n or "c10" in n or "cuda" in n)]
    assert wheel["platform_policy"]["source"] in ("auditwheel-json", "auditwheel-text")


def test_sample_settings_are_what_cibuildwheel_ran(sample: Built) -> None:
    check_ran_as_derived(sample)
    env, log = sample.run_env, sample.log
    # Built without isolation against the cell's torch, installed first; tested against it too.
    assert log.option("build_frontend") == {"name": "build", "args": "['--no-isolation']"}
    assert env["CIBW_BUILD_FRONTEND"] == "build; args: --no-isolation"
    assert log.option("before_build") == env["CIBW_BEFORE_BUILD"]
    assert log.option("before_test") == env["CIBW_BEFORE_TEST"] == "pip install 'torch==2.13.*'"
    assert shlex.split(env["CIBW_BEFORE_BUILD"])[:3] == ["pip", "install", "torch==2.13.*"]
    assert "--extra-index-url" not in env["CIBW_BEFORE_BUILD"]  # XCOMPAT_TORCH_INDEX='' here
    shell = log.shell_commands()
    assert shell.index(env["CIBW_BEFORE_BUILD"]) < shell.index(env["CIBW_BEFORE_TEST"])
    (build,) = log.ran("python", "-m", "build")
    assert "--no-isolation" in build
    assert sample.log_text.count("torch-2.13.0+cpu") >= 2  # before build and before test
    assert " 12 passed" in sample.log_text or "passed in" in sample.log_text


def test_sample_wheel_installs_and_imports_on_this_host(sample: Built, tmp_path: Path) -> None:
    path = sample.out / _wheel(sample)["file"]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path), str(path)],
                   check=True, timeout=300)
    code = (f"import torch, sample_ext, zlib; assert sample_ext.__file__.startswith({str(tmp_path)!r}), sample_ext.__file__; "
            "assert sample_ext.scale([1.0, 2.5], 2.0) == [2.0, 5.0]; "
            "assert sample_ext.checksum(b'abc') == zlib.adler32(b'abc'); "
            "r = sample_ext.scaled_add(torch.ones(4), torch.full((4,), 2.0), 0.5); "
            "assert r.tolist() == [2.0] * 4, r; print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


def test_sdist_wheel_and_record(sdist: Built) -> None:
    name = Path(os.environ["XCOMPAT_CONTAINER_SDIST"]).name.split("-")[0]
    check_record(sdist, name)
    check_ran_as_derived(sdist)
    env = sdist.run_env
    assert "CIBW_BEFORE_BUILD" not in env and "CIBW_BUILD_FRONTEND" not in env  # no framework to pin
    # The project's own tests ran in the container and passed.
    assert "passed" in sdist.log_text.split("Testing wheel...", 1)[1]


def test_sdist_wheel_installs_and_imports_on_this_host(sdist: Built, tmp_path: Path) -> None:
    path = sdist.out / _wheel(sdist)["file"]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp_path), str(path)],
                   check=True, timeout=300)
    extensions = [n for n in zipfile.ZipFile(path).namelist() if n.endswith(".so")]
    assert extensions, "the wheel carries no compiled module"
    modules = [n[: -len(".so")].split(".")[0].replace("/", ".") for n in extensions]
    code = ("import importlib, sys; mods = [importlib.import_module(m) for m in sys.argv[1:]]; "
            f"assert all(m.__file__.startswith({str(tmp_path)!r}) for m in mods), [m.__file__ for m in mods]; print('ok')"
            )
    proc = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
