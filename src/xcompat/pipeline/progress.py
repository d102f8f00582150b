"""Progress display for long multi-stage runs.

On a terminal: one status line redrawn in place (stage, cell, elapsed, a bar over the
stages). Under CI, when the stream is not a TTY, or with ``TERM=dumb``: plain lines through
the shared logger (timestamped under CI), one per stage start and end, so logs stay readable.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, TextIO

from xcompat.log import Logger

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self from Python 3.11

BAR_WIDTH = 24


def format_elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes:02d}:{secs:02d}"


def render_bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    total = max(total, 1)
    filled = min(width, round(width * done / total))
    return "[" + "#" * filled + "." * (width - filled) + f"] {done}/{total}"


class StageProgress:
    """Tracks which stage is running; redraws a status line on a TTY every half second."""

    def __init__(self, log: Logger, total: int, stream: TextIO | None = None) -> None:
        self.log = log
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.live = log.live_terminal(self.stream)
        self._stage = ""
        self._cell = ""
        self._stage_start = time.monotonic()
        self._run_start = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.live:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1)
        self._clear()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            self._draw()

    def status_line(self) -> str:
        now = time.monotonic()
        cell = f" · {self._cell}" if self._cell else ""
        return (
            f"{render_bar(self.done, self.total)} {self._stage}{cell} "
            f"· {format_elapsed(now - self._stage_start)} (total {format_elapsed(now - self._run_start)})"
        )

    def _draw(self) -> None:
        with self._lock:
            if self._stage:
                self.stream.write("\r\x1b[2K" + self.status_line())
                self.stream.flush()

    def _clear(self) -> None:
        if self.live:
            with self._lock:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()

    def start(self, stage: str, cell: str = "") -> None:
        self._stage, self._cell = stage, cell
        self._stage_start = time.monotonic()
        if self.live:
            self._draw()
        else:
            where = f" [{cell}]" if cell else ""
            self.log.info(f"stage {self.done + 1}/{self.total}: {stage}{where} ...")

    def finish(self, stage: str, status: str, detail: str = "") -> float:
        elapsed = time.monotonic() - self._stage_start
        self.done += 1
        self._clear()
        mark = {"passed": "ok", "failed": "FAILED", "skipped": "skipped", "error": "ERROR"}.get(status, status)
        line = f"{stage:<10} {mark:<8} {elapsed:6.1f}s" + (f"  {detail}" if detail else "")
        if status in ("failed", "error"):
            self.log.error(line)
        else:
            self.log.info(line)
        return elapsed
