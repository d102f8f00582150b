"""The lane's copy of xcompat carries its package metadata: pytest in the root (where xcompat
is not installed) finds and loads xcompat's plugin from it, as where xcompat is installed."""

from __future__ import annotations

import importlib
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import xcompat
from xcompat.emulation.lane import xcompat_copy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[3]
# what pytest imports besides the standard library; xcompat (and its metadata) left out
PYTEST_DEPS = ("pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "pygments")
PLUGIN_TEST = """\
def test_the_xcompat_plugin_is_loaded(pytestconfig):
    assert pytestconfig.pluginmanager.get_plugin("xcompat") is not None


def test_its_device_fixture_is_there(device):
    assert device == "cpu"
"""

def test_the_copy_names_the_pytest_plugins_of_pyproject(tmp_path: Path) -> None:
    copy = xcompat_copy(tmp_path)
    found = [d for d in metadata.distributions(path=[str(copy)]) if d.metadata["Name"] == "xcompat"]
    assert len(found) == 1, [d.metadata["Name"] for d in found]
    assert found[0].version == xcompat.__version__
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    plugins = {ep.name: ep.value for ep in found[0].entry_points if ep.group == "pytest11"}
    assert plugins == declared["pytest11"] and plugins
    assert xcompat_copy(tmp_path) == copy  # made again in the same folder: one dist-info, not two
    assert len(list(copy.glob("*.dist-info"))) == 1


def _deps(folder: Path) -> Path:
    """A folder holding only pytest and what it imports (links into this venv)."""
    folder.mkdir()
    for name in PYTEST_DEPS:
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional one this pytest does without
            continue
        source = Path(module.__file__ or "")
        if hasattr(module, "__path__"):  # a package: its folder
            source = source.parent
        (folder / source.name).symlink_to(source)
    return folder


def _run_pytest(deps: Path, copy: Path, project: Path) -> subprocess.CompletedProcess[str]:
    # -S: no site-packages, so the only xcompat (and metadata) is the copy on PYTHONPATH
    return subprocess.run([sys.executable, "-S", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plugin.py"],
                          cwd=project, capture_output=True, text=True, timeout=120, check=False,
                          env={"PYTHONPATH": f"{deps}:{copy}", "PATH": "/usr/bin:/bin"})


def test_pytest_outside_any_install_loads_the_plugin_from_the_copy(tmp_path: Path) -> None:
    deps = _deps(tmp_path / "deps")
    copy = xcompat_copy(tmp_path / "lane")
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_plugin.py").write_text(PLUGIN_TEST, encoding="utf-8")
    done = _run_pytest(deps, copy, project)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    for info in copy.glob("*.dist-info"):  # the same copy without its metadata: no plugin
        for path in info.iterdir():
            path.unlink()
        info.rmdir()
    done = _run_pytest(deps, copy, project)
    assert done.returncode == 1 and "1 failed, 1 error" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "fixture 'device' not found" in done.stdout
