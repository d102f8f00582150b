"""`xcompat test` when a test file cannot be collected, and when pytest itself is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import tomllib
from tests.helpers.testing import LEAN_PYTEST, REPO, by_name, run_xcompat_test, xcompat_env


def _suite(root: Path) -> Path:
    tests = root / "tests"
    tests.mkdir()
    (tests / "test_fine.py").write_text("def test_fine():\n    assert 1 + 1 == 2\n")
    (tests / "test_broken.py").write_text(textwrap.dedent("""\
        def load():
            raise ValueError("setting 'mode' is missing\\nsee the project's README")

        load()


        def test_never():
            pass
    """))
    return tests


def test_a_file_that_cannot_be_collected_stops_the_run_like_pytest(tmp_path):
    tests = _suite(tmp_path)
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json")
    assert proc.returncode == 1, proc.stderr
    assert doc is not None and doc["status"] == "failed"
    assert [(t["nodeid"], t["outcome"]) for t in doc["tests"]] == [("tests/test_broken.py", "error")]
    assert doc["tests"][0]["message"] == "collection failed: ValueError: setting 'mode' is missing"
    assert "error: tests/test_broken.py: collection failed: ValueError: setting 'mode' is missing" in proc.stderr
    assert "error: error:" not in proc.stderr
    assert "--continue-on-collection-errors" in proc.stderr
    # plain pytest runs nothing either
    plain = subprocess.run([sys.executable, "-m", "pytest", str(tests), "-q", *LEAN_PYTEST], cwd=tmp_path,
                           capture_output=True, text=True, env=xcompat_env(), timeout=300, check=False)
    assert plain.returncode == 2 and "1 error" in plain.stdout and "passed" not in plain.stdout


def test_continue_on_collection_errors_runs_the_other_files(tmp_path):
    tests = _suite(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path, [str(tests), "--no-warm-torch", "--", *LEAN_PYTEST, "--continue-on-collection-errors"],
        json_out=tmp_path / "r.json")
    assert proc.returncode == 1, proc.stderr
    assert doc is not None
    outcomes = {name: t["outcome"] for name, t in by_name(doc).items()}
    assert outcomes == {"tests/test_broken.py": "error", "test_fine": "passed"}


def test_without_pytest_the_exit_is_5_with_the_install_line(tmp_path):
    tests = _suite(tmp_path)
    (tests / "test_broken.py").unlink()
    blocker = ("import sys; sys.modules['pytest'] = None; sys.modules['_pytest'] = None; "
               "from xcompat.cli import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.run([sys.executable, "-c", blocker, "test", str(tests), "--no-warm-torch"],
                          cwd=tmp_path, capture_output=True, text=True, env=xcompat_env(), timeout=300, check=False)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "pytest is not installed" in proc.stderr and "pip install 'xcompat[runner]'" in proc.stderr


def test_the_runner_extra_brings_pytest_and_every_install_set_that_runs_tests_includes_it():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(req.replace(" ", "").startswith("pytest>=") for req in extras["runner"])
    assert "xcompat[runner]" in extras["testing"]
    assert "runner" in extras["all"][0]



def test_a_file_skipped_while_collected_is_recorded_and_is_not_no_tests_collected(tmp_path):
    # pytest.importorskip at module level skips the whole file before any test exists. It used
    # to leave no record (pytest said "2 skipped", xcompat "1 tests"), and a run of only such
    # files ended with "no tests were collected ... check the paths" (exit 2, no result).
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_optional.py").write_text(
        "import pytest\n\nnope = pytest.importorskip('module_that_is_not_installed')\n\n\ndef test_a():\n    pass\n"
    )
    (tests / "test_plain.py").write_text("def test_b():\n    pass\n")
    for isolation in ("file", "test", "none"):
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--no-warm-torch", "--",
                                                *LEAN_PYTEST], json_out=tmp_path / f"{isolation}.json", timeout=120)
        assert proc.returncode == 0, (isolation, proc.stderr[-1500:])
        records = {t["nodeid"]: t for t in doc["tests"]}
        skipped = records["tests/test_optional.py"]
        assert skipped["outcome"] == "skipped", skipped
        assert "could not import 'module_that_is_not_installed'" in skipped["message"]
        assert records["tests/test_plain.py::test_b"]["outcome"] == "passed"
        assert doc["counts"]["skipped"] == 1 and doc["status"] == "passed", doc["counts"]

    only = tests / "test_optional.py"
    proc, doc = run_xcompat_test(tmp_path, [str(only), "--isolate", "file", "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "only.json", timeout=120)
    assert proc.returncode == 0, proc.stderr[-1500:]
    assert "no tests were collected" not in proc.stderr
    assert doc["status"] == "skipped" and [t["outcome"] for t in doc["tests"]] == ["skipped"]


def test_pytest_options_that_run_no_test_are_refused(tmp_path):
    # --setup-only used to give "2 passed" with no test body run; --co "no tests were collected"
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_a():\n    assert False\n")
    for option in ("--setup-only", "--setup-plan", "--co"):
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--no-warm-torch", "--", *LEAN_PYTEST, option],
                                     json_out=tmp_path / "r.json", timeout=120)
        assert proc.returncode == 2, (option, proc.returncode, proc.stderr[-800:])
        assert f"pytest option {option} makes pytest" in proc.stderr
        assert "Traceback" not in proc.stderr and doc is None
