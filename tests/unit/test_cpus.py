"""usable_cpus counts the CPUs this process may run on, not the machine's."""

import os
import subprocess
import sys
import textwrap

import pytest

from xcompat.cpus import usable_cpus

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")


def test_usable_cpus_follows_the_affinity_mask():
    assert usable_cpus() == len(os.sched_getaffinity(0))


def test_a_process_pinned_to_one_cpu_forks_no_spare_test_process():
    # The decision to fork the next test process while one runs needs a second core; a
    # process that a cpuset or taskset confines to one must not take it from cpu_count().
    code = textwrap.dedent("""
        import os
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        from xcompat.cpus import usable_cpus
        from xcompat.isolate.devices import DeviceSlot
        from xcompat.isolate.runner import IsolatedRunner
        runner = IsolatedRunner(isolation="file", slots=[DeviceSlot(label="cpu")], timeout_s=5.0, threads=None)
        try:
            print(usable_cpus(), os.cpu_count(), runner.prefork)
        finally:
            runner.cleanup()
    """)
    env = {k: v for k, v in os.environ.items() if k != "XCOMPAT_TEST_PREFORK"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    usable, machine, prefork = out.split()
    assert usable == "1"
    assert int(machine) >= 1
    assert prefork == "False"
