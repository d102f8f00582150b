"""SIGTERM (``timeout``, a cancelled CI job, a runner shutting down) and SIGHUP (a closed
terminal or SSH connection) stop ``xcompat run`` as Ctrl-C does, in its build stage (the
baseline's build running alongside, too) and in its test stage, and ``xcompat test`` and
``xcompat build``, the commands those stages run: exit 143 or 129, one line naming the stage
(or command) and the signal, no traceback, no staging folder or half-written result left,
and no process of the command alive afterwards, one
started in a session of its own included.

Each command blocks at a known point: the fixture project's build script, or its test, starts
a sleeper in a session of its own, writes a marker file and sleeps; the signal goes to xcompat
alone (as ``kill`` and ``timeout`` send it) once the marker is there. Every process of the
command inherits a token in its environment (the sleeper has it on its command line too),
which is how a survivor is found in /proc.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from xcompat.cpus import usable_cpus

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="finds the command's processes in /proc")

CODES = {"SIGTERM": 143, "SIGHUP": 129}
# Starts a sleeper in a session of its own (out of reach of its process group), marks that
# the block is reached, and blocks: in the build script when BLOCK_IN=build, in the test
# when BLOCK_IN=test.
BLOCK = """
def block(where):
    import os, subprocess, sys, time
    if os.environ.get("BLOCK_IN") != where:
        return
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", os.environ["STOP_TOKEN"]],
                     start_new_session=True)
    open(os.environ["BLOCK_MARKER"], "w").close()
    time.sleep(600)
"""
SETUP = BLOCK + """
import sys
from setuptools import Extension, setup

if "bdist_wheel" in sys.argv:
    block("build")
setup(ext_modules=[Extension("stopext._core", ["stopext/_core.c"])])
"""
TEST = BLOCK + """

def test_blocks():
    block("test")
"""
C_SOURCE = """#include <Python.h>
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&mod); }
"""


def _env(token: str, block_in: str, marker: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith(("GITHUB_", "GITLAB_", "PYTEST_"))}
    env.update(STOP_TOKEN=token, BLOCK_IN=block_in, BLOCK_MARKER=str(marker))
    # A build frontend stopped while its backend runs leaves its isolated environment behind
    # (`python -m build` does on a terminal's Ctrl-C as well): here, not in the shared /tmp.
    temporary = marker.parent / "tmp"
    temporary.mkdir(exist_ok=True)
    env["TMPDIR"] = str(temporary)
    return env


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A C-extension project with its tests in the package, and a starter matrix."""
    root = tmp_path_factory.mktemp("stop") / "stopext-src"
    (root / "stopext" / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "stopext"\nversion = "1.0.0"\nrequires-python = ">=3.10"\n\n'
        '[tool.setuptools]\npackages = ["stopext", "stopext.tests"]\n')
    (root / "setup.py").write_text(SETUP)
    (root / "stopext" / "_core.c").write_text(C_SOURCE)
    (root / "stopext" / "__init__.py").write_text("from stopext import _core\n")
    (root / "stopext" / "tests" / "__init__.py").write_text("")
    (root / "stopext" / "tests" / "test_core.py").write_text(TEST)
    init = subprocess.run([sys.executable, "-m", "xcompat", "matrix", "init", str(root), "--repo", "acme/stopext"],
                          capture_output=True, text=True, timeout=120, env=_env("-", "", root.parent / "unused"),
                          check=False)
    assert init.returncode == 0, init.stderr
    return root


def _survivors(token: str) -> list[str]:
    """The live processes that carry ``token`` in their environment or command line."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except (OSError, IndexError):
            continue
        if state != b"Z" and token.encode() in environ + cmdline:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry}: {command}")
    return found


def _sleepers(token: str) -> int:
    """How many blocked sleepers (``token`` on their command line) are alive."""
    return sum(1 for line in _survivors(token) if "time.sleep(600)" in line)


def _stopped(args: list[str], *, name: str, block_in: str, tmp_path: Path, cwd: Path,
             blocked: int = 1) -> tuple[int, str, list[str]]:
    """``xcompat ARGS`` signalled with ``name`` once ``blocked`` of its processes block; its exit
    code, its output, and the processes of it that still live after a short grace."""
    token = uuid.uuid4().hex
    marker = tmp_path / f"blocked-{token}"
    log = tmp_path / f"output-{token}.txt"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "xcompat", *args], cwd=cwd, env=_env(token, block_in, marker),
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while not marker.exists() or (blocked > 1 and _sleepers(token) < blocked):
            assert proc.poll() is None, f"xcompat ended before it blocked:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"xcompat never blocked:\n{log.read_text()}"
            time.sleep(0.05)
        proc.send_signal(getattr(signal, name))
        code = proc.wait(timeout=120)
        grace = time.monotonic() + 2  # a killed process can take a moment to vanish
        survivors = _survivors(token)
        while survivors and time.monotonic() < grace:
            time.sleep(0.05)
            survivors = _survivors(token)
        return code, log.read_text(), survivors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for line in _survivors(token):  # never leave a sleeper behind, whatever the verdict
            try:
                os.kill(int(line.split(":", 1)[0]), signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("stage", ["build", "test"])
def test_run_stops_in_a_stage(project: Path, tmp_path: Path, stage: str, name: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("previous run")
    code, output, survivors = _stopped(["run", str(project), "--out", str(out), "--no-coverage"],
                                       name=name, block_in=stage, tmp_path=tmp_path, cwd=tmp_path)
    assert code == CODES[name], output
    assert f"xcompat run: interrupted by {name} during the {stage} stage; {out} was left as it was" in output
    assert "Traceback" not in output
    assert survivors == [], output
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]
    assert (out / "report.md").read_text() == "previous run"


@pytest.mark.slow
@pytest.mark.skipif(usable_cpus() < 2, reason="the baseline builds alongside the project only with a second CPU")
def test_run_stops_in_the_build_stage_with_the_baseline_building_alongside(project: Path, tmp_path: Path) -> None:
    # Both builds block at once (each started its sleeper: with the builds one after the other
    # this never happens), then SIGTERM: the baseline's build ends with the project's.
    baseline = tmp_path / "previous"
    shutil.copytree(project, baseline)
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("previous run")
    code, output, survivors = _stopped(
        ["run", str(project), "--baseline", str(baseline), "--out", str(out), "--no-coverage"],
        name="SIGTERM", block_in="build", tmp_path=tmp_path, cwd=tmp_path, blocked=2)
    assert code == 143, output
    assert f"xcompat run: interrupted by SIGTERM during the build stage; {out} was left as it was" in output
    assert "Traceback" not in output
    assert survivors == [], output
    assert [p.name for p in tmp_path.iterdir() if ".partial-" in p.name] == []
    assert sorted(p.name for p in out.iterdir()) == ["report.md"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_build_stops(project: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / "wheelhouse"
    code, output, survivors = _stopped(["build", str(project), "--backend", "native", "--out", str(out)],
                                       name=name, block_in="build", tmp_path=tmp_path, cwd=tmp_path)
    assert code == CODES[name], output
    assert f"xcompat build: interrupted by {name}" in output
    assert "Traceback" not in output
    assert survivors == [], output
    # no wheel, no build.json, no temporary folder of the build
    assert not out.exists() or [p.name for p in out.iterdir() if p.name != "logs"] == []


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("isolation", ["test", "none"])
def test_test_stops(tmp_path: Path, isolation: str, name: str) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_block.py").write_text(TEST)
    result = tmp_path / "result.json"
    code, output, survivors = _stopped(
        ["test", str(tests), "--isolate", isolation, "--json", str(result), "--", "-p", "no:cacheprovider"],
        name=name, block_in="test", tmp_path=tmp_path, cwd=tmp_path)
    assert code == CODES[name], output
    assert f"xcompat test: interrupted by {name}; no results were written" in output
    assert "Traceback" not in output
    assert survivors == [], output
    assert not result.exists()
