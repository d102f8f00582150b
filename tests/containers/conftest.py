"""The container tier: collected by every pytest run, run only by ``make test-containers``.

``tests/containers/run-tier.sh`` starts a private dockerd, makes the builder and runner
images and sets ``XCOMPAT_CONTAINER_TIER=1`` with the variables below; anywhere else every
test here is skipped with the reason printed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REQUIRED = ("DOCKER_HOST", "XCOMPAT_CPU_BUILDER_IMAGE", "XCOMPAT_RUNNER_IMAGE", "XCOMPAT_CONTAINER_SDIST",
            "XCOMPAT_CONTAINER_ARGS")


def skip_reason(env: dict[str, str] | os._Environ[str]) -> str | None:
    if env.get("XCOMPAT_CONTAINER_TIER") != "1":
        return ("container tier: run by `make test-containers` (starts its own dockerd and builds the "
                "builder and runner images); XCOMPAT_CONTAINER_TIER is not 1")
    missing = [name for name in REQUIRED if name not in env]
    if missing:
        return f"container tier: {', '.join(missing)} not set (tests/containers/run-tier.sh sets them)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = skip_reason(os.environ)
    for item in items:
        if HERE not in Path(str(item.path)).resolve().parents:
            continue
        item.add_marker(pytest.mark.containers)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
