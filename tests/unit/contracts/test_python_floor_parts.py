"""The python-floor check's parts: vermin's parsable output, Requires-Python floors, the
choice of sources, and the findings."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from xcompat.contracts.python_floor import floor_findings
from xcompat.contracts.requires_python import floor_of, from_pyproject, from_wheel, parse_version
from xcompat.contracts.sources import package_sources
from xcompat.contracts.vermin_run import Requirement, parse_parsable
from xcompat.errors import InputError

OUTPUT = """\
src/p/a.py:3::!2:3.10:pattern matching
src/p/a.py:6:4:!2:3.6:f-strings
src/p/a.py:::!2:3.10:
C:/odd:dir/b.py:1::2.7:3.8:positional-only parameters
src/p/c.py:2::!2:~3:unknown thing
src/p/d.py:2::!2:!3:print statement
:::!2:3.10:
Detecting python files..
garbage:with:colons
"""


def test_parse_keeps_constructs_only() -> None:
    found = parse_parsable(OUTPUT)
    assert found == [
        Requirement("src/p/a.py", 3, "pattern matching", (3, 10)),
        Requirement("src/p/a.py", 6, "f-strings", (3, 6)),
        Requirement("C:/odd:dir/b.py", 1, "positional-only parameters", (3, 8)),
    ]


def test_parse_bad_output_finds_nothing() -> None:
    assert parse_parsable("\0\0\n" + "x" * 100_000 + "\n:::::::\n") == []


@pytest.mark.parametrize(("spec", "floor"), [
    (">=3.9", (3, 9)), (">=3.9.2", (3, 9)), ("~=3.10", (3, 10)), (">3.8", (3, 8)), (">3.8.99", (3, 9)),
    (">=2.7, !=3.0.*, !=3.1.*, !=3.2.*", (3, 3)), ("", (3, 0)), ("==3.12.*", (3, 12)),
])
def test_floor_of(spec: str, floor: tuple[int, int]) -> None:
    assert floor_of(spec, source="x") == floor


@pytest.mark.parametrize("spec", [">=three", "<3.0", ">=3.9,<3.9", "=>3.9"])
def test_floor_of_refuses(spec: str) -> None:
    with pytest.raises(InputError):
        floor_of(spec, source="x")


def test_parse_version() -> None:
    assert parse_version("3.10") == (3, 10)
    for bad in ("3", "3.10.1", "py3.9", ""):
        with pytest.raises(InputError):
            parse_version(bad)


def test_requires_python_from_pyproject_and_wheel(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nrequires-python = ">=3.9"\n')
    assert from_pyproject(tmp_path / "pyproject.toml") == ">=3.9"
    (tmp_path / "pyproject.toml").write_text('[project]\nrequires-python = 3\n')
    with pytest.raises(InputError, match="not a string"):
        from_pyproject(tmp_path / "pyproject.toml")
    (tmp_path / "pyproject.toml").write_text("[project\n")
    with pytest.raises(InputError, match="invalid TOML"):
        from_pyproject(tmp_path / "pyproject.toml")
    wheel = tmp_path / "p-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("p-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: p\nRequires-Python: >=3.8\n\n")
    assert from_wheel(wheel) == ">=3.8"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("p/__init__.py", "")
    with pytest.raises(InputError, match="METADATA"):
        from_wheel(wheel)


def test_sources_are_the_package_not_tests_builds_or_venvs(tmp_path: Path) -> None:
    files = ["src/p/__init__.py", "src/p/core.py", "src/p/tests/test_core.py", "src/p/tests/helpers.py",
             "tests/test_x.py", "build/lib/p/core.py", "venv2/lib/x.py", ".tox/py/x.py", "setup.py",
             "src/p/conftest.py", "docs/conf.py", "src/p/core_test.py", "p.egg-info/x.py"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "venv2" / "pyvenv.cfg").write_text("home = /usr\n")
    assert package_sources(tmp_path) == ["src/p/__init__.py", "src/p/core.py"]


def test_findings_name_the_lowest_floor_exceeded() -> None:
    reqs = [Requirement("a.py", 3, "pattern matching", (3, 10)), Requirement("a.py", 9, "walrus", (3, 8)),
            Requirement("b.py", 1, "except*", (3, 11))]
    found = floor_findings(reqs, [("Requires-Python", (3, 9)), ("the lowest Python of the matrix", (3, 10))])
    assert [(f.code, f.fields["line"], f.fields["floor"]) for f in found] == [
        ("above-requires-python", 3, "3.9"), ("above-requires-python", 1, "3.9")]
    assert found[0].message == "a.py:3: pattern matching requires 3.10; Requires-Python allows 3.9"
    only_matrix = floor_findings(reqs, [("the lowest Python of the matrix", (3, 10))])
    assert [f.code for f in only_matrix] == ["above-lowest-python"]
