"""`xcompat test` when something ends the session or a test process early: an internal error
of pytest, ``pytest.exit()`` in a test, a test that calls ``os._exit(0)``. Never green, and
never re-run for ever."""

from __future__ import annotations

import os
import textwrap

import pytest
from tests.helpers.testing import LEAN_PYTEST, run_xcompat_test

MODES = [("fork", "file"), ("fork", "test"), ("spawn", "file"), ("spawn", "test")]


def test_an_internal_error_of_pytest_is_never_green(tmp_path):
    # A plugin that breaks in the parent after the first test: pytest stops with INTERNALERROR
    # (exit 3) and the other tests never run. They are errors, and the run is red.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(textwrap.dedent("""\
        import os

        PARENT = os.getpid()
        seen = []


        def pytest_runtest_logreport(report):
            if os.getpid() == PARENT and report.when == "teardown":
                seen.append(report.nodeid)
                if len(seen) == 1:
                    raise RuntimeError("reporter plugin broke")
    """))
    for name in ("a", "b", "c"):
        (tests / f"test_{name}.py").write_text(f"def test_{name}():\n    pass\n")
    for isolation in ("file", "test", "none"):
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--no-warm-torch", "--",
                                                *LEAN_PYTEST], json_out=tmp_path / f"{isolation}.json")
        assert proc.returncode == 1, (isolation, proc.stderr)
        assert doc is not None and doc["status"] == "failed", isolation
        outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in doc["tests"]}
        assert outcomes["test_b"] == "error" and outcomes["test_c"] == "error", (isolation, outcomes)
        never = next(t for t in doc["tests"] if t["nodeid"].endswith("test_c"))
        assert "internal error" in never["message"]


def test_pytest_exit_in_a_test_is_never_green(tmp_path):
    # in process: the session stops as in plain pytest; isolated: only the test's process ends
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_a():\n    pass\n")
    (tests / "test_b.py").write_text("import pytest\n\n\ndef test_b():\n    pytest.exit('database is gone')\n")
    (tests / "test_c.py").write_text("def test_c():\n    pass\n")
    for method, isolation in [*MODES, ("fork", "none")]:
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--start-method", method,
                                                "--no-warm-torch", "--", *LEAN_PYTEST],
                                     json_out=tmp_path / f"{method}-{isolation}.json", timeout=120)
        assert proc.returncode == 1, (method, isolation, proc.returncode, proc.stderr[-2000:])
        assert doc is not None and doc["status"] == "failed", isolation
        records = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
        assert records["test_a"]["outcome"] == "passed"
        assert records["test_b"]["outcome"] == "error"
        assert "pytest.exit()" in records["test_b"]["message"] and "database is gone" in records["test_b"]["message"]
        # isolated: only b's process ended, c ran; in process: the session stopped, c has no result
        expected_c = "error" if isolation == "none" else "passed"
        assert records["test_c"]["outcome"] == expected_c, (isolation, records["test_c"])


@pytest.mark.parametrize(("method", "isolation"), MODES, ids=[f"{m}-{i}" for m, i in MODES])
def test_a_test_that_calls_os_exit_0_crashed_and_is_not_rerun(tmp_path, method, isolation):
    # The process ends with status 0 in the middle of the test. Taken for a clean end, the
    # test would go back to the queue and end its next process the same way, for ever.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_a():\n    pass\n")
    (tests / "test_b.py").write_text("import os\n\n\ndef test_b():\n    os._exit(0)\n\n\ndef test_b2():\n    pass\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--start-method", method,
                                            "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert doc is not None and doc["status"] == "crashed"
    outcomes = {t["nodeid"].split("::")[-1]: (t["outcome"], t["message"]) for t in doc["tests"]}
    assert outcomes["test_a"][0] == "passed" and outcomes["test_b2"][0] == "passed"
    assert outcomes["test_b"] == ("crashed", "process exited with status 0 during the test")


def test_a_test_that_removes_the_runs_temp_folder_does_not_stop_the_run(tmp_path):
    # The parent keeps each test process's output files in a temp folder; a test that cleans
    # the temp directory removes it. The next process gets a new one instead of an INTERNALERROR.
    # (Only this run's folder is removed: the one its stdout file is in.)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text(textwrap.dedent("""\
        import os, shutil, time


        def test_cleans_temp():
            folder = os.path.dirname(os.readlink("/proc/self/fd/1"))
            assert os.path.basename(folder).startswith("xcompat-test-")
            # the next test's process is forked meanwhile (prefork): wait for its files, so that
            # they go too
            deadline = time.monotonic() + 10
            while len([f for f in os.listdir(folder) if f.startswith("out-")]) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            shutil.rmtree(folder)
    """))
    (tests / "test_b.py").write_text("def test_after():\n    print('after')\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", "test", "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120, env={"XCOMPAT_TEST_PREFORK": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert doc is not None and {t["nodeid"].split("::")[-1]: t["outcome"] for t in doc["tests"]} == {
        "test_cleans_temp": "passed", "test_after": "passed"}


def test_a_test_process_that_fails_outside_its_test_is_an_error_in_pytest_summary_too(tmp_path):
    # The test closes every descriptor (the parent's message pipe among them), so its results
    # never arrive and its process ends with xcompat's "failed outside a test" status. The verdict
    # counted it as an error; pytest's own summary (and --junitxml) left it out.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_fds.py").write_text(
        "import os\n\n\ndef test_ok():\n    pass\n\n\n"
        "def test_closes_everything():\n    os.closerange(3, 4096)\n    assert False\n\n\n"
        "def test_after():\n    pass\n"
    )
    for isolation in ("file", "test"):
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--no-warm-torch", "--",
                                                *LEAN_PYTEST, "--junitxml", str(tmp_path / "junit.xml")],
                                     json_out=tmp_path / f"{isolation}.json", timeout=120)
        assert proc.returncode == 1, (isolation, proc.stderr[-2000:])
        records = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
        assert records["test_closes_everything"]["outcome"] == "error", records
        assert records["test_ok"]["outcome"] == "passed" and records["test_after"]["outcome"] == "passed"
        assert "2 passed, 1 error" in proc.stdout, (isolation, proc.stdout[-1500:])
        junit = (tmp_path / "junit.xml").read_text()
        assert 'errors="1"' in junit, junit[:600]


def test_a_test_that_ends_the_in_process_session_is_never_green(tmp_path):
    # --isolate none: the tests share one process. os._exit(0) there used to end xcompat itself
    # with exit 0 and no result; a segfault ended it with no result either. The session now runs
    # in a child of xcompat, which decides the verdict from what that child recorded.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_a():\n    pass\n\n\ndef test_a_fails():\n    assert 1 == 2\n")
    for name, body in (("exit0", "os._exit(0)"), ("segv", "ctypes.string_at(0)")):
        (tests / f"test_b_{name}.py").write_text(
            f"import ctypes, os\n\n\ndef test_b():\n    {body}\n\n\ndef test_b2():\n    pass\n")
        (tests / "test_c.py").write_text("def test_c():\n    pass\n")
        proc, doc = run_xcompat_test(tmp_path, [str(tests / "test_a.py"), str(tests / f"test_b_{name}.py"),
                                                str(tests / "test_c.py"), "--isolate", "none", "--", *LEAN_PYTEST],
                                     json_out=tmp_path / f"{name}.json", timeout=120)
        assert proc.returncode == 1, (name, proc.returncode, proc.stderr[-2000:])
        assert doc is not None and doc["status"] == "crashed", name
        records = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
        assert records["test_a"]["outcome"] == "passed" and records["test_a_fails"]["outcome"] == "failed"
        assert "assert 1 == 2" in records["test_a_fails"]["longrepr"], records["test_a_fails"]  # why it failed
        assert records["test_b"]["outcome"] == "crashed", records
        how = "exit code 0" if name == "exit0" else "killed by SIGSEGV"
        assert how in records["test_b"]["message"], records["test_b"]
        assert records["test_b2"]["outcome"] == "error" and records["test_c"]["outcome"] == "error"
        assert "before this test ran" in records["test_c"]["message"]
        assert f"crashed: {records['test_b']['nodeid']}" in proc.stderr


def test_a_plugin_that_ends_the_in_process_session_after_the_tests_is_never_green(tmp_path):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text("import os\n\n\ndef pytest_sessionfinish(session):\n    os._exit(0)\n")
    (tests / "test_a.py").write_text("def test_a():\n    pass\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", "none", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120)
    assert proc.returncode == 1, proc.stderr[-2000:]
    records = {t["nodeid"]: t for t in doc["tests"]}
    assert records["<pytest session>"]["outcome"] == "crashed"
    assert "outside any test" in records["<pytest session>"]["message"]
    assert next(t for n, t in records.items() if n.endswith("test_a"))["outcome"] == "passed"


def test_an_error_inside_the_in_process_session_keeps_its_exit_code_and_hint(tmp_path):
    # raised in the session process, shown and exited on by the parent as before: exit 2, one line
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tmp_path / "tests"), "--isolate", "none", "--", *LEAN_PYTEST,
                                            "-k", "nothing_matches"], json_out=tmp_path / "r.json", timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert doc is None
    assert "no tests were collected" in proc.stderr and "check the paths" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "single-file"])
def test_coverage_run_still_measures_an_in_process_session(tmp_path, parallel):
    # The supervised session ends by os._exit: it saves coverage.py's data itself (parallel
    # mode), or runs in the measured process (single data file), never a silent 0%.
    import subprocess
    import sys

    from tests.helpers.testing import xcompat_env

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("def f(x):\n    if x:\n        return 1\n    return 2\n")
    (tmp_path / "test_p.py").write_text("import pkg\n\n\ndef test_f():\n    assert pkg.f(1) == 1\n")
    env = xcompat_env()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    cov = [sys.executable, "-m", "coverage"]
    run = subprocess.run([*cov, "run", *(["--parallel-mode"] if parallel else []), "--source=pkg", "-m", "xcompat",
                          "test", "test_p.py", "--isolate", "none", "--", *LEAN_PYTEST],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    if parallel:
        subprocess.run([*cov, "combine", "-q"], cwd=tmp_path, env=env, check=True, timeout=60)
    report = subprocess.run([*cov, "report"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
                            check=True)
    assert "75%" in report.stdout.splitlines()[-1], report.stdout


def test_a_test_that_raises_keyboardinterrupt_in_process_is_its_failure_not_an_abort(tmp_path):
    # pytest stops the whole session on a KeyboardInterrupt. With --isolate none, xcompat used to
    # take that for the user's Ctrl-C: exit 130, "interrupted; no results were written", and
    # `xcompat run` then aborted the whole run without a report.
    from xcompat.isolate.supervised import TEST_INTERRUPT

    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_k.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    raise KeyboardInterrupt\n\n\n"
                                     "def test_c():\n    pass\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", "none", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert doc is not None and doc["status"] == "crashed"
    records = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
    assert records["test_a"]["outcome"] == "passed"
    assert records["test_b"]["outcome"] == "crashed" and TEST_INTERRUPT in records["test_b"]["message"]
    assert records["test_c"]["outcome"] == "error"


@pytest.mark.parametrize("mode", [("test",), ("file",), ("test", "--start-method", "spawn")],
                         ids=["fork-test", "fork-file", "spawn-test"])
def test_a_test_that_raises_keyboardinterrupt_in_its_process_is_named_for_it(tmp_path, mode):
    # In a test process SIGINT is at its default action, so a KeyboardInterrupt there is the
    # test's own. It used to read "test process failed outside the test (exit code 70)".
    from xcompat.isolate.classify import TEST_INTERRUPT_IN_PROCESS

    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_k.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    raise KeyboardInterrupt\n\n\n"
                                     "def test_c():\n    pass\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", *mode, "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json", timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    records = {t["nodeid"].split("::")[-1]: t for t in doc["tests"]}
    assert records["test_b"]["outcome"] == "crashed", records["test_b"]
    assert records["test_b"]["message"] == TEST_INTERRUPT_IN_PROCESS
    assert "KeyboardInterrupt" in records["test_b"]["output_tail"]
    assert records["test_a"]["outcome"] == records["test_c"]["outcome"] == "passed"  # the others still ran


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="sends SIGINT to a process group")
def test_ctrl_c_during_an_in_process_session_still_interrupts(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers.testing import xcompat_env

    tests = tmp_path / "tests"
    tests.mkdir()
    marker = tmp_path / "started"
    (tests / "test_slow.py").write_text(
        f"import pathlib, time\n\n\ndef test_slow():\n    pathlib.Path({str(marker)!r}).touch()\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "xcompat", "test", str(tests), "--isolate", "none", "--json",
                             str(tmp_path / "r.json"), "--", *LEAN_PYTEST],
                            cwd=tmp_path, env=xcompat_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # its own group: a terminal's Ctrl-C reaches it all
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), proc.communicate(timeout=5)
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err
