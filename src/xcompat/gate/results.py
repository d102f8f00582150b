"""Read what the gate judges: the per-cell stage results.

Stage results are read by ``xcompat.results`` (the one reader the report uses too), and so is
the plan (``xcompat.results.collect.load_plan``); this module only keeps the results the gate
counts and the wheels a build recorded.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from xcompat.errors import InputError
from xcompat.results.envelope import StageResult
from xcompat.results.kinds import RecordedWheel, build_wheels
from xcompat.results.stages import STAGES

__all__ = ["RecordedWheel", "StageResult", "load_results", "wheels_of"]


def wheels_of(result: StageResult) -> tuple[RecordedWheel, ...]:
    return build_wheels(result) if result.kind == "build" else ()


def load_results(folders: Iterable[Path]) -> tuple[StageResult, ...]:
    """Every per-cell stage result under ``folders`` (searched recursively, e.g. downloaded artifacts).

    Read by ``xcompat.results.load_results``: a result file that does not read, parse or check
    is refused, never skipped; its stand-in (a failed result, ``StageResult.refused``) is kept
    whatever its kind, so a truncated result never reads as "no result".
    """
    from xcompat.results.collect import load_results as collect

    paths = list(folders)
    for folder in paths:
        if not folder.is_dir():
            raise InputError("results folder not found", file=folder, hint="download the stage artifacts there first")
    loaded = collect(paths)
    return tuple(r for r in loaded.results if r.kind in STAGES or r.refused)
