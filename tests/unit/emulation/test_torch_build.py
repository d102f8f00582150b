"""A lane's build of a project that compiles against torch: not cross built where the arch has
a torch (the host's torch is another architecture's), torch-free cross built where it has none,
and refused in one line when the project's torch requirement excludes the lane's torch. Nothing
here starts QEMU: each decision is taken before the root is used."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from xcompat.emulation.arches import arch
from xcompat.emulation.binfmt import Emulator
from xcompat.emulation.build import _failure, _lane_torch, check_torch_requirement
from xcompat.emulation.cross import CrossUnavailable, cross_build, refuse_torch_build, torch_build
from xcompat.emulation.lane import Lane
from xcompat.errors import InputError, XcompatError

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sample-ext"
PYPROJECT = """\
[build-system]
requires = [{requires}]
build-backend = "setuptools.build_meta"

[project]
name = "demo"
version = "1.0"
dependencies = [{dependencies}]
"""
TORCH_SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(ext_modules=[CppExtension("demo._ops", ["ops.cpp"])], cmdclass={"build_ext": BuildExtension})
"""


def _project(tmp_path: Path, requires: str = '"setuptools"', dependencies: str = "",
             setup: str | None = None) -> Path:
    project = tmp_path / "demo"
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT.format(requires=requires, dependencies=dependencies),
                                            encoding="utf-8")
    if setup is not None:
        (project / "setup.py").write_text(setup, encoding="utf-8")
    return project


def _lane(tmp_path: Path, name: str) -> Lane:
    row = arch(name)
    return Lane(arch=row, root=tmp_path / "root", emulator=Emulator(name, "/x", "/q", "7.2.22"), cpu=row.rich,
                floor=None, python="3.11", suite="bookworm")


def test_the_sample_with_its_op_is_not_cross_built_for_aarch64_and_says_why(tmp_path: Path) -> None:
    source = shutil.copytree(SAMPLE, tmp_path / "sample", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    with pytest.raises(CrossUnavailable) as caught:
        cross_build(source, tmp_path / "no-root", arch("aarch64"), tmp_path / "out", tmp_path / "work")
    message = str(caught.value)
    assert "compiles against torch (torch is in its [build-system] requires)" in message
    assert "not the lane's aarch64 torch 2.6.0" in message
    assert not (tmp_path / "out").exists() and not (tmp_path / "work").exists()  # refused before any work


def test_a_caller_that_turns_the_torch_part_off_keeps_the_cross_build(tmp_path: Path) -> None:
    """The sample's SAMPLE_EXT_TORCH=0 is a switch of its own: the caller says the build is torch-free."""
    source = shutil.copytree(SAMPLE, tmp_path / "sample", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    with pytest.raises(XcompatError) as caught:  # past the torch check: the root is missing
        cross_build(source, tmp_path / "no-root", arch("aarch64"), tmp_path / "out", tmp_path / "work", torch=False)
    assert "torch" not in str(caught.value)
    assert _lane_torch(_lane(tmp_path, "aarch64"), source, torch=False) == \
        ("torch is in its [build-system] requires", False)
    assert not (tmp_path / "root").exists()  # no torch install was tried


def test_a_setup_py_that_builds_with_torch_counts_without_a_build_requirement(tmp_path: Path) -> None:
    project = _project(tmp_path, setup=TORCH_SETUP)
    assert torch_build(project) == "its setup.py imports torch"
    with pytest.raises(CrossUnavailable, match="its setup.py imports torch"):
        refuse_torch_build(project, arch("aarch64"))


@pytest.mark.parametrize("name", ["s390x", "ppc64le"])
def test_an_arch_without_torch_keeps_the_torch_free_cross_build(name: str, tmp_path: Path) -> None:
    project = _project(tmp_path, requires='"setuptools", "torch>=2.4"')
    refuse_torch_build(project, arch(name))  # no refusal: the cross build runs without torch
    assert _lane_torch(_lane(tmp_path, name), project) == ("torch is in its [build-system] requires", False)
    assert not (tmp_path / "root").exists()  # no torch install was tried


def test_torch_only_at_run_time_does_not_stop_the_cross_build(tmp_path: Path) -> None:
    project = _project(tmp_path, dependencies='"torch>=2.4"')
    assert torch_build(project) is None
    refuse_torch_build(project, arch("aarch64"))
    assert _lane_torch(_lane(tmp_path, "aarch64"), project) == (None, False)


def test_a_torch_requirement_the_lane_torch_does_not_meet_is_one_line(tmp_path: Path) -> None:
    check_torch_requirement(["setuptools", "torch>=2.4"], "2.6.0", "aarch64")
    check_torch_requirement(["torch>=2.7; python_version < '3'"], "2.6.0", "aarch64")  # a marker: pip decides
    with pytest.raises(InputError, match=r"requires torch>=2\.7, and the aarch64 lane's torch is 2\.6\.0") as caught:
        check_torch_requirement(["torch>=2.7"], "2.6.0", "aarch64")
    assert "\n" not in str(caught.value)
    project = _project(tmp_path, requires='"setuptools", "torch>=2.7"')
    with pytest.raises(InputError, match="torch>=2.7"):
        _lane_torch(_lane(tmp_path, "aarch64"), project)
    assert not (tmp_path / "root").exists()  # refused before torch is installed


def test_a_failed_build_is_told_by_its_own_exception_not_by_pips_closing_notes() -> None:
    log = ("Processing /src\n  error: subprocess-exited-with-error\n  Traceback (most recent call last):\n"
           "      ModuleNotFoundError: No module named 'torch'\n  [end of output]\n"
           "note: This is an issue with the package mentioned above, not pip.\nhint: See above for details.\n")
    assert _failure(log) == "ModuleNotFoundError: No module named 'torch'"
    assert _failure("one\ntwo\nthree\nfour\n") == "two | three | four"  # no exception: the last lines
