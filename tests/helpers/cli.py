"""``xcompat`` run in this process, answered the way a subprocess run answers.

:func:`xcompat_in_process` calls ``xcompat.cli.main`` with the working folder and the
environment a subprocess would get, and returns a ``subprocess.CompletedProcess`` (exit code,
stdout, stderr): a test written against ``python -m xcompat`` keeps its assertions and pays
for no interpreter start and no import of xcompat.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["xcompat_in_process"]


class _Stream(io.TextIOWrapper):
    """A text stream over bytes, with ``.buffer`` as ``sys.stdout`` has (``-o -`` writes there)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="backslashreplace", write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace")


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``os.environ`` is ``env`` within (the same object, so what holds it sees the change)."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _working_folder(cwd: str | Path | None) -> Iterator[None]:
    if cwd is None:
        yield
        return
    saved = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved)


def xcompat_in_process(*args: str, cwd: str | Path | None = None,
                       env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``xcompat ARGS`` through ``cli.main`` in this process; ``env`` replaces the environment
    for the call, as ``subprocess.run(env=...)`` would (None: this process's)."""
    from xcompat import cli, log

    out, err = _Stream(), _Stream()
    logger = log._LOG
    code: int | str | None
    try:
        with _environment(env), _working_folder(cwd), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as exc:  # argparse: usage errors and --help
                code = exc.code
    finally:
        log._LOG = logger  # the command configured the process-wide logger for itself
    if isinstance(code, str):  # SystemExit("message"): printed, exit 1, as the interpreter does
        print(code, file=err)
        code = 1
    return subprocess.CompletedProcess(["xcompat", *args], 0 if code is None else int(code), out.text(), err.text())

