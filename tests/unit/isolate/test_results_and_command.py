"""Folding pytest reports into outcomes, the JSON/JUnit writers, and the command's argument handling."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _pytest.reports import TestReport
from tests.helpers.testing import xcompat_env

from xcompat.errors import InputError
from xcompat.isolate.classify import record_from_reports
from xcompat.isolate.outcomes import Crash, LeakReport, RunResult, TestRecord
from xcompat.isolate.writers import junit_document, result_document, write_json_result, write_junit
from xcompat.jsonio import validate


def _rep(when: str, outcome: str, longrepr=None, **extra) -> TestReport:
    return TestReport(
        "t.py::test_x", ("t.py", 1, "test_x"), {}, outcome, longrepr, when, duration=0.5, **extra
    )


@pytest.mark.parametrize(
    ("reports", "outcome", "message"),
    [
        ([_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "passed")], "passed", ""),
        (
            [_rep("setup", "passed"), _rep("call", "failed", "E  boom"), _rep("teardown", "passed")],
            "failed",
            "E  boom",
        ),
        ([_rep("setup", "failed", "fixture broke"), _rep("teardown", "passed")], "error", "fixture broke"),
        (
            [_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "failed", "cleanup")],
            "error",
            "cleanup",
        ),
        (
            [_rep("setup", "skipped", ("t.py", 3, "Skipped: no gpu")), _rep("teardown", "passed")],
            "skipped",
            "no gpu",
        ),
        (
            [_rep("setup", "passed"), _rep("call", "skipped", ("t.py", 3, "x"), wasxfail="bug 1")],
            "xfailed",
            "bug 1",
        ),
        ([_rep("setup", "passed"), _rep("call", "passed", wasxfail="bug 2")], "xpassed", "bug 2"),
    ],
)
def test_reports_fold_into_one_outcome(reports, outcome: str, message: str) -> None:
    record = record_from_reports("t.py::test_x", reports, device="cpu")
    assert record.outcome == outcome and record.message == message
    assert record.duration_s == pytest.approx(0.5 * len(reports))


def test_a_leak_turns_a_pass_into_leaked_but_not_a_failure() -> None:
    leak = LeakReport(kind="host", repeats=5, growth_bytes=5 << 20, threshold_bytes=1 << 20, leaked=True)
    passed = [_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "passed")]
    record = record_from_reports("t.py::test_x", passed, device="cpu", leaks=[leak])
    assert record.outcome == "leaked" and "5242880 bytes" in record.message
    failed = [_rep("setup", "passed"), _rep("call", "failed", "E boom")]
    assert record_from_reports("t.py::test_x", failed, device="cpu", leaks=[leak]).outcome == "failed"


def _result(cell: str | None = "py3.12-linux-x86_64-cuda12.8") -> RunResult:
    records = (
        TestRecord(nodeid="tests/test_a.py::test_ok", outcome="passed", duration_s=0.01, device="cuda:0"),
        TestRecord(
            nodeid="tests/test_a.py::TestK::test_segv[fp16]",
            outcome="crashed",
            device="cuda:1",
            message="killed by SIGSEGV",
            longrepr="killed by SIGSEGV\nFatal Python error",
            output_tail="last words \x1b[31m\x00",
            crash=Crash(
                signal="SIGSEGV", signal_number=11, traceback="Fatal Python error: Segmentation fault"
            ),
        ),
        TestRecord(nodeid="tests/test_a.py::test_slow", outcome="timeout", message="timed out after 3s"),
        TestRecord(nodeid="tests/test_a.py::test_skip", outcome="skipped", message="no gpu"),
        TestRecord(
            nodeid="tests/test_a.py::test_leak",
            outcome="leaked",
            message="grew",
            leaks=(LeakReport(kind="device", repeats=5, growth_bytes=1 << 20, leaked=True, where="device"),),
        ),
    )
    return RunResult(
        records=records, isolation="test", start_method="fork", timeout_s=3.0, duration_s=1.5, cell_id=cell
    )


def test_json_document_validates_and_counts() -> None:
    doc = result_document(_result())
    validate("test-result", doc)
    assert doc["status"] == "crashed" and doc["counts"]["crashed"] == 1 and doc["counts"]["leaked"] == 1
    assert doc["tests"][1]["crash"]["signal"] == "SIGSEGV"


def test_schema_rejects_a_bad_document(tmp_path: Path) -> None:
    doc = result_document(_result())
    doc["tests"][0]["outcome"] = "exploded"
    with pytest.raises(InputError) as err:
        validate("test-result", doc, source="r.json")
    assert "outcome" in str(err.value)
    with pytest.raises(InputError):
        validate("test-result", {**result_document(_result()), "version": 2})


def test_run_status_rules() -> None:
    only_skips = RunResult(
        records=(TestRecord(nodeid="a", outcome="skipped"),),
        isolation="test",
        start_method="fork",
        timeout_s=None,
        duration_s=0,
    )
    assert only_skips.status == "skipped" and not only_skips.failed
    mixed = RunResult(
        records=(
            TestRecord(nodeid="a", outcome="passed"),
            TestRecord(nodeid="b", outcome="xfailed"),
            TestRecord(nodeid="c", outcome="xpassed"),
        ),
        isolation="test",
        start_method="fork",
        timeout_s=None,
        duration_s=0,
    )
    assert mixed.status == "passed" and not mixed.failed


def test_junit_names_carry_the_cell_and_xml_stays_valid(tmp_path: Path) -> None:
    path = write_junit(tmp_path / "j.xml", _result())
    root = ET.parse(path).getroot()  # control characters were replaced: it parses
    names = [c.get("name") for c in root.iter("testcase")]
    assert names[1] == "test_segv[fp16] [py3.12-linux-x86_64-cuda12.8]"
    assert [c.get("classname") for c in root.iter("testcase")][1] == "tests.test_a.TestK"
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures"), suite.get("skipped")) == (
        "5",
        "2",
        "1",
        "1",
    )
    # Without a cell id, names are the plain test names.
    plain = junit_document(_result(cell=None)).getroot()
    assert next(c.get("name") for c in plain.iter("testcase")) == "test_ok"


def test_json_writer_is_atomic_and_validated(tmp_path: Path) -> None:
    out = write_json_result(tmp_path / "sub" / "r.json", _result())
    assert out.is_file() and not list(out.parent.glob(".*tmp"))


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xcompat", "test", *args],
        cwd=cwd,
        env=xcompat_env(),
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def test_bad_arguments_exit_2_with_one_clear_line(tmp_path: Path) -> None:
    proc = _cli(["--leaks", "gpu"], tmp_path)
    assert proc.returncode == 2 and "expected a comma list of host, device" in proc.stderr
    proc = _cli(["no_such_dir"], tmp_path)
    assert proc.returncode == 2 and "no such test file or project folder: no_such_dir" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_deep_tool_is_refused_before_running(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_a():\n    raise SystemExit('must not run')\n")
    proc = _cli(
        ["test_one.py", "--no-warm-torch", "--deep", "compute-sanitizer", "--json", "r.json"], tmp_path
    )
    assert proc.returncode == 5 and "compute-sanitizer is not installed" in proc.stderr
    assert "nvidia-cuda-sanitizer-api" in proc.stderr and not (tmp_path / "r.json").exists()


def test_arguments_after_double_dash_go_to_pytest(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    proc = _cli(
        [
            "test_one.py",
            "--no-warm-torch",
            "--json",
            "r.json",
            "--",
            "-p",
            "no:cacheprovider",
            "-k",
            "test_b",
        ],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    doc = json.loads((tmp_path / "r.json").read_text())
    assert [t["nodeid"] for t in doc["tests"]] == ["test_one.py::test_b"]
