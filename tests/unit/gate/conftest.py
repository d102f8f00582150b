"""Fixtures for the release gate: real git repositories with real tags."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.action import Repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    path = tmp_path / "repo"
    path.mkdir()
    return Repo(path)
