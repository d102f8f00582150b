"""The pytest plugin of the isolation measurement (``xcompat.isolate.costs``).

``xcompat matrix init`` runs the project's suite under plain pytest and under ``xcompat test``
with this plugin named in ``PYTEST_PLUGINS``; it acts only where ``XCOMPAT_MEASURE_PLAN``
names a plan file (JSON), and does three things:

* records what was collected (node ids, in pytest's order) and why a file could not be;
* with ``stop_after_s``, stops the session at the first file boundary after that many seconds,
  so a long suite is measured on the files plain pytest got through (the sample);
* with ``files``, deselects every test outside those files, so each mode runs the same sample.

What it found is written to the plan's ``out`` file when the session ends, by the process
that collected (a test process forked from it never writes).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import pytest

from xcompat.isolate.costs import file_of
from xcompat.isolate.costs_runs import PLAN_ENV


def _last_line(text: str) -> str:
    """The line of a collection error's report that says what went wrong (pytest's ``E``
    lines hold the exception; the last of them is the one raised)."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    raised = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return (raised or lines or ["(no message)"])[-1]


class MeasurePlugin:
    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan
        self.pid = os.getpid()
        self.started = time.monotonic()
        self.errors: list[str] = []
        self.collected: list[str] = []
        self.left: Counter[str] = Counter()  # tests not yet run, by file
        self.ran = 0
        self.files_done: list[str] = []
        self.stopped = False

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed and os.getpid() == self.pid:
            self.errors.append(f"{report.nodeid or 'collection'}: {_last_line(str(report.longreprtext))}")

    @pytest.hookimpl(trylast=True)  # after -k, -m and the project's own selection
    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        self.collected = [item.nodeid for item in items]
        files = self.plan.get("files")
        if files is not None:
            sample = set(files)
            kept = [item for item in items if file_of(item.nodeid) in sample]
            dropped = [item for item in items if file_of(item.nodeid) not in sample]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
                items[:] = kept
        self.left = Counter(file_of(item.nodeid) for item in items)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        result = yield
        if os.getpid() != self.pid:
            return result
        self.ran += 1
        name = file_of(item.nodeid)
        self.left[name] -= 1
        if self.left[name] == 0:
            self.files_done.append(name)
            stop_after = self.plan.get("stop_after_s")
            if stop_after is not None and nextitem is not None and time.monotonic() - self.started > stop_after:
                self.stopped = True
                item.session.shouldstop = "xcompat matrix init: enough test files measured"
        return result

    def pytest_sessionfinish(self, session: Any) -> None:
        if os.getpid() != self.pid:
            return
        out = self.plan.get("out")
        if not out:
            return
        doc = {
            "collected": self.collected,
            "errors": self.errors,
            "ran": self.ran,
            "files_done": self.files_done,
            "stopped": self.stopped,
        }
        tmp = f"{out}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, out)


def pytest_configure(config: Any) -> None:
    path = os.environ.get(PLAN_ENV)
    if not path or config.pluginmanager.has_plugin("xcompat-measure"):
        return
    try:
        with open(path, encoding="utf-8") as fh:
            plan = json.load(fh)
    except (OSError, ValueError):
        return
    config.pluginmanager.register(MeasurePlugin(plan), "xcompat-measure")
