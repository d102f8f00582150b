"""Every tests/**/test_*.py is collected by this repository's pytest configuration.

pytest's default ``norecursedirs`` skips folders named ``build``; a folder rule like that silently
drops a whole area of tests. The only test files allowed outside collection are suites that are
data for other tests, listed here by folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Suites run by other tests through `xcompat test` (they crash and hang on purpose).
DATA_SUITES = ("tests/fixtures/crashy_suite", "tests/fixtures/emulation")

PROBE = textwrap.dedent('''
    import os

    _seen = []

    def pytest_collectreport(report):
        path = report.nodeid.split("::", 1)[0]
        if path.endswith(".py") and "::" not in report.nodeid:
            _seen.append(path)

    def pytest_collection_finish(session):
        with open(os.environ["XCOMPAT_COLLECTED_FILES"], "w") as out:
            out.write("\\n".join(sorted(set(_seen))))
''')


_COLLECTION_STARTED = [float("inf")]


def _test_files() -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("test_*.py")}


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> set[str]:
    """Files this repository's pytest configuration collects, as a plain ``pytest`` run sees them."""
    tmp_path = tmp_path_factory.mktemp("collect")
    _COLLECTION_STARTED[0] = time.time() - 1
    (tmp_path / "collected_files_probe.py").write_text(PROBE)
    listing = tmp_path / "collected.txt"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH", "")]))
    env["XCOMPAT_COLLECTED_FILES"] = str(listing)
    env.pop("XCOMPAT_CRASHY_SUITE", None)
    env.pop("PYTEST_ADDOPTS", None)  # a plain run: no -k, --ignore or deselection from outside
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "collected_files_probe", "-p", "no:cacheprovider"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert listing.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return set(filter(None, listing.read_text().splitlines()))


def test_every_test_file_outside_the_data_suites_is_collected(collected):
    expected = {f for f in _test_files() if not f.startswith(tuple(s + "/" for s in DATA_SUITES))}
    # (a file written while the collection ran, in a working tree being edited, is not counted)
    missing = sorted(f for f in expected - collected if (REPO / f).stat().st_mtime < _COLLECTION_STARTED[0])
    assert not missing, f"test files pytest does not collect (check norecursedirs / testpaths): {missing}"
    # the build/ areas are the ones pytest's default rule used to drop
    assert any(f.startswith("tests/unit/builder/") for f in collected)


def test_data_suites_are_listed_and_not_collected(collected):
    under_fixtures = {f for f in _test_files() if f.startswith("tests/fixtures/")}
    unlisted = sorted(f for f in under_fixtures if not f.startswith(tuple(s + "/" for s in DATA_SUITES)))
    assert not unlisted, f"test files under tests/fixtures/ that belong to no listed data suite: {unlisted}"
    for suite in DATA_SUITES:
        assert (REPO / suite).is_dir(), f"{suite} is listed as a data suite but does not exist"
    assert not {f for f in collected if f.startswith("tests/fixtures/")}
