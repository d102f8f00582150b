"""The runner tier (`make test-runners`): real runner implementations, minutes per test.

Skipped with the reason in `make test`; under `make test-runners` (XCOMPAT_TEST_RUNNERS=1)
a missing tool fails instead of skipping, so the tier cannot pass by running nothing.
"""

from __future__ import annotations

import os

import pytest
from tests.runners.harness import missing_tools


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    mine = [item for item in items if str(item.fspath).startswith(here)]
    if not mine:
        return
    if os.environ.get("XCOMPAT_TEST_RUNNERS") != "1":
        skip = pytest.mark.skip(reason="runner tier: run with `make test-runners` (act, gitlab-ci-local; minutes)")
        for item in mine:
            item.add_marker(skip)
        return
    for item in mine:
        item.add_marker(pytest.mark.usefixtures("_runner_tools_present"))


@pytest.fixture
def _runner_tools_present() -> None:
    missing = missing_tools()
    if missing:
        pytest.fail(f"the runner tier needs: {', '.join(missing)}; run `make test-runners`", pytrace=False)
