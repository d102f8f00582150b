"""The real-project tier (``make test-real``): released PyPI projects with C extensions, adopted
as docs/adopt.md describes, through the real CLI.

It downloads sdists and builds them (minutes, network), so ``make test`` collects it and skips
it with the reason; ``make test-real`` sets ``XCOMPAT_TIER_REAL=1`` to run it. Downloads and
builds are cached under ``${XCOMPAT_CACHE:-~/.cache/xcompat-ci}/real-projects``.
"""

from __future__ import annotations

import os

import pytest

TIER_VARIABLE = "XCOMPAT_TIER_REAL"


def pytest_collection_modifyitems(config, items):
    if os.environ.get(TIER_VARIABLE) == "1":
        return
    skip = pytest.mark.skip(reason=f"real-project tier: run by `make test-real` ({TIER_VARIABLE}=1); "
                                   "it downloads and builds PyPI sdists")
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here + os.sep):
            item.add_marker(skip)
