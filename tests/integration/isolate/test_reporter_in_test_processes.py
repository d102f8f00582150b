"""pytest's terminal reporter in test processes: reachable by name, without its hooks.

A test process's terminal output goes nowhere (the parent prints each test's line from the
replayed reports), so ``xcompat.isolate.child.drop_reporter_hooks`` takes the reporter's hooks
out of the process's hook calls and registers a view of it under its name. What a test or a
plugin reaches through ``config`` must still work, and the parent's own reporter must keep
its hooks: the lines and the summary come from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.helpers.testing import LEAN_PYTEST, run_xcompat_test

from xcompat.isolate import zygote

CONFTEST = """
import json
import os
from pathlib import Path


def _reporter_hooks(config):
    return [impl.plugin_name for impl in config.hook.pytest_runtest_logreport.get_hookimpls()
            if impl.plugin_name == "terminalreporter"]


def pytest_collection_finish(session):
    config = session.config
    path = Path(os.environ["SEEN_DIR"], "parent")
    if path.exists():  # a spawned test process collects too: the warm parent came first
        return
    path.write_text(json.dumps({
        "pid": os.getpid(),
        "reporter_hooks": _reporter_hooks(config),
        "type": type(config.pluginmanager.get_plugin("terminalreporter")).__name__,
    }))
"""

PROBE_TEST = """
import json
import os
from pathlib import Path

from conftest import _reporter_hooks


def _probe(request, name):
    config = request.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    writer = config.get_terminal_writer()  # pytest's own lookup of the reporter by name
    writer.line("written by the test, shown nowhere")
    reporter.write_line("through the reporter itself")
    Path(os.environ["SEEN_DIR"], name).write_text(json.dumps({
        "pid": os.getpid(),
        "reporter_hooks": _reporter_hooks(config),
        "verbosity": reporter.verbosity,
        "writer": type(writer).__name__,
    }))


def test_first(request):
    _probe(request, "first")


def test_second(request):
    _probe(request, "second")
"""


def _run(tmp_path: Path, isolation: str, env: dict[str, str], extra: list[str]) -> tuple[str, dict[str, dict]]:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    (suite / "test_probe.py").write_text(PROBE_TEST)
    seen = tmp_path / "seen"
    seen.mkdir()
    proc, doc = run_xcompat_test(
        suite,
        [".", "--isolate", isolation, *extra, "--", "-v", *LEAN_PYTEST],
        json_out=tmp_path / "result.json",
        env={"SEEN_DIR": str(seen), **env},
        timeout=120,
    )
    assert doc is not None, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [t["outcome"] for t in doc["tests"]] == ["passed", "passed"]
    return proc.stdout, {p.name: json.loads(p.read_text()) for p in seen.iterdir()}


ZYGOTE = pytest.param({"XCOMPAT_TEST_ZYGOTE": "1"}, [], id="zygote", marks=pytest.mark.skipif(
    not zygote.supported(), reason="no zygote on this platform (pidfds and SCM_RIGHTS are Linux's)"))
PARENT = pytest.param({"XCOMPAT_TEST_ZYGOTE": "0"}, [], id="forked-by-parent")
SPAWNED = pytest.param({}, ["--start-method", "spawn"], id="spawned")


@pytest.mark.parametrize(("env", "extra"), [ZYGOTE, PARENT, SPAWNED])
@pytest.mark.parametrize("isolation", ["test", "file"])
def test_reporter_without_hooks_in_test_processes_and_with_them_in_the_parent(
    tmp_path: Path, isolation: str, env: dict[str, str], extra: list[str]
) -> None:
    stdout, seen = _run(tmp_path, isolation, env, extra)
    parent, first, second = seen["parent"], seen["first"], seen["second"]
    assert parent["reporter_hooks"] == ["terminalreporter"]
    assert parent["type"] == "TerminalReporter"
    for child in (first, second):
        assert child["pid"] != parent["pid"]
        assert child["reporter_hooks"] == []
        assert child["verbosity"] == 1  # the reporter's own attributes, read through the view
        assert child["writer"] == "TerminalWriter"
    assert (first["pid"] == second["pid"]) == (isolation == "file")
    # The parent's reporter printed every test's line and the summary from the replayed reports.
    assert "test_probe.py::test_first PASSED" in stdout
    assert "test_probe.py::test_second PASSED" in stdout
    assert "2 passed" in stdout
    assert "shown nowhere" not in stdout and "through the reporter itself" not in stdout
