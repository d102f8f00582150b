import pytest
from tests.helpers.fake_github import FakeGitHub, contract_missing_reason, load_contract, start, stop
from tests.helpers.fake_gitlab import FakeGitLab


@pytest.fixture(scope="session")
def github_contract():
    reason = contract_missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    return load_contract()


@pytest.fixture
def fake_github(github_contract):
    fake = start(FakeGitHub(github_contract))
    yield fake
    stop(fake)
    assert fake.violations == [], "requests that break GitHub's OpenAPI contract"


@pytest.fixture
def fake_gitlab():
    fake = start(FakeGitLab())
    yield fake
    stop(fake)
    assert fake.violations == [], "requests that break GitLab's documented Notes API"
