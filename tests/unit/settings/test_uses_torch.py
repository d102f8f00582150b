"""Whether a project uses torch, read from its files without running them."""

from __future__ import annotations

from pathlib import Path

from xcompat.settings.project import uses_torch

EXTENSION_SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

setup(name="ext", ext_modules=[CppExtension("ext._C", ["csrc/ext.cpp"])], cmdclass={"build_ext": BuildExtension})
"""


def test_a_setup_py_that_builds_with_torchs_helpers_uses_torch_without_naming_it(tmp_path: Path):
    (tmp_path / "setup.py").write_text(EXTENSION_SETUP)
    used, why = uses_torch(tmp_path)
    assert used and "cpp_extension" in why


def test_a_setup_py_that_only_mentions_torch_in_a_comment_does_not(tmp_path: Path):
    (tmp_path / "setup.py").write_text("# works with torch.utils.cpp_extension too\nfrom setuptools import setup\n"
                                       "setup(name='plain', install_requires=['numpy'])\n")
    used, why = uses_torch(tmp_path)
    assert not used and "does not build with torch" in why


def test_requirements_still_decide_first(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "1"\ndependencies = ["torch>=2.1"]\n')
    assert uses_torch(tmp_path) == (True, "pyproject.toml [project] dependencies")
