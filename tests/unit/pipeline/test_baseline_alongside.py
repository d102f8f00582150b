"""The baseline's build runs alongside the project's when a second CPU is usable.

The two "builds" here are small Python commands standing in for ``xcompat build`` (the real
builds are in tests/integration/pipeline): the project's waits until the baseline's has
started, so they only both pass when they run at the same time, and the baseline's then
outlives the project's, so ending what the build stage left running must leave it alone.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from xcompat.errors import Interrupted
from xcompat.log import Logger
from xcompat.pipeline import builds
from xcompat.pipeline.context import RunContext
from xcompat.pipeline.local import LocalPipeline, RunConfig, StageResult
from xcompat.pipeline.stages import baseline, build
from xcompat.settings import ProjectFacts, defaults_settings

# Writes a wheel-named file into OUT once the other side is where it has to be.
BASELINE = """
import pathlib, sys, time
out, started, project_done = map(pathlib.Path, sys.argv[1:4])
out.mkdir(parents=True, exist_ok=True)
started.touch()
print("baseline building", flush=True)
deadline = time.monotonic() + float(sys.argv[4])
try:
    while not project_done.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)  # still running after the project's build has ended
except KeyboardInterrupt:  # asked to stop as a terminal's Ctrl-C asks: its cleanup runs
    started.with_name("baseline-cleaned-up").touch()
    raise
(out / "base-1.0-py3-none-any.whl").write_bytes(b"")
print("baseline built", flush=True)
"""
PROJECT = """
import pathlib, sys, time
out, started, project_done = map(pathlib.Path, sys.argv[1:4])
out.mkdir(parents=True, exist_ok=True)
deadline = time.monotonic() + float(sys.argv[4])
while not started.exists():
    if time.monotonic() > deadline:
        sys.exit("the baseline's build did not start alongside this one")
    time.sleep(0.02)
(out / "proj-1.1-py3-none-any.whl").write_bytes(b"")
project_done.touch()
print("project built", flush=True)
"""


def _stages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: int, patience: float = 20) -> RunContext:
    def project(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "1.0"\n')
        return folder

    cfg = RunConfig(project=project("proj"), matrix=tmp_path / "m.yml", allowed_signers=None,
                    baseline=project("base"), out=tmp_path / "out",
                    settings=defaults_settings(required_backends=("cpu",)),
                    facts=ProjectFacts(name="proj", uses_torch=False, torch_evidence="none"), signed=False)
    stages = RunContext(LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO())))
    monkeypatch.setattr(build, "usable_cpus", lambda: cpus)
    marks = (str(tmp_path / "baseline-started"), str(tmp_path / "project-built"))

    def build_argv(context: RunContext, source: Path, out: Path) -> list[str]:
        script = BASELINE if source.name == "base" else PROJECT
        return [sys.executable, "-c", script, str(out), *marks, str(patience)]

    monkeypatch.setattr(builds, "build_argv", build_argv)
    return stages


def _sequence(context: RunContext) -> list[tuple[str, Callable[[], StageResult]]]:
    return [(stage.name, partial(stage.run, context)) for stage in (build.STAGE, baseline.STAGE)]


@pytest.mark.skipif(sys.platform != "linux", reason="what a stage leaves running is ended through the subreaper")
def test_the_baseline_builds_alongside_the_project_and_outlives_its_build(tmp_path, monkeypatch):
    stages = _stages(tmp_path, monkeypatch, cpus=2)
    pipe = stages.pipe
    results = pipe.execute(_sequence(stages))
    assert [(r.name, r.status) for r in results] == [("build", "passed"), ("baseline", "passed")], results
    assert [w.name for w in stages.wheels] == ["proj-1.1-py3-none-any.whl"]
    assert sorted(p.name for p in pipe.path("baseline").iterdir()) == ["base-1.0-py3-none-any.whl"]
    assert stages.baseline_path == pipe.path("baseline")
    assert "built base-1.0-py3-none-any.whl" in results[1].detail
    # each build's output in its own log, and the baseline was not taken for a leftover
    build_log, baseline_log = (pipe.path("logs", f"{n}.log").read_text() for n in ("build", "baseline"))
    assert "project built" in build_log and "baseline built" not in build_log
    assert "baseline built" in baseline_log and "project built" not in baseline_log
    assert "xcompat killed it" not in build_log + baseline_log


def test_with_one_cpu_the_baseline_waits_for_its_own_stage(tmp_path, monkeypatch):
    stages = _stages(tmp_path, monkeypatch, cpus=1, patience=1)
    pipe = stages.pipe
    # the project's build waits for a baseline that is not started: it gives up and fails
    results = pipe.execute(_sequence(stages))
    assert results[0].status == "failed" and "did not start alongside" in results[0].detail
    assert results[1].status == "passed"
    # the baseline's build started only in its own stage, after the project's had ended
    assert pipe.path("logs", "build.log").stat().st_mtime <= (tmp_path / "baseline-started").stat().st_mtime


def test_an_interrupted_build_stage_ends_the_baseline_building_alongside(tmp_path, monkeypatch):
    stages = _stages(tmp_path, monkeypatch, cpus=2)
    pipe = stages.pipe
    started: list[subprocess.Popen] = []
    real_start = pipe.start_command

    def start_command(*args, **kwargs):
        command = real_start(*args, **kwargs)
        started.append(command.process)
        return command

    real_wait = subprocess.Popen.wait
    interrupted: list[bool] = []

    def interrupted_wait(self, timeout=None):
        # the first wait for the project's build, while the baseline's runs: as a signal would
        if not interrupted and len(started) == 2 and self is started[1]:
            interrupted.append(True)
            deadline = time.monotonic() + 20
            while not (tmp_path / "baseline-started").exists() and time.monotonic() < deadline:
                time.sleep(0.02)  # once the baseline's build is under way
            raise KeyboardInterrupt
        return real_wait(self, timeout=timeout)

    monkeypatch.setattr(pipe, "start_command", start_command)
    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    with pytest.raises(Interrupted):
        pipe.execute(_sequence(stages))
    assert len(started) == 2
    assert (tmp_path / "baseline-cleaned-up").exists(), "the baseline's build was killed without its cleanup"
    for process in started:
        assert process.poll() is not None, f"{process.args[:2]} is still running"
        with pytest.raises(ProcessLookupError):
            os.kill(process.pid, 0)
    assert not pipe.stage_dir.exists()


# Runs 1.5 s. Its child hands a grandchild (same session) to whoever reaps orphans and exits,
# and it starts a daemon in a session of its own; each writes a file after 1 s, and the daemon
# then sleeps on: what a command still running has under way, and what it leaves behind.
LONG = """
import os, pathlib, subprocess, sys, time
WRITE = "import pathlib, sys, time; time.sleep(1); pathlib.Path(sys.argv[1]).touch(); time.sleep(float(sys.argv[2]))"
if os.fork() == 0:
    subprocess.Popen([sys.executable, "-c", WRITE, sys.argv[1], "0"])
    os._exit(0)
os.wait()
daemon = subprocess.Popen([sys.executable, "-c", WRITE, sys.argv[2], "60"], start_new_session=True)
print("daemon pid", daemon.pid, flush=True)
time.sleep(1.5)
print("long done", flush=True)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="orphans come back to xcompat run through the subreaper")
def test_a_command_that_ends_first_leaves_what_the_other_has_under_way(tmp_path):
    cfg = RunConfig(project=tmp_path, matrix=tmp_path / "m.yml", allowed_signers=None, baseline=None,
                    out=tmp_path / "out")
    pipe = LocalPipeline(cfg, Logger({"CI": "true"}, io.StringIO()))
    orphan_wrote, daemon_wrote = tmp_path / "orphan-wrote", tmp_path / "daemon-wrote"

    def stage():
        quick = pipe.start_command("quick", [sys.executable, "-c", "import time; time.sleep(0.3)"])
        long = pipe.start_command("long", [sys.executable, "-c", LONG, str(orphan_wrote), str(daemon_wrote)])
        first = pipe.finish_command(quick)  # the long one, its orphan and its daemon are running now
        second = pipe.finish_command(long)
        assert first.status == "passed", first
        return second

    (result,) = pipe.execute([("both", stage)])
    assert result.status == "passed", result
    assert orphan_wrote.exists(), "a running command's orphan was killed when another command ended"
    assert daemon_wrote.exists(), "a daemon was killed while the command that may have started it still ran"
    long_log = pipe.path("logs", "long.log").read_text()
    assert "xcompat killed it" not in pipe.path("logs", "quick.log").read_text()
    # once the last command has ended, nothing it left is running: the daemon is killed and named
    daemon = int(next(line.split()[2] for line in long_log.splitlines() if line.startswith("daemon pid ")))
    assert f"left process {daemon} " in long_log, long_log
    with pytest.raises(ProcessLookupError):
        os.kill(daemon, 0)
