"""How many CPUs this process may actually run on.

``os.cpu_count()`` counts the machine's CPUs, not the ones a CI container's cpuset or a
``taskset`` leaves to this process: on a 16-core host pinned to 2 of them it says 16, and a
decision such as "fork the next test process while one runs, there is a core to spare" would
then be taken on cores that are not there.
"""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """CPUs in this process's affinity mask where the platform has one (Linux), else the
    machine's count; never less than 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # macOS and Windows have no affinity mask
        return os.cpu_count() or 1
