"""tools/check_sizes.py, the size check of `make lint`: a module of src/ over 400 lines or a
function over 80 fails it unless pyproject.toml lists the reason, and a listed reason that
excuses nothing fails it too."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "check_sizes.py"


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_sizes", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def function(name: str, lines: int) -> str:
    """A function of ``lines`` lines, its ``def`` and ``return`` included."""
    return f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 2)) + "    return 0\n"


def project(tmp_path: Path, modules: dict[str, str], exceptions: dict[str, str] | None = None) -> Path:
    for relative, text in modules.items():
        path = tmp_path / "src" / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    table = "".join(f'"{key}" = "{reason}"\n' for key, reason in (exceptions or {}).items())
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n\n[tool.xcompat-lint.size-exceptions]\n" + table)
    return tmp_path


def test_a_planted_long_function_fails(tmp_path):
    root = project(tmp_path, {"ok.py": function("short", 80), "bad.py": function("short", 5) + function("planted", 81)})
    report = load_checker().check(root)
    assert report == ["src/pkg/bad.py:planted: function of 81 lines (limit 80)"]


def test_a_long_method_is_found_by_its_name(tmp_path):
    method = "class C:\n" + "".join("    " + line + "\n" for line in function("method", 90).splitlines())
    report = load_checker().check(project(tmp_path, {"m.py": method}))
    assert report == ["src/pkg/m.py:method: function of 90 lines (limit 80)"]


def test_a_long_module_fails(tmp_path):
    report = load_checker().check(project(tmp_path, {"big.py": "x = 1\n" * 401, "edge.py": "x = 1\n" * 400}))
    assert report == ["src/pkg/big.py: module of 401 lines (limit 400)"]


def test_a_listed_reason_excuses_it_and_a_stale_one_fails(tmp_path):
    modules = {"bad.py": function("planted", 81)}
    checker = load_checker()
    assert checker.check(project(tmp_path, modules, {"src/pkg/bad.py:planted": "a flat table"})) == []
    stale = checker.check(project(tmp_path, {"bad.py": function("planted", 80)}, {"src/pkg/bad.py:planted": "a flat table"}))
    assert stale == ["src/pkg/bad.py:planted: listed in size-exceptions but within the limits (remove it)"]


def test_a_reason_must_be_given(tmp_path):
    with pytest.raises(ValueError, match="reason"):
        load_checker().check(project(tmp_path, {"ok.py": "x = 1\n"}, {"src/pkg/ok.py": " "}))


@pytest.mark.parametrize(("planted", "code"), [(81, 1), (80, 0)])
def test_the_script_exits_nonzero_on_a_finding(tmp_path, planted, code):
    root = project(tmp_path, {"bad.py": function("planted", planted)})
    proc = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert ("planted" in proc.stdout) is bool(code)
