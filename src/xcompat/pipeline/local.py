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
from typing import Any

from xcompat import interrupts
from xcompat.errors import InputError
from xcompat.isolate.strays import StrayProcess, become_subreaper, children, collect_new_children
from xcompat.log import Logger
from xcompat.pipeline.progress import StageProgress
from xcompat.settings import ProjectFacts, Settings

# exit code of a stage's command -> stage status
_STATUS_BY_EXIT = {0: "passed", 1: "failed"}


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


def _tail(path: Path, lines: int = 8) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]


class LocalPipeline:
    def __init__(self, config: RunConfig, log: Logger, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.log = log
        self.env = dict(os.environ if env is None else env)
        out = config.out.resolve()
        self.final = out
        self.stage_dir = out.parent / f".{out.name}.partial-{os.getpid()}"
        self.results: list[StageResult] = []
        self._child: subprocess.Popen[bytes] | None = None
        self._subreaper = False
        self._before: set[int] = set()  # this process's children before the run

    # -- helpers -----------------------------------------------------------------
    def path(self, *parts: str) -> Path:
        return self.stage_dir.joinpath(*parts)

    def xcompat(self, *args: str | os.PathLike[str]) -> list[str]:
        return [sys.executable, "-m", "xcompat", *(str(a) for a in args)]

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
        log_path = self.path("logs", f"{name}.log")
        log_path.parent.mkdir(parents=True, exist_ok=True)
        child_env = dict(self.env)
        child_env.update(env or {})
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        start = time.monotonic()
        before = children()
        with open(log_path, "wb") as fh:
            fh.write(("$ " + " ".join(argv) + "\n").encode())
            fh.flush()
            self._child = subprocess.Popen(
                list(argv), stdout=fh, stderr=subprocess.STDOUT, env=child_env, cwd=cwd, start_new_session=True
            )
            try:
                code = self._child.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._kill_child()
                code = None
            finally:
                self._kill_child()  # still running only when interrupted: SIGTERM, then SIGKILL
                left = self._end_leftovers(self._child.pid, before)
                self._child = None
            fh.writelines(f"xcompat: the stage {stray.message('its command ended')}\n".encode() for stray in left)
        for stray in left:
            self.log.warning(f"stage {name}: {stray.message('its command ended')}")
        elapsed = time.monotonic() - start
        produced = [str(p.relative_to(self.stage_dir)) for p in outputs if p.exists()]
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

    def _end_leftovers(self, pid: int, before: set[int]) -> list[StrayProcess]:
        """End what a stage command left running when it ended: the rest of its process group,
        and (Linux, as subreaper) whatever escaped into a session of its own. A build script's
        daemon must not live on into the next stages, where it could rewrite their results."""
        if hasattr(os, "killpg"):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        return collect_new_children(before) if self._subreaper else []

    def _kill_child(self) -> None:
        child = self._child
        if child is None or child.poll() is not None:
            return
        try:
            # What a terminal's Ctrl-C does to its group (the stage's session is out of its
            # reach), whatever signal stopped the run: the path xcompat and the tools in the
            # group (pip, pytest) were written to clean up on. SIGTERM would end a tool there
            # at once: an in-process pytest session without its teardowns.
            os.killpg(child.pid, signal.SIGINT)
            child.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
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
            if self._subreaper:
                become_subreaper(False)
                self._subreaper = False
        return self.results

    def abandon(self) -> None:
        """End the running stage and whatever the run left running, and remove the staging
        folder: the output folder stays as it was."""
        self._kill_child()
        if self._subreaper:
            # A process the interrupted cleanup could not reach through the stage's group:
            # one in a session of its own, or the child of a command a stage ran in this process.
            collect_new_children(self._before)
        shutil.rmtree(self.stage_dir, ignore_errors=True)

    def publish(self) -> Path:
        """Move the completed staging folder into place (the previous run is replaced whole)."""
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

