from __future__ import annotations

import pytest
from tests.helpers.matrix import keys_made_by_ssh_keygen, ssh_keygen


@pytest.fixture(scope="session")
def keys(tmp_path_factory):
    """Keys made by the real ssh-keygen, once per test run."""
    if ssh_keygen() is None:
        pytest.skip("ssh-keygen is not installed (apt-get install openssh-client)")
    return keys_made_by_ssh_keygen(tmp_path_factory.mktemp("keys"))
