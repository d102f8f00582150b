"""A test whose body never ran is never green, however pytest was told not to run it.

``--setup-only`` and ``--setup-plan`` are refused where xcompat sees them (the matrix's
``tests.pytest-args`` and the arguments after ``xcompat test --``), but pytest also reads them
from ``PYTEST_ADDOPTS``, from ``addopts`` in the project's configuration and from
``-o addopts=...``; and a plugin can replace the test protocol. pytest then says "no tests
ran" while every test produced passing set-up and tear-down reports. The verdict is taken
from the reports, so it must not count those as passes."""

from __future__ import annotations

import pytest
from tests.helpers.testing import LEAN_PYTEST, by_name, run_xcompat_test

from xcompat.isolate.classify import BODY_NEVER_RAN

FAILING_WITH_FIXTURE = "import pytest\n\n\n@pytest.fixture\ndef f():\n    return 1\n\n\ndef test_body(f):\n    assert False\n"


def _suite(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_body.py").write_text(FAILING_WITH_FIXTURE)
    return tests


def _assert_never_green(proc, doc):
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert doc is not None and doc["status"] == "failed", doc
    record = by_name(doc)["test_body"]
    assert record["outcome"] == "error" and record["message"] == BODY_NEVER_RAN, record
    assert "the test body never ran" in proc.stderr


@pytest.mark.parametrize(("method", "isolation"), [("fork", "test"), ("fork", "file"), ("spawn", "file"),
                                                   ("fork", "none")])
def test_setup_only_from_pytest_addopts_is_not_a_pass(tmp_path, method, isolation):
    tests = _suite(tmp_path)
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--start-method", method,
                                            "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", env={"PYTEST_ADDOPTS": "--setup-only"}, timeout=120)
    _assert_never_green(proc, doc)


def test_setup_plan_through_an_ini_override_is_not_a_pass(tmp_path):
    tests = _suite(tmp_path)
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--no-warm-torch", "--", *LEAN_PYTEST,
                                            "-o", "addopts=--setup-plan"],
                                 json_out=tmp_path / "r.json", timeout=120)
    _assert_never_green(proc, doc)


def test_setup_only_in_the_projects_pytest_configuration_is_not_a_pass(tmp_path):
    tests = _suite(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --setup-only\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120)
    _assert_never_green(proc, doc)


def test_a_plugin_that_replaces_the_test_protocol_is_not_a_pass(tmp_path):
    tests = _suite(tmp_path)
    (tests / "conftest.py").write_text("def pytest_runtest_protocol(item, nextitem):\n    return True\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", "file", "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120)
    _assert_never_green(proc, doc)
