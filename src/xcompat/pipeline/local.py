"""``xcompat run``: the whole CI pipeline on this machine, stage by stage.

Each stage runs the real ``xcompat`` subcommand in a child process (so a crash or a hung
native build in one stage cannot take the others down), with its output captured to
``logs/<stage>.log`` and its versioned JSON result written into a staging folder. A stage
that fails does not stop the stages that don't depend on it, and its failure is in the
report. The staging folder replaces the output folder only when the run completes; on
Ctrl-C, SIGTERM or SIGHUP (``xcompat.interrupts``) the running stage's processes are ended
and the folder is removed, so the output folder holds either the previous complete run or
the new one, never a half-written mix.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from xcompat import interrupts
from xcompat.errors import InputError
from xcompat.isolate.strays import StrayProcess, become_subreaper, children, collect_new_children
from xcompat.log import Logger
from xcompat.pipeline.lane_api import EmulatedLane
from xcompat.pipeline.progress import StageProgress
from xcompat.settings import ProjectFacts, Settings

# exit code of a stage's command -> stage status
_STATUS_BY_EXIT = {0: "passed", 1: "failed"}


_REWRITE_LIMIT = 16 << 20  # a result larger than this is not one the run wrote
_REWRITTEN = (".json", ".md", ".html", ".xml")  # results and reports; logs keep what ran where


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What ``xcompat run`` was asked to do; the matrix's own settings are in ``settings``."""

    project: Path
    matrix: Path
    allowed_signers: Path | None
    baseline: Path | None
    out: Path
    backend: str = "auto"
    coverage: bool = True
    settings: Settings | None = None  # resolved once: defaults < signed matrix < command line (local only)
    facts: ProjectFacts | None = None  # what the project is: does it use torch
    signed: bool = True  # False: a local run of an unsigned matrix (right after `matrix init`)
    trust_ref: str | None = None  # the protected ref the trust list comes from (matrix verify --trust-ref)
    # `xcompat run --arch`: the emulated lane the cells of another architecture run on (None: natively)
    lane: EmulatedLane | None = None
    cell: str | None = None  # `--cell`: the cell to run among those of this machine (default: the first required)
    other_pythons: bool = True  # `--pythons all`: the cells of the matrix's other Pythons this machine has too


@dataclass(kw_only=True)
class StageResult:
    name: str
    status: str  # passed | failed | error | skipped
    detail: str = ""
    elapsed: float = 0.0
    exit_code: int | None = None
    log: str | None = None
    outputs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "elapsed_s": round(self.elapsed, 3),
            "exit_code": self.exit_code,
            "log": self.log,
            "outputs": self.outputs,
        }


@dataclass(eq=False, kw_only=True)
class RunningCommand:
    """A stage command started by :meth:`LocalPipeline.start_command` and not yet waited for."""

    name: str
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    log_path: Path
    start: float
    before: set[int]  # this process's children just before it started
    outputs: tuple[Path, ...] = ()


def _tail(path: Path, lines: int = 8) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]


# ``python -m`` and ``-c`` put the working folder first on sys.path; ``-P`` drops it only from 3.11.
SAFE_PATH_MAIN = "import runpy, sys; del sys.path[0]; runpy.run_module('xcompat', run_name='__main__', alter_sys=True)"


class LocalPipeline:
    def __init__(self, config: RunConfig, log: Logger, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.log = log
        self.env = dict(os.environ if env is None else env)
        out = config.out.resolve()
        self.final = out
        self.stage_dir = out.parent / f".{out.name}.partial-{os.getpid()}"
        self.results: list[StageResult] = []
        self._running: list[RunningCommand] = []  # started and not yet waited for
        self._subreaper = False
        self._before: set[int] = set()  # this process's children before the run

    # -- helpers -----------------------------------------------------------------
    def path(self, *parts: str) -> Path:
        return self.stage_dir.joinpath(*parts)

    def xcompat(self, *args: str | os.PathLike[str], safe_path: bool = False) -> list[str]:
        """``python -m xcompat ARGS``; ``safe_path``: without the working folder on ``sys.path``
        (as the ``xcompat`` console script runs), for a command run in the project's folder whose
        source tree must not shadow the installed wheel."""
        if safe_path:
            return [sys.executable, "-c", SAFE_PATH_MAIN, *(str(a) for a in args)]
        return [sys.executable, "-m", "xcompat", *(str(a) for a in args)]

    def _name_final_folder(self) -> None:
        """Results that name files of the run by where a process saw them (the libraries a test
        process mapped, under the staging folder's installed wheel) name them where they will be."""
        staging, final = str(self.stage_dir) + os.sep, str(self.final) + os.sep
        for path in self.stage_dir.rglob("*"):
            parts = path.relative_to(self.stage_dir).parts
            if parts[0] in ("logs", ".site") or path.suffix not in _REWRITTEN or not path.is_file() \
                    or path.stat().st_size > _REWRITE_LIMIT:
                continue
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            if staging in text:
                path.write_text(text.replace(staging, final), encoding="utf-8", errors="surrogateescape")

    def _relative(self, arg: str) -> str:
        prefix = str(self.stage_dir) + os.sep
        if arg.startswith(prefix) and os.path.exists(arg):
            return arg[len(prefix):]
        return arg

    def run_command(
        self,
        name: str,
        argv: Sequence[str],
        *,
        outputs: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float | None = None,
    ) -> StageResult:
        """Run one stage command; its stdout/stderr go to logs/<name>.log."""
        return self.finish_command(self.start_command(name, argv, outputs=outputs, env=env, cwd=cwd),
                                   timeout=timeout)

    def start_command(
        self,
        name: str,
        argv: Sequence[str],
        *,
        outputs: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> RunningCommand:
        """Start one stage command, its stdout/stderr to logs/<name>.log, and return at once;
        :meth:`finish_command` waits for it. Until then an interrupt of the run ends it too.

        Without ``cwd`` the command runs in the staging folder, and an argument naming a file or
        folder already there (an input: a wheel, a baseline) is passed relative to it, so the
        paths a stage records stay true after the folder is moved into place as the output
        folder. Anything else (outputs, mappings such as ``--map A=B``) is passed as given."""
        if cwd is None:
            cwd = self.stage_dir
            argv = [self._relative(a) for a in argv]
        log_path = self.path("logs", f"{name}.log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        child_env = dict(self.env)
        child_env.update(env or {})
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        start = time.monotonic()
        before = children()
        fh = open(log_path, "wb")  # noqa: SIM115 - closed by finish_command or abandon
        try:
            fh.write(("$ " + " ".join(argv) + "\n").encode())
            fh.flush()
            process = subprocess.Popen(
                list(argv), stdout=fh, stderr=subprocess.STDOUT, env=child_env, cwd=cwd, start_new_session=True
            )
        except BaseException:
            fh.close()
            raise
        command = RunningCommand(name=name, process=process, log=fh, log_path=log_path, start=start, before=before,
                                 outputs=tuple(outputs))
        self._running.append(command)
        return command

    def finish_command(self, command: RunningCommand, *, timeout: float | None = None) -> StageResult:
        """Wait for a command from :meth:`start_command` and end what it left running."""
        name, log_path = command.name, command.log_path
        try:
            try:
                code = command.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._stop([command])
                code = None
            finally:
                self._stop([command])  # still running only when interrupted: SIGINT, then SIGKILL
                self._running.remove(command)
                left = self._end_leftovers(command)
            command.log.writelines(
                f"xcompat: the stage {stray.message('its command ended')}\n".encode() for stray in left)
        finally:
            command.log.close()
        for stray in left:
            self.log.warning(f"stage {name}: {stray.message('its command ended')}")
        elapsed = time.monotonic() - command.start
        produced = [str(p.relative_to(self.stage_dir)) for p in command.outputs if p.exists()]
        rel_log = str(log_path.relative_to(self.stage_dir))
        if code is None:
            return StageResult(
                name=name, status="error", detail=f"timed out after {timeout:.0f}s", elapsed=elapsed,
                log=rel_log, outputs=produced,
            )
        if code == 130:
            raise KeyboardInterrupt
        status = _STATUS_BY_EXIT.get(code, "error")
        detail = ""
        if status != "passed":
            tail = _tail(log_path, 1)
            detail = f"exit {code}" + (f": {_log_message(tail[-1])}" if tail else "")
        return StageResult(
            name=name, status=status, detail=detail, elapsed=elapsed, exit_code=code, log=rel_log, outputs=produced
        )

    def _end_leftovers(self, command: RunningCommand) -> list[StrayProcess]:
        """End what a stage command left running when it ended: the rest of its process group,
        and (Linux, as subreaper) whatever escaped into a session of its own. A build script's
        daemon must not live on into the next stages, where it could rewrite their results.

        While another command runs (the baseline's build alongside the project's), only the
        leftovers in this command's own session are ended here: one that escaped into a session
        of its own could be the other command's, and is ended when the last of them ends."""
        if hasattr(os, "killpg"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(command.process.pid, signal.SIGKILL)
        if not self._subreaper:
            return []
        # start_command makes each command the leader of a session of its own
        return collect_new_children(command.before, only_session=command.process.pid if self._running else None)

    def _stop(self, commands: Sequence[RunningCommand]) -> None:
        """End each of ``commands`` that still runs, all at once, within one grace period."""
        live = [c.process for c in commands if c.process.poll() is None]
        asked = []
        for child in live:
            try:
                # What a terminal's Ctrl-C does to its group (the stage's session is out of its
                # reach), whatever signal stopped the run: the path xcompat and the tools in the
                # group (pip, pytest) were written to clean up on. SIGTERM would end a tool there
                # at once: an in-process pytest session without its teardowns.
                os.killpg(child.pid, signal.SIGINT)
                asked.append(child)
            except ProcessLookupError:
                child.wait()
        deadline = time.monotonic() + 5
        for child in asked:
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()

    # -- the run ------------------------------------------------------------------
    def execute(
        self,
        stages: Sequence[tuple[str, Callable[[], StageResult]]],
        current_cell: Callable[[], str | None] = lambda: None,
    ) -> list[StageResult]:
        if self.stage_dir.exists():
            shutil.rmtree(self.stage_dir)
        self.stage_dir.mkdir(parents=True)
        progress = StageProgress(self.log, total=len(stages))
        self._before = children()
        self._subreaper = become_subreaper()  # for the run only: see _end_leftovers
        where = "before the first stage"
        try:
            with progress:
                for name, fn in stages:
                    where = f"during the {name} stage"
                    progress.start(name, current_cell() or "")
                    result = fn()
                    result.name = name
                    # the whole stage's time, whatever sub-steps it ran
                    result.elapsed = progress.finish(name, result.status, result.detail)
                    self.results.append(result)
                    where = f"after the {name} stage"
        except KeyboardInterrupt:
            self.abandon()
            raise interrupts.error(f"{self.final} was left as it was", where=where) from None
        except BaseException:
            self.abandon()
            raise
        finally:
            self._end_running()  # a command started and never waited for must not outlive the run
            if self._subreaper:
                become_subreaper(False)
                self._subreaper = False
        return self.results

    def abandon(self) -> None:
        """End the running stage and whatever the run left running, and remove the staging
        folder: the output folder stays as it was."""
        self._end_running()
        if self._subreaper:
            # A process the interrupted cleanup could not reach through the stage's group:
            # one in a session of its own, or the child of a command a stage ran in this process.
            collect_new_children(self._before)
        shutil.rmtree(self.stage_dir, ignore_errors=True)

    def _end_running(self) -> None:
        """Stop every command still running (the baseline's build, when the build stage was
        interrupted) and close its log."""
        running, self._running = self._running, []
        self._stop(running)
        for command in running:
            command.log.close()

    def publish(self) -> Path:
        """Move the completed staging folder into place (the previous run is replaced whole)."""
        self._name_final_folder()
        backup = self.final.parent / f".{self.final.name}.old-{os.getpid()}"
        if self.final.exists():
            os.replace(self.final, backup)
        os.replace(self.stage_dir, self.final)
        if backup.exists():
            shutil.rmtree(backup, ignore_errors=True)
        return self.final


def python_tag() -> str:
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    gil = getattr(sys, "_is_gil_enabled", None)
    return ver + "t" if gil is not None and not gil() else ver


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=path, line=exc.lineno, column=exc.colno) from None


# A child's log line under CI: "HH:MM:SS " then the logger's "error: " label.
_LOG_PREFIX = re.compile(r"^(?:\d\d:\d\d:\d\d )?(?:error: |warning: )?")


def _log_message(line: str) -> str:
    """The message of a stage's last log line, whole up to a field's cap (its hint is at the end)."""
    from xcompat.neutralise import MESSAGE_CHARS, cap

    return cap(_LOG_PREFIX.sub("", line.strip(), count=1), MESSAGE_CHARS)

