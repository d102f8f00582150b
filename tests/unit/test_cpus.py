"""usable_cpus counts the CPUs this process may run on, not the machine's."""

import os

import pytest

from xcompat.cpus import usable_cpus

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")


def test_usable_cpus_follows_the_affinity_mask():
    assert usable_cpus() == len(os.sched_getaffinity(0))


def test_a_process_pinned_to_one_cpu_forks_no_spare_test_process(monkeypatch):
    # The decision to fork the next test process while one runs needs a second core; a
    # process that a cpuset or taskset confines to one must not take it from cpu_count().
    from xcompat.isolate.devices import DeviceSlot
    from xcompat.isolate.runner import IsolatedRunner

    monkeypatch.delenv("XCOMPAT_TEST_PREFORK", raising=False)
    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mask)})
    try:
        runner = IsolatedRunner(isolation="file", slots=[DeviceSlot(label="cpu")], timeout_s=5.0, threads=None)
        try:
            usable, machine, prefork = usable_cpus(), os.cpu_count(), runner.prefork
        finally:
            runner.cleanup()
    finally:
        os.sched_setaffinity(0, mask)
    assert usable == 1
    assert machine is not None and machine >= 1
    assert prefork is False
