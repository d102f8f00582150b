"""The emulated tier: collected by every pytest run, run only by ``make test-emulated``.

Those tests run cells of aarch64, s390x and ppc64le on this machine under QEMU user mode
(Debian roots made once and cached under ``XCOMPAT_CACHE``). ``make test-emulated`` sets
``XCOMPAT_EMULATED_TIER=1`` and ``XCOMPAT_REQUIRE_EMULATION=1``: there a machine that cannot
mount binfmt_misc or lacks QEMU fails the tier instead of skipping it. Anywhere else every test
here is skipped with the reason printed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tier = os.environ.get("XCOMPAT_EMULATED_TIER") == "1"
    for item in items:
        if HERE not in Path(str(item.path)).resolve().parents:
            continue
        item.add_marker(pytest.mark.emulated)
        if not tier:
            item.add_marker(pytest.mark.skip(reason="emulated tier: run by `make test-emulated` (QEMU user mode, "
                                                    "Debian roots of aarch64, s390x and ppc64le); "
                                                    "XCOMPAT_EMULATED_TIER is not 1"))
