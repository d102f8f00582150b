"""Typed results of collecting and merging coverage.

Line data is kept as two parallel lists per file, ``lines`` (executable line numbers,
ascending) and ``hits`` (how often each ran). That is also the on-disk shape of a cell
artifact: flat integer lists parse several times faster than a list of pairs, and
merging two cells that measured the same file version is one element-wise sum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xcompat.coverage.languages import Language


@dataclass(frozen=True)
class FileLines:
    """The measured lines of one repository file in one cell."""

    path: str  # POSIX, relative to the source root
    language: Language
    origin: str  # "coverage.py" or "gcovr"
    lines: tuple[int, ...]
    hits: tuple[int, ...]

    @property
    def covered(self) -> int:
        return sum(1 for h in self.hits if h)


@dataclass(frozen=True)
class InputProblem:
    """A coverage input that could not be read; the rest still counts."""

    file: str
    cell_id: str | None
    message: str

    def to_dict(self) -> dict[str, str | None]:
        return {"file": self.file, "cell_id": self.cell_id, "message": self.message}

    def __str__(self) -> str:
        cell = f" (cell {self.cell_id})" if self.cell_id else ""
        return f"{self.file}{cell}: {self.message}"


@dataclass(frozen=True)
class Unmapped:
    recorded: str
    origin: str
    reason: str


@dataclass(frozen=True)
class CellCoverage:
    """What ``coverage collect`` gathered in one cell."""

    cell_id: str | None
    source_root: str
    files: tuple[FileLines, ...]
    tools: tuple[tuple[str, str], ...] = ()
    unmapped: tuple[Unmapped, ...] = ()
    unmapped_total: int = 0
    warnings: tuple[str, ...] = ()
    errors: tuple[InputProblem, ...] = field(default=())


def percent(covered: int, valid: int) -> float | None:
    """Coverage in percent, rounded to 2 decimals; None when nothing was executable."""
    if valid == 0:
        return None
    return round(100.0 * covered / valid, 2)


def line_ranges(lines: list[int] | tuple[int, ...]) -> list[list[int]]:
    """Collapse ascending line numbers into ``[[start, end], ...]`` (inclusive) ranges."""
    out: list[list[int]] = []
    for n in lines:
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def uncovered_ranges(
    lines: list[int] | tuple[int, ...], hits: list[int] | tuple[int, ...]
) -> list[list[int]]:
    """Runs of uncovered executable lines as inclusive ``[start, end]`` ranges.

    A run continues across lines that are not executable (blank lines, comments), so
    ``4`` and ``6`` missed with ``5`` blank give one range ``[4, 6]``; a covered line ends it.
    """
    out: list[list[int]] = []
    open_run = False
    for n, h in zip(lines, hits, strict=False):
        if h:
            open_run = False
        elif open_run:
            out[-1][1] = n
        else:
            out.append([n, n])
            open_run = True
    return out
