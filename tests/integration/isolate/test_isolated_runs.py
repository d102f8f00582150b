"""``xcompat test`` on a suite of tests that really segfault, abort, hang, exit and leak.

Each run goes through the real CLI in a subprocess, forks from a parent that imported and
warmed torch, and is checked test by test; the JSON is validated against its schema and
the JUnit XML is parsed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.helpers.testing import CRASHY_ENV, LEAN_PYTEST, by_name, crashy_suite_copy, run_xcompat_test

from xcompat.jsonio import validate

CELL = "py3.11-linux-x86_64-cpu-torch2.13"


@pytest.fixture(scope="module")
def per_test_run(tmp_path_factory: pytest.TempPathFactory):
    """The whole crashy suite, one process per test, with host leak checks."""
    tmp = tmp_path_factory.mktemp("per-test")
    suite = crashy_suite_copy(tmp)
    junit = tmp / "junit.xml"
    proc, doc = run_xcompat_test(
        tmp,
        [
            str(suite),
            "--timeout",
            "3",
            "--leaks",
            "host",
            "--leak-repeat",
            "4",
            "--cell-id",
            CELL,
            "--junit",
            str(junit),
            "--",
            *LEAN_PYTEST,
        ],
        json_out=tmp / "result.json",
        env=CRASHY_ENV,
    )
    assert doc is not None, proc.stderr[-3000:]
    return proc, doc, junit


def test_every_outcome_is_recorded(per_test_run) -> None:
    proc, doc, _ = per_test_run
    tests = by_name(doc)
    expected = {
        "test_healthy_first": "passed",
        "test_segfault": "crashed",
        "test_healthy_after_segfault": "passed",
        "test_abort": "crashed",
        "test_hang": "timeout",
        "test_os_exit": "crashed",
        "test_raises": "failed",
        "test_xfails": "xfailed",
        "test_xpasses": "xpassed",
        "test_skipped": "skipped",
        "test_fixture_error": "error",
        "test_leaks_native_memory": "leaked",
        "test_marked_leak": "leaked",
        "test_leaks_python_objects": "leaked",
        "test_healthy_param[1]": "passed",
        "test_healthy_param[2]": "passed",
        "test_healthy_param[3]": "passed",
        "test_torch_matmul_in_forked_child": "passed",
        "test_torch_after_healthy": "passed",
    }
    assert {name: t["outcome"] for name, t in tests.items()} == expected
    assert proc.returncode == 1
    assert doc["status"] == "crashed"
    assert doc["counts"]["crashed"] == 3 and doc["counts"]["leaked"] == 3 and doc["counts"]["passed"] == 7


def test_crashes_carry_signal_and_faulthandler_traceback(per_test_run) -> None:
    _, doc, _ = per_test_run
    tests = by_name(doc)
    segv = tests["test_segfault"]
    assert segv["crash"]["signal"] == "SIGSEGV" and segv["crash"]["signal_number"] == 11
    assert "Segmentation fault" in segv["crash"]["traceback"]
    assert (
        'test_crashy.py", line' in segv["crash"]["traceback"]
        and "in test_segfault" in segv["crash"]["traceback"]
    )
    assert "about to dereference NULL" in segv["output_tail"]
    abort = tests["test_abort"]
    assert abort["crash"]["signal"] == "SIGABRT" and "in test_abort" in abort["crash"]["traceback"]
    exited = tests["test_os_exit"]
    assert exited["crash"]["signal"] is None and exited["crash"]["exit_code"] == 3
    assert "exited with status 3" in exited["message"]


def test_hang_is_killed_after_a_stack_dump(per_test_run) -> None:
    _, doc, _ = per_test_run
    hang = by_name(doc)["test_hang"]
    assert hang["crash"]["signal"] == "SIGKILL"
    # The dump was taken before the kill: it shows where the test was stuck.
    assert "in test_hang" in hang["crash"]["traceback"] and "threading.py" in hang["crash"]["traceback"]
    assert 3.0 <= hang["duration_s"] < 30
    assert "waiting forever" in hang["output_tail"]


def test_leaks_are_told_apart(per_test_run) -> None:
    _, doc, _ = per_test_run
    tests = by_name(doc)
    native = tests["test_leaks_native_memory"]["leaks"][0]
    python = tests["test_leaks_python_objects"]["leaks"][0]
    assert native["leaked"] and native["where"] == "native" and native["growth_bytes"] >= 4 * 400 * 1024
    assert python["leaked"] and python["where"] == "python" and python["python_bytes"] >= 4 * 400 * 1024
    healthy = tests["test_healthy_first"]["leaks"][0]
    assert healthy["leaked"] is False and healthy["repeats"] == 4
    assert tests["test_marked_leak"]["leaks"][0]["repeats"] == 3  # the marker's own setting


def test_a_leak_is_an_error_in_pytest_summary_too(tmp_path) -> None:
    # pytest saw the leaking test pass; its summary said "3 passed" while the verdict said leaked
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_mem.py").write_text(
        "LEAK = []\n\n\ndef test_leaks():\n    LEAK.append(bytearray(4 * 1024 * 1024))\n\n\n"
        "def test_fine():\n    x = bytearray(8 * 1024 * 1024)\n    del x\n"
    )
    for isolation in ("test", "none"):
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--leaks", "host",
                                                "--no-warm-torch", "--", *LEAN_PYTEST],
                                     json_out=tmp_path / f"{isolation}.json", timeout=120)
        assert proc.returncode == 1, (isolation, proc.stderr[-1500:])
        assert by_name(doc)["test_leaks"]["outcome"] == "leaked"
        assert by_name(doc)["test_fine"]["outcome"] == "passed"
        assert "2 passed, 1 error" in proc.stdout, (isolation, proc.stdout[-1200:])
        assert "leaked: host memory grew" in proc.stdout


def test_failure_details_and_skip_reasons(per_test_run) -> None:
    _, doc, _ = per_test_run
    tests = by_name(doc)
    assert tests["test_raises"]["message"] == "ValueError: a plain failure"
    assert "raise ValueError" in tests["test_raises"]["longrepr"]
    assert tests["test_skipped"]["message"] == "not on this runner"
    assert tests["test_xfails"]["message"] == "known bug"
    assert "fixture setup failed on purpose" in tests["test_fixture_error"]["message"]
    # Once, then 2 warm-up and 4 measured calls of the leak check.
    assert tests["test_healthy_param[2]"]["output_tail"] == "param 2\n" * 7
    assert doc["warmup"]["torch"] and doc["start_method"] == "fork" and doc["devices"] == ["cpu"]


def test_json_result_matches_schema(per_test_run) -> None:
    _, doc, _ = per_test_run
    validate("test-result", doc)
    assert doc["version"] == 1 and doc["kind"] == "test" and doc["cell_id"] == CELL


def test_junit_names_carry_the_cell_id(per_test_run) -> None:
    _, doc, junit = per_test_run
    root = ET.parse(junit).getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == len(doc["tests"])
    assert all(c.get("name").endswith(f" [{CELL}]") for c in cases)
    by_case = {c.get("name").split(" [")[0]: c for c in cases}
    assert by_case["test_segfault"].find("error").get("type") == "crashed"
    assert by_case["test_hang"].find("error").get("type") == "timeout"
    assert by_case["test_raises"].find("failure").get("type") == "failed"
    assert by_case["test_leaks_native_memory"].find("failure").get("type") == "leaked"
    assert by_case["test_skipped"].find("skipped") is not None
    suite = root.find("testsuite")
    assert suite.get("errors") == "5" and suite.get("failures") == "4"


# Both run with a spare process forked ahead (the default only on machines with cores to spare).
PREFORK_ENV = {**CRASHY_ENV, "XCOMPAT_TEST_PREFORK": "1"}


def test_file_isolation_continues_after_a_crash(tmp_path: Path) -> None:
    suite = crashy_suite_copy(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path,
        [
            str(suite / "test_crashy.py"),
            "--isolate",
            "file",
            "--timeout",
            "3",
            "--no-warm-torch",
            "--",
            *LEAN_PYTEST,
            "-k",
            "healthy or segfault or abort or os_exit",
        ],
        json_out=tmp_path / "r.json",
        env=PREFORK_ENV,
    )
    assert doc is not None, proc.stderr[-3000:]
    outcomes = {name: t["outcome"] for name, t in by_name(doc).items()}
    assert outcomes == {
        "test_healthy_first": "passed",
        "test_segfault": "crashed",
        "test_healthy_after_segfault": "passed",
        "test_abort": "crashed",
        "test_os_exit": "crashed",
        "test_healthy_param[1]": "passed",
        "test_healthy_param[2]": "passed",
        "test_healthy_param[3]": "passed",
    }
    assert doc["isolation"] == "file" and proc.returncode == 1


def test_healthy_tests_exit_zero_in_parallel_workers(tmp_path: Path) -> None:
    suite = crashy_suite_copy(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path,
        [str(suite), "--devices", "2", "--", *LEAN_PYTEST, "-k", "healthy or torch or xfails or skipped"],
        json_out=tmp_path / "r.json",
        env=PREFORK_ENV,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["devices"] == ["cpu", "cpu"] and doc["status"] == "passed"
    assert doc["counts"]["passed"] == 7 and doc["counts"]["xfailed"] == 1 and doc["counts"]["skipped"] == 1


def test_in_process_mode_and_no_tests(tmp_path: Path) -> None:
    suite = crashy_suite_copy(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path,
        [
            str(suite / "test_crashy.py"),
            "--isolate",
            "none",
            "--",
            *LEAN_PYTEST,
            "-k",
            "healthy_param or raises or marked_leak",
        ],
        json_out=tmp_path / "r.json",
        env=CRASHY_ENV,
    )
    assert doc is not None, proc.stderr[-3000:]
    assert doc["start_method"] == "in-process" and proc.returncode == 1
    outcomes = {name: t["outcome"] for name, t in by_name(doc).items()}
    assert outcomes == {
        "test_raises": "failed",
        "test_marked_leak": "leaked",  # the marker works without isolation too
        **{f"test_healthy_param[{i}]": "passed" for i in (1, 2, 3)},
    }

    proc, doc = run_xcompat_test(
        tmp_path,
        [str(suite / "test_crashy.py"), "--no-warm-torch", "--", *LEAN_PYTEST, "-k", "nothing_matches"],
        json_out=tmp_path / "none.json",
        env=CRASHY_ENV,
    )
    assert proc.returncode == 2 and doc is None
    assert "no tests were collected" in proc.stderr and "Traceback" not in proc.stderr


def test_spawn_start_method(tmp_path: Path) -> None:
    suite = crashy_suite_copy(tmp_path)
    proc, doc = run_xcompat_test(
        tmp_path,
        [
            str(suite / "test_crashy.py"),
            "--start-method",
            "spawn",
            "--isolate",
            "file",
            "--timeout",
            "20",
            "--",
            *LEAN_PYTEST,
            "-k",
            "healthy_first or segfault",
        ],
        json_out=tmp_path / "r.json",
        env=CRASHY_ENV,
    )
    assert doc is not None, proc.stderr[-3000:]
    assert doc["start_method"] == "spawn"
    outcomes = {name: t["outcome"] for name, t in by_name(doc).items()}
    assert outcomes == {
        "test_healthy_first": "passed",
        "test_segfault": "crashed",
        "test_healthy_after_segfault": "passed",
    }
    assert by_name(doc)["test_segfault"]["crash"]["signal"] == "SIGSEGV"


def test_file_isolation_is_one_process_per_file_even_when_pytest_interleaves_files(tmp_path: Path) -> None:
    # A parametrized session-scoped fixture makes pytest run a[x], b[x], c[x], a[y], b[y], c[y]:
    # each file still gets one process, and two files never share one.
    import subprocess
    import sys
    import textwrap

    from tests.helpers.testing import xcompat_env

    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(textwrap.dedent("""\
        import os
        import pytest


        @pytest.fixture(scope="session", params=["x", "y"])
        def flavour(request):
            return request.param


        @pytest.fixture(autouse=True)
        def record_pid(request, flavour):
            out = os.path.join(os.path.dirname(__file__), "pids.txt")
            with open(out, "a") as fh:
                fh.write(f"{request.node.path.name} {flavour} {os.getpid()}\\n")
    """))
    for name in ("a", "b", "c"):
        (tests / f"test_{name}.py").write_text(
            f"def test_{name}1(flavour):\n    pass\n\n\ndef test_{name}2(flavour):\n    pass\n")
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", str(tests), *LEAN_PYTEST],
                               cwd=tmp_path, env=xcompat_env(), capture_output=True, text=True, timeout=300, check=False)
    files = [line.split("::")[0].rsplit("/", 1)[-1] for line in collected.stdout.splitlines() if "::" in line]
    runs = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert runs == ["test_a.py", "test_b.py", "test_c.py"] * 2, files  # pytest's own order interleaves
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", "file", "--no-warm-torch", "--", *LEAN_PYTEST],
                                 json_out=tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc is not None and doc["counts"]["passed"] == 12, (doc and doc["counts"], proc.stderr[-2000:])
    rows = [line.split() for line in (tests / "pids.txt").read_text().splitlines()]
    assert len(rows) == 12
    pids_by_file: dict[str, set[str]] = {}
    for file, _flavour, pid in rows:
        pids_by_file.setdefault(file, set()).add(pid)
    assert all(len(pids) == 1 for pids in pids_by_file.values()), pids_by_file
    assert len(set.union(*pids_by_file.values())) == 3  # no two files share a process
    assert {flavour for _file, flavour, _pid in rows} == {"x", "y"}


def test_exitfirst_stops_before_the_next_file(tmp_path: Path) -> None:
    # -x: the failure is replayed (and stops the run) before the next file's process starts.
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_a1():\n    pass\n\n\ndef test_a2():\n    assert False\n")
    (tests / "test_b.py").write_text("import pathlib\n\n\ndef test_b():\n"
                                     "    (pathlib.Path(__file__).parent / 'b-ran').write_text('yes')\n")
    for isolation in ("file", "test"):
        proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", isolation, "--no-warm-torch", "--",
                                                *LEAN_PYTEST, "-x"], json_out=tmp_path / f"{isolation}.json")
        assert proc.returncode == 1, (isolation, proc.stderr[-2000:])
        assert doc is not None and doc["counts"]["failed"] == 1, isolation
        assert not (tests / "b-ran").exists(), f"{isolation}: the next file ran after -x stopped the run"


def test_a_test_that_floods_its_output_keeps_the_end_of_it(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_flood.py").write_text(
        "import os\n\n\ndef test_flood():\n"
        "    for _ in range(40):\n        os.write(1, b'y' * (1 << 20))\n"
        "    os.write(1, b'\\nLAST WORDS\\n')\n    assert False, 'after the flood'\n")
    proc, doc = run_xcompat_test(tmp_path, [str(tests), "--isolate", "test", "--no-warm-torch", "--", *LEAN_PYTEST,
                                            "-s"], json_out=tmp_path / "r.json")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert doc is not None
    (record,) = doc["tests"]
    assert record["outcome"] == "failed"
    assert "LAST WORDS" in record["output_tail"] and len(record["output_tail"]) < 10_000
