"""Test processes forked from the zygote (``xcompat.isolate.zygote``), and without it.

Each test of the generated suites writes its process's parent to a file; the conftest writes
the warm parent's pid at collection (conftests are imported by the warm parent). The runs go
through the real CLI in a subprocess.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.testing import CRASHY_ENV, LEAN_PYTEST, by_name, crashy_suite_copy, run_xcompat_test

from xcompat.isolate import zygote

CONFTEST = """
import os
from pathlib import Path

Path(os.environ["PIDS_DIR"], "warm-parent").write_text(str(os.getpid()))
"""

RECORDING_TEST = """
import os
from pathlib import Path


def _record(name):
    Path(os.environ["PIDS_DIR"], name).write_text(f"{os.getpid()} {os.getppid()}")


def test_a():
    _record("a")


def test_b():
    _record("b")
    import signal

    if os.environ.get("KILL_ZYGOTE") == "1":
        os.kill(os.getppid(), signal.SIGKILL)  # the process that forked this one
    if os.environ.get("STOP_ZYGOTE") == "1":
        os.kill(os.getppid(), signal.SIGSTOP)


def test_c():
    _record("c")


def test_d():
    _record("d")
"""


def _suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_pids.py").write_text(RECORDING_TEST)
    (tmp_path / "pids").mkdir()
    return suite


def _run(tmp_path: Path, env: dict[str, str], *extra: str) -> tuple[dict[str, tuple[int, int]], int, dict]:
    suite = _suite(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(suite), "--isolate", "test", *extra, "--", *LEAN_PYTEST],
        json_out=tmp_path / "result.json",
        env={"PIDS_DIR": str(tmp_path / "pids"), **env},
        timeout=120,
    )
    assert doc is not None, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [t["outcome"] for t in doc["tests"]] == ["passed"] * 4
    pids = {}
    for name in "abcd":
        pid, ppid = (tmp_path / "pids" / name).read_text().split()
        pids[name] = (int(pid), int(ppid))
    return pids, int((tmp_path / "pids" / "warm-parent").read_text()), doc


@pytest.mark.skipif(
    not zygote.supported(), reason="no zygote on this platform (pidfds and SCM_RIGHTS are Linux's)"
)
def test_test_processes_are_forked_from_one_zygote(tmp_path: Path) -> None:
    pids, warm, _ = _run(tmp_path, {"XCOMPAT_TEST_ZYGOTE": "1"})
    parents = {ppid for _, ppid in pids.values()}
    assert len({pid for pid, _ in pids.values()}) == 4  # a process per test
    assert len(parents) == 1  # one zygote forked them all
    assert warm not in parents  # not the warm parent itself


def test_without_the_zygote_the_warm_parent_forks_them(tmp_path: Path) -> None:
    pids, warm, _ = _run(tmp_path, {"XCOMPAT_TEST_ZYGOTE": "0"})
    assert {ppid for _, ppid in pids.values()} == {warm}


@pytest.mark.skipif(
    not zygote.supported(), reason="no zygote on this platform (pidfds and SCM_RIGHTS are Linux's)"
)
def test_a_test_that_kills_the_zygote_ends_neither_the_run_nor_its_own_result(tmp_path: Path) -> None:
    pids, warm, doc = _run(tmp_path, {"KILL_ZYGOTE": "1", "XCOMPAT_TEST_ZYGOTE": "1"}, "--timeout", "20")
    zygote_pid = pids["a"][1]
    assert zygote_pid != warm
    assert pids["b"][1] == zygote_pid  # the test killed the process that forked it...
    # ...and the tests after it were forked by the warm parent itself
    assert pids["c"][1] == warm and pids["d"][1] == warm
    assert by_name(doc)["test_b"]["outcome"] == "passed"


@pytest.mark.skipif(
    not zygote.supported(), reason="no zygote on this platform (pidfds and SCM_RIGHTS are Linux's)"
)
def test_a_test_that_stops_the_zygote_costs_the_run_one_wait(tmp_path: Path) -> None:
    """A stopped zygote never answers: after XCOMPAT_ZYGOTE_ANSWER_S the parent kills it and
    forks the rest itself."""
    env = {"STOP_ZYGOTE": "1", "XCOMPAT_ZYGOTE_ANSWER_S": "2", "XCOMPAT_TEST_ZYGOTE": "1"}
    pids, warm, doc = _run(tmp_path, env, "--timeout", "20")
    zygote_pid = pids["a"][1]
    assert pids["b"][1] == zygote_pid != warm
    # test_c runs in the spare the zygote forked while test_b ran, unless test_b stopped the
    # zygote first; the next process is one the parent forks itself
    assert pids["c"][1] in (zygote_pid, warm)
    assert pids["d"][1] == warm
    assert doc["duration_s"] < 15


@pytest.mark.parametrize("zygote_on", ["1", "0"])
def test_crashes_and_hangs_read_the_same_with_and_without_the_zygote(tmp_path: Path, zygote_on: str) -> None:
    """The exit status comes from the zygote's ``waitpid`` or the parent's own: same records."""
    suite = crashy_suite_copy(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(suite / "test_crashy.py"), "--timeout", "3", "--", *LEAN_PYTEST],
        json_out=tmp_path / "result.json",
        env={**CRASHY_ENV, "XCOMPAT_TEST_ZYGOTE": zygote_on},
    )
    assert doc is not None, proc.stderr[-3000:]
    tests = by_name(doc)
    outcomes = {
        name: tests[name]["outcome"] for name in ("test_segfault", "test_abort", "test_hang", "test_os_exit")
    }
    assert outcomes == {
        "test_segfault": "crashed",
        "test_abort": "crashed",
        "test_hang": "timeout",
        "test_os_exit": "crashed",
    }, json.dumps(tests, indent=1)[:3000]
    assert "SIGSEGV" in tests["test_segfault"]["message"]
    assert "SIGABRT" in tests["test_abort"]["message"]
    assert tests["test_healthy_after_segfault"]["outcome"] == "passed"
    assert proc.returncode == 1
