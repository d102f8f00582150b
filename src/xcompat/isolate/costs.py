"""What each isolation mode costs a project's suite, measured, and the mode that fits it.

``xcompat matrix init`` writes ``tests.isolation`` from this. Isolating every test is what
xcompat does by default, at a few milliseconds a test on most suites; a suite whose tests
redo expensive work in every process pays far more. A JIT is the usual case: a numba function
without ``cache=True`` is compiled again in every test process that calls it. Such a suite
is better served by one process per test file, and only a measurement can tell.

:func:`measure` runs the suite (in this folder, with this interpreter) three times: plain
``python -m pytest``, ``xcompat test --isolate test`` and ``xcompat test --isolate file``,
within a time budget, and :class:`Bound` picks the strictest mode whose cost stays within
the bound: ``test``, else ``file``, else ``none``. Each run is timed as a whole command (start,
collection, the tests), the way CI pays for it.

Bounded time:

* plain pytest runs first, in pytest's order, and stops at the first file boundary after an
  eighth of the budget: the files it finished are the *sample*, which the other modes run
  too (the rest is deselected). A suite that finishes in that time is measured whole. Plain
  pytest runs the sample again last, time permitting, and the faster of its two runs counts
  (the first run of a suite also reads its libraries from disk);
* an isolated run is stopped once it is certain to be over the bound (at twice the time the
  bound allows, so the comment can still say by how much), or when the budget runs out;
* times of a sample are scaled to the whole suite: the collection (every run collects every
  file) once, the rest in proportion to the number of tests.

Every run gets an empty ``NUMBA_CACHE_DIR`` of its own: each starts as a fresh CI checkout
does, with no JIT cache, and none is written into the project. The runs write no bytecode
and no pytest cache either. Anything that keeps the measurement from being made (pytest
missing, the suite not collecting, no tests, the budget spent) raises :class:`NotMeasured`
with one line saying why.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from xcompat.isolate.costs_runs import TimedRun, TimedRunner

Mode = Literal["test", "file", "none"]

DEFAULT_BUDGET_S = 120.0
DEFAULT_RATIO = 2.0
# What isolation may add per test whatever the ratio: five times xcompat's own target for a
# forked test process (10 ms). On a busy runner with few cores the fork alone can cost several
# times that target, and a suite of many quick tests should keep per-test isolation there; a
# test process that compiles a JIT function (a tenth of a second and more) is still well over it.
DEFAULT_PER_TEST_S = 0.050
# Plain pytest measures the files it finishes in this share of the budget.
SAMPLE_SHARE = 1 / 8
_NOTE_CHARS = 200


def file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


class NotMeasured(Exception):
    """The measurement could not be made; ``str()`` is one line saying why."""


@dataclass(frozen=True)
class Bound:
    """A mode is within the bound when it costs at most ``ratio`` times plain pytest's time,
    or at most ``per_test_s`` more per test."""

    ratio: float = DEFAULT_RATIO
    per_test_s: float = DEFAULT_PER_TEST_S

    def allows(self, seconds: float, plain: float, tests: int) -> bool:
        return seconds <= self.ratio * plain or (seconds - plain) <= self.per_test_s * max(tests, 1)

    def limit(self, plain: float, tests: int) -> float:
        """The most a run may take and still be within the bound."""
        return max(self.ratio * plain, plain + self.per_test_s * max(tests, 1))

    def describe(self) -> str:
        return f"{self.ratio:g}x plain pytest's time or +{self.per_test_s * 1000:g} ms a test"


@dataclass(frozen=True)
class ModeCost:
    mode: Mode
    seconds: float | None  # scaled to the whole suite; None: not measured
    over: bool = False  # stopped at its limit: ``seconds`` is a lower bound

    def ratio(self, plain: float) -> float | None:
        return None if self.seconds is None or plain <= 0 else self.seconds / plain


@dataclass(frozen=True)
class Measurement:
    plain_s: float
    costs: dict[str, ModeCost]
    tests: int  # in the whole suite
    files: int
    sample_tests: int
    sample_files: int
    bound: Bound
    decision: Mode

    def within(self, mode: str) -> bool | None:
        cost = self.costs.get(mode)
        if cost is None or cost.seconds is None:
            return None
        if cost.over:
            return False
        return self.bound.allows(cost.seconds, self.plain_s, self.tests)

    def describe(self, mode: str) -> str:
        """``--isolate test 7.9 s (4.6x, +518 ms a test)``, or why there is no figure."""
        cost = self.costs.get(mode)
        if cost is None or cost.seconds is None:
            return f"--isolate {mode} not measured in the time left"
        ratio = cost.ratio(self.plain_s) or 0.0
        extra_ms = (cost.seconds - self.plain_s) / max(self.tests, 1) * 1000
        more = "more than " if cost.over else ""
        per_test = f", {'+' if extra_ms >= 0 else '-'}{abs(extra_ms):.0f} ms a test" if mode == "test" else ""
        return f"--isolate {mode} {more}{_secs(cost.seconds)} ({more}{ratio:.1f}x{per_test})"

    def summary(self) -> str:
        """One line for the terminal."""
        parts = [f"{mode} {self.describe(mode).split(' ', 2)[2]}" for mode in ("test", "file")]
        return (f"isolation: {self.decision} (plain pytest {_secs(self.plain_s)}; " + "; ".join(parts)
                + f"; bound {self.bound.describe()})")

    def comment_lines(self) -> list[str]:
        """The YAML comment written above ``isolation:`` in the starter matrix."""
        if self.sample_files < self.files:
            where = (f"on {self.sample_files} of {self.files} test files ({self.sample_tests} of {self.tests} "
                     "tests), scaled to the whole suite")
        else:
            where = f"on {_count(self.tests, 'test')} in {_count(self.files, 'file')}"
        return [
            f"measured by `xcompat matrix init` {where}:",
            f"plain pytest {_secs(self.plain_s)}, {self.describe('test')}, {self.describe('file')}.",
            f"Bound: {self.bound.describe()}; {self._verdict()}",
        ]

    def _verdict(self) -> str:
        if self.decision == "test":
            return "test is within it."
        if self.decision == "file":
            if self.within("file") is None:
                return "test is over it, file was not measured in the time left."
            return "test is over it, file is within it."
        return "test and file are over it: none runs the tests in one process, without isolation between them."


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _secs(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds:.0f} s"


def one_line(text: str) -> str:
    """Text from a test suite as one printable line, cut to a readable length."""
    flat = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return flat if len(flat) <= _NOTE_CHARS else flat[: _NOTE_CHARS - 3] + "..."


def _tail(log: Path, *, prefer: str = "") -> str:
    """The last telling line of a run's output (one starting with ``prefer`` when there is one)."""
    try:
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no output)"
    chosen = [ln for ln in lines if prefer and ln.startswith(prefer)]
    return one_line((chosen or lines or ["(no output)"])[-1])


def measure(
    project: Path,
    paths: Sequence[str],
    pytest_args: Sequence[str] = (),
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    bound: Bound | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> Measurement:
    """Measure plain pytest, ``--isolate test`` and ``--isolate file`` on the suite in
    ``project`` (``paths`` and ``pytest_args`` as the matrix's ``tests.pytest`` and
    ``tests.pytest-args``) and choose the mode. Raises :class:`NotMeasured`."""
    from importlib.util import find_spec

    bound = bound or Bound()
    if find_spec("pytest") is None:
        raise NotMeasured("pytest is not installed here (pip install 'xcompat[runner]')")
    base = dict(os.environ if env is None else env)
    base["PYTHONDONTWRITEBYTECODE"] = "1"
    base["PYTEST_ADDOPTS"] = (base.get("PYTEST_ADDOPTS", "") + " -p no:cacheprovider").strip()
    plugins = [p for p in base.get("PYTEST_PLUGINS", "").split(",") if p.strip()]
    base["PYTEST_PLUGINS"] = ",".join([*plugins, "xcompat.isolate.costs_plugin"])
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="xcompat-measure-") as tmp:
        runner = TimedRunner(project, Path(tmp), base, python, start + budget_s)
        return _measure(runner, list(paths), list(pytest_args), budget_s, bound)


def _measure(runner: TimedRunner, paths: list[str], args: list[str], budget_s: float, bound: Bound) -> Measurement:
    targets = " ".join(paths) or "the project folder"
    suite = _Suite(runner, paths, args, targets)
    # 1. What there is to run.
    collected, collect_s = suite.collect(limit=min(runner.left(), budget_s / 2))
    files = list(dict.fromkeys(file_of(n) for n in collected))
    # 2. Plain pytest: the baseline, and the sample the other modes run.
    sample = suite.plain(collected, files, collect_s, limit=min(runner.left(), budget_s / 3),
                         stop_after_s=budget_s * SAMPLE_SHARE)
    allowed = bound.limit(sample.plain.seconds, sample.tests)
    # 3. The isolated modes on the same sample; each stopped once it is surely over the bound.
    modes: tuple[Mode, ...] = ("test", "file")
    costs: dict[str, ModeCost] = {mode: suite.isolated(mode, sample, allowed) for mode in modes}
    # 4. Plain pytest once more, on the sample: the faster of its two runs counts. The first run
    # of the suite also pays for reading its libraries from disk (a JIT's are large), which the
    # isolated runs after it do not.
    plain_s = suite.plain_again(sample)

    tests = len(collected)
    measurement = Measurement(plain_s=plain_s, costs=costs, tests=tests, files=len(files),
                              sample_tests=sample.tests, sample_files=len(sample.files), bound=bound,
                              decision="test")
    in_test, in_file = measurement.within("test"), measurement.within("file")
    if in_test is None:
        raise NotMeasured(f"xcompat test --isolate test did not finish in the time left of {budget_s:.0f} s "
                          "(--measure-timeout)")
    decision: Mode = "test" if in_test else ("none" if in_file is False else "file")
    return replace(measurement, decision=decision)


@dataclass(frozen=True)
class _Sample:
    """What plain pytest ran first: the files the other runs take too, and how a run of them
    scales to the whole suite."""

    plain: TimedRun
    sampled: bool  # plain pytest was stopped: the sample is the files it finished
    files: set[str]
    tests: int
    collect_s: float
    scale: float

    def whole(self, seconds: float) -> float:
        """A run's time on the sample, scaled to the whole suite (collection is paid once)."""
        return self.collect_s + max(seconds - self.collect_s, 0.0) * self.scale

    def plan(self) -> Mapping[str, object]:
        return {"files": sorted(self.files) if self.sampled else None}


class _Suite:
    """The runs of one measurement, each raising :class:`NotMeasured` when it cannot count."""

    def __init__(self, runner: TimedRunner, paths: list[str], args: list[str], targets: str) -> None:
        self.runner = runner
        self.paths = paths
        self.args = args
        self.targets = targets

    def collect(self, *, limit: float) -> tuple[list[str], float]:
        """The collected test ids, and how long collecting took."""
        collect = self.runner.run(["-m", "pytest", "--collect-only", "-q", *self.paths, *self.args], limit=limit,
                                  plan={})
        if collect.returncode is None:
            raise NotMeasured(f"collecting the tests took more than {limit:.0f} s")
        found = collect.found
        if found is None:
            raise NotMeasured(f"pytest could not collect {self.targets} (exit {collect.returncode}): "
                              + _tail(collect.log, prefer="ERROR"))
        if found["errors"]:
            raise NotMeasured(f"pytest could not collect {one_line(found['errors'][0])}")
        collected: list[str] = found["collected"]
        if not collected:
            raise NotMeasured(f"no tests were collected from {self.targets}")
        return collected, collect.seconds

    def plain(self, collected: list[str], files: list[str], collect_s: float, *, limit: float,
              stop_after_s: float) -> _Sample:
        """Plain pytest, stopped after the file that ends past ``stop_after_s``."""
        plain = self.runner.run(["-m", "pytest", "-q", *self.paths, *self.args], limit=limit,
                                plan={"stop_after_s": stop_after_s})
        if plain.returncode is None:
            raise NotMeasured(f"plain pytest did not finish a test file within {limit:.0f} s")
        if plain.found is None:
            raise NotMeasured(f"plain pytest could not run {self.targets} (exit {plain.returncode}): "
                              + _tail(plain.log))
        done: list[str] = plain.found["files_done"]
        if not done:
            raise NotMeasured(f"plain pytest ran no test of {self.targets} in its own process "
                              f"(exit {plain.returncode}): " + _tail(plain.log))
        sampled = bool(plain.found["stopped"])
        sample = set(done) if sampled else set(files)
        sample_tests = sum(1 for n in collected if file_of(n) in sample) if sampled else len(collected)
        return _Sample(plain=plain, sampled=sampled, files=sample, tests=sample_tests, collect_s=collect_s,
                       scale=len(collected) / max(sample_tests, 1))

    def isolated(self, mode: Mode, sample: _Sample, allowed: float) -> ModeCost:
        """``xcompat test --isolate mode`` on the sample, stopped once surely over ``allowed``."""
        limit = min(self.runner.left(), 2 * allowed + 5)
        if limit <= 1:
            return ModeCost(mode, None)
        argv = ["-m", "xcompat", "test", *self.paths, "--isolate", mode, "--", *self.args]
        run = self.runner.run(argv, limit=limit, plan=sample.plan())
        if run.returncode is None:
            if run.seconds >= allowed:
                return ModeCost(mode, sample.whole(run.seconds), over=True)
            return ModeCost(mode, None)
        if run.returncode not in (0, 1):
            raise NotMeasured(f"xcompat test --isolate {mode} could not run {self.targets} "
                              f"(exit {run.returncode}): " + _tail(run.log, prefer="error:"))
        return ModeCost(mode, sample.whole(run.seconds))

    def plain_again(self, sample: _Sample) -> float:
        """Plain pytest's time for the whole suite: the faster of its first run and, with time
        left, a second one on the sample."""
        first = sample.plain.seconds
        if self.runner.left() > first + 1:
            again = self.runner.run(["-m", "pytest", "-q", *self.paths, *self.args],
                                    limit=min(self.runner.left(), 2 * first + 5), plan=sample.plan())
            if again.returncode is not None and again.found is not None and again.found["ran"] == sample.tests:
                return sample.whole(min(first, again.seconds))
        return sample.whole(first)
