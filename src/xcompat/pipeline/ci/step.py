"""What a CI stage is given, and what it runs.

``CiInputs`` holds the inputs of the GitHub action by the same names (``output-dir``,
``matrix-sha256``, ...), with the action's defaults. A ``CiStage`` turns them into one
``CiStep``: the xcompat command of the job, where its result goes, and what the cell's
environment needs first; a stage that cannot run raises ``StageRefused`` before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, kw_only=True)
class CiInputs:
    project_dir: str = "."
    matrix: str = ".xcompat/matrix.yml"
    output_dir: str = ".xcompat-out"
    plan: str = ""  # empty: OUTPUT-DIR/plan.json
    results_dir: str = ""  # empty: OUTPUT-DIR/results
    wheelhouse: str = ""  # empty: OUTPUT-DIR/wheelhouse
    cell: str = ""
    matrix_sha256: str = ""
    verify: bool = True
    allowed_signers: str = ".xcompat/allowed_signers"
    revoked: str = ""
    trust_ref: str = ""
    repository: str = ""
    install_wheel: bool = True
    frameworks: str = ""  # JSON: {"torch": "2.5"}
    abi_old: str = ""
    abi_new: str = ""
    abi_diff: str = ""
    coverage_file: str = ""
    dist: str = ""
    report_from: str = ""
    verification_failed: str = ""  # the report stage: why this head's matrix did not verify
    forge: str = "github"  # where the report stage delivers: github, gitlab
    post: bool = True  # the report stage posts its comment or note
    comment_mode: str = "always"
    max_annotations: str = ""
    require_kinds: str = ""  # comma separated
    tag: str = ""
    previous_tag: str = ""
    args: tuple[str, ...] = ()  # extra arguments of the stage's command

    @property
    def out(self) -> Path:
        return Path(self.output_dir).resolve()

    @property
    def plan_path(self) -> Path:
        return Path(self.plan) if self.plan else self.out / "plan.json"

    @property
    def results(self) -> Path:
        return Path(self.results_dir) if self.results_dir else self.out / "results"

    @property
    def cell_dir(self) -> Path:
        return self.results / (self.cell or "all")

    @property
    def wheels(self) -> Path:
        return Path(self.wheelhouse) if self.wheelhouse else self.out / "wheelhouse"

    @property
    def verified(self) -> Path:
        """The verified matrix bytes the plan artifact carries (the plan stage's copy): later
        stages read the matrix from there, never the checkout's file, which a change can edit."""
        return self.out / "matrix.yml"

    def in_project(self, path: str) -> Path:
        """``path`` as the action reads it: relative to the project folder unless absolute."""
        return Path(path) if Path(path).is_absolute() else Path(self.project_dir) / path


@dataclass(kw_only=True)
class CiStep:
    argv: list[str]  # the xcompat command, without the interpreter
    result: Path  # the main result file it writes
    settings_args: list[str] = field(default_factory=list)  # from the verified plan: after the extra args
    install: bool = False  # the cell's frameworks first (and its wheel, for the test stage)
    with_wheel: bool = False
    prelude: list[list[str]] = field(default_factory=list)  # commands first, without the extra arguments
    skip: str = ""  # the stage does not run here, and why: a skipped result says so, nothing else runs
    cell_python: bool = False  # its commands run on the cell's Python: this job's must be the cell's
    after: Callable[[], None] | None = None  # what the job keeps of it, whatever its outcome
    then: list[str] | None = None  # a second command, once the first passed (the same extra arguments)
    then_takes_args: bool = True  # False: the second command is another command; the extra arguments are the first's
    then_after_failure: bool = False  # True: the second runs even when the first failed (the worse code is the step's)
    cwd: str | None = None  # where its commands run (default: the job's folder)
    outputs: Callable[[], list[str]] | None = None  # its outputs once it passed, instead of ``result``;
    # its commands then do not write the job's outputs themselves (GITHUB_OUTPUT is withheld)


class StageRefused(Exception):
    """The stage cannot run with these inputs; nothing was run."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class CiStage(Protocol):
    @property
    def name(self) -> str:
        """The stage's name: ``xcompat stage NAME``, the action's ``stage`` input."""
        ...

    def step(self, inputs: CiInputs) -> CiStep:
        """The stage's command for these inputs; ``StageRefused`` when it cannot run."""
        ...
