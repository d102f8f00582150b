"""Ending what a session left running: only the children that appeared during it."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from xcompat.isolate import strays

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/task/*/children is Linux's")


def _sleeper() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    # Popen returns once exec has begun; the kernel sets the new command line a moment later,
    # and until then /proc/PID/cmdline reads empty.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
            if b"time.sleep" in fh.read():
                break
        time.sleep(0.001)
    return proc


def test_only_children_that_appeared_since_the_snapshot_are_ended():
    older = _sleeper()
    try:
        before = strays.children()
        assert older.pid in before
        newer = _sleeper()
        ended = strays.collect_new_children(before)
        assert [s.pid for s in ended] == [newer.pid]
        assert "time.sleep(60)" in ended[0].command
        assert newer.poll() is not None or newer.wait(timeout=5) is not None  # killed and reaped
        assert older.poll() is None  # the child that was there before is left alone
    finally:
        older.kill()
        older.wait()


def test_nothing_new_nothing_ended():
    assert strays.collect_new_children(strays.children()) == []


def test_subreaper_can_be_set_and_cleared():
    assert strays.become_subreaper() is True
    assert strays.become_subreaper(False) is True
