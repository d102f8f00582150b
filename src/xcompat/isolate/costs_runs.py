"""One timed run of a suite for the cost measurement (``xcompat.isolate.costs``).

Each run is a command of its own (``python -m pytest``, ``python -m xcompat test``) in its own
session, with the plan of ``xcompat.isolate.costs_plugin`` in a file named by ``PLAN_ENV``,
an empty numba cache of its own, and its output in a log file. A run past its limit is
stopped, process group and all.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The plan file of ``xcompat.isolate.costs_plugin`` (which pytest loads in each run).
PLAN_ENV = "XCOMPAT_MEASURE_PLAN"
# A stopped run is given this long to end its processes before it is killed.
STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class TimedRun:
    """How one run went: its time, its exit, its log and what the plugin wrote."""

    seconds: float
    returncode: int | None  # None: stopped at its limit
    log: Path
    found: dict[str, Any] | None  # what the plugin wrote (xcompat.isolate.costs_plugin)


class TimedRunner:
    """Runs the suite's commands in ``cwd`` until ``deadline``; each run's plan, log and numba
    cache go to ``folder``."""

    def __init__(self, cwd: Path, folder: Path, env: Mapping[str, str], python: str, deadline: float) -> None:
        self.cwd = cwd
        self.folder = folder
        self.env = dict(env)
        self.python = python
        self.deadline = deadline
        self.count = 0

    def left(self) -> float:
        """Seconds left until the deadline."""
        return self.deadline - time.monotonic()

    def run(self, argv: Sequence[str], *, limit: float, plan: Mapping[str, object]) -> TimedRun:
        self.count += 1
        tag = f"run{self.count}"
        out = self.folder / f"{tag}.json"
        plan_path = self.folder / f"{tag}.plan.json"
        plan_path.write_text(json.dumps({**plan, "out": str(out)}))
        cache = self.folder / f"{tag}.numba-cache"
        cache.mkdir()
        env = {**self.env, PLAN_ENV: str(plan_path), "NUMBA_CACHE_DIR": str(cache)}
        log = self.folder / f"{tag}.log"
        with open(log, "wb") as sink:
            start = time.monotonic()
            proc = subprocess.Popen([self.python, *argv], cwd=self.cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code: int | None = proc.wait(timeout=max(limit, 0.1))
            except subprocess.TimeoutExpired:
                code = None
            finally:
                if proc.returncode is None:
                    stop(proc)
            seconds = time.monotonic() - start
        found = None
        if code is not None and out.is_file():
            try:
                found = json.loads(out.read_text())
            except ValueError:
                found = None
        return TimedRun(seconds=seconds, returncode=code, log=log, found=found)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM for the run's process group (``xcompat test`` then ends its test processes
    itself), SIGKILL for what is left after the grace period."""
    for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
