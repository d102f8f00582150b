"""Crash tails from a real ``xcompat test`` run: the test's frame first, the framework hidden, the output kept."""

from __future__ import annotations

import json

from tests.helpers.report_pages import run_crash_suite

from xcompat.report.tails import (
    crash_tail,
    failing_assertion,
    first_user_frame,
    project_root,
    user_frames_first,
)


def test_crash_tail_of_a_real_segfault_shows_the_test_frame_first(tmp_path):
    doc = json.loads(run_crash_suite(tmp_path).read_text(encoding="utf-8"))
    crashed = next(t for t in doc["tests"] if t["outcome"] == "crashed")
    trace = crashed["crash"]["traceback"]
    raw_frames = trace.count('  File "')
    assert raw_frames > 30  # what a reader had to scroll through before

    tail = crash_tail(trace, crashed["output_tail"], lines=40, chars=4000)
    lines = tail.splitlines()
    assert lines[0].startswith("Fatal Python error: Segmentation fault")
    frame_lines = [ln for ln in lines if ln.startswith('  File "')]
    assert len(frame_lines) <= 3
    assert any("test_native.py" in ln and "in test_segfault" in ln for ln in frame_lines)
    assert "frame(s) of pytest, pluggy and xcompat hidden" in tail
    assert "/_pytest/" not in tail and "/pluggy/" not in tail
    assert tail.index("--- captured output ---") < tail.index("reading address 0 through ctypes")

    user = first_user_frame(trace)
    assert user is not None and user.func == "test_segfault"
    assert user.where(project_root(user, "tests/test_native.py")) == "tests/test_native.py:11 in test_segfault"


def test_failing_assertion_of_a_real_pytest_failure(tmp_path):
    doc = json.loads(run_crash_suite(tmp_path).read_text(encoding="utf-8"))
    failed = next(t for t in doc["tests"] if t["outcome"] == "failed")
    found = failing_assertion(failed["longrepr"])
    assert found is not None
    assert found.source == 'assert sum(values) == 4, "checksum of the sample values"'
    assert found.error == "AssertionError: checksum of the sample values"
    assert found.location == "tests/test_native.py:16"


def test_user_frames_first_keeps_text_that_is_not_a_trace():
    text = "E   assert 1 == 2\nsome output\n"
    assert user_frames_first(text) == text
