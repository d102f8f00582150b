"""The unit tier: each test runs in this process, in well under a second.

A test that needs a build, a compiler or a process of xcompat's own lives in tests/integration.
One rule is enforced here: no unit test starts ``xcompat run`` (tests/helpers/unit_tier.py).
"""

from __future__ import annotations

import pytest
from tests.helpers.unit_tier import guarding


@pytest.fixture(autouse=True)
def _starts_no_xcompat_run():
    with guarding() as started:
        yield
    if started:
        pytest.fail(f"started `xcompat run` ({started[0][:300]}); move the test to tests/integration", pytrace=False)
