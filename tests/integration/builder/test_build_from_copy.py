"""The native build never reads or writes the user's checkout: a ``build/`` left by an earlier
``CFLAGS=--coverage`` build is not what goes into the wheel, and after ``xcompat build`` every
file of the checkout (``.git`` included) is what it was, apart from the output folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.checkout import assert_not_instrumented, stale_checkout_at, tree_hashes, xcompat

pytestmark = pytest.mark.slow


@pytest.fixture
def stale_checkout(tmp_path: Path) -> Path:
    return stale_checkout_at(tmp_path)


def test_build_ignores_a_stale_instrumented_build_folder_and_writes_nothing(stale_checkout: Path,
                                                                             tmp_path: Path) -> None:
    before = tree_hashes(stale_checkout)
    # From inside the checkout with the default --out (wheelhouse): the one change allowed.
    proc = xcompat("build", cwd=stale_checkout)
    assert proc.returncode == 0, proc.stderr
    assert_not_instrumented(sorted((stale_checkout / "wheelhouse").glob("*.whl")), tmp_path / "unpacked")
    assert tree_hashes(stale_checkout, skip={"wheelhouse"}) == before
    log = (stale_checkout / "wheelhouse" / "logs" / "native.log").read_text()
    assert "# xcompat: sources of" in log
