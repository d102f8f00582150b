"""A spare's reads of the per-test machinery (``xcompat.isolate.child.touch_per_test_machinery``).

What it must do: copy, in the spare, the pages of the hook implementations the first test will
use. What it must never do: call any of them (a project's conftest would see a test that is not
there).
"""

from __future__ import annotations

import os
import struct
import sys

import pytest

from xcompat.isolate.child import PER_TEST_HOOKS, touch_per_test_machinery

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class _Counting:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def pytest_runtest_setup(self, item: object) -> None:
        self.calls.append("setup")

    def pytest_runtest_logreport(self, report: object) -> None:
        self.calls.append("logreport")

    def pytest_report_teststatus(self, report: object, config: object) -> None:
        self.calls.append("teststatus")


def test_no_hook_is_called(request: pytest.FixtureRequest) -> None:
    plugin = _Counting()
    manager = request.config.pluginmanager
    manager.register(plugin, "xcompat-test-counting")
    try:
        names = {impl.plugin_name for impl in request.config.hook.pytest_runtest_setup.get_hookimpls()}
        assert "xcompat-test-counting" in names  # it would be reached, were hooks called
        touch_per_test_machinery(request.config)
    finally:
        manager.unregister(plugin)
    assert plugin.calls == []


def test_every_per_test_hook_exists_in_pytest(request: pytest.FixtureRequest) -> None:
    """A renamed hook would silently be skipped: each name is one this pytest calls."""
    missing = [name for name in PER_TEST_HOOKS if getattr(request.config.hook, name, None) is None]
    assert missing == []


def _exclusive(address: int) -> bool:
    """Is the page holding ``address`` mapped by this process only (``/proc/self/pagemap``)?"""
    with open("/proc/self/pagemap", "rb") as fh:
        fh.seek(address // PAGE * 8)
        (entry,) = struct.unpack("<Q", fh.read(8))
    return bool(entry >> 63) and bool((entry >> 56) & 1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/pagemap (Linux only)")
def test_the_pages_of_hook_implementations_are_copied_in_a_forked_process(request: pytest.FixtureRequest) -> None:
    # Addresses, taken before the fork: reading the objects in the child would copy their pages.
    addresses = [id(impl.function) for name in PER_TEST_HOOKS
                 for impl in getattr(request.config.hook, name).get_hookimpls()]
    assert addresses
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked process
        code = 1
        try:
            os.close(read_end)
            # Pages this process already wrote since the fork tell nothing: leave them out.
            shared = [a for a in addresses if not _exclusive(a)]
            touch_per_test_machinery(request.config)
            copied = [a for a in shared if _exclusive(a)]
            os.write(write_end, f"{len(shared)} {len(copied)}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        answer = fh.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    shared, copied = (int(x) for x in answer.split())
    assert shared > 0, "every page was already copied before the reads: nothing to measure"
    assert copied >= shared * 0.9, f"only {copied} of {shared} shared pages were copied"
