"""``xcompat build`` as the build and baseline stages run it: the same command for both.

The project's and the baseline's builds use the same build isolation and the run's cell's
device backend (a CPU cell builds the CPU variant); a failed build's reason is the one its
record names, not the last line of its log.
"""

from __future__ import annotations

from pathlib import Path

from xcompat.errors import InputError
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import RunningCommand, StageResult, load_json


def build_argv(context: RunContext, project: Path, out: Path) -> list[str]:
    """``xcompat build`` of ``project`` into ``out``."""
    argv = [*context.pipe.xcompat("build", project, "--backend", "native", "--out", out,
                                  "--isolation", context.isolation)]
    backend = context.cell_backend()
    if backend:
        argv += ["--device", backend]
    from xcompat.pipeline.lanes import build_options

    return argv + build_options(context)  # an emulated lane: its wheel (xcompat build --arch)


def start_build(context: RunContext, name: str, project: Path, out: Path) -> RunningCommand:
    return context.pipe.start_command(name, build_argv(context, project, out), outputs=[out / "build.json"])


def finish_build(context: RunContext, running: RunningCommand, out: Path) -> StageResult:
    result = context.pipe.finish_command(running)
    if result.status != "passed":
        reason = build_failure(out / "build.json")
        if reason:
            # The cause the build record names (the compiler's or the build script's error),
            # not the last line of the log, which is the build frontend's wrapper message.
            result.detail = f"exit {result.exit_code}: {reason}"
    return result


def build_failure(record: Path) -> str | None:
    """The reason a failed ``xcompat build`` gives in its record (the first failed cell's), if any."""
    from xcompat.neutralise import MESSAGE_CHARS, one_line

    try:
        document = load_json(record)
    except InputError:
        return None
    if not isinstance(document, dict):
        return None
    for row in document.get("cells") or []:
        if isinstance(row, dict) and row.get("status") == "failed" and row.get("reason"):
            return one_line(row["reason"], MESSAGE_CHARS)
    return None
