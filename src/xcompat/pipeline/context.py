"""What the stages of one ``xcompat run`` share: the run's configuration and what earlier stages found.

One ``RunContext`` is made per run and handed to every stage (``xcompat.pipeline.stage``).
A stage reads what the stages before it left here (the plan's cells, the built wheels, the
baseline) and records what later ones need; nothing else passes between stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xcompat.pipeline.local import LocalPipeline, RunConfig
from xcompat.settings import Settings

if TYPE_CHECKING:
    from xcompat.report.model import Report


@dataclass(eq=False)
class RunContext:
    pipe: LocalPipeline
    isolation: str = "auto"  # build isolation of the project's and the baseline's builds
    settings: Settings = field(init=False)
    cell_id: str | None = None  # the plan's first required cell here: it drives the run
    cells: list[dict[str, Any]] = field(default_factory=list)  # the plan's cells this machine serves
    wheels: list[Path] = field(default_factory=list)  # the project's wheels (the build stage)
    site: Path | None = None  # the wheels unpacked for the tests
    rerun: str | None = None  # the report's command that reruns one test ("{test}")
    halted: str | None = None  # why the remaining stages do not run
    baseline_path: Path | None = None  # what the ABI is diffed against (the baseline stage)
    baseline_missing: str | None = None  # why there is none
    baseline_started: object = None  # the baseline, prepared or building (xcompat.pipeline.stages.baseline)
    report: Report | None = None  # the one verdict, once the report stage has written it

    def __post_init__(self) -> None:
        from xcompat.settings import defaults_settings

        self.settings = self.pipe.config.settings or defaults_settings()

    @property
    def cfg(self) -> RunConfig:
        return self.pipe.config

    def result_path(self, kind: str) -> Path:
        """Where the stage of ``kind`` writes its result in the run's folder (``STAGES[kind].result_file``)."""
        from xcompat.results.stages import STAGES

        return self.pipe.path(*STAGES[kind].result_file.split("/"))

    def cell_backend(self) -> str | None:
        """The device backend of the run's cell (None: no cell, or the plan names none)."""
        return next((c.get("backend") for c in self.cells if c["id"] == self.cell_id), None)
