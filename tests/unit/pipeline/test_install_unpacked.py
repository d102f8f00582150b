"""The test stage's install: a wheel unpacked into the site folder holds what ``pip install
--target`` writes there; a wheel with scripts or data files is left to pip."""

from __future__ import annotations

import base64
import hashlib
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from xcompat.log import Logger
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.install import unpack_wheels
from xcompat.pipeline.local import LocalPipeline, RunConfig
from xcompat.pipeline.stages.test import install_site
from xcompat.settings import defaults_settings

# pip's own bookkeeping, and the bytecode it compiles: not part of the wheel
PIP_ONLY = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}


def _wheel(folder: Path, name: str, files: dict[str, str], *, purelib: bool = False) -> Path:
    """A valid wheel of ``files`` (paths in the wheel), with its metadata and RECORD."""
    info = f"{name}-1.0.dist-info"
    files = {**files,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: {str(purelib).lower()}\n"
                              "Tag: py3-none-any\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and p.name not in PIP_ONLY}


def test_an_unpacked_wheel_is_what_pip_install_target_writes(tmp_path):
    wheels = [
        _wheel(tmp_path, "alpha", {"alpha/__init__.py": "X = 1\n", "alpha/sub/mod.py": "Y = 2\n",
                                   "alpha-1.0.data/platlib/alpha_ext.py": "Z = 3\n"}),
        _wheel(tmp_path, "beta", {"beta.py": "B = 1\n", "beta-1.0.data/purelib/beta_extra/x.py": "C = 1\n"},
               purelib=True),
    ]
    pip_site, ours = tmp_path / "pip-site", tmp_path / "ours"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--target", str(pip_site), *map(str, wheels)], check=True)
    written = unpack_wheels(wheels, ours)
    assert written is not None
    assert _tree(ours) == _tree(pip_site)
    assert "alpha_ext.py" in _tree(ours) and not list(ours.glob("*.data"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".unpack-")] == []


@pytest.mark.parametrize("extra", [
    {"gamma-1.0.data/scripts/gamma-tool": "#!python\nprint('hi')\n"},
    {"gamma-1.0.data/data/share/gamma.txt": "data\n"},
    {"gamma-1.0.data/headers/gamma.h": "int g;\n"},
    {"gamma-1.0.dist-info/entry_points.txt": "[console_scripts]\ngamma = gamma:main\n"},
], ids=["scripts", "data", "headers", "console-scripts"])
def test_a_wheel_with_files_outside_the_library_is_left_to_pip(tmp_path, extra):
    wheel = _wheel(tmp_path, "gamma", {"gamma/__init__.py": "def main(): pass\n", **extra})
    assert unpack_wheels([wheel], tmp_path / "site") is None
    assert not (tmp_path / "site").exists()


def test_the_test_stage_installs_by_unpacking_and_falls_back_to_pip(tmp_path):
    cfg = RunConfig(project=tmp_path, matrix=tmp_path / "m.yml", allowed_signers=None, baseline=None,
                    out=tmp_path / "out", settings=defaults_settings(required_backends=("cpu",)), signed=False)
    pipe = LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO()))
    pipe.stage_dir.mkdir(parents=True)
    stages = RunContext(pipe)
    stages.wheels = [_wheel(tmp_path, "alpha", {"alpha/__init__.py": "X = 1\n"})]
    site = install_site(stages)
    assert site is not None and (site / "alpha" / "__init__.py").is_file()
    assert "unpacked alpha-1.0-py3-none-any.whl" in pipe.path("logs", "install.log").read_text()

    with_script = RunContext(pipe)
    (tmp_path / "other").mkdir()
    with_script.wheels = [_wheel(tmp_path / "other", "gamma", {
        "gamma/__init__.py": "def main(): pass\n",
        "gamma-1.0.dist-info/entry_points.txt": "[console_scripts]\ngamma = gamma:main\n"})]
    pipe.path(".site").rename(pipe.path(".site-alpha"))
    site = install_site(with_script)
    assert site is not None and (site / "bin" / "gamma").is_file()  # pip wrote the script
    assert "pip install" in pipe.path("logs", "install.log").read_text()
