"""The runner's fork hides Python 3.12's multi-threaded-fork warning only while no other
Python thread runs (native pools are expected in the warm parent; Python threads are not)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import warnings

import pytest

from xcompat.isolate import forking


def _warning_fork(monkeypatch):
    """os.fork as CPython 3.12+ behaves with native threads: it warns, in the parent."""
    def fake_fork():
        warnings.warn(f"This process (pid={os.getpid()}) is multi-threaded, use of fork() may lead to "
                      "deadlocks in the child.", DeprecationWarning, stacklevel=2)
        return 12345
    monkeypatch.setattr(forking.os, "fork", fake_fork)


def test_native_threads_alone_do_not_warn(monkeypatch):
    _warning_fork(monkeypatch)
    assert threading.active_count() == 1
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert forking.fork() == 12345
    assert seen == []


def test_another_python_thread_keeps_the_warning(monkeypatch):
    _warning_fork(monkeypatch)
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="conftest-poller")
    worker.start()
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            forking.fork()
    finally:
        stop.set()
        worker.join()
    assert [str(w.message) for w in seen] and "multi-threaded" in str(seen[0].message)


def test_other_deprecation_warnings_still_show(monkeypatch):
    monkeypatch.setattr(forking.os, "fork", lambda: warnings.warn("something else", DeprecationWarning, stacklevel=1) or 1)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        forking.fork()
    assert [str(w.message) for w in seen] == ["something else"]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Python 3.11 and older do not warn about threads at fork")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a native thread started through libc (Linux)")
def test_a_real_fork_with_a_native_thread_is_quiet():
    code = textwrap.dedent("""
        import ctypes, os, warnings
        warnings.simplefilter("always")
        libc = ctypes.CDLL(None)
        tid = ctypes.c_ulong()
        assert libc.pthread_create(ctypes.byref(tid), None, ctypes.cast(libc.sleep, ctypes.c_void_p),
                                   ctypes.c_void_p(30)) == 0
        assert len(os.listdir("/proc/self/task")) == 2
        from xcompat.isolate import forking
        pid = forking.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        print("forked")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "forked", proc.stderr
    assert "multi-threaded" not in proc.stderr
