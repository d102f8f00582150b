"""The one interface every stage of ``xcompat run`` satisfies, and the outcome it returns.

A stage is a module of ``xcompat.pipeline.stages`` exposing ``STAGE``, an object with a
``name`` (its name in run.json, the logs and the progress line; for a stage that writes a
kind of result, that kind's name in ``xcompat.results.stages.STAGES``, whose ``result_file``
says where) and ``run(context)``, which returns a ``StageResult`` and never raises for a
failure of the project. The runner (``xcompat.pipeline.runner``) runs the stages of the
table in ``xcompat.pipeline.registry`` in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from xcompat.pipeline.local import StageResult

if TYPE_CHECKING:
    from xcompat.pipeline.context import RunContext

__all__ = ["Stage", "StageResult"]


class Stage(Protocol):
    @property
    def name(self) -> str:
        """The stage's name; a result kind's name when the stage writes one."""
        ...

    @property
    def runs_when_halted(self) -> bool:
        """Whether it runs after an earlier stage halted the run (the report: it always runs)."""
        ...

    def run(self, context: RunContext) -> StageResult:
        """Run the stage; its failure is the returned result's status, never an exception."""
        ...
