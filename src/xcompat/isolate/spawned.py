"""Spawn start method: a fresh interpreter per test (or file) where fork is unsafe or missing.

macOS (fork is unsafe with Apple's frameworks and MPS) and Windows have no warm parent to
fork from, so each group of tests runs in ``python -m xcompat.isolate.spawned``, which
collects exactly the node ids it was given and streams the same messages as a forked
child. The parent side is ``IsolatedRunner`` with ``SpawnLauncher`` starting the processes.
Costs a full interpreter start (and ``import torch``) per group: prefer ``--isolate file``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from xcompat.isolate.child import FAILED_OUTSIDE_TESTS_EXIT, ChildPlan, prepare_process, run_items
from xcompat.isolate.processes import Launcher, output_files, pidfd_of
from xcompat.isolate.runner import IsolatedRunner
from xcompat.isolate.tracked import TestProcess
from xcompat.isolate.watchdog import reap
from xcompat.isolate.wire import Channel, MessageReader

# A fresh interpreter must import everything first: extra time before its first test starts.
START_ALLOWANCE_S = 60.0


class SpawnLauncher:
    """Starts ``python -m xcompat.isolate.spawned`` for each group of tests."""

    def __init__(
        self,
        *,
        slots: Sequence[Any],
        folder: str,
        timeout_s: float | None,
        leak_kinds: tuple[str, ...],
        args: tuple[str, ...],
    ) -> None:
        self.slots = list(slots)
        self.folder = folder
        self.timeout_s = timeout_s
        self.leak_kinds = leak_kinds
        self.args = args
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    def begin(self, items: Sequence[Any]) -> None:
        """A spawned worker collects its node ids itself."""

    def prepare_spare(self, config: Any, slot_index: int) -> None:
        """A fresh interpreter imports everything after it starts: nothing to prepare ahead."""

    def start(self, config: Any, group: list[Any], slot_index: int) -> TestProcess:
        slot = self.slots[slot_index]
        out_path, crash_path = output_files(self.folder)
        read_fd, write_fd = os.pipe()
        cmd = [
            sys.executable,
            "-m",
            "xcompat.isolate.spawned",
            "--fd",
            str(write_fd),
            "--out",
            out_path,
            "--crash",
            crash_path,
            *(f"--leak={k}" for k in self.leak_kinds),
            "--",
            "--rootdir",
            str(config.rootpath),
            "-p",
            "no:cacheprovider",
            *self.args,
            *(item.nodeid for item in group),
        ]
        env = {**os.environ, **dict(slot.env)}
        proc = subprocess.Popen(cmd, cwd=str(config.rootpath), env=env, pass_fds=(write_fd,))
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        self._procs[proc.pid] = proc
        now = time.monotonic()
        process = TestProcess(
            pid=proc.pid,
            slot=slot_index,
            items=group,
            messages=MessageReader(read_fd),
            out_path=out_path,
            crash_path=crash_path,
            spawned=now,
            pidfd=pidfd_of(proc.pid),
        )
        if self.timeout_s:
            process.deadline = now + self.timeout_s + START_ALLOWANCE_S
        return process

    def reap(self, process: TestProcess, *, block: bool) -> None:
        reap(process, block=block)

    def notice_fd(self) -> int | None:
        """None: spawned workers are this process's own children, reaped with ``waitpid``."""
        return None

    def read_notices(self) -> None:
        """Nothing to read: see ``notice_fd``."""

    def ended(self, process: TestProcess) -> None:
        proc = self._procs.pop(process.pid, None)
        if proc is not None:
            proc.returncode = process.status  # already reaped with waitpid

    def close(self) -> None:
        self._procs.clear()


class SpawnRunner(IsolatedRunner):
    """The warm parent's plugin with test processes spawned instead of forked."""

    forks = False  # a spawned process maps only what it loads itself

    def __init__(self, *, args: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(threads=None, **kwargs)
        self.args = args
        self.prefork = False

    def launcher(self) -> Launcher:
        return SpawnLauncher(
            slots=self.slots, folder=self._tmp, timeout_s=self.timeout_s, leak_kinds=self.leak_kinds, args=self.args
        )


class _WorkerPlugin:
    def __init__(self, plan: ChildPlan) -> None:
        self.plan = plan

    def pytest_runtestloop(self, session: Any) -> bool:
        prepare_process(self.plan, session.config)
        # The parent gave this process START_ALLOWANCE_S to get here; the first test's own
        # timeout starts now.
        Channel(self.plan.write_fd).send({"event": "ready", "nodeid": "", "t": time.monotonic()})
        run_items(session.config, session.items, self.plan)
        return True

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        # pytest's own line for pytest.exit() goes to the silenced terminal: say it in the
        # output the parent reads, as a forked test process's traceback does
        import pytest

        if excinfo.errisinstance(pytest.exit.Exception):
            print(f"_pytest.outcomes.Exit: {getattr(excinfo.value, 'msg', excinfo.value)}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    import pytest

    from xcompat.isolate.measured import save_coverage, start_if_requested

    start_if_requested()  # before pytest imports the project's code
    parser = argparse.ArgumentParser(prog="python -m xcompat.isolate.spawned")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--crash", required=True)
    parser.add_argument("--leak", action="append", default=[])
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    ns = parser.parse_args(argv[:cut])
    plan = ChildPlan(write_fd=ns.fd, out_path=ns.out, crash_path=ns.crash, leak_kinds=tuple(ns.leak))
    code = pytest.main(argv[cut + 1 :], plugins=[_WorkerPlugin(plan)])
    save_coverage("a test process")  # os._exit runs no atexit hook
    sys.stdout.flush()
    # pytest.exit() in a test ends the worker's session (INTERRUPTED): that is a failure
    # outside the tests' reports, as in a forked test process, not a clean end.
    os._exit(FAILED_OUTSIDE_TESTS_EXIT if code == pytest.ExitCode.INTERRUPTED else 0)


if __name__ == "__main__":
    raise SystemExit(main())
