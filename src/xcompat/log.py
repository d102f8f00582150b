"""The one CI-aware logger. Only this module (and a command's primary result on stdout) prints.

Three dialects, picked by ``xcompat.ci`` from the environment (passed in as a mapping):

* ``github``: ``::group::``/``::endgroup::`` folds, ``::error file=,line=::`` annotations
  (capped at GitHub's 10 errors + 10 warnings per step; the rest print as plain lines),
  ``$GITHUB_STEP_SUMMARY`` and ``$GITHUB_OUTPUT`` files;
* ``gitlab``: collapsible ``section_start``/``section_end`` markers;
* ``terminal``: plain text, colour when the stream is a TTY.

Under any CI, every line is prefixed with a UTC timestamp.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from xcompat.ci import detect_forge, is_ci
from xcompat.neutralise import log_text

if TYPE_CHECKING:
    from xcompat.errors import XcompatError

Dialect = Literal["github", "gitlab", "terminal"]

# GitHub shows at most this many error / warning annotations from workflow commands per step.
GITHUB_ANNOTATIONS_PER_STEP = 10


def detect_dialect(env: Mapping[str, str]) -> Dialect:
    forge = detect_forge(env)
    if forge == "github":
        return "github"
    if forge == "gitlab":
        return "gitlab"
    return "terminal"  # no CI, or a CI whose log has no folds or annotations of its own


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


class Logger:
    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        stream: TextIO | None = None,
        *,
        verbosity: int = 0,
    ) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        self.stream = stream
        self.dialect: Dialect = detect_dialect(self.env)
        self.ci = is_ci(self.env)
        self.verbosity = verbosity
        self._annotations = {"error": 0, "warning": 0}
        self._sections: list[tuple[str, float]] = []

    # -- plumbing -----------------------------------------------------------------
    @property
    def out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    @property
    def color(self) -> bool:
        return self.live_terminal(self.out) and "NO_COLOR" not in self.env

    def live_terminal(self, stream: TextIO) -> bool:
        """Whether ``stream`` is a terminal that takes escape codes: colour and a status line
        redrawn in place. Not under CI, not when piped, not with ``TERM=dumb`` (Emacs shells,
        some IDE consoles and log capturers set it for terminals without cursor control)."""
        return (
            self.dialect == "terminal"
            and not self.ci
            and self.env.get("TERM", "") != "dumb"
            and hasattr(stream, "isatty")
            and stream.isatty()
        )

    def _emit(self, line: str) -> None:
        if self.ci and not line.startswith("::") and not line.startswith("\x1b[0Ksection_"):
            stamp = time.strftime("%H:%M:%S", time.gmtime())
            line = f"{stamp} {line}"
        print(line, file=self.out, flush=True)

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    # -- messages -----------------------------------------------------------------
    # Messages carry text from results and test suites (test ids, cell ids, tool output): each
    # goes through log_text, so none can print an escape sequence or start a workflow command.
    def debug(self, message: str) -> None:
        if self.verbosity > 0:
            self._emit(self._paint(log_text(message), "2"))

    def info(self, message: str) -> None:
        self._emit(log_text(message))

    def success(self, message: str) -> None:
        self._emit(self._paint(log_text(message), "32"))

    def notice(self, message: str) -> None:
        self._emit(self._paint(log_text(message), "36"))

    def warning(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        self._annotate("warning", message, file=file, line=line)

    def error(
        self, message: str, *, file: str | None = None, line: int | None = None, column: int | None = None
    ) -> None:
        self._annotate("error", message, file=file, line=line, column=column)

    def _annotate(
        self,
        level: Literal["error", "warning"],
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        message = log_text(message)
        file = log_text(file) if file else file
        if self.dialect == "github" and self._annotations[level] < GITHUB_ANNOTATIONS_PER_STEP:
            self._annotations[level] += 1
            props = []
            if file:
                props.append(f"file={_escape_property(file)}")
            if line is not None:
                props.append(f"line={line}")
            if column is not None:
                props.append(f"col={column}")
            head = f"::{level} {','.join(props)}" if props else f"::{level}"
            self._emit(f"{head}::{_escape_data(message)}")
            return
        prefix = "error" if level == "error" else "warning"
        where = ""
        if file:
            where = file + (f":{line}" if line is not None else "") + (f":{column}" if column else "") + ": "
        colour = "31;1" if level == "error" else "33"
        self._emit(self._paint(f"{prefix}: {where}{message}", colour))

    # -- folds and timing ---------------------------------------------------------
    @contextlib.contextmanager
    def group(self, title: str, *, collapsed: bool = True) -> Iterator[None]:
        start = time.monotonic()
        title = " ".join(log_text(title).split())
        if self.dialect == "github":
            self._emit(f"::group::{_escape_data(title)}")
        elif self.dialect == "gitlab":
            import uuid

            name = re.sub(r"[^a-zA-Z0-9_.-]", "_", title)[:40] + "_" + uuid.uuid4().hex[:6]
            opts = "[collapsed=true]" if collapsed else ""
            self._emit(f"\x1b[0Ksection_start:{int(time.time())}:{name}{opts}\r\x1b[0K{title}")
            self._sections.append((name, start))
        else:
            self._emit(self._paint(f"== {title}", "1"))
        try:
            yield
        finally:
            elapsed = time.monotonic() - start
            if self.dialect == "github":
                self._emit("::endgroup::")
                self._emit(f"{title}: {elapsed:.2f}s")
            elif self.dialect == "gitlab":
                name, _ = self._sections.pop()
                self._emit(f"\x1b[0Ksection_end:{int(time.time())}:{name}\r\x1b[0K")
                self._emit(f"{title}: {elapsed:.2f}s")
            else:
                self._emit(self._paint(f"   {title}: {elapsed:.2f}s", "2"))

    # -- GitHub files ---------------------------------------------------------------
    def write_summary(self, markdown: str) -> bool:
        """Append Markdown to ``$GITHUB_STEP_SUMMARY``; False when not running in Actions."""
        target = self.env.get("GITHUB_STEP_SUMMARY")
        if not target:
            return False
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
        return True

    def set_output(self, name: str, value: str) -> bool:
        """Write a step output to ``$GITHUB_OUTPUT`` (``xcompat.envfile``); False when not in Actions."""
        target = self.env.get("GITHUB_OUTPUT")
        if not target:
            return False
        from xcompat.envfile import OUTPUT_NAME, append, assignment

        append(Path(target), assignment(name, value, "github", names=OUTPUT_NAME))
        return True


_LOG: Logger | None = None


def get_logger() -> Logger:
    """The process-wide logger (created on first use from ``os.environ``)."""
    global _LOG
    if _LOG is None:
        _LOG = Logger()
    return _LOG


def configure(env: Mapping[str, str] | None = None, stream: TextIO | None = None, *, verbosity: int = 0) -> Logger:
    global _LOG
    _LOG = Logger(env, stream, verbosity=verbosity)
    return _LOG


def report_error(exc: XcompatError) -> None:
    """Log an xcompat error as the CLI shows it: the message with its hint as an error
    annotation at its file, then each detail on a line of its own."""
    log = get_logger()
    text = exc.message + (f" ({exc.hint})" if exc.hint else "")
    log.error(text, file=exc.file, line=exc.line, column=exc.column)
    for detail in exc.details:
        log.info(f"  {detail}")
