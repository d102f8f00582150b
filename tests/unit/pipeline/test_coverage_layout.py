"""What the coverage stage measures for each project layout, and how it compares the two test runs."""

from __future__ import annotations

from pathlib import Path

from xcompat.pipeline.coverage_layout import Layout, coverage_rc, omitted_test_files, project_layout
from xcompat.pipeline.coverage_outcomes import NAMED_DIFFERENCES, collection_failure, outcome_differences


def _touch(root: Path, *paths: str) -> None:
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")


def test_flat_layout_measures_its_packages_not_its_tests_folder(tmp_path):
    _touch(tmp_path, "pyproject.toml", "sample_ext/__init__.py", "sample_ext/ops.py", "csrc/core.c",
           "tests/__init__.py", "tests/test_core.py", "docs/conf.py")
    assert project_layout(tmp_path) == Layout(root="", packages=("sample_ext",), modules=(), native=True)


def test_src_layout_measures_what_is_under_src(tmp_path):
    _touch(tmp_path, "pyproject.toml", "src/markupsafe/__init__.py", "src/markupsafe/_speedups.c",
           "src/helpers.py", "src/conftest.py", "tests/test_escape.py")
    layout = project_layout(tmp_path)
    assert layout == Layout(root="src", packages=("markupsafe",), modules=("helpers",), native=True)
    assert layout.python == ("markupsafe", "helpers")


def test_a_src_folder_of_c_sources_alone_is_not_a_src_layout(tmp_path):
    # ujson: the C sources live under src/, the module is built at the top
    _touch(tmp_path, "setup.py", "src/ujson/python/objToJSON.c", "tests/test_ujson.py")
    assert project_layout(tmp_path) == Layout(root="", packages=(), modules=(), native=True)


def test_build_output_and_virtual_environments_do_not_make_a_project_native(tmp_path):
    _touch(tmp_path, "pyproject.toml", "purepkg/__init__.py", "build/temp/x.c", ".venv/lib/y.c")
    assert project_layout(tmp_path).native is False


def test_tests_inside_a_package_and_named_targets_are_left_out(tmp_path):
    _touch(tmp_path, "simplejson/__init__.py", "simplejson/decoder.py", "simplejson/tests/__init__.py",
           "simplejson/tests/test_dump.py", "simplejson/tests/helpers.py", "simplejson/test/data.py",
           "simplejson/conftest.py", "simplejson/scanner_test.py", "simplejson/testing.py", "checks/run.py")
    layout = Layout(root="", packages=("simplejson",), modules=(), native=False)
    found = {p.relative_to(tmp_path).as_posix() for p in omitted_test_files(tmp_path, layout, [tmp_path / "checks"])}
    assert found == {"simplejson/tests/__init__.py", "simplejson/tests/test_dump.py", "simplejson/tests/helpers.py",
                     "simplejson/test/data.py", "simplejson/conftest.py", "simplejson/scanner_test.py",
                     "checks/run.py"}


def test_the_configuration_names_packages_and_exact_test_paths(tmp_path):
    layout = Layout(root="src", packages=("pkg",), modules=("mod",), native=False)
    odd = tmp_path / "tests [1]" / "test_x.py"
    rc = coverage_rc(tmp_path / "rc", data_file=tmp_path / ".coverage", layout=layout, omit=[odd]).read_text()
    assert "parallel = true" in rc and f"data_file = {tmp_path / '.coverage'}" in rc
    assert "source_pkgs =\n    pkg\n    mod\n" in rc
    assert f"    {tmp_path}/tests [[]1]/test_x.py" in rc  # the glob character is escaped


def _result(*tests: tuple[str, str]) -> dict:
    return {"tests": [{"nodeid": n, "outcome": o} for n, o in tests]}


def test_a_test_with_another_outcome_under_coverage_is_named():
    stage = _result(("tests/t.py::a", "passed"), ("tests/t.py::b", "passed"), ("tests/t.py::hang", "timeout"),
                    ("tests/t.py::c", "xfailed"))
    measured = _result(("tests/t.py::a", "passed"), ("tests/t.py::b", "failed"), ("tests/t.py::hang", "timeout"),
                       ("tests/t.py::c", "xpassed"))
    assert outcome_differences(stage, measured) == [
        "tests/t.py::b: passed in the test stage, failed under coverage (the verdict is the test stage's)"]
    assert outcome_differences(None, measured) == []


def test_pyargs_node_ids_compare_from_the_package_on():
    stage = _result((".site/simplejson/tests/test_dump.py::test_a", "passed"))
    measured = _result(("src/simplejson/tests/test_dump.py::test_a", "error"))
    (warning,) = outcome_differences(stage, measured, anchors=("simplejson/",))
    assert warning.startswith("simplejson/tests/test_dump.py::test_a: passed in the test stage, error under coverage")


def test_many_differences_are_counted_after_the_first_ones():
    n = NAMED_DIFFERENCES + 5
    stage = _result(*((f"t.py::x{i}", "passed") for i in range(n)))
    measured = _result(*((f"t.py::x{i}", "failed") for i in range(n)))
    warnings = outcome_differences(stage, measured)
    assert len(warnings) == NAMED_DIFFERENCES + 1
    assert warnings[-1] == "and 5 more test(s) with another outcome under coverage"


def test_a_run_whose_files_could_not_be_collected_measured_nothing():
    failed = {"nodeid": "tests/test_core.py", "outcome": "error",
              "message": "collection failed: ImportError: cannot import name '_core'"}
    assert collection_failure({"tests": [failed]}) == (
        "tests/test_core.py: collection failed: ImportError: cannot import name '_core'")
    # some tests ran (pytest told to continue): measured, and the file is a warning
    ran = {"tests": [failed, {"nodeid": "tests/test_ok.py::test_a", "outcome": "passed"}]}
    assert collection_failure(ran) is None
    stage = _result(("tests/test_ok.py::test_a", "passed"))
    assert outcome_differences(stage, ran) == [
        "tests/test_core.py: error under coverage, and not in the test stage's results"]
    assert collection_failure({"tests": []}) is None
