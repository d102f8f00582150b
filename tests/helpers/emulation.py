"""What the emulation and ISA tests need from this machine, and what they do without it.

Without QEMU user mode or a cross compiler these tests skip with the reason printed; under
``XCOMPAT_REQUIRE_EMULATION=1`` (set by ``make test-emulated`` and ``.ci/run``) they fail
instead, so a CI machine that lost binfmt_misc or the cross compilers cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "emulation"


def unavailable(reason: str) -> None:
    if os.environ.get("XCOMPAT_REQUIRE_EMULATION") == "1":
        pytest.fail(f"required for the emulated tier: {reason}")
    pytest.skip(reason)


def need_tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        unavailable(f"{name} is not installed (apt-get install {package})")
    assert found is not None
    return found
