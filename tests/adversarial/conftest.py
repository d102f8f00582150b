"""Fixtures of the adversarial tier: loopback forges held to their contracts."""

from __future__ import annotations

import pytest
from tests.helpers.fake_github import FakeGitHub, contract_missing_reason, load_contract, start, stop


@pytest.fixture(scope="session")
def github_contract():
    reason = contract_missing_reason()
    if reason:
        pytest.skip(reason)
    return load_contract()


@pytest.fixture
def fake_github(github_contract):
    fake = start(FakeGitHub(github_contract))
    yield fake
    stop(fake)
    assert fake.violations == [], "requests that break GitHub's OpenAPI contract"
