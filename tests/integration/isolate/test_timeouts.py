"""`--timeout` at its edges: a test that runs past its limit but ends before it is stopped (during
the stack dump's grace, or with ``--isolate none``, where nothing stops it), a test that stops
itself with SIGSTOP, and the first test of a spawned process. The same outcome in every mode,
and never green."""

from __future__ import annotations

import textwrap

import pytest
from tests.helpers.testing import LEAN_PYTEST, by_name, run_xcompat_test

MODES = [("fork", "file"), ("fork", "test"), ("spawn", "file"), ("spawn", "test"), ("fork", "none")]

SUITE = textwrap.dedent("""\
    import os
    import signal
    import time


    def test_over_by_a_little():
        time.sleep(1.25)  # past the 1 s timeout, within the 0.5 s before the kill


    def test_next_runs_after_it():
        time.sleep(0.3)


    def test_fast():
        pass
""")


@pytest.mark.parametrize(("method", "isolation"), MODES, ids=[f"{m}-{i}" for m, i in MODES])
def test_a_test_past_its_timeout_is_a_timeout_even_when_it_ends_before_the_kill(tmp_path, method, isolation):
    # Before: passed in every mode, and with --isolate file the next test of the file was
    # killed in the overdue test's place and blamed as a timeout.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_edge.py").write_text(SUITE)
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(tests), "--isolate", isolation, "--start-method", method, "--timeout", "1", "--no-warm-torch", "--",
         *LEAN_PYTEST],
        json_out=tmp_path / "result.json",
        timeout=120,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    assert doc is not None and doc["status"] != "passed"
    records = by_name(doc)
    over = records["test_over_by_a_little"]
    assert over["outcome"] == "timeout", over
    assert over["message"].startswith("timed out after 1s; it ended at 1.2"), over["message"]
    assert records["test_next_runs_after_it"]["outcome"] == "passed", records["test_next_runs_after_it"]
    assert records["test_fast"]["outcome"] == "passed"
    # pytest's own summary counts it too (an error at teardown), as the verdict does
    assert "1 error" in proc.stdout, proc.stdout[-1500:]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_hung_first_test_of_a_spawned_or_forked_process_is_stopped_at_its_timeout(tmp_path, method):
    # A spawned process used to give its first test the 60 s start allowance on top of the
    # timeout: with --isolate test, every test is a first test, so none was ever stopped in time.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_hang.py").write_text("import time\n\n\ndef test_hangs():\n    time.sleep(40)\n")
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(tests), "--isolate", "test", "--start-method", method, "--timeout", "1", "--no-warm-torch", "--",
         *LEAN_PYTEST],
        json_out=tmp_path / "result.json",
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    record = by_name(doc)["test_hangs"]
    assert record["outcome"] == "timeout", record
    assert record["duration_s"] < 10, record["duration_s"]
    assert "stack dumped, then killed" in record["message"]
    assert "test_hang.py" in record["crash"]["traceback"]


def test_a_test_that_stops_itself_gets_its_stack_dumped(tmp_path):
    # SIGSTOP: the dump signal is handled only once the process runs again (SIGCONT follows it)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_stop.py").write_text(textwrap.dedent("""\
        import os
        import signal


        def test_stops_itself():
            os.kill(os.getpid(), signal.SIGSTOP)


        def test_after():
            pass
    """))
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(tests), "--isolate", "file", "--timeout", "1", "--no-warm-torch", "--", *LEAN_PYTEST],
        json_out=tmp_path / "result.json",
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    records = by_name(doc)
    stopped = records["test_stops_itself"]
    assert stopped["outcome"] == "timeout", stopped
    assert "test_stop.py" in stopped["crash"]["traceback"], stopped["crash"]
    assert records["test_after"]["outcome"] == "passed", records["test_after"]
