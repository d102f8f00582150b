"""Delivering reports to code forges (GitHub, GitLab) over their REST APIs.

``FORGES`` is the one place a forge is named: ``xcompat report --<name>`` takes its flags
from it, and ``xcompat.ci`` asks its forges which CI this process runs under. Every entry
satisfies ``xcompat.forges.base.Forge``. Importing the table stays cheap (no dataclasses,
no HTTP client): the logger reads it at every start, ``--help`` included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xcompat.forges.github_actions import GitHubForge
from xcompat.forges.gitlab_ci import GitLabForge

if TYPE_CHECKING:
    from xcompat.forges.base import Forge

FORGES: dict[str, Forge] = {
    "github": GitHubForge(),
    "gitlab": GitLabForge(),
}
