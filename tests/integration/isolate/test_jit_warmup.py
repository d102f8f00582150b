"""A suite that uses numba gets numba's compiler set up in the warm parent, before the first fork.

The test processes then start with what numba's first compilation in a process sets up (LLVM,
the CPU target, the typing registries) and compile, or load from numba's on-disk cache, only
their own functions. Each test logs whether numba was set up when it started, and every
compilation (tests/helpers/jit_suite.py); nothing here is timed.
"""

from __future__ import annotations

import pytest
from tests.helpers.jit_suite import LOG_ENV, jit_project, log_lines
from tests.helpers.testing import LEAN_PYTEST, run_xcompat_test

numba = pytest.importorskip("numba")

TESTS = 4


def _run(project, log, *, isolate="test", env=None):
    proc, doc = run_xcompat_test(project, ["tests", "--isolate", isolate, "--", *LEAN_PYTEST],
                                 json_out=project.parent / f"r-{isolate}.json", env={LOG_ENV: str(log), **(env or {})})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc is not None and doc["counts"]["passed"] == TESTS
    return doc


def test_each_test_process_starts_with_numba_set_up_and_compiles_only_its_functions(tmp_path):
    project = jit_project(tmp_path, tests=TESTS)
    log = tmp_path / "jit.log"
    doc = _run(project, log)
    assert doc["warmup"]["numba"] == numba.__version__ and "numba" in doc["warmup"]["preloaded"]
    starts = log_lines(log, "start")
    assert len(starts) == TESTS and len({pid for _, pid, _ in starts}) == TESTS  # a process per test
    assert [state for *_, state in starts] == ["warm"] * TESTS
    compiles = log_lines(log, "compile")
    test_pids = {pid for _, pid, _ in starts}
    # the parent compiled its one warm-up function, once; each test process its own two
    warm_ups = [pid for _, pid, name in compiles if name == "<lambda>"]
    assert len(warm_ups) == 1 and warm_ups[0] not in test_pids
    assert sorted(pid for _, pid, name in compiles if name == "norm2") == sorted(test_pids)

    # the same suite with the warm-up switched off: every test process sets numba up itself
    log.unlink()
    doc = _run(project, log, env={"XCOMPAT_TEST_WARM_NUMBA": "0"})
    assert doc["warmup"]["numba"] is None
    assert [state for *_, state in log_lines(log, "start")] == ["cold"] * TESTS


def test_numba_imported_by_the_projects_package_is_set_up_too(tmp_path):
    # no test file names numba: collection imports it through the package
    project = jit_project(tmp_path, tests=TESTS, kernels_in_package=True)
    log = tmp_path / "jit.log"
    doc = _run(project, log, isolate="file")
    assert doc["warmup"]["numba"] == numba.__version__
    assert [state for *_, state in log_lines(log, "start")] == ["warm"] * TESTS


def test_with_an_on_disk_cache_one_process_compiles_and_the_others_load_it(tmp_path):
    project = jit_project(tmp_path, tests=TESTS, cache=True)
    log = tmp_path / "jit.log"
    _run(project, log, env={"NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")})
    starts = log_lines(log, "start")
    assert len({pid for _, pid, _ in starts}) == TESTS
    assert [state for *_, state in starts] == ["warm"] * TESTS
    # one compilation of each function in the whole run: the other processes load it
    names = [name for _, _, name in log_lines(log, "compile") if name != "<lambda>"]
    assert names.count("norm2") == 1 and names.count("scaled") == 1
