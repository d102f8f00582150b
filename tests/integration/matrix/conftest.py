from __future__ import annotations

import pytest
from tests.helpers.matrix import make_key_with_ssh_keygen, ssh_keygen


@pytest.fixture(scope="session")
def keys(tmp_path_factory):
    """Keys made by the real ssh-keygen, once per test run."""
    if ssh_keygen() is None:
        pytest.skip("ssh-keygen is not installed (apt-get install openssh-client)")
    folder = tmp_path_factory.mktemp("keys")
    return {
        "p256": make_key_with_ssh_keygen(folder, "alice"),
        "p384": make_key_with_ssh_keygen(folder, "bob", bits=384),
        "stranger": make_key_with_ssh_keygen(folder, "mallory"),
        "ed25519": make_key_with_ssh_keygen(folder, "eve", key_type="ed25519"),
    }
